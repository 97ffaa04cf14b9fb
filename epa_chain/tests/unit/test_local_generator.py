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

"""The AF_PACKET generator (local/afpacket.py): options, results, errors.

No root and no namespace: a trial's full machinery (forked sender and
receiver, control pipe, reports) runs over AF_UNIX socket pairs standing
in for the veth ends; traffic/ has its own tests
(test_local_generator_traffic).
"""

import importlib.machinery
import importlib.util
import json
import os
import socket
import sys
import time
import warnings

import fixtures
import testtools

from epa_chain.chain import directions as chain_directions
from epa_chain import generators
from epa_chain.local import afpacket
from epa_chain.local.traffic import netns
from epa_chain.local.traffic import pacing
from epa_chain.local.traffic import receiver
from epa_chain.local.traffic import results
from epa_chain.local.traffic import sockets
from epa_chain.local.traffic import workers
from epa_chain.measurement import guards
from epa_chain.measurement import trial
from epa_chain.tests import repo

LEFT_MAC = '02:00:00:00:00:01'
RIGHT_MAC = '02:00:00:00:00:02'
ENDPOINTS = [{'name': 'left', 'interface': 'left', 'mac': LEFT_MAC},
             {'name': 'right', 'interface': 'right', 'mac': RIGHT_MAC}]
STREAMS = [{'direction': 'forward', 'tx': 'left', 'rx': 'right',
            'dst_mac': RIGHT_MAC},
           {'direction': 'reverse', 'tx': 'right', 'rx': 'left',
            'dst_mac': LEFT_MAC}]


def make(**options):
    arguments = {'netns': 'afp-unit', 'endpoints': ENDPOINTS,
                 'streams': STREAMS}
    arguments.update(options)
    return afpacket.AfPacketGenerator(**arguments)


def spec(load, duration=1.0, directions=('forward',), latency=False,
         size=64):
    profile = trial.TrafficProfile(frame_size=trial.FrameSize(size=size),
                                   directions=directions)
    return trial.TrialSpec(profile=profile, load_fps=load,
                           duration_s=duration, measure_latency=latency)


class TestOptions(testtools.TestCase):

    def test_registry_builds_it_from_plain_data(self):
        self.assertIn('afpacket', generators.names())
        made = generators.create('afpacket', netns='afp-unit',
                                 endpoints=ENDPOINTS, streams=STREAMS)
        self.assertIsInstance(made, afpacket.AfPacketGenerator)
        self.assertEqual(afpacket.Endpoint('left', 'left', LEFT_MAC),
                         made.endpoints['left'])
        self.assertEqual(0.02, made.rate_tolerance)
        self.assertEqual(10e9, made.link_bps)

    def test_its_old_name_still_builds_it_and_warns(self):
        self.assertNotIn('local', generators.names())
        self.assertTrue(generators.known('local'))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            made = generators.create('local', netns='afp-unit',
                                     endpoints=ENDPOINTS, streams=STREAMS)
            sys.modules.pop('epa_chain.local.generator', None)
            from epa_chain.local import generator as old_module
        self.assertIsInstance(made, afpacket.AfPacketGenerator)
        self.assertIs(afpacket.AfPacketGenerator, old_module.LocalGenerator)
        self.assertEqual([DeprecationWarning] * 2,
                         [w.category for w in caught])

    def test_the_local_bed_offers_the_registrys_kinds(self):
        from epa_chain.local import plan
        from epa_chain.tests import cli_options

        self.assertEqual(('prox', 'afpacket'), generators.local_kinds())
        self.assertEqual(generators.local_kinds(), plan.GENERATORS)
        for action in ('run', 'up'):
            self.assertEqual(list(generators.local_kinds()), list(
                cli_options.actions('local', action)['--generator'].choices))
        # and the benchmark comparing them
        loader = importlib.machinery.SourceFileLoader(
            'local_generator_benchmark', os.path.join(
                repo.ROOT, 'tools', 'local-generator-benchmark'))
        tool = importlib.util.module_from_spec(
            importlib.util.spec_from_loader(loader.name, loader))
        loader.exec_module(tool)
        self.assertEqual(generators.local_kinds(), tool.GENERATORS)

    def test_lists_may_come_as_json_text(self):
        made = make(endpoints=json.dumps(ENDPOINTS),
                    streams=json.dumps(STREAMS[:1]))
        self.assertEqual(['forward'], list(made.streams))
        error = self.assertRaises(ValueError, make, streams='[{')
        self.assertIn('streams', str(error))
        self.assertIn('not JSON', str(error))

    def test_describe(self):
        described = make().describe()
        self.assertEqual('afpacket', described['name'])
        self.assertEqual('afp-unit', described['netns'])
        self.assertEqual('SO_TIMESTAMPNS (kernel rx)',
                         described['timestamping'])
        self.assertEqual(['forward', 'reverse'],
                         [s['direction'] for s in described['streams']])
        self.assertEqual(2, len(described['endpoints']))

    def test_bad_options_name_the_field(self):
        cases = [
            ({'netns': ''}, 'netns'),
            ({'endpoints': []}, 'endpoints'),
            ({'endpoints': [dict(ENDPOINTS[0], mac='nope'), ENDPOINTS[1]]},
             'endpoints[left].mac'),
            ({'endpoints': ENDPOINTS + [ENDPOINTS[0]]}, 'unique'),
            ({'endpoints': [dict(ENDPOINTS[0], colour='red')]}, 'colour'),
            ({'streams': [dict(STREAMS[0], direction='up')]},
             'streams[].direction'),
            ({'streams': [STREAMS[0], STREAMS[0]]}, 'one stream per'),
            ({'streams': [dict(STREAMS[0], rx='middle')]},
             'streams[forward].rx'),
            ({'streams': [dict(STREAMS[0], dst_mac='02:00')]},
             'streams[forward].dst_mac'),
            ({'rate_tolerance': 0.9}, 'rate_tolerance'),
            ({'drain_s': -1}, 'drain_s'),
            ({'max_latency_samples': 'many'}, 'max_latency_samples'),
        ]
        for options, named in cases:
            error = self.assertRaises(ValueError, make, **options)
            self.assertIn(named, str(error), options)

    def test_missing_namespace_is_a_generator_error(self):
        generator = make(netns='afp-unit-does-not-exist')
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(1000.0, 0.1))
        self.assertEqual(results.SOCKET_ERROR, error.cause)
        self.assertIn('ip netns add afp-unit-does-not-exist', error.detail)

    def test_unconfigured_direction_and_closed(self):
        generator = make(streams=STREAMS[:1])
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(1000.0, directions=('reverse',)))
        self.assertEqual(afpacket.UNSUPPORTED_TRIAL, error.cause)
        generator.close()
        generator.close()
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(1000.0))
        self.assertEqual(afpacket.CLOSED, error.cause)


def stream_report(rx, planned, direction='forward', sample_cap=100):
    counter = receiver.StreamCounter(direction, planned, sample_cap)
    for seq in range(rx):
        counter.add(seq, 1000 + seq)
    return counter.report()


def reports(tx=(1000,), rx=(1000,), first=10.0, last=10.999, rate=1000.0,
            cut_off=False, dropped=0):
    planned = [results.PlannedStream(d, tag, 1000) for d, tag in
               zip(chain_directions.DIRECTIONS, (8, 9))][:len(tx)]
    sent = {'tx': list(tx), 'first': first, 'last': last,
            'started_at': 1.7e9, 'cut_off': cut_off, 'retries': 0,
            'error': None, 'rate_fps': rate}
    received = {
        'streams': {p.tag: stream_report(count, p.planned, p.direction)
                    for p, count in zip(planned, rx)},
        'endpoints': [{'endpoint': 'right', 'other_destination': 3,
                       'unknown_tag': 0, 'foreign': 0, 'no_timestamp': 0,
                       'own_outgoing': 0}],
        'kernel_dropped': {'right': dropped}}
    return planned, sent, received


class TestAssemble(testtools.TestCase):

    def test_result_on_schedule(self):
        planned, sent, received = reports(tx=(1000, 1000), rx=(1000, 990))
        result = results.assemble(
            spec(1000.0, latency=True, directions=chain_directions.DIRECTIONS),
            planned, sent, received, 0.02)
        forward, reverse = result.directions
        self.assertAlmostEqual(1000.0, forward.offered_fps)
        self.assertAlmostEqual(990.0, reverse.achieved_fps)
        self.assertEqual((1000, 990), (reverse.tx_frames, reverse.rx_frames))
        self.assertEqual(1000.0, forward.latency.min_ns)
        self.assertEqual(1999.0, forward.latency.max_ns)
        self.assertAlmostEqual(1499.5, forward.latency.avg_ns)
        self.assertEqual(100, len(forward.latency.samples))
        self.assertAlmostEqual(1.0, result.duration_s)
        self.assertEqual(1.7e9, result.started_at)
        self.assertTrue(any('flooded' in note for note in result.notes))
        self.assertTrue(any('capped at 100' in note
                            for note in result.notes))

    def test_no_samples_unless_latency_is_measured(self):
        planned, sent, received = reports()
        result = results.assemble(spec(1000.0), planned, sent, received,
                                  0.02)
        record = result.directions[0].latency
        self.assertIsNone(record.samples)
        self.assertEqual(1000.0, record.min_ns)

    def test_shortfall_is_an_error_with_the_rates(self):
        # 1000 frames took 1.2 s: 833 fps of 1000 intended.
        planned, sent, received = reports(last=11.199)
        error = self.assertRaises(trial.GeneratorError, results.assemble,
                                  spec(1000.0), planned, sent, received,
                                  0.02)
        self.assertEqual(guards.RATE_SHORTFALL, error.cause)
        self.assertIn('intended 1000 fps, offered 833 fps', error.detail)
        # Within the tolerance it is a result.
        planned, sent, received = reports(last=11.015)
        results.assemble(spec(1000.0), planned, sent, received, 0.02)

    def test_cut_off_sender_is_a_shortfall(self):
        planned, sent, received = reports(tx=(700,), rx=(700,),
                                          last=11.5, cut_off=True)
        error = self.assertRaises(trial.GeneratorError, results.assemble,
                                  spec(1000.0), planned, sent, received,
                                  0.02)
        self.assertEqual(guards.RATE_SHORTFALL, error.cause)
        self.assertIn('sending stopped', error.detail)

    def test_receiver_overrun_and_worker_errors(self):
        planned, sent, received = reports(dropped=12)
        error = self.assertRaises(trial.GeneratorError, results.assemble,
                                  spec(1000.0), planned, sent, received,
                                  0.02)
        self.assertEqual(results.RECEIVER_OVERRUN, error.cause)
        self.assertIn('right 12 frames', error.detail)
        planned, sent, received = reports()
        sent['error'] = 'sending frame 3 of stream 0: [Errno 100] down'
        error = self.assertRaises(trial.GeneratorError, results.assemble,
                                  spec(1000.0), planned, sent, received,
                                  0.02)
        self.assertEqual(results.SOCKET_ERROR, error.cause)

    def test_nothing_back_is_the_guards_stopped_forwarding(self):
        planned, sent, received = reports(rx=(0,))
        error = self.assertRaises(trial.GeneratorError, results.assemble,
                                  spec(1000.0), planned, sent, received,
                                  0.02)
        self.assertEqual(guards.STOPPED_FORWARDING, error.cause)


def _exit_with_three(_control_fd):
    os._exit(3)


def _hang(_control_fd):
    time.sleep(60)


def _echo_control(control_fd, suffix):
    return os.read(control_fd, 100) + suffix


class TestWorkers(testtools.TestCase):

    def test_report_comes_back(self):
        worker = workers.Worker('echo', _echo_control, b'!')
        worker.tell(b'hello')
        self.assertEqual(b'hello!', worker.report(10.0))
        worker.kill()

    def test_died_and_hung_workers(self):
        worker = workers.Worker('sender', _exit_with_three)
        error = self.assertRaises(workers.WorkerFailed, worker.report, 10.0)
        self.assertIn('sender process died (exit status 3)', str(error))
        worker = workers.Worker('receiver', _hang)
        pid = worker.pid
        error = self.assertRaises(workers.WorkerFailed, worker.report, 0.2)
        self.assertIn('within 0.2 s', str(error))
        self.assertRaises(ProcessLookupError, os.kill, pid, 0)

    def test_exception_becomes_an_error_report(self):
        worker = workers.Worker('sender', _echo_control, 'not bytes')
        worker.tell(b'x')
        report = worker.report(10.0)
        self.assertIn('TypeError', report['error'])


class FakeBed(fixtures.Fixture):
    """AF_UNIX datagram pairs instead of sockets in a namespace."""

    def _setUp(self):
        self.opened = []
        self.useFixture(fixtures.MonkeyPatch(
            'epa_chain.local.traffic.netns.run_in', self.run_in))
        # AF_UNIX has no PACKET_STATISTICS; the child inherits the patch.
        self.useFixture(fixtures.MonkeyPatch(
            'epa_chain.local.traffic.sockets.read_statistics',
            lambda sock: (0, 0)))

    def run_in(self, name, function, endpoints, streams, *args):
        tx_socks, rx_socks = [], {}
        for stream in streams:
            sending, receiving = socket.socketpair(socket.AF_UNIX,
                                                   socket.SOCK_DGRAM)
            receiving.setsockopt(socket.SOL_SOCKET,
                                 sockets.SO_TIMESTAMPNS, 1)
            receiving.setblocking(False)
            tx_socks.append(sending)
            rx_socks[stream.rx] = (receiving, True)
            self.opened.extend((sending, receiving))
        return tx_socks, rx_socks


class TestTrialOverSocketPairs(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.bed = self.useFixture(FakeBed())
        self.generator = make(drain_s=0.3)
        self.addCleanup(self.generator.close)

    def test_bidirectional_trial_delivers_every_frame(self):
        started = time.time()
        result = self.generator.run_trial(spec(
            2000.0, duration=0.25, directions=chain_directions.DIRECTIONS,
            latency=True))
        self.assertLess(time.time() - started, 2.0)
        self.assertEqual(['forward', 'reverse'],
                         [d.direction for d in result.directions])
        for direction in result.directions:
            self.assertEqual(500, direction.tx_frames)
            self.assertEqual(500, direction.rx_frames)
            self.assertAlmostEqual(2000.0, direction.offered_fps,
                                   delta=2000.0 * 0.02)
            samples = direction.latency.samples
            self.assertEqual(list(range(500)), [seq for seq, _d in samples])
            self.assertGreater(direction.latency.min_ns, 0)
        self.assertGreaterEqual(result.started_at, started)
        # Every socket the generator got was closed afterwards.
        self.assertTrue(all(sock.fileno() == -1 for sock in self.bed.opened))

    def test_frames_of_an_earlier_trial_are_not_counted(self):
        # About counting, not pacing: a 50 ms trial on a loaded 2-CPU host
        # (stestr's other worker) can start late, and a shortfall would
        # hide what this checks. Pacing has tests of its own.
        generator = make(drain_s=0.3, rate_tolerance=0.5)
        self.addCleanup(generator.close)
        generator.run_trial(spec(2000.0, duration=0.05))
        result = generator.run_trial(spec(2000.0, duration=0.05))
        self.assertEqual(100, result.directions[0].tx_frames)
        self.assertEqual(100, result.directions[0].rx_frames)

    def test_calibrate_reports_an_unpaced_rate(self):
        fps = self.generator.calibrate('64', seconds=0.1,
                                       directions=('forward',))
        self.assertGreater(fps, 2000.0)
        calibration = self.generator.describe()['calibration']
        self.assertEqual(fps, calibration['fps'])
        self.assertEqual(['forward'], calibration['directions'])
        self.assertGreater(calibration['tx_frames'][0], 200)

    def test_impossible_rate_is_a_shortfall(self):
        error = self.assertRaises(trial.GeneratorError,
                                  self.generator.run_trial,
                                  spec(5e7, duration=0.05))
        self.assertEqual(guards.RATE_SHORTFALL, error.cause)
        self.assertIn('intended 50000000 fps', error.detail)


class TestNetnsHelper(testtools.TestCase):

    def test_missing_namespace_says_how_to_create_it(self):
        error = self.assertRaises(ValueError, netns.check_exists,
                                  'afp-unit-none')
        self.assertIn('ip netns add afp-unit-none', str(error))
        self.assertRaises(ValueError, netns.check_exists, '../etc')

    def test_pacing_constants_are_sane(self):
        self.assertGreater(pacing.MAX_BURST, 1)
        self.assertLess(pacing.SPIN_S, 1e-3)
