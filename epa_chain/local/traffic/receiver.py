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

"""The receiving side: count, order and time every frame of ours.

One process reads every receiving endpoint's socket. A frame counts for
a stream when its destination MAC is the endpoint's own, its signature
matches (frames.parse) and its tag is one of this trial's streams
arriving at this endpoint; the delay is the kernel's receive timestamp
minus the transmit time in the frame (one host, one CLOCK_REALTIME).
Sequence numbers, known to lie in [0, planned), are tracked in a bitmap:
a repeat is a duplicate (not counted as received), a number below the
highest seen is out of order.

Per-frame samples for RFC 5481 statistics are kept up to a cap. Over the
cap the receiver keeps whole blocks of consecutive sequence numbers (at
most SAMPLE_BLOCK, at least ten blocks' worth under the cap), one block
in every `stride`, spread over the whole trial, so consecutive pairs
(IPDV) survive; min/avg/max always cover every frame.
"""

import array
import math
import os
import select
import socket
import time

from epa_chain.local.traffic import frames
from epa_chain.local.traffic import sockets

SAMPLE_BLOCK = 1000
RECV_BYTES = frames.MEASURED_BYTES  # the rest of a frame is padding
ANCILLARY_BYTES = socket.CMSG_SPACE(sockets.TIMESPEC.size)
BATCH = 256          # frames read from one socket before the next
IDLE_POLL_MS = 100


def sample_stride(planned, cap):
    """Keep one block in every `stride` blocks (1: all, 0: none)."""
    if cap <= 0:
        return 0
    if planned <= cap:
        return 1
    return max(1, math.ceil(planned / cap))


def sample_block(cap):
    """Frames per kept block: whole IPDV pairs, many blocks per trial."""
    return max(2, min(SAMPLE_BLOCK, cap // 10))


class StreamCounter:
    """What one stream's receiver saw during one trial."""

    def __init__(self, direction, planned, sample_cap=0, last_hop_mac=None):
        self.direction = direction
        self.planned = planned
        self._seen = bytearray((planned + 7) // 8)
        self.rx = 0
        self.duplicates = 0
        self.out_of_order = 0
        self.beyond_plan = 0
        self.wrong_source = 0
        self.wrong_sources = {}
        self._last_hop = (frames.mac_bytes(last_hop_mac)
                          if last_hop_mac else None)
        self._highest = -1
        self.min_ns = None
        self.max_ns = None
        self.sum_ns = 0
        self.sample_cap = sample_cap
        self.stride = sample_stride(planned, sample_cap)
        self.block = sample_block(sample_cap)
        self.sample_seqs = array.array('q')
        self.sample_delays = array.array('q')

    def add(self, seq, delay_ns, source_mac=None):
        if seq >= self.planned:
            self.beyond_plan += 1
            return
        if self._last_hop is not None and source_mac != self._last_hop:
            self.wrong_source += 1
            key = bytes(source_mac).hex(':') if source_mac else '?'
            self.wrong_sources[key] = self.wrong_sources.get(key, 0) + 1
        if self.stride and (seq // self.block) % self.stride == 0 and \
                len(self.sample_seqs) < self.sample_cap:
            self.sample_seqs.append(seq)
            self.sample_delays.append(delay_ns)
        index, bit = seq >> 3, 1 << (seq & 7)
        if self._seen[index] & bit:
            self.duplicates += 1
            return
        self._seen[index] |= bit
        self.rx += 1
        if seq < self._highest:
            self.out_of_order += 1
        else:
            self._highest = seq
        if self.min_ns is None or delay_ns < self.min_ns:
            self.min_ns = delay_ns
        if self.max_ns is None or delay_ns > self.max_ns:
            self.max_ns = delay_ns
        self.sum_ns += delay_ns

    def report(self):
        return {
            'direction': self.direction, 'rx': self.rx,
            'duplicates': self.duplicates,
            'out_of_order': self.out_of_order,
            'beyond_plan': self.beyond_plan,
            'wrong_source': self.wrong_source,
            'wrong_sources': dict(sorted(
                self.wrong_sources.items(), key=lambda item: -item[1])[:4]),
            'min_ns': self.min_ns, 'max_ns': self.max_ns,
            'sum_ns': self.sum_ns, 'stride': self.stride,
            'block': self.block, 'sample_cap': self.sample_cap,
            'sample_seqs': self.sample_seqs.tobytes(),
            'sample_delays': self.sample_delays.tobytes(),
        }


def samples_from(report):
    """[(seq, delay_ns)] in arrival order from a StreamCounter report."""
    seqs, delays = array.array('q'), array.array('q')
    seqs.frombytes(report['sample_seqs'])
    delays.frombytes(report['sample_delays'])
    return list(zip(seqs.tolist(), [float(d) for d in delays]))


class Endpoint:
    """One receiving socket and the streams that arrive on it."""

    def __init__(self, name, sock, mac, counters_by_tag, ignores_outgoing):
        self.name = name
        self.sock = sock
        self.mac = frames.mac_bytes(mac)
        self.counters = counters_by_tag
        self.ignores_outgoing = ignores_outgoing
        self.other_destination = 0   # ours, but for another MAC: flooded
        self.unknown_tag = 0         # ours, from another trial or stream
        self.foreign = 0             # not ours at all
        self.no_timestamp = 0
        self.own_outgoing = 0

    def read(self, limit=BATCH):
        """Read up to `limit` queued frames; False when the queue is empty."""
        recvmsg = self.sock.recvmsg
        parse = frames.parse
        mac = self.mac
        counters = self.counters
        timestamp_ns = sockets.timestamp_ns
        for _ in range(limit):
            try:
                data, ancillary, _flags, address = recvmsg(
                    RECV_BYTES, ANCILLARY_BYTES)
            except BlockingIOError:
                return False
            if not self.ignores_outgoing and \
                    address[2] == socket.PACKET_OUTGOING:
                self.own_outgoing += 1
                continue
            parsed = parse(data)
            if parsed is None:
                self.foreign += 1
                continue
            if data[0:6] != mac:
                self.other_destination += 1
                continue
            tag, seq, tx_ns = parsed
            counter = counters.get(tag)
            if counter is None:
                self.unknown_tag += 1
                continue
            rx_ns = timestamp_ns(ancillary)
            if rx_ns is None:
                self.no_timestamp += 1
                rx_ns = time.time_ns()
            counter.add(seq, rx_ns - tx_ns, data[6:12])
        return True

    def report(self):
        return {'endpoint': self.name,
                'other_destination': self.other_destination,
                'unknown_tag': self.unknown_tag, 'foreign': self.foreign,
                'no_timestamp': self.no_timestamp,
                'own_outgoing': self.own_outgoing}


def receive(endpoints, control_fd, drain_s, clock=time.monotonic):
    """Read until told the sender stopped, then drain; the report.

    The control pipe brings the frames each stream sent (a dict tag ->
    count, see `decode_stop`); draining ends early once every sent frame
    of every stream has arrived, or at once if the pipe closes without
    a message (the generator gave up).
    """
    poller = select.poll()
    by_fd = {}
    for endpoint in endpoints:
        poller.register(endpoint.sock.fileno(), select.POLLIN)
        by_fd[endpoint.sock.fileno()] = endpoint
    poller.register(control_fd, select.POLLIN)
    counters = {tag: counter for endpoint in endpoints
                for tag, counter in endpoint.counters.items()}
    sent = None
    end_at = None
    while True:
        now = clock()
        if end_at is not None:
            if now >= end_at or all(counters[tag].rx >= count
                                    for tag, count in sent.items()
                                    if tag in counters):
                break
            timeout_ms = max(1, int((end_at - now) * 1000))
        else:
            timeout_ms = IDLE_POLL_MS
        for fd, _event in poller.poll(timeout_ms):
            if fd == control_fd:
                message = _read_message(control_fd)
                poller.unregister(control_fd)
                sent = decode_stop(message)
                end_at = clock() + (drain_s if sent is not None else 0.0)
                sent = sent or {}
                continue
            by_fd[fd].read()
    statistics = {endpoint.name: sockets.read_statistics(endpoint.sock)
                  for endpoint in endpoints}
    return {
        'streams': {tag: counter.report()
                    for tag, counter in counters.items()},
        'endpoints': [endpoint.report() for endpoint in endpoints],
        'kernel_dropped': {name: dropped for name, (_queued, dropped)
                           in statistics.items()},
    }


def encode_stop(tx_by_tag):
    return ('stop ' + ' '.join('%d=%d' % item
                               for item in sorted(tx_by_tag.items())) +
            '\n').encode('ascii')


def decode_stop(message):
    """{tag: frames sent} from encode_stop's bytes; None for EOF."""
    if not message:
        return None
    words = message.decode('ascii').split()
    if not words or words[0] != 'stop':
        return None
    return {int(tag): int(count)
            for tag, count in (word.split('=') for word in words[1:])}


def _read_message(fd):
    data = b''
    while not data.endswith(b'\n'):
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data
