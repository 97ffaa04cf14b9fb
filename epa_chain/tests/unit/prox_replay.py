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

"""A PROX control socket on 127.0.0.1 that replays recorded replies.

The recording (fixtures/prox/prox-control-transcript.json, from a real PROX
22.12) holds, per command, the exact reply bytes and every TCP read with
its time since the command was sent. `ReplayServer` behaves like PROX's
master loop as the recording shows it: one line at a time, in order; the
reply written in the recorded pieces at the recorded times; no reply at
all where PROX gave none; `start`/`stop` keeping the loop busy for the
recorded time before the next line; `quit` closing the connection.

What it answers comes from a responder: `Script` (recorded entries in a
fixed order, anything else is a test failure) or any callable for
scripted scenarios. A `version` line that the script does not expect is
answered with the recorded `version` reply, so a client may follow its
commands with `version`.
"""

import dataclasses
import json
import os
import socket
import threading
import time
import typing

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)),
                        'fixtures', 'prox')
TRANSCRIPT = os.path.join(FIXTURES, 'prox-control-transcript.json')


def load_transcript():
    with open(TRANSCRIPT) as stream:
        return json.load(stream)


@dataclasses.dataclass
class Reply:
    """What PROX does with one line.

    It writes `pieces` ((seconds after reading the line, bytes), ...),
    then keeps its loop busy for `hold_s`, or closes the connection after
    `close_after_s`.
    """

    pieces: typing.List[typing.Tuple[float, bytes]] = dataclasses.field(
        default_factory=list)
    hold_s: float = 0.0
    close_after_s: typing.Optional[float] = None

    @classmethod
    def lines(cls, text, delay_s=0.0):
        return cls([(delay_s, text.encode('latin-1'))])


NO_REPLY = Reply()


def reply_of(entry, time_scale=1.0):
    """The recorded reply of a transcript entry, in its recorded reads."""
    data = entry['reply'].encode('latin-1')
    pieces, offset = [], 0
    for ms, size in entry.get('reads') or []:
        if size == 0:
            return Reply(close_after_s=ms / 1000.0 * time_scale)
        pieces.append((ms / 1000.0 * time_scale, data[offset:offset + size]))
        offset += size
    assert offset == len(data), entry['seq']
    return Reply(pieces)


class Transcript:
    """The recorded transcript, indexed."""

    def __init__(self):
        data = load_transcript()
        self.header = data['header']
        self.entries = data['transcript']
        self.version_reply = self.header['prox_version_reply'].encode()
        # Timing probes: how long start/stop hold PROX's command loop.
        self.holds = {}
        for entry in self.entries:
            raw = entry.get('sent_raw', '')
            for verb in ('start all', 'stop all'):
                if raw == verb + '\nversion\n':
                    self.holds[verb] = entry['first_byte_ms'] / 1000.0

    def entry(self, seq):
        entry = self.entries[seq]
        assert entry['seq'] == seq
        return entry

    def reply(self, seq, time_scale=1.0):
        entry = self.entry(seq)
        reply = reply_of(entry, time_scale)
        reply.hold_s = self.holds.get(entry['sent'], 0.0) * time_scale
        return reply


class Script:
    """Recorded entries answered in a fixed order."""

    def __init__(self, transcript, seqs, time_scale=1.0):
        self.steps = [(transcript.entry(s)['sent'],
                       transcript.reply(s, time_scale)) for s in seqs]

    def add(self, line, reply):
        self.steps.append((line, reply))
        return self

    def __call__(self, line):
        if not self.steps:
            return None
        expected, reply = self.steps[0]
        if line != expected:
            return None
        self.steps.pop(0)
        return reply


class ReplayServer:
    """A fake PROX serving one connection at a time; a context manager."""

    def __init__(self, responder, version_reply, accept_timeout=10.0):
        self.responder = responder
        self.version_reply = version_reply
        self.received = []
        self.unexpected = []
        self.write_failed = False
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(('127.0.0.1', 0))
        self._listener.listen(1)
        self._accept_timeout = accept_timeout
        self.connections = 0
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.closed_by_client = threading.Event()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join(10)
        self._listener.close()

    def _serve(self):
        self._listener.settimeout(0.05)
        deadline = time.monotonic() + self._accept_timeout
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _peer = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.connections += 1
            with conn:
                self._converse(conn)
            deadline = time.monotonic() + self._accept_timeout

    def _converse(self, conn):
        conn.settimeout(0.05)
        pending = b''
        while not self._stop.is_set():
            try:
                data = conn.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                self.closed_by_client.set()
                return
            pending += data
            while b'\n' in pending:
                raw, pending = pending.split(b'\n', 1)
                line = raw[:-1] if raw.endswith(b'\r') else raw
                if not line:
                    continue  # PROX ignores empty lines
                if not self._answer(conn, line.decode('latin-1')):
                    return

    def _answer(self, conn, line):
        self.received.append(line)
        reply = self.responder(line)
        if reply is None and line == 'version':
            reply = Reply([(0.0, self.version_reply)])
        if reply is None:
            self.unexpected.append(line)
            return False  # like a test failure: hang up
        start = time.monotonic()
        for delay, data in reply.pieces:
            wait = start + delay - time.monotonic()
            if wait > 0 and self._stop.wait(wait):
                return False
            try:
                conn.sendall(data)
            except OSError:
                # The client hung up before its reply came: real PROX
                # would die of SIGPIPE here.
                self.write_failed = True
                return False
        if reply.close_after_s is not None:
            self._stop.wait(reply.close_after_s)
            return False
        if reply.hold_s:
            self._stop.wait(reply.hold_s)
        return True
