# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.


"""Run the engine as a supervised child: start, watch, restart, stop.

The engine (PROX or testpmd) runs in the foreground under this process,
its output going to a log file (rotated, so a guest that forwards for
weeks does not fill /run) and its last lines kept for the failure reason.
An engine that dies before it was ever ready is retried a few times, then
reported as failed: that is a configuration or a guest problem, and
looping would hide it. An engine that dies after being ready is restarted
with exponential backoff, forever: the chain should heal.
"""

import collections
import os
import re
import signal
import socket
import subprocess
import termios
import threading
import time

from epa_chain.vnf_runtime import errors

START_ATTEMPTS = 3
READY_TIMEOUT_S = 120.0
# PROX answers its socket within a second of starting: a short poll is
# time off READY, and a connect is cheap.
READY_POLL_S = 0.1
BACKOFF_S = (1, 2, 4, 8, 16, 32, 60)
HEALTHY_S = 300.0       # running this long resets the backoff
STOP_TIMEOUT_S = 15.0
LOG_MAX_BYTES = 8 * 1024 * 1024
TAIL_LINES = 60
_ERROR = re.compile(r'error|panic|fail|cannot|abort|invalid', re.IGNORECASE)


class EngineFailed(Exception):

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def output_ready(marker):
    """Ready once the engine printed `marker` (testpmd)."""
    def check(supervisor):
        # A copy: the reader thread appends while we look.
        return any(marker in line for line in tuple(supervisor.tail))
    check.describe = 'output line %r' % marker
    return check


def prox_socket_ready(path, timeout_s=2.0):
    """Ready once PROX answers `version` on its UNIX socket."""
    def check(supervisor):
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(timeout_s)
                sock.connect(path)
                sock.sendall(b'version\n')
                reply = b''
                while not reply.endswith(b'\n'):
                    chunk = sock.recv(256)
                    if not chunk:
                        return False
                    reply += chunk
                return bool(reply.strip())
        except OSError:
            return False
    check.describe = 'PROX answering on %s' % path
    return check


class _Log:
    """Append-only log file, rotated once to .1 past LOG_MAX_BYTES."""

    def __init__(self, path):
        self.path = path
        self.stream = open(path, 'ab') if path else None

    def write(self, data):
        if not self.stream:
            return
        try:
            self.stream.write(data)
            self.stream.flush()
            if self.stream.tell() > LOG_MAX_BYTES:
                self.stream.close()
                os.replace(self.path, self.path + '.1')
                self.stream = open(self.path, 'ab')
        except (OSError, ValueError):
            # Closed by stop() while the engine still printed: drop it.
            self.stream = None

    def close(self):
        if self.stream:
            self.stream.close()


class Supervisor:

    def __init__(self, argv, ready_check, cwd=None, log_path=None,
                 on_state=None, popen=subprocess.Popen, sleep=time.sleep,
                 clock=time.monotonic, ready_timeout_s=READY_TIMEOUT_S,
                 backoff_s=BACKOFF_S, poll_s=1.0):
        self.argv = list(argv)
        self.ready_check = ready_check
        self.cwd = cwd
        self.on_state = on_state or (lambda state, detail: None)
        self.popen = popen
        self.sleep = sleep
        self.clock = clock
        self.ready_timeout_s = ready_timeout_s
        self.backoff_s = backoff_s
        self.poll_s = poll_s
        self.tail = collections.deque(maxlen=TAIL_LINES)
        self.restarts = 0
        self.process = None
        self._log = _Log(log_path)
        self._reader = None
        self._terminal = None
        self._stopping = threading.Event()
        # stop() (main thread) and a restart in watch() (its thread) both
        # end the running engine: one at a time, or the terminal is
        # closed twice (and the second close may hit a reused fd).
        self._engine_lock = threading.RLock()

    @property
    def pid(self):
        return self.process.pid if self.process else None

    # ---- one run ----------------------------------------------------------

    def _spawn(self):
        with self._engine_lock:
            if self._stopping.is_set():
                raise errors.Stopped()
            self._terminate()   # reap the previous run, close its terminal
            self._start_engine()

    def _start_engine(self):
        self.tail.clear()
        # A pseudo-terminal, not a pipe: on a pipe the engines' stdio is
        # block-buffered and testpmd's ready line would arrive at exit.
        # It is also testpmd's stdin, which must stay open (it quits on
        # end of file); nothing is ever typed into it.
        master, slave = os.openpty()
        attributes = termios.tcgetattr(slave)
        attributes[3] &= ~termios.ECHO
        termios.tcsetattr(slave, termios.TCSANOW, attributes)
        try:
            self.process = self.popen(
                self.argv, cwd=self.cwd, stdin=slave, stdout=slave,
                stderr=slave, umask=0o077, start_new_session=True)
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self._terminal = master
        # Started before it is published: stop() from another thread joins
        # whatever self._reader holds, and an unstarted thread cannot be
        # joined.
        reader = threading.Thread(target=self._read_output, args=(master,),
                                  daemon=True)
        reader.start()
        self._reader = reader

    def _read_output(self, master):
        pending = b''
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:         # EIO: the engine's side is closed
                data = b''
            if not data:
                break
            data = data.replace(b'\r\n', b'\n')
            self._log.write(data)
            pending += data
            *lines, pending = pending.split(b'\n')
            for raw in lines:
                line = raw.decode('utf-8', 'replace').strip()
                if line:
                    self.tail.append(line)
        if pending.strip():
            self.tail.append(pending.decode('utf-8', 'replace').strip())

    def _wait_ready(self):
        deadline = self.clock() + self.ready_timeout_s
        while True:
            if self._stopping.is_set():
                raise errors.Stopped()
            if self.process.poll() is not None:
                self._reader.join(timeout=2)
                raise EngineFailed('%s exited with code %s before it was '
                                   'ready: %s' % (
                                       os.path.basename(self.argv[0]),
                                       self.process.returncode,
                                       self.reason()))
            if self.ready_check(self):
                return
            if self.clock() >= deadline:
                self._terminate()
                raise EngineFailed('%s not ready after %g s (waiting for '
                                   '%s): %s' % (
                                       os.path.basename(self.argv[0]),
                                       self.ready_timeout_s,
                                       getattr(self.ready_check, 'describe',
                                               'readiness'),
                                       self.reason()))
            self.sleep(READY_POLL_S)

    def reason(self):
        """The engine's most telling recent output line."""
        lines = list(self.tail)
        for line in reversed(lines):
            if _ERROR.search(line):
                return line.strip()[:240]
        return lines[-1].strip()[:240] if lines else 'no output'

    # ---- lifecycle --------------------------------------------------------

    def start(self):
        """Start and wait until ready; EngineFailed after START_ATTEMPTS."""
        for attempt in range(START_ATTEMPTS):
            self.on_state('starting', 'attempt %d' % (attempt + 1))
            self._spawn()
            try:
                self._wait_ready()
            except EngineFailed as exc:
                failure = exc
                if attempt + 1 < START_ATTEMPTS:
                    if self._stopping.wait(self.backoff_s[attempt]):
                        raise errors.Stopped()
                continue
            self.on_state('ready', None)
            return
        raise failure

    def watch(self):
        """Block until stop(): restart the engine whenever it dies."""
        backoff = 0
        started = self.clock()
        while not self._stopping.is_set():
            code = self.process.poll()
            if code is None:
                self._stopping.wait(self.poll_s)
                continue
            if self._stopping.is_set():
                break
            # The engine's last words may still be in the terminal: read
            # them before naming the reason it died.
            self._reader.join(timeout=2)
            if self.clock() - started >= HEALTHY_S:
                backoff = 0
            delay = self.backoff_s[min(backoff, len(self.backoff_s) - 1)]
            backoff += 1
            self.restarts += 1
            self.on_state('restarting', 'exited with code %s (%s); restart '
                          '%d in %g s' % (code, self.reason(), self.restarts,
                                          delay))
            if self._stopping.wait(delay):
                break
            self._spawn()
            started = self.clock()
            try:
                self._wait_ready()
                self.on_state('ready', 'after restart %d' % self.restarts)
            except EngineFailed as exc:
                self.on_state('restarting', exc.reason)

    def stop_requested(self):
        """Called from a signal handler: make start() and watch() return."""
        self._stopping.set()

    def stop(self):
        self._stopping.set()
        self._terminate()
        self._log.close()

    def _terminate(self):
        with self._engine_lock:
            self._end_engine()

    def _end_engine(self):
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            try:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)
        if self._reader:
            self._reader.join(timeout=2)
        if self._terminal is not None:
            os.close(self._terminal)
            self._terminal = None
