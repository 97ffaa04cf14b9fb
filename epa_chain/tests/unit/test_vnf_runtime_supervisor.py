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


"""The engine supervisor, the control relay and the readiness reports.

The supervisor runs real (tiny Python) child processes standing in for
the engines; the relay carries real bytes between a TCP client on
loopback and a fake PROX on a UNIX socket in a temporary directory.
"""

import io
import json
import os
import socket
import sys
import threading
import time

import testtools

from epa_chain.tests.unit import vnf_runtime_fakes as fakes
from epa_chain.vnf_runtime import control_relay
from epa_chain.vnf_runtime import errors
from epa_chain.vnf_runtime import readiness
from epa_chain.vnf_runtime import supervisor


def engine(script):
    """argv of a fake engine: Python running `script`."""
    return [sys.executable, '-c', script]


READY = ('import sys, time\n'
         'print("EAL: probing", flush=True)\n'
         'print("Press enter to exit", flush=True)\n'
         'time.sleep(30)\n')


class TestSupervisor(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fakes.TempDir()).path
        self.states = []

    def make(self, script, **options):
        options.setdefault('backoff_s', (0, 0, 0))
        options.setdefault('poll_s', 0.02)
        sup = supervisor.Supervisor(
            engine(script), supervisor.output_ready('Press enter to exit'),
            cwd=self.tmp, log_path=os.path.join(self.tmp, 'engine.log'),
            on_state=lambda state, detail: self.states.append(
                (state, detail)), sleep=lambda s: time.sleep(0.02),
            **options)
        self.addCleanup(sup.stop)
        return sup

    def test_ready_then_stopped_with_sigterm(self):
        sup = self.make(READY)
        started = time.monotonic()
        sup.start()
        self.assertEqual(('ready', None), self.states[-1])
        process = sup.process
        sup.stop()
        self.assertEqual(-15, process.returncode)   # SIGTERM, not SIGKILL
        self.assertLess(time.monotonic() - started, 5)
        with open(os.path.join(self.tmp, 'engine.log')) as stream:
            self.assertEqual('EAL: probing\nPress enter to exit\n',
                             stream.read())

    def test_engine_dying_at_start_fails_with_its_reason(self):
        sup = self.make('import sys\n'
                        'print("EAL: Error - exiting with code: 1")\n'
                        'print("  Cause: Cannot init mbuf pool on socket '
                        '0")\n'
                        'print("bye")\n'
                        'sys.exit(1)\n')
        error = self.assertRaises(supervisor.EngineFailed, sup.start)
        self.assertIn('exited with code 1 before it was ready: Cause: '
                      'Cannot init mbuf pool on socket 0', error.reason)
        self.assertEqual(supervisor.START_ATTEMPTS,
                         [s for s, _ in self.states].count('starting'))

    def test_engine_never_ready_is_killed(self):
        sup = self.make('import time\nprint("waiting for link")\n'
                        'time.sleep(30)\n', ready_timeout_s=0.3)
        error = self.assertRaises(supervisor.EngineFailed, sup.start)
        self.assertIn("not ready after 0.3 s (waiting for output line 'Press "
                      "enter to exit'): waiting for link", error.reason)
        self.assertIsNotNone(sup.process.poll())

    def test_crashing_engine_is_restarted(self):
        sup = self.make('import sys, time\n'
                        'print("Press enter to exit", flush=True)\n'
                        'time.sleep(0.1)\n'
                        'print("PANIC in lcore 1", flush=True)\n'
                        'sys.exit(3)\n')
        sup.start()

        def watch():
            try:
                sup.watch()
            except errors.Stopped:
                pass    # stopped while waiting for a restarted engine

        watcher = threading.Thread(target=watch)
        watcher.start()
        deadline = time.monotonic() + 10
        while sup.restarts < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        sup.stop()
        watcher.join(5)
        self.assertFalse(watcher.is_alive())
        self.assertGreaterEqual(sup.restarts, 2)
        restarting = [d for s, d in self.states if s == 'restarting']
        self.assertIn('exited with code 3 (PANIC in lcore 1); restart 1 in '
                      '0 s', restarting[0])
        self.assertIn(('ready', 'after restart 1'), self.states)

    def test_stop_requested_during_start(self):
        sup = self.make('import time\ntime.sleep(30)\n',
                        ready_timeout_s=30)
        threading.Timer(0.2, sup.stop_requested).start()
        self.assertRaises(errors.Stopped, sup.start)


class FakeProx:
    """A UNIX socket answering like PROX: `version`, and a slow command."""

    def __init__(self, path):
        self.path = path
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(4)
        self.write_errors = []
        self.closed = []
        self.threads = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,),
                                      daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, conn):
        stream = conn.makefile('rb')
        for line in stream:
            command = line.strip()
            try:
                if command == b'version':
                    conn.sendall(b'1.2,22.11\n')
                elif command == b'slow':
                    time.sleep(0.3)
                    conn.sendall(b'x' * 200000 + b'\n')
            except OSError as exc:
                self.write_errors.append(exc)
        self.closed.append(time.monotonic())
        conn.close()

    def close(self):
        self.server.close()


class TestControlRelay(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fakes.TempDir()).path
        self.socket_path = os.path.join(self.tmp, 'prox.sock')

    def relay(self, **options):
        relay = control_relay.ControlRelay('127.0.0.1', 0,
                                           upstream_path=self.socket_path,
                                           **options)
        relay.start()
        self.addCleanup(relay.stop)
        return relay

    def client(self, relay):
        sock = socket.create_connection(relay.bound, timeout=5)
        self.addCleanup(sock.close)
        return sock

    def test_commands_and_replies_pass_through(self):
        prox = FakeProx(self.socket_path)
        self.addCleanup(prox.close)
        relay = self.relay()
        self.assertEqual('127.0.0.1', relay.bound[0])
        sock = self.client(relay)
        sock.sendall(b'version\n')
        self.assertEqual(b'1.2,22.11\n', sock.recv(100))

    def test_a_client_vanishing_mid_reply_does_not_hit_prox(self):
        self.patch(control_relay, 'LINGER_S', 0.8)
        prox = FakeProx(self.socket_path)
        self.addCleanup(prox.close)
        relay = self.relay()
        sock = self.client(relay)
        sock.sendall(b'slow\n')
        sock.close()
        gone = time.monotonic()
        deadline = gone + 5
        while not prox.closed and time.monotonic() < deadline:
            time.sleep(0.02)
        # PROX wrote its whole reply, then the relay hung up, later.
        self.assertEqual([], prox.write_errors)
        self.assertEqual(1, len(prox.closed))
        self.assertGreater(prox.closed[0] - gone, 0.5)

    def test_no_prox_closes_the_client(self):
        relay = self.relay(log=lambda message: self.logged.append(message))
        self.logged = []
        sock = self.client(relay)
        self.assertEqual(b'', sock.recv(100))
        self.assertIn('PROX not reachable', self.logged[0])

    def test_bound_to_the_management_interface(self):
        if os.geteuid() != 0:
            self.skipTest('SO_BINDTODEVICE needs root (CAP_NET_RAW)')
        prox = FakeProx(self.socket_path)
        self.addCleanup(prox.close)
        relay = self.relay(interface='lo')
        sock = self.client(relay)
        sock.sendall(b'version\n')
        self.assertEqual(b'1.2,22.11\n', sock.recv(100))


class TestReadiness(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fakes.TempDir()).path
        self.console = os.path.join(self.tmp, 'console')
        self.status = os.path.join(self.tmp, 'run', 'status.json')
        self.stderr = io.StringIO()
        self.reporter = readiness.Reporter(
            console=self.console, status_file=self.status,
            stderr=self.stderr, now=lambda: '2026-01-01T00:00:00+00:00')

    def test_ready(self):
        self.reporter.ready('chain-vnf1', 'testpmd', pid=7)
        with open(self.console) as stream:
            self.assertEqual('EPA-CHAIN READY chain-vnf1 testpmd\n',
                             stream.read())
        with open(self.status) as stream:
            self.assertEqual({'schema': 'epa-chain/vnf-status/1',
                              'state': 'ready', 'name': 'chain-vnf1',
                              'engine': 'testpmd', 'reason': None, 'pid': 7,
                              'updated': '2026-01-01T00:00:00+00:00'},
                             json.load(stream))

    def test_failed_reason_is_one_line(self):
        self.reporter.failed('chain-vnf1', 'bad\nthing:  here')
        with open(self.console) as stream:
            self.assertEqual('EPA-CHAIN FAILED chain-vnf1: bad thing: here\n',
                             stream.read())
        self.assertIn('EPA-CHAIN FAILED', self.stderr.getvalue())

    def test_unwritable_console_still_reports_on_stderr(self):
        reporter = readiness.Reporter(
            console=os.path.join(self.tmp, 'no', 'console'),
            status_file=None, stderr=self.stderr)
        reporter.ready('n', 'prox')
        self.assertIn('EPA-CHAIN READY n prox\n', self.stderr.getvalue())
        self.assertIn('cannot write to', self.stderr.getvalue())


class TestProxSocketReady(testtools.TestCase):

    def test_ready_when_prox_answers(self):
        tmp = self.useFixture(fakes.TempDir()).path
        path = os.path.join(tmp, 'prox.sock')
        check = supervisor.prox_socket_ready(path)
        self.assertFalse(check(None))
        prox = FakeProx(path)
        self.addCleanup(prox.close)
        self.assertTrue(check(None))
