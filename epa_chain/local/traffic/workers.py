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

"""Forked worker processes that hand back one pickled report.

Sending and receiving run in their own processes: in one Python process
the GIL would let only one of them run at a time. A worker is forked
(sockets and pre-built frames are inherited, nothing is imported or
rebuilt), runs one function and writes its result, pickled, to a pipe;
an exception becomes {'error': ...}. The child ignores SIGINT (the
generator stops it) and leaves with os._exit, running no cleanup of
the parent's.
"""

import os
import pickle
import select
import signal
import time
import traceback


class WorkerFailed(Exception):
    """A worker died, hung or reported nothing."""


class Worker:
    """`function(control_fd, *args)` in a forked child.

    `control_fd` is the read end of a pipe the parent writes to with
    `tell`; the function's return value (picklable) comes back from
    `report`.
    """

    #: the parent's ends of every live worker's pipes: a child closes
    #: them, so that a worker sees EOF when the parent closes its end
    _parent_fds = set()

    def __init__(self, name, function, *args, before=None):
        self.name = name
        self.pid = None
        control_r, self._control_w = os.pipe()
        self._report_r, report_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child process
            status = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                for fd in self._parent_fds | {self._control_w,
                                              self._report_r}:
                    os.close(fd)
                if before is not None:
                    before()
                try:
                    result = function(control_r, *args)
                    status = 0
                except BaseException as exc:
                    result = {'error': '%s: %s' % (type(exc).__name__, exc),
                              'traceback': traceback.format_exc()}
                _write_all(report_w, pickle.dumps(result, protocol=4))
            finally:
                os._exit(status)
        self.pid = pid
        os.close(control_r)
        os.close(report_w)
        self._parent_fds.update((self._control_w, self._report_r))

    def tell(self, message):
        """Write `message` (bytes) to the child's control pipe."""
        if self._control_w is None:
            return
        try:
            _write_all(self._control_w, message)
        except OSError:
            pass  # the child is gone; report() says how

    def report(self, timeout_s):
        """The child's result; WorkerFailed if it dies or takes too long."""
        chunks = []
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerFailed('the %s process gave no report within '
                                   '%.1f s and was killed'
                                   % (self.name, timeout_s))
            ready, _w, _x = select.select([self._report_r], [], [],
                                          remaining)
            if not ready:
                continue
            chunk = os.read(self._report_r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        status = self._wait()
        data = b''.join(chunks)
        if not data:
            raise WorkerFailed('the %s process died (%s) without a report'
                               % (self.name, _describe_status(status)))
        return pickle.loads(data)

    def kill(self):
        """Kill the child if it still runs; idempotent."""
        if self.pid is None:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._wait()

    def _wait(self):
        status = None
        if self.pid is not None:
            try:
                _pid, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = None
        for attribute in ('_control_w', '_report_r'):
            fd = getattr(self, attribute)
            if fd is not None:
                self._parent_fds.discard(fd)
                os.close(fd)
                setattr(self, attribute, None)
        return status


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _describe_status(status):
    if status is None:
        return 'status unknown'
    if os.WIFSIGNALED(status):
        return 'killed by signal %d' % os.WTERMSIG(status)
    return 'exit status %d' % os.WEXITSTATUS(status)
