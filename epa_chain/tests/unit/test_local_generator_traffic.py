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

"""The local generator's traffic: frames, pacing, sending and counting.

Pure and fast: no sockets, no namespaces; the sending loop runs on a fake
clock, the receiver's counters on hand-made frames.
"""

import ipaddress
import struct

import testtools

from epa_chain.local.traffic import frames
from epa_chain.local.traffic import pacing
from epa_chain.local.traffic import receiver
from epa_chain.local.traffic import sender
from epa_chain.measurement import latency
from epa_chain.measurement import trial

LEFT = '02:00:00:00:00:01'
RIGHT = '02:00:00:00:00:02'


def checksum_ok(header):
    """An IPv4 header with a valid checksum sums to 0xffff."""
    total = sum(struct.unpack('!10H', header))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return total == 0xffff


def stream_frames(mix=((64, 1),), flows=1, direction='forward', tag=5):
    return frames.StreamFrames(mix, flows, RIGHT, LEFT, direction, tag)


class TestFrames(testtools.TestCase):

    def test_size_excludes_the_fcs_and_headers_match(self):
        for size in (64, 128, 570, 1518):
            frame = frames.build_frame(size, RIGHT, LEFT, '198.18.0.1',
                                       '198.19.0.1', tag=9, seq=7,
                                       tx_ns=123)
            self.assertEqual(size - 4, len(frame))
            self.assertEqual(bytes.fromhex('020000000002'), frame[0:6])
            self.assertEqual(bytes.fromhex('020000000001'), frame[6:12])
            self.assertEqual(b'\x08\x00', frame[12:14])
            version, _tos, ip_length = struct.unpack('!BBH', frame[14:18])
            self.assertEqual(0x45, version)
            self.assertEqual(size - 4 - 14, ip_length)
            self.assertEqual(17, frame[23])
            self.assertTrue(checksum_ok(bytes(frame[14:34])))
            _sport, dport, udp_length, udp_sum = struct.unpack(
                '!HHHH', frame[34:42])
            self.assertEqual(frames.SIGNATURE_PORT, dport)
            self.assertEqual(ip_length - 20, udp_length)
            self.assertEqual(0, udp_sum)
            self.assertEqual((9, 7, 123), frames.parse(frame))

    def test_smallest_frame_holds_the_whole_payload(self):
        self.assertEqual(frames.MEASURED_BYTES, frames.wire_bytes(64))
        self.assertRaises(ValueError, frames.wire_bytes, 63)

    def test_parse_refuses_other_frames(self):
        frame = frames.build_frame(64, RIGHT, LEFT, '198.18.0.1',
                                   '198.19.0.1', tag=1)
        for offset in (12, 36, frames.PAYLOAD_OFFSET):
            other = bytearray(frame)
            other[offset] ^= 0xff
            self.assertIsNone(frames.parse(other), offset)
        self.assertIsNone(frames.parse(frame[:59]))

    def test_imix_cycle_keeps_the_weights_and_spreads_sizes(self):
        cycle = frames.imix_cycle(trial.IMIX_EANTC)
        self.assertEqual(12, len(cycle))
        self.assertEqual({64: 7, 570: 4, 1518: 1},
                         {size: cycle.count(size) for size in set(cycle)})
        # Spread out, not 7 x 64 in a row: no run longer than 2.
        runs = max(len(run) for run in ''.join(
            'a' if size == 64 else ' ' for size in cycle).split())
        self.assertLessEqual(runs, 2)
        self.assertEqual(cycle, frames.imix_cycle(trial.IMIX_EANTC))

    def test_stream_frames_follow_the_cycle(self):
        built = stream_frames(mix=trial.IMIX_EANTC)
        cycle = frames.imix_cycle(trial.IMIX_EANTC)
        sizes = [len(built.frame(seq)) + 4 for seq in range(36)]
        self.assertEqual(list(cycle) * 3, sizes)

    def test_flows_differ_in_port_and_address_with_valid_checksums(self):
        flows = frames.FLOW_PORTS + 3  # past one address' worth of ports
        built = stream_frames(mix=((64, 1), (1518, 1)), flows=flows)
        seen = set()
        for seq in (0, 1, 2, 3, flows - 2, flows - 1, flows, flows + 1):
            frame = bytes(built.frame(seq, tx_ns=seq))
            self.assertTrue(checksum_ok(frame[14:34]))
            source = ipaddress.IPv4Address(frame[26:30])
            port = struct.unpack('!H', frame[34:36])[0]
            expected = frames.flow_fields('198.18.0.1', seq % flows)
            self.assertEqual(expected, (source, port))
            self.assertEqual((5, seq, seq), frames.parse(frame))
            seen.add((source, port))
        self.assertEqual(6, len(seen))  # flows 0 and `flows` coincide...
        self.assertIn((ipaddress.IPv4Address('198.18.0.2'),
                       frames.FLOW_PORT_BASE + 1), seen)

    def test_directions_use_their_half_of_the_benchmark_network(self):
        forward = bytes(stream_frames(direction='forward').frame(0))
        reverse = bytes(stream_frames(direction='reverse').frame(0))
        self.assertEqual(forward[26:30], reverse[30:34])
        self.assertEqual(forward[30:34], reverse[26:30])
        for address in (forward[26:30], forward[30:34]):
            self.assertIn(ipaddress.IPv4Address(address),
                          ipaddress.IPv4Network('198.18.0.0/15'))

    def test_tags_tell_trials_and_directions_apart(self):
        tags = {frames.stream_tag(t, d) for t in range(128) for d in (0, 1)}
        self.assertEqual(256, len(tags))
        self.assertEqual(frames.stream_tag(3, 1), frames.stream_tag(131, 1))
        built = stream_frames(tag=4)
        built.retag(77)
        self.assertEqual(77, frames.parse(built.frame(0))[0])

    def test_bad_mac_is_named(self):
        error = self.assertRaises(ValueError, frames.mac_bytes, '02:00:00')
        self.assertIn("'02:00:00'", str(error))


class FakeClock:
    """A clock that moves only when the sender sends or sleeps."""

    def __init__(self, send_s=1e-6, loop_s=2e-7):
        self.now = 100.0
        self.send_s = send_s
        self.loop_s = loop_s
        self.sent = []
        self.sleeps = []

    def clock(self):
        self.now += self.loop_s
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def wall_ns(self):
        return int(self.now * 1e9)

    def wall(self):
        return 1700000000.0

    def sender(self, name):
        def send(data):
            self.now += self.send_s
            self.sent.append((name, frames.parse(data)[1], self.now))
        return send

    def run(self, schedule, streams=('forward',)):
        senders = [(self.sender(name), stream_frames(direction=name))
                   for name in streams]
        return sender.send(senders, schedule, clock=self.clock,
                           wall_ns=self.wall_ns, sleep=self.sleep,
                           wall=self.wall)


class TestPacing(testtools.TestCase):

    def test_planned_frames(self):
        self.assertEqual(5000, pacing.planned_frames(5000, 1.0))
        self.assertEqual(1, pacing.planned_frames(0.1, 1.0))

    def test_due_and_wait(self):
        schedule = pacing.Schedule(1000.0, 2.0)
        self.assertEqual(2000, schedule.total)
        self.assertEqual(1, schedule.due(0.0, 0))
        self.assertEqual(11, schedule.due(0.0105, 0))
        self.assertEqual(5 + pacing.MAX_BURST, schedule.due(1.0, 5))
        self.assertEqual(2000, schedule.due(10.0, 1990))
        # Frame 11 is due at 11 ms: sleep until SPIN_S before it.
        self.assertAlmostEqual(0.011 - 0.0105 - pacing.SPIN_S,
                               schedule.wait_s(0.0105, 11))
        self.assertEqual(0.0, schedule.wait_s(0.011 - pacing.SPIN_S / 2,
                                              11))

    def test_cutoff_makes_a_shortfall_certain(self):
        schedule = pacing.Schedule(1000.0, 1.0, rate_tolerance=0.02)
        # Even all frames sent at the cutoff is below the tolerance.
        offered = pacing.offered_fps(schedule.total, pacing.sending_seconds(
            schedule.total, 0.0, schedule.cutoff_s, 1000.0))
        self.assertLess(offered, 1000.0 * 0.98)
        self.assertGreater(schedule.cutoff_s, 1.0 / 0.98)

    def test_sending_seconds(self):
        self.assertAlmostEqual(1.0, pacing.sending_seconds(1000, 5.0, 5.999,
                                                           1000))
        # Unpaced: the mean gap between frames stands for the last one's.
        self.assertAlmostEqual(1.1, pacing.sending_seconds(11, 0.0, 1.0))
        self.assertEqual(0.0, pacing.sending_seconds(0, 1.0, 2.0, 10))

    def test_bad_schedules(self):
        self.assertRaises(ValueError, pacing.Schedule, 0.0, 1.0)
        self.assertRaises(ValueError, pacing.Schedule, 10.0, 0.0)


class TestSender(testtools.TestCase):

    def test_on_schedule_every_frame_at_or_after_its_time(self):
        fake = FakeClock()
        schedule = pacing.Schedule(2000.0, 0.5)
        report = fake.run(schedule, streams=('forward', 'reverse'))
        self.assertEqual([1000, 1000], report['tx'])
        self.assertIsNone(report['error'])
        self.assertFalse(report['cut_off'])
        first = report['first']
        by_stream = {'forward': [], 'reverse': []}
        for name, seq, when in fake.sent:
            by_stream[name].append(seq)
            self.assertGreaterEqual(when - first, seq / 2000.0)
            # Not late either: the fake host is fast.
            self.assertLess(when - first, seq / 2000.0 + 1e-4)
        self.assertEqual(list(range(1000)), by_stream['forward'])
        self.assertEqual(by_stream['forward'], by_stream['reverse'])
        offered = pacing.offered_fps(1000, sender.sending_seconds(report)[0])
        self.assertAlmostEqual(2000.0, offered, delta=2000.0 * 0.001)
        # Between frames 500 us apart it slept instead of spinning.
        self.assertGreater(len(fake.sleeps), 900)

    def test_slow_host_is_cut_off_short_of_the_rate(self):
        fake = FakeClock(send_s=100e-6)  # 10 kfps at most
        schedule = pacing.Schedule(20000.0, 0.2, rate_tolerance=0.02)
        report = fake.run(schedule)
        self.assertTrue(report['cut_off'])
        self.assertLess(report['tx'][0], schedule.total)
        offered = pacing.offered_fps(report['tx'][0],
                                     sender.sending_seconds(report)[0])
        self.assertAlmostEqual(10000.0, offered, delta=200.0)
        # It stopped within a burst of the cutoff, not after sending all.
        self.assertLess(report['last'] - report['first'],
                        schedule.cutoff_s + pacing.MAX_BURST * 100e-6)

    def test_unpaced_runs_for_the_duration(self):
        fake = FakeClock(send_s=10e-6)
        report = fake.run(pacing.Schedule(None, 0.1))
        self.assertFalse(report['cut_off'])
        self.assertAlmostEqual(10000, report['tx'][0], delta=200)
        self.assertEqual([], fake.sleeps)

    def test_full_queue_is_retried_other_errors_stop(self):
        fake = FakeClock()
        calls = []

        def flaky(data):
            calls.append(frames.parse(data)[1])
            if len(calls) in (3, 4):
                raise OSError(105, 'No buffer space available')
            if len(calls) == 8:
                raise OSError(100, 'Network is down')

        report = sender.send([(flaky, stream_frames())],
                             pacing.Schedule(1000.0, 1.0), clock=fake.clock,
                             wall_ns=fake.wall_ns, sleep=fake.sleep,
                             wall=fake.wall)
        self.assertEqual([0, 1, 2, 2, 2, 3, 4, 5], calls)
        self.assertEqual(2, report['retries'])
        self.assertEqual([5], report['tx'])
        self.assertIn('Network is down', report['error'])


class TestStreamCounter(testtools.TestCase):

    def test_counts_order_duplicates_and_delays(self):
        counter = receiver.StreamCounter('forward', planned=10,
                                         sample_cap=100)
        for seq, delay in ((0, 500), (2, 700), (1, 600), (2, 800),
                           (3, 400), (12, 1)):
            counter.add(seq, delay)
        report = counter.report()
        self.assertEqual(4, report['rx'])
        self.assertEqual(1, report['duplicates'])
        self.assertEqual(1, report['out_of_order'])
        self.assertEqual(1, report['beyond_plan'])
        self.assertEqual((400, 700, 2200),
                         (report['min_ns'], report['max_ns'],
                          report['sum_ns']))
        samples = receiver.samples_from(report)
        self.assertEqual([(0, 500.0), (2, 700.0), (1, 600.0), (2, 800.0),
                          (3, 400.0)], samples)
        # The engine's statistics read the same story from the samples.
        summary = latency.summarize([trial.LatencyRecord(
            min_ns=400.0, avg_ns=550.0, max_ns=700.0, samples=samples)])
        self.assertEqual((1, 1), (summary['out_of_order'],
                                  summary['duplicates']))

    def test_sample_cap_keeps_whole_blocks_across_the_trial(self):
        planned = 40 * receiver.SAMPLE_BLOCK
        counter = receiver.StreamCounter('forward', planned,
                                         sample_cap=planned // 4)
        for seq in range(planned):
            counter.add(seq, 1000 + seq % 7)
        samples = receiver.samples_from(counter.report())
        self.assertEqual(4, counter.stride)
        self.assertEqual(receiver.SAMPLE_BLOCK, counter.block)
        self.assertLessEqual(len(samples), planned // 4)
        blocks = sorted({seq // receiver.SAMPLE_BLOCK for seq, _ in samples})
        self.assertEqual(list(range(0, 40, 4)), blocks)
        self.assertEqual(planned, counter.rx)
        self.assertEqual(1000, counter.min_ns)
        self.assertEqual(1006, counter.max_ns)
        # Consecutive pairs survive: IPDV is available.
        summary = latency.summarize([trial.LatencyRecord(
            min_ns=1000.0, avg_ns=1003.0, max_ns=1006.0, samples=samples)])
        self.assertGreater(summary['ipdv_ns']['count'], 0)

    def test_small_caps_still_spread_blocks(self):
        counter = receiver.StreamCounter('forward', 1000, sample_cap=100)
        for seq in range(1000):
            counter.add(seq, 5)
        seqs = [seq for seq, _d in receiver.samples_from(counter.report())]
        self.assertEqual(100, len(seqs))
        self.assertEqual(10, counter.block)
        self.assertEqual(900, max(seqs) // 10 * 10)

    def test_no_samples_without_latency(self):
        counter = receiver.StreamCounter('forward', 10, sample_cap=0)
        counter.add(1, 10)
        self.assertEqual([], receiver.samples_from(counter.report()))
        self.assertEqual(1, counter.rx)

    def test_wrong_source_mac_is_counted(self):
        counter = receiver.StreamCounter('forward', 10,
                                         last_hop_mac='02:00:00:00:00:09')
        counter.add(0, 10, frames.mac_bytes('02:00:00:00:00:09'))
        counter.add(1, 10, frames.mac_bytes(LEFT))
        self.assertEqual(2, counter.rx)
        self.assertEqual({LEFT: 1}, counter.report()['wrong_sources'])


class FakeSocket:
    def __init__(self, queue):
        self.queue = list(queue)

    def recvmsg(self, size, ancillary_size):
        if not self.queue:
            raise BlockingIOError()
        data, rx_ns, pkttype = self.queue.pop(0)
        ancillary = [] if rx_ns is None else [
            (1, receiver.sockets.SCM_TIMESTAMPNS,
             struct.pack('@qq', rx_ns // 10 ** 9, rx_ns % 10 ** 9))]
        address = ('right', 0x800, pkttype, 1, b'')
        return bytes(data[:size]), ancillary, 0, address


class TestEndpoint(testtools.TestCase):

    def test_sorts_frames_and_takes_the_kernel_time(self):
        ours = stream_frames(tag=6)
        flooded = frames.StreamFrames(((64, 1),), 1, '02:00:00:00:00:07',
                                      LEFT, 'forward', 6)
        stale = stream_frames(tag=4)
        queue = [
            (bytes(ours.frame(0, tx_ns=10 ** 9)), 10 ** 9 + 2500, 0),
            (bytes(flooded.frame(1, tx_ns=5)), 10 ** 9, 3),
            (bytes(stale.frame(2, tx_ns=5)), 10 ** 9, 0),
            (b'\x00' * 60, 10 ** 9, 0),
            (bytes(ours.frame(1, tx_ns=2 * 10 ** 9)), None, 0),
            (bytes(ours.frame(2, tx_ns=3 * 10 ** 9)), 3 * 10 ** 9 + 900, 4),
        ]
        counter = receiver.StreamCounter('forward', 10, sample_cap=10)
        endpoint = receiver.Endpoint('right', FakeSocket(queue), RIGHT,
                                     {6: counter}, ignores_outgoing=False)
        self.assertFalse(endpoint.read())
        self.assertEqual(2, counter.rx)
        self.assertEqual([(0, 2500.0)],
                         receiver.samples_from(counter.report())[:1])
        report = endpoint.report()
        self.assertEqual((1, 1, 1, 1, 1), (
            report['other_destination'], report['unknown_tag'],
            report['foreign'], report['no_timestamp'],
            report['own_outgoing']))

    def test_stop_message_round_trip(self):
        message = receiver.encode_stop({6: 5000, 7: 4999})
        self.assertEqual({6: 5000, 7: 4999}, receiver.decode_stop(message))
        self.assertIsNone(receiver.decode_stop(b''))
