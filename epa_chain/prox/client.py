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

"""PROX's TCP control protocol (`prox -t`, port 8474), over one connection.

What the protocol does, from the recorded transcripts in
doc/source/prox.rst and PROX 22.12's cmd_parser.c:

- One command per line; replies are lines ending in a single LF. Multi-line
  replies (`dp core stats`, `lat all stats`) arrive in several TCP reads.
- Many commands never answer (start, stop, speed, pkt_size, set value,
  reset stats, quit), and several errors are only logged, never answered
  (unknown command, bad core in `core stats`, bad port in `port_stats`).
  Waiting for a line after those would hang.
- Commands run strictly in order on PROX's master loop, and `start`/`stop`
  block that loop until the cores obey: at once for a stopped core, at
  its next message check (every 3e9 TSC cycles, ~1.15 s) for a running
  one (seen live).

So every command is followed, in the same write, by `version`, whose reply
is known after the first exchange: the lines before that reply are the
command's whole answer (none for the silent ones, which is how the silent
errors are detected at once), and its arrival proves PROX has executed the
command. A command that times out stays owed; its late lines are drained
before the next command, so replies never shift onto the wrong command.
Closing with replies still owed would make PROX write to a closed socket
(it aborts on SIGPIPE), so close() drains first.

Counters are snapshots PROX refreshes about once a second; every stats
reply carries `last_tsc` (and most `hz`) so callers can tell snapshots
apart and turn counts into rates.
"""

import dataclasses
import re
import socket
import time
import typing
import warnings

from epa_chain.chain import wire

DEFAULT_PORT = 8474
# How long connect() keeps trying. A guest that printed READY may not be
# reachable yet: on the single-host cloud Neutron gave a new generator the
# address a deleted one had, and the host's neighbour entry still named the
# old MAC until it was probed again (~8 s), so a 5 s connect timed out.
CONNECT_TIMEOUT_S = 15.0
# Each attempt's own bound: a SYN lost to a stale neighbour entry is sent
# again by the next attempt instead of TCP's backoff (1, 3, 7, 15 s).
CONNECT_ATTEMPT_S = 2.0
#: PROX's "no value" (a stats path that does not exist, or a latency value
#: before the first sample): uint64 -1.
NO_VALUE = 2 ** 64 - 1
#: `speed C T 100` is 10 Gbit/s: 12.5e6 bytes/s per percent, counting the
#: 20 bytes of preamble, start delimiter and gap, and the 4-byte FCS.
SPEED_BYTES_PER_PERCENT = 12500000
MAX_SPEED_PERCENT = 1000.0
#: PROX pads shorter frames to 60 bytes (64 with FCS) on the wire.
MIN_PROX_SIZE = 60
ETHERNET_HEADER_BYTES = 14
IPV4_HEADER_BYTES = 20
UDP_HEADER_BYTES = 8
#: Offsets of the IPv4 total length and UDP length in an untagged frame.
IPV4_LENGTH_OFFSET = ETHERNET_HEADER_BYTES + 2
UDP_LENGTH_OFFSET = ETHERNET_HEADER_BYTES + IPV4_HEADER_BYTES + 4
LATENCY_BUCKETS = 128
#: PROX's own built-in `latency bucket size` (log2 TSC cycles), which a
#: lat task without that line uses, and its smallest; not the stack's
#: default (chain.yaml's generator_latency_bucket_shift).
PROX_BUILTIN_LATENCY_BUCKET_SHIFT = 11
MAX_IMIX_SIZES = 128

_BARRIER = 'version'
# Old names kept for a release: {old: new}.
_DEPRECATED = {'DEFAULT_LATENCY_BUCKET_SHIFT':
               'PROX_BUILTIN_LATENCY_BUCKET_SHIFT'}
_QUICKACK = getattr(socket, 'TCP_QUICKACK', None)
_MAX_REPLY_LINES = 4096
_MAX_LINE_BYTES = 65536
_UINT = re.compile(r'^[0-9]+$')
_BUCKET = re.compile(r'^Bucket \[([0-9]+)\]: ([0-9]+)$')


def __getattr__(name):
    if name in _DEPRECATED:
        warnings.warn('epa_chain.prox.client.%s is deprecated: use %s (it '
                      'is PROX\'s built-in, not the stack\'s default)'
                      % (name, _DEPRECATED[name]), DeprecationWarning,
                      stacklevel=2)
        return globals()[_DEPRECATED[name]]
    raise AttributeError('module %r has no attribute %r' % (__name__, name))


class ProxError(Exception):
    """Something went wrong talking to PROX; names the command."""

    def __init__(self, command, message, data=None):
        self.command = command
        self.message = message
        self.data = data
        text = 'PROX command %r: %s' % (command, message)
        if data is not None:
            shown = data if len(data) <= 300 else data[:300]
            text += ' (received %r%s)' % (
                shown, '' if shown is data else ' + %d more' % (
                    len(data) - len(shown)))
        super().__init__(text)


class ProxConnectionError(ProxError):
    """No connection, PROX closed it, or it is out of step."""


class ProxTimeoutError(ProxError):
    """The reply did not come within the command's timeout."""


class ProxNoReplyError(ProxError):
    """PROX executed the command but answered nothing.

    PROX answers some mistakes only in its log: an unknown command, a bad
    core or task in `core stats`, a bad port in `port_stats`.
    """


class ProxCommandError(ProxError):
    """PROX answered `error: ...`."""


class ProxNoValueError(ProxError):
    """A `stats` path answered 18446744073709551615 (PROX's "no value")."""


class ProxProtocolError(ProxError):
    """The reply does not have the shape PROX's source gives it."""


@dataclasses.dataclass(frozen=True)
class ProxVersion:
    prox: str
    dpdk: str
    raw: typing.Tuple[int, int]


@dataclasses.dataclass(frozen=True)
class TotStats:
    rx: int
    tx: int
    last_tsc: int
    hz: int


@dataclasses.dataclass(frozen=True)
class PortStats:
    """`port_stats P` of one port.

    *_diff are counts over the last refresh interval (prev_tsc..last_tsc),
    *_total counts since the last reset.
    """

    no_mbufs_diff: int
    errors_diff: int
    rx_bytes_diff: int
    tx_bytes_diff: int
    rx_packets_diff: int
    tx_packets_diff: int
    rx_total: int
    tx_total: int
    no_mbufs_total: int
    errors_total: int
    last_tsc: int
    prev_tsc: int

    def tx_rate_pps(self, hz):
        return _rate(self.tx_packets_diff, self.last_tsc - self.prev_tsc, hz)

    def rx_rate_pps(self, hz):
        return _rate(self.rx_packets_diff, self.last_tsc - self.prev_tsc, hz)


@dataclasses.dataclass(frozen=True)
class MultiPortStats:
    port: int
    rx_total: int
    tx_total: int
    no_mbufs_total: int
    errors_total: int
    last_tsc: int


@dataclasses.dataclass(frozen=True)
class CoreStats:
    rx: int
    tx: int
    drop: int
    last_tsc: int
    hz: int


@dataclasses.dataclass(frozen=True)
class TaskStats:
    """`dp core stats C T`: totals since the last reset."""

    rx: int
    tx: int
    rx_non_dp: int
    tx_non_dp: int
    drop: int
    tx_fail: int
    last_tsc: int
    hz: int
    core: int
    task: int

    @property
    def rx_dp(self):
        """Received data-plane frames (bad signature/length excluded)."""
        return self.rx - self.rx_non_dp

    @property
    def tx_dp(self):
        return self.tx - self.tx_non_dp

    @property
    def time_s(self):
        return self.last_tsc / self.hz


@dataclasses.dataclass(frozen=True)
class LatencyStats:
    """`lat stats C T`, microseconds.

    min/max/avg and the ordering counters cover the last refresh interval
    with packets; tot_min/tot_max cover everything since the last reset.
    PROX keeps the previous values when no sample of an interval was within
    the accuracy limit.
    """

    min_us: int
    max_us: int
    avg_us: int
    tot_min_us: int
    tot_max_us: int
    last_tsc: int
    hz: int
    core: int
    task: int
    mis_ordered: int
    extent: int
    duplicate: int


@dataclasses.dataclass(frozen=True)
class LatencyHistogram:
    """`lat all stats C T`: the interval's stats and its 128 buckets.

    Bucket i counts delays in [i * w, (i + 1) * w) with w = 2**bucket_shift
    TSC cycles; the last bucket also holds everything longer.
    """

    stats: LatencyStats
    buckets: typing.Tuple[int, ...]
    bucket_shift: int

    @property
    def bucket_width_ns(self):
        return bucket_width_ns(self.bucket_shift, self.stats.hz)

    def identity(self):
        """What distinguishes one interval's snapshot from another's."""
        s = self.stats
        return (s.min_us, s.max_us, s.avg_us, s.mis_ordered, s.extent,
                s.duplicate, self.buckets)


def bucket_width_ns(bucket_shift, hz):
    return (2 ** bucket_shift) * 1e9 / hz


def speed_percent(fps, mean_frame_bytes):
    """PROX `speed` units for `fps` frames/s of `mean_frame_bytes`.

    Frame sizes include the FCS; 100 = 10 Gbit/s counting 20 bytes of wire
    overhead per frame, as PROX's pacing does.
    """
    frame = max(mean_frame_bytes, MIN_PROX_SIZE + wire.FCS_BYTES)
    return fps * wire.wire_bytes(frame) / SPEED_BYTES_PER_PERCENT


def _rate(count, ticks, hz):
    if ticks <= 0 or hz <= 0:
        return None
    return count * hz / ticks


def _decimal(value):
    """A number PROX's sscanf("%f") reads, without exponent notation."""
    text = ('%.12f' % value).rstrip('0').rstrip('.')
    return text or '0'


def _id_list(values, what):
    values = list(values)
    if not values:
        raise ValueError('give at least one %s' % what)
    seen = []
    for value in values:
        _check_id(value, what)
        if value not in seen:
            seen.append(value)
    return seen


def _check_id(value, what):
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError('%s must be a whole number >= 0, not %r'
                         % (what, value))
    return value


@dataclasses.dataclass
class _Owed:
    """Reply lines still to come for a command already sent."""

    command: str
    barrier: bool          # ends with the barrier line
    lines_left: int = 0    # without barrier: exact count


class ProxClient:
    """One persistent connection to one PROX instance.

    Timeouts are per command: `reply_timeout` for queries,
    `start_timeout`/`stop_timeout` for start/stop, which keep PROX's master
    loop busy until the cores obey (PROX itself gives up after 5 s per core
    for start and 30 s for stop).
    """

    def __init__(self, host, port=DEFAULT_PORT,
                 connect_timeout=CONNECT_TIMEOUT_S,
                 reply_timeout=5.0, start_timeout=15.0, stop_timeout=35.0,
                 drain_timeout=10.0, quit_timeout=5.0):
        self.host = host
        self.port = int(port)
        self.connect_timeout = connect_timeout
        self.reply_timeout = reply_timeout
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.drain_timeout = drain_timeout
        self.quit_timeout = quit_timeout
        self._sock = None
        self._buffer = bytearray()
        self._owed = []
        self._broken = None
        self._barrier_reply = None
        self._version = None

    # ---- connection -----------------------------------------------------

    @property
    def connected(self):
        return self._sock is not None

    @property
    def endpoint(self):
        return '%s:%d' % (self.host, self.port)

    def _open(self):
        """A connected socket, tried again until connect_timeout passes."""
        deadline = time.monotonic() + self.connect_timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return socket.create_connection(
                    (self.host, self.port),
                    timeout=max(0.1, min(CONNECT_ATTEMPT_S, left)))
            except OSError as exc:
                if deadline - time.monotonic() < 0.5:
                    raise ProxConnectionError(
                        'connect', 'cannot reach PROX at %s within %.0f s: '
                        '%s; is PROX (prox -t, or the generator\'s control '
                        'relay) listening there, and the control port open '
                        'to this host?' % (self.endpoint,
                                           self.connect_timeout, exc))
                time.sleep(0.5)

    def connect(self):
        """Open the connection and learn PROX's version; idempotent."""
        if self._sock is not None:
            return self._version
        sock = self._open()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._buffer = bytearray()
        self._owed = []
        self._broken = None
        try:
            lines = self._exchange(_BARRIER, self.reply_timeout,
                                   barrier=False, count=1)
            self._version = _parse_version(_BARRIER, lines[0])
        except ProxError:
            self._drop_socket()
            raise
        self._barrier_reply = lines[0]
        return self._version

    def close(self):
        """Drain owed replies, then close; idempotent."""
        if self._sock is None:
            return
        try:
            if self._broken is None:
                self._settle()
        except ProxError:
            pass
        finally:
            self._drop_socket()

    def quit(self):
        """Ask PROX to exit (it answers nothing) and wait for it to close."""
        self._ready('quit')
        self._settle()
        self._send('quit', 'quit\n')
        deadline = time.monotonic() + self.quit_timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ProxTimeoutError(
                        'quit', 'PROX did not close the connection within '
                        '%.1f s' % self.quit_timeout)
                self._sock.settimeout(remaining)
                try:
                    chunk = self._sock.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
        finally:
            self._drop_socket()

    def reconnect(self):
        """Start afresh after the connection broke or fell out of step."""
        self._drop_socket()
        return self.connect()

    def drop(self):
        """Close without waiting for owed replies; the next command connects.

        After a timeout: what PROX still owes may never come.
        """
        self._drop_socket()

    def __enter__(self):
        self.connect()
        return self

    def __exit__(self, *exc_info):
        self.close()

    @property
    def prox_version(self):
        return self._version

    # ---- low level ------------------------------------------------------

    def command(self, command, timeout=None):
        """Send a command that must answer; return its reply lines (str).

        Raises ProxNoReplyError if PROX answers nothing, ProxCommandError
        if it answers `error: ...` only.
        """
        lines = self._exchange(command, timeout or self.reply_timeout)
        if not lines:
            raise ProxNoReplyError(
                command, 'PROX answered nothing; it reports this kind of '
                'mistake (unknown command, no such core, task or port) only '
                'in its log')
        texts = [_decode(command, line) for line in lines]
        errors = [t for t in texts if t.startswith('error:')]
        if errors and len(errors) == len(texts):
            raise ProxCommandError(command, '; '.join(errors))
        return texts

    def silent(self, command, timeout=None):
        """Send a command that answers nothing; return once PROX ran it."""
        lines = self._exchange(command, timeout or self.reply_timeout)
        if lines:
            texts = b'\n'.join(lines)
            if all(_decode(command, line).startswith('error:')
                   for line in lines):
                raise ProxCommandError(command, texts.decode('ascii'))
            raise ProxProtocolError(
                command, 'this command should answer nothing', texts)

    def _exchange(self, command, timeout, barrier=True, count=0):
        if '\n' in command or '\r' in command:
            raise ValueError('one PROX command per line: %r' % command)
        self._ready(command)
        self._settle()
        payload = command + '\n'
        if barrier:
            payload += _BARRIER + '\n'
        owed = _Owed(command, barrier, count)
        self._send(command, payload)
        self._owed.append(owed)
        deadline = time.monotonic() + timeout
        lines = []
        while True:
            if not barrier and owed.lines_left == 0:
                break
            line = self._read_line(command, deadline, timeout, lines)
            if barrier and line == self._barrier_reply:
                break
            if not barrier:
                owed.lines_left -= 1
            lines.append(line)
            if len(lines) > _MAX_REPLY_LINES:
                self._broken = 'more than %d reply lines' % _MAX_REPLY_LINES
                raise ProxProtocolError(command, self._broken,
                                        b'\n'.join(lines[:3]))
        self._owed.remove(owed)
        return lines

    def _settle(self):
        """Read and drop what earlier, timed-out commands still owe."""
        while self._owed:
            owed = self._owed[0]
            deadline = time.monotonic() + self.drain_timeout
            try:
                while True:
                    if not owed.barrier and owed.lines_left == 0:
                        break
                    line = self._read_line(owed.command, deadline,
                                           self.drain_timeout, [])
                    if owed.barrier and line == self._barrier_reply:
                        break
                    if not owed.barrier:
                        owed.lines_left -= 1
            except ProxTimeoutError:
                self._broken = (
                    'PROX has still not answered %r after %.1f s more; the '
                    'connection is out of step: reconnect (and check the '
                    'PROX log)' % (owed.command, self.drain_timeout))
                raise ProxConnectionError(owed.command, self._broken)
            self._owed.pop(0)

    def _ready(self, command):
        if self._sock is None:
            if command == 'quit':
                raise ProxConnectionError(command, 'not connected')
            self.connect()
        if self._broken is not None:
            raise ProxConnectionError(command, self._broken)

    def _send(self, command, payload):
        try:
            self._sock.sendall(payload.encode('ascii'))
        except (OSError, UnicodeEncodeError) as exc:
            self._broken = 'sending failed: %s' % exc
            raise ProxConnectionError(command, self._broken)

    def _read_line(self, command, deadline, timeout, got):
        while True:
            end = self._buffer.find(b'\n', 0, _MAX_LINE_BYTES + 1)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                return line[:-1] if line.endswith(b'\r') else line
            if len(self._buffer) > _MAX_LINE_BYTES:
                self._broken = 'a reply line longer than %d bytes' % (
                    _MAX_LINE_BYTES)
                raise ProxProtocolError(command, self._broken,
                                        bytes(self._buffer[:80]))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ProxTimeoutError(
                    command, 'no complete reply within %.1f s'
                    % timeout, b'\n'.join(got) + bytes(self._buffer))
            self._sock.settimeout(remaining)
            try:
                self._quick_ack()
                chunk = self._sock.recv(65536)
            except socket.timeout:
                continue
            except OSError as exc:
                self._broken = 'connection failed: %s' % exc
                raise ProxConnectionError(command, self._broken)
            if not chunk:
                self._broken = 'PROX closed the connection'
                raise ProxConnectionError(
                    command, self._broken,
                    b'\n'.join(got) + bytes(self._buffer))
            self._buffer += chunk

    def _quick_ack(self):
        """ACK at once what arrives next (Linux; the flag does not stay).

        PROX writes each reply, and each part of a multi-line reply, with
        its own write() and leaves Nagle's algorithm on: a write waits for
        the ACK of the one before. With delayed ACKs that costs 40 ms per
        command, or per part.
        """
        if _QUICKACK is not None:
            try:
                self._sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
            except OSError:
                pass

    def _drop_socket(self):
        sock, self._sock = self._sock, None
        self._owed = []
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    # ---- control --------------------------------------------------------

    def version(self):
        lines = self._exchange(_BARRIER, self.reply_timeout, barrier=False,
                               count=1)
        return _parse_version(_BARRIER, lines[0])

    def echo(self, text):
        """What PROX makes of `text`, its $variables resolved.

        PROX answers nothing for a variable it does not know:
        ProxNoReplyError.
        """
        if not text or text != text.strip():
            raise ValueError('echo needs a word, not %r' % (text,))
        lines = self.command('echo %s' % text)
        if len(lines) != 1:
            raise ProxProtocolError('echo %s' % text, 'expected one line',
                                    '\n'.join(lines))
        return lines[0]

    def start(self, cores=None, task=None):
        """Start all cores, or `cores` (all their tasks, or `task`)."""
        self.silent(_core_command('start', cores, task), self.start_timeout)

    def stop(self, cores=None, task=None):
        self.silent(_core_command('stop', cores, task), self.stop_timeout)

    def reset_stats(self):
        self.silent('reset stats')

    def reset_latency_stats(self):
        """Clear the latency totals (`stats latency(N).tot.*`) only."""
        self.silent('reset lat stats')

    def update_interval(self, milliseconds):
        if not isinstance(milliseconds, int) or milliseconds < 10:
            raise ValueError('update interval must be >= 10 ms')
        self.silent('update interval %d' % milliseconds)

    def speed(self, core, task, percent):
        """Set a gen task's rate in PROX units (see speed_percent)."""
        if not 0.0 <= percent <= MAX_SPEED_PERCENT:
            raise ValueError(
                'PROX speed %.4g %% is outside 0..%d %% (0..100 Gbit/s); '
                'PROX would only log the error and keep its old rate'
                % (percent, MAX_SPEED_PERCENT))
        self.silent('speed %d %d %s' % (_check_id(core, 'core'),
                                        _check_id(task, 'task'),
                                        _decimal(percent)))

    def rate_fps(self, core, task, fps, mean_frame_bytes):
        """Set a gen task to `fps` frames/s; return the PROX speed sent."""
        percent = speed_percent(fps, mean_frame_bytes)
        self.speed(core, task, percent)
        return percent

    def set_value(self, core, task, offset, value, length):
        if length not in (1, 2, 3, 4) or not 0 <= value < 256 ** length:
            raise ValueError('set value: %r does not fit %r bytes'
                             % (value, length))
        self.silent('set value %d %d %d %d %d' % (
            _check_id(core, 'core'), _check_id(task, 'task'),
            _check_id(offset, 'offset'), value, length))

    def frame_size(self, core, task, frame_bytes, max_frame_bytes=1518):
        """Set a fixed frame size (FCS included) and fix IP/UDP lengths.

        `pkt_size` only changes how many template bytes PROX sends; the
        IPv4 total length and UDP length in the template stay as they were,
        so they are rewritten with `set value` (offsets 16 and 38).
        """
        size = frame_bytes - wire.FCS_BYTES
        if frame_bytes < MIN_PROX_SIZE + wire.FCS_BYTES or (
                frame_bytes > max_frame_bytes):
            raise ValueError('frame size %d is outside %d..%d bytes'
                             % (frame_bytes, MIN_PROX_SIZE + wire.FCS_BYTES,
                                max_frame_bytes))
        self.silent('pkt_size %d %d %d' % (_check_id(core, 'core'),
                                           _check_id(task, 'task'), size))
        self.set_value(core, task, IPV4_LENGTH_OFFSET,
                       size - ETHERNET_HEADER_BYTES, 2)
        self.set_value(core, task, UDP_LENGTH_OFFSET,
                       size - ETHERNET_HEADER_BYTES - IPV4_HEADER_BYTES, 2)

    def imix(self, core, task, frame_sizes, max_frame_bytes=1518):
        """Cycle through `frame_sizes` (FCS included), one frame each.

        PROX rewrites the IP/UDP lengths itself for IMIX templates, when
        the task next runs.
        """
        sizes = list(frame_sizes)
        if not 1 <= len(sizes) <= MAX_IMIX_SIZES:
            raise ValueError('PROX takes 1..%d IMIX sizes, not %d'
                             % (MAX_IMIX_SIZES, len(sizes)))
        for frame in sizes:
            if not MIN_PROX_SIZE + wire.FCS_BYTES <= frame <= max_frame_bytes:
                raise ValueError('IMIX frame size %r is outside %d..%d'
                                 % (frame, MIN_PROX_SIZE + wire.FCS_BYTES,
                                    max_frame_bytes))
        self.silent('imix %d %d %s' % (
            _check_id(core, 'core'), _check_id(task, 'task'),
            ','.join(str(frame - wire.FCS_BYTES) for frame in sizes)))

    def set_random(self, core, task, offset, bits):
        """Overwrite len(bits)/8 bytes at `offset` in every frame.

        '0' and '1' are fixed bits, 'X' random ones.
        """
        if len(bits) not in (8, 16, 24, 32) or set(bits) - set('01X'):
            raise ValueError('random field %r: 8, 16, 24 or 32 of 0, 1, X'
                             % (bits,))
        self.silent('set random %d %d %d %s %d' % (
            _check_id(core, 'core'), _check_id(task, 'task'),
            _check_id(offset, 'offset'), bits, len(bits) // 8))

    def set_range(self, core, task, offset, first, last):
        """Cycle a big-endian field at `offset` through first..last.

        PROX writes as many bytes as `last` needs, so keep `last` >= 256
        for a 2-byte field.
        """
        if not 0 <= first <= last < 2 ** 32:
            raise ValueError('range %r..%r' % (first, last))
        self.silent('set range %d %d %d %d %d' % (
            _check_id(core, 'core'), _check_id(task, 'task'),
            _check_id(offset, 'offset'), first, last))

    def reset_randoms_all(self):
        self.silent('reset randoms all')

    def reset_ranges_all(self):
        self.silent('reset ranges all')

    def accuracy_limit(self, core, task, nanoseconds):
        self.silent('accuracy limit %d %d %d' % (
            _check_id(core, 'core'), _check_id(task, 'task'),
            _check_id(nanoseconds, 'accuracy limit')))

    # ---- statistics -----------------------------------------------------

    def tot_stats(self):
        command = 'tot stats'
        return TotStats(*_ints(command, self._single(command), 4))

    def tot_ierrors(self):
        """(ierrors total, last_tsc, hz)."""
        command = 'tot ierrors tot'
        return tuple(_ints(command, self._single(command), 3))

    def port_stats(self, port):
        command = 'port_stats %d' % _check_id(port, 'port')
        return PortStats(*_ints(command, self._single(command), 12))

    def multi_port_stats(self, ports):
        ports = _id_list(ports, 'port')
        command = 'multi port stats %s' % ','.join(map(str, ports))
        line = self._single(command)
        groups = line.split(';')
        if len(groups) != len(ports):
            raise ProxProtocolError(command, 'expected %d ;-separated ports'
                                    % len(ports), line)
        result = []
        for port, group in zip(ports, groups):
            stats = MultiPortStats(*_ints(command, group, 6))
            if stats.port != port:
                raise ProxProtocolError(command, 'port %d out of order'
                                        % stats.port, line)
            result.append(stats)
        return result

    def core_stats(self, core, task):
        command = 'core stats %d %d' % (_check_id(core, 'core'),
                                        _check_id(task, 'task'))
        return CoreStats(*_ints(command, self._single(command), 5))

    def dp_core_stats(self, core, tasks):
        """{(core, task): TaskStats} for every task of `tasks` on `core`."""
        tasks = _id_list(tasks, 'task')
        command = 'dp core stats %d %s' % (_check_id(core, 'core'),
                                           ','.join(map(str, tasks)))
        lines = self.command(command)
        pairs = [(core, task) for task in tasks]
        blocks = _per_pair(command, lines, pairs, 1)
        result = {}
        for pair, block in zip(pairs, blocks):
            stats = TaskStats(*_ints(command, block[0], 10))
            _check_pair(command, pair, stats, block[0])
            result[pair] = stats
        return result

    def lat_stats(self, core, tasks):
        tasks = _id_list(tasks, 'task')
        command = 'lat stats %d %s' % (_check_id(core, 'core'),
                                       ','.join(map(str, tasks)))
        lines = self.command(command)
        pairs = [(core, task) for task in tasks]
        result = {}
        for pair, block in zip(pairs, _per_pair(command, lines, pairs, 1)):
            stats = LatencyStats(*_ints(command, block[0], 12))
            _check_pair(command, pair, stats, block[0])
            result[pair] = stats
        return result

    def lat_all_stats(self, core, task,
                      bucket_shift=PROX_BUILTIN_LATENCY_BUCKET_SHIFT):
        """One lat task's last-interval stats and histogram."""
        command = 'lat all stats %d %d' % (_check_id(core, 'core'),
                                           _check_id(task, 'task'))
        lines = self.command(command)
        block = _per_pair(command, lines, [(core, task)],
                          1 + LATENCY_BUCKETS)[0]
        stats = LatencyStats(*_ints(command, block[0], 12))
        _check_pair(command, (core, task), stats, block[0])
        buckets = []
        for index, line in enumerate(block[1:]):
            match = _BUCKET.match(line)
            if not match or int(match.group(1)) != index:
                raise ProxProtocolError(
                    command, 'line %d should be "Bucket [%d]: <count>"'
                    % (index + 2, index), line)
            buckets.append(int(match.group(2)))
        return LatencyHistogram(stats, tuple(buckets), bucket_shift)

    def stats(self, paths, allow_no_value=False):
        """Values of `stats` paths (e.g. 'latency(0).tot.used').

        PROX answers 18446744073709551615 for a path that does not exist
        and for a value that does not exist yet (a latency minimum before
        the first sample); that raises ProxNoValueError, or gives None
        with allow_no_value.
        """
        paths = list(paths)
        for path in paths:
            if not path or ',' in path or ' ' in path:
                raise ValueError('bad stats path %r' % (path,))
        command = 'stats %s' % ','.join(paths)
        # Always answers one line, so no barrier is needed (and a two-value
        # reply could look like the barrier's).
        lines = self._exchange(command, self.reply_timeout, barrier=False,
                               count=1)
        text = _decode(command, lines[0])
        if text.startswith('error:'):
            raise ProxCommandError(command, text)
        values = _ints(command, text, len(paths))
        missing = [p for p, v in zip(paths, values) if v == NO_VALUE]
        if missing and not allow_no_value:
            raise ProxNoValueError(
                command, 'no value for %s: the path does not exist, or '
                'the value does not yet (no latency sample within the '
                'accuracy limit since the last reset)' % ', '.join(missing),
                text)
        return [None if v == NO_VALUE else v for v in values]

    def _single(self, command):
        lines = self.command(command)
        if len(lines) != 1:
            raise ProxProtocolError(command, 'expected one line, got %d'
                                    % len(lines), '\n'.join(lines))
        return lines[0]


# ---- parsing -------------------------------------------------------------

def _decode(command, line):
    if isinstance(line, str):
        return line
    try:
        return line.decode('ascii')
    except UnicodeDecodeError:
        raise ProxProtocolError(command, 'reply is not ASCII', line)


def _ints(command, text, count):
    if text.startswith('error:'):
        raise ProxCommandError(command, text)
    parts = text.split(',')
    if len(parts) != count or not all(_UINT.match(p) for p in parts):
        raise ProxProtocolError(
            command, 'expected %d comma-separated unsigned integers'
            % count, text)
    return [int(p) for p in parts]


def _per_pair(command, lines, pairs, block_lines):
    """Split a reply into one block per (core, task).

    A block is an `error:` line or `block_lines` lines; any error raises,
    naming every error line.
    """
    blocks, errors, index = [], [], 0
    for pair in pairs:
        if index >= len(lines):
            raise ProxProtocolError(
                command, 'reply ends before core %d task %d' % pair,
                '\n'.join(lines))
        if lines[index].startswith('error:'):
            errors.append(lines[index])
            index += 1
            continue
        blocks.append(lines[index:index + block_lines])
        index += block_lines
        if len(blocks[-1]) != block_lines:
            raise ProxProtocolError(
                command, 'core %d task %d: expected %d lines, got %d'
                % (pair + (block_lines, len(blocks[-1]))), '\n'.join(lines))
    if index != len(lines):
        raise ProxProtocolError(command, '%d unexpected extra lines'
                                % (len(lines) - index), '\n'.join(lines))
    if errors:
        raise ProxCommandError(command, '; '.join(errors))
    return blocks


def _check_pair(command, pair, stats, line):
    if (stats.core, stats.task) != pair:
        raise ProxProtocolError(command, 'answered for core %d task %d '
                                'instead of core %d task %d'
                                % ((stats.core, stats.task) + pair), line)


def _parse_version(command, line):
    text = _decode(command, line)
    values = _ints(command, text, 2)
    prox, dpdk = values
    # PROX packs MAJOR<<24 | MINOR<<16 | REV<<8, but since 17.x MAJOR is 0
    # and MINOR is YYMM (2212), which overflows its byte into MAJOR's.
    minor, rev = prox >> 16, (prox >> 8) & 0xff
    if minor >= 100:
        prox_text = '%d.%02d' % (minor // 100, minor % 100)
    else:
        prox_text = '%d.%d' % (prox >> 24, minor & 0xff)
    if rev:
        prox_text += '.%d' % rev
    dpdk_text = '%d.%02d.%d' % (dpdk >> 24, (dpdk >> 16) & 0xff,
                                (dpdk >> 8) & 0xff)
    return ProxVersion(prox_text, dpdk_text, (prox, dpdk))


def _core_command(verb, cores, task):
    if cores is None:
        text = '%s all' % verb
    else:
        text = '%s %s' % (verb, ','.join(map(str, _id_list(cores, 'core'))))
    if task is not None:
        text += ' %d' % _check_id(task, 'task')
    return text
