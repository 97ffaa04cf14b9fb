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

"""The model of a system under test: known loss curve, virtual clock."""

import inspect
import os
import shutil
import sys
import tempfile
import time

import testtools

from epa_chain import generators
from epa_chain.generators import model
from epa_chain.generators import options
from epa_chain.measurement import trial

SIXTY_FOUR = trial.FrameSize(size=64)


def spec(load, duration=60.0, directions=('forward',), latency=False,
         frame_size=SIXTY_FOUR, flows=1):
    profile = trial.TrafficProfile(frame_size=frame_size, flows=flows,
                                   directions=directions)
    return trial.TrialSpec(profile=profile, load_fps=load,
                           duration_s=duration, measure_latency=latency)


class TestLossCurve(testtools.TestCase):

    def test_lossless_up_to_ndr_then_rising(self):
        sut = model.ModelGenerator(ndr_fps=2e6, knee_fps=3e6, knee_loss=0.02)
        self.assertEqual(0.0, sut.run_trial(spec(2e6)).loss_ratio)
        losses = [sut.run_trial(spec(load)).loss_ratio
                  for load in (2.1e6, 2.5e6, 3e6, 4e6, 6e6)]
        self.assertGreater(losses[0], 0.0)
        self.assertEqual(sorted(losses), losses)
        # Above the knee the SUT forwards knee * (1 - knee_loss) at most.
        result = sut.run_trial(spec(6e6))
        forwarded = result.rx_frames / 60.0
        self.assertAlmostEqual(3e6 * 0.98, forwarded, delta=3e6 * 1e-6)

    def test_threshold_inverts_the_curve(self):
        sut = model.ModelGenerator(ndr_fps=1.5e6, knee_loss=0.01)
        for ratio in (0.0, 0.001, 0.005, 0.01, 0.2):
            load = sut.threshold_fps(ratio)
            self.assertLessEqual(sut.loss_ratio_at(load), ratio + 1e-12)
            self.assertGreater(sut.loss_ratio_at(load * 1.001), ratio)

    def test_big_frames_are_limited_by_line_rate(self):
        sut = model.ModelGenerator(ndr_fps=4e6, link_bps=10e9)
        big = trial.FrameSize(size=1518)
        self.assertEqual(big.line_rate_fps(10e9),
                         sut.true_throughput_fps(big, 0.0))
        self.assertEqual(4e6, sut.true_throughput_fps(SIXTY_FOUR, 0.0))

    def test_flows_lower_the_curve_when_penalised(self):
        sut = model.ModelGenerator(ndr_fps=4e6, flow_penalty=0.1)
        self.assertLess(sut.threshold_fps(0.0, flows=1000),
                        sut.threshold_fps(0.0, flows=1))


class TestVirtualClock(testtools.TestCase):

    def test_long_trials_do_not_sleep_and_report_intended_duration(self):
        sut = model.ModelGenerator(epoch=1000.0)
        started = time.monotonic()
        outcomes = [sut.run_trial(spec(1e6, duration=60.0))
                    for _ in range(200)]
        self.assertLess(time.monotonic() - started, 2.0)
        self.assertEqual(200 * 60.0, sut.virtual_seconds)
        self.assertEqual(200, sut.trials_run)
        self.assertTrue(all(o.duration_s == 60.0 for o in outcomes))
        self.assertEqual(1000.0 + 60.0, outcomes[1].started_at)
        self.assertEqual(60 * 10 ** 6, outcomes[0].tx_frames)

    def test_seeded_noise_repeats(self):
        def losses(seed):
            sut = model.ModelGenerator(ndr_fps=4e6, jitter=0.02,
                                       spurious_rate=0.01, seed=seed)
            return [sut.run_trial(spec(3.9e6)).loss_ratio for _ in range(30)]
        self.assertEqual(losses(7), losses(7))
        self.assertNotEqual(losses(7), losses(8))

    def test_noise_is_non_monotonic_like_eantc(self):
        sut = model.ModelGenerator(ndr_fps=4e6, spurious_rate=0.05, seed=3)
        loads = [4e6 * step / 100 for step in range(60, 100)]
        lossy = [sut.run_trial(spec(load)).loss_ratio > 0 for load in loads]
        # Some loss below the NDR, and no loss again at a higher load.
        self.assertIn(True, lossy)
        first = lossy.index(True)
        self.assertIn(False, lossy[first:])


class TestLatency(testtools.TestCase):

    def test_samples_only_when_asked(self):
        sut = model.ModelGenerator(latency_samples=500)
        plain = sut.run_trial(spec(1e6, directions=('forward', 'reverse')))
        self.assertIsNone(plain.directions[0].latency)
        timed = sut.run_trial(spec(1e6, latency=True,
                                   directions=('forward', 'reverse')))
        for direction in timed.directions:
            record = direction.latency
            self.assertEqual(500, len(record.samples))
            self.assertGreaterEqual(record.min_ns, sut.base_latency_ns)
            self.assertLessEqual(record.min_ns, record.avg_ns)
            self.assertLessEqual(record.avg_ns, record.max_ns)

    def test_queueing_delay_grows_with_load(self):
        sut = model.ModelGenerator(ndr_fps=4e6, latency_samples=2000)
        light = sut.run_trial(spec(0.4e6, latency=True))
        heavy = sut.run_trial(spec(3.9e6, latency=True))
        self.assertLess(light.directions[0].latency.avg_ns,
                        heavy.directions[0].latency.avg_ns)

    def test_histogram_mode_bins_like_prox(self):
        sut = model.ModelGenerator(latency_mode='histogram', reorder=0.05,
                                   latency_samples=1000)
        record = sut.run_trial(spec(1e6, latency=True)).directions[0].latency
        self.assertIsNone(record.samples)
        self.assertEqual(model.HISTOGRAM_BUCKETS, len(record.histogram))
        self.assertEqual(1000, sum(count for _lo, _hi, count
                                   in record.histogram))
        self.assertGreater(record.out_of_order, 0)


class TestFaults(testtools.TestCase):

    def test_rate_cap_shows_in_offered_rate(self):
        sut = model.ModelGenerator(max_tx_fps=1e6)
        direction = sut.run_trial(spec(2e6)).directions[0]
        self.assertEqual(2e6, direction.intended_fps)
        self.assertAlmostEqual(1e6, direction.offered_fps)

    def test_stop_forwarding(self):
        sut = model.ModelGenerator(stop_forwarding_after=1)
        self.assertGreater(sut.run_trial(spec(1e5)).rx_frames, 0)
        self.assertEqual(0, sut.run_trial(spec(1e5)).rx_frames)

    def test_counter_reset_raises(self):
        sut = model.ModelGenerator(counter_reset_at=2)
        sut.run_trial(spec(1e6))
        sut.run_trial(spec(1e6))
        error = self.assertRaises(trial.GeneratorError, sut.run_trial,
                                  spec(1e6))
        self.assertIn('backwards', error.cause)

    def test_bad_option_names_the_option(self):
        error = self.assertRaises(ValueError, model.ModelGenerator,
                                  jitter='lots')
        self.assertIn('jitter', str(error))
        error = self.assertRaises(ValueError, model.ModelGenerator,
                                  latency_mode='sometimes')
        self.assertIn('samples', str(error))


class TestOptions(testtools.TestCase):
    """Generator options: one table, typed at the edge, checked always."""

    def test_the_table_is_the_model_s_keyword_arguments(self):
        accepted = list(inspect.signature(
            model.ModelGenerator.__init__).parameters)[1:]
        self.assertEqual(accepted, options.names('model'))

    def test_the_prox_table_names_keyword_arguments_of_the_prox_generator(
            self):
        from epa_chain.prox import generator
        from epa_chain.prox import traffic

        accepted = inspect.signature(generator.ProxGenerator.__init__)
        for name in options.names('prox'):
            self.assertIn(name, accepted.parameters)
        flow_mode = options.option('prox', 'flow_mode')
        self.assertEqual(traffic.FLOW_MODES, flow_mode.choices)

    def test_non_finite_and_out_of_range_values_are_refused(self):
        for name, value in (('link_bps', float('inf')),
                            ('jitter', float('nan')),
                            ('ndr_fps', -1.0), ('ndr_fps', float('-inf')),
                            ('knee_loss', 0.9), ('seed', 2.5),
                            ('seed', True), ('latency_samples', 10 ** 9),
                            ('max_tx_fps', 0.0), ('epoch', float('nan')),
                            ('base_latency_ns', 1e300),
                            ('knee_fps', 1e6), ('latency_mode', None)):
            error = self.assertRaises(options.OptionError,
                                      model.ModelGenerator,
                                      **{name: value})
            self.assertIn('model generator option %s=' % name, str(error))

    def test_text_is_parsed_once_into_typed_values(self):
        self.assertEqual(
            {'jitter': 0.01, 'seed': 4, 'latency_mode': 'off',
             'max_tx_fps': None, 'latency_samples': 10},
            options.from_text('model', {
                'jitter': '0.01', 'seed': '4', 'latency_mode': 'off',
                'max_tx_fps': 'None', 'latency_samples': '10'}))
        for name, text, fix in (
                ('jitter', 'nan', 'finite number in [0, 0.5]'),
                ('link_bps', 'inf', 'finite number'),
                ('seed', '1.5', 'whole number'),
                ('seed', 'none', 'whole number'),
                ('bogus', '1', 'no such option; known: link_bps, ndr_fps'),
                ('latency_mode', 'sometimes', 'samples, histogram, off')):
            error = self.assertRaises(options.OptionError, options.from_text,
                                      'model', {name: text})
            self.assertEqual(name, error.name)
            self.assertIn(fix, error.fix)

    def test_a_layout_must_be_a_small_regular_file(self):
        directory = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, directory)
        fifo = os.path.join(directory, 'fifo')
        os.mkfifo(fifo)
        big = os.path.join(directory, 'big.cfg')
        with open(big, 'w') as stream:
            stream.write('#' * (options.MAX_FILE_BYTES + 1))
        for path, reason in ((fifo, 'not a regular file'),
                             (directory, 'not a regular file'),
                             (big, 'larger than'),
                             (os.path.join(directory, 'no'), 'No such file')):
            error = self.assertRaises(options.OptionError, options.from_text,
                                      'prox', {'layout': path})
            self.assertIn(reason, error.fix)
        small = os.path.join(directory, 'gen.cfg')
        open(small, 'w').close()
        self.assertEqual({'layout': small},
                         options.from_text('prox', {'layout': small}))


class TestRegistry(testtools.TestCase):

    def test_model_by_name(self):
        self.assertIn('model', generators.names())
        self.assertIn('prox', generators.names())
        sut = generators.create('model', ndr_fps=1e6)
        self.assertIsInstance(sut, trial.Generator)
        self.assertEqual('model', sut.describe()['name'])
        self.assertTrue(sut.describe()['virtual_clock'])

    def test_unknown_name(self):
        error = self.assertRaises(ValueError, generators.create, 'ixia')
        self.assertIn('model', str(error))

    def test_choosing_the_model_does_not_import_prox(self):
        for name in [n for n in sys.modules if n.startswith('epa_chain.prox')]:
            self.addCleanup(sys.modules.__setitem__, name, sys.modules[name])
            del sys.modules[name]
        generators.create('model')
        self.assertNotIn('epa_chain.prox.generator', sys.modules)
