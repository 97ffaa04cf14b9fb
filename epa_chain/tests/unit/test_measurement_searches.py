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

"""Each search on the model with a known NDR lands within its resolution.

"Within its resolution": the search's lower bound meets the goal on the
model's noiseless curve, its upper bound misses it, so the true answer
lies between them, and (upper - lower) / upper is at most the resolution
asked for (one step of max load for the linear sweep).
"""

import statistics

import testtools

from epa_chain.generators import model
from epa_chain.measurement import campaign
from epa_chain.measurement import guards
from epa_chain.measurement import results
from epa_chain.measurement.searches import common
from epa_chain.measurement.searches import rfc2544
from epa_chain.measurement import trial

GOALS = {'NDR': 0.0, 'PDR': 0.005}
# Known answers that are not round fractions of the search interval.
NDRS = (1.37e6, 4.0e6, 9.13e6)


def run(sut, method, sizes=('64',), **overrides):
    options = dict(frame_sizes=list(sizes), flow_counts=[1],
                   directions=('forward', 'reverse'), method=method,
                   loss_goals=dict(GOALS), latency_duration_s=0,
                   trial_duration_s=60.0, repetitions=3)
    options.update(overrides)
    document = campaign.run(sut, campaign.Campaign(**options))
    return document


class TestBinarySearch(testtools.TestCase):

    def test_bisection_stops_at_the_resolution(self):
        threshold = 0.6180339
        tried = []

        def step(load):
            tried.append(load)
            return load <= threshold
        lower, upper, status = rfc2544.binary_search(step, 0.001, 1.0, 0.01)
        self.assertEqual(common.STATUS_FOUND, status)
        self.assertLessEqual(lower, threshold)
        self.assertGreater(upper, threshold)
        self.assertLessEqual((upper - lower) / upper, 0.01)
        self.assertEqual(1.0, tried[0])  # RFC 2544 starts at the maximum

    def test_passing_maximum_is_one_trial(self):
        lower, upper, status = rfc2544.binary_search(lambda load: True,
                                                     0.1, 1.0, 0.01)
        self.assertEqual((1.0, None, common.STATUS_MAX_LOAD),
                         (lower, upper, status))

    def test_failing_minimum_has_no_lower_bound(self):
        lower, upper, status = rfc2544.binary_search(lambda load: False,
                                                     0.1, 1.0, 0.01)
        self.assertIsNone(lower)
        self.assertEqual(common.STATUS_BELOW_MIN, status)


class TestSearchesFindTheKnownAnswer(testtools.TestCase):

    def assert_within_resolution(self, sut, case, width_limit):
        frame_size = trial.FrameSize.parse(case['frame_size']['label'])
        self.assertIsNone(case['error'])
        for goal in case['search']['goals']:
            truth = sut.true_throughput_fps(frame_size, goal['loss_ratio'])
            label = '%s %s truth %.0f' % (case['frame_size']['label'],
                                          goal['name'], truth)
            self.assertEqual(common.STATUS_FOUND, goal['status'], label)
            self.assertLessEqual(goal['lower_fps'], truth * (1 + 1e-9),
                                 label)
            self.assertGreater(goal['upper_fps'], truth, label)
            self.assertLessEqual(goal['relative_width'], width_limit, label)
            self.assertLessEqual(goal['throughput_fps'], goal['lower_fps'])

    def test_rfc2544_mlrsearch_best_worst(self):
        for method in ('rfc2544', 'mlrsearch', 'best-of-n', 'worst-of-n'):
            for ndr in NDRS:
                sut = model.ModelGenerator(ndr_fps=ndr)
                document = run(sut, method, resolution=0.005)
                self.assert_within_resolution(sut, document['cases'][0],
                                              0.005 + 1e-9)

    def test_coarser_resolution_takes_fewer_trials(self):
        counts = {}
        for resolution in (0.05, 0.005):
            sut = model.ModelGenerator(ndr_fps=NDRS[0])
            document = run(sut, 'rfc2544', resolution=resolution)
            self.assert_within_resolution(sut, document['cases'][0],
                                          resolution + 1e-9)
            counts[resolution] = document['totals']['trials']
        self.assertLess(counts[0.05], counts[0.005])

    def test_linear_sweep_within_one_step(self):
        for ndr in NDRS:
            sut = model.ModelGenerator(ndr_fps=ndr)
            document = run(sut, 'linear', linear_steps=100)
            case = document['cases'][0]
            step = case['max_load_fps'] / 100
            self.assertEqual(100, len(case['search']['details']['sweep']))
            for goal in case['search']['goals']:
                self.assertAlmostEqual(step, goal['upper_fps'] -
                                       goal['lower_fps'], delta=1e-6 * step)
            self.assert_within_resolution(sut, case, 1.0)

    def test_best_and_worst_run_n_trials_per_step(self):
        sut = model.ModelGenerator(ndr_fps=NDRS[1])
        document = run(sut, 'best-of-n', repetitions=4, resolution=0.05)
        search_trials = [t for t in document['cases'][0]['trials']
                         if t['phase'] == 'search']
        steps = {(t['tags']['goal'], t['tags']['step'])
                 for t in search_trials}
        self.assertEqual(4 * len(steps), len(search_trials))

    def test_max_load_and_below_min(self):
        sut = model.ModelGenerator(ndr_fps=4e6)
        for method in ('rfc2544', 'mlrsearch'):
            big = run(sut, method, sizes=('1518',))['cases'][0]
            for goal in big['search']['goals']:
                self.assertEqual(common.STATUS_MAX_LOAD, goal['status'])
                self.assertEqual(big['line_rate_fps'], goal['throughput_fps'])
        weak = model.ModelGenerator(ndr_fps=1e3, knee_fps=1.1e3,
                                    knee_loss=0.001)
        for method in ('rfc2544', 'mlrsearch'):
            case = run(weak, method, min_load_fps=1e5)['cases'][0]
            for goal in case['search']['goals']:
                self.assertEqual(common.STATUS_BELOW_MIN, goal['status'])
                self.assertIsNone(goal['throughput_fps'])

    def test_mlrsearch_uses_short_trials_then_full_ones(self):
        sut = model.ModelGenerator(ndr_fps=NDRS[1])
        document = run(sut, 'mlrsearch', mlr_initial_trial_duration_s=1.0)
        durations = [t['duration_s'] for t in document['cases'][0]['trials']]
        self.assertEqual(1.0, durations[0])
        self.assertEqual(60.0, max(durations))
        rfc = run(model.ModelGenerator(ndr_fps=NDRS[1]), 'rfc2544')
        self.assertLess(document['totals']['trial_seconds'],
                        rfc['totals']['trial_seconds'])


class Scripted(model.ModelGenerator):
    """The model, but the first trials lose what a script says."""

    def __init__(self, losses, **options):
        super().__init__(**options)
        self.losses = list(losses)

    def _trial_loss(self, load_fps, flows, duration_s):
        if self.losses:
            return self.losses.pop(0)
        return super()._trial_loss(load_fps, flows, duration_s)


class TestLossVerification(testtools.TestCase):
    """RFC 9004's loss verification: a narrow miss runs again."""

    def search(self, losses, **overrides):
        sut = Scripted(losses, ndr_fps=NDRS[0])
        document = run(sut, 'rfc2544', loss_goals={'NDR': 0.0},
                       directions=('forward',), **overrides)
        return document['cases'][0]

    def test_off_by_default(self):
        case = self.search([1e-5])
        self.assertEqual([{'goal': 'NDR'}] * len(case['trials']),
                         [t['tags'] for t in case['trials']])
        self.assertEqual({}, case['search']['goals'][0]['details'])

    def test_a_narrow_miss_passes_on_a_repeat_tagged_as_one(self):
        # Line rate fails clearly; the first halving misses by 10 ppm.
        case = self.search([0.5, 1e-5, 1e-5, 0.0],
                           loss_verification_repeats=3)
        trials = case['trials']
        self.assertEqual([{'goal': 'NDR'}, {'goal': 'NDR'},
                          {'goal': 'NDR', 'verification': 1},
                          {'goal': 'NDR', 'verification': 2},
                          {'goal': 'NDR'}],
                         [t['tags'] for t in trials[:5]])
        self.assertEqual(trials[1]['intended_fps'],
                         trials[3]['intended_fps'])
        # The repeat passed: the search went on above that load.
        self.assertGreater(trials[4]['intended_fps'],
                           trials[3]['intended_fps'])
        details = case['search']['goals'][0]['details']
        self.assertEqual(2, details['verification_repeats'])
        self.assertEqual(1, details['loads_passed_on_repeat'])

    def test_a_clear_miss_and_the_last_repeat_fail(self):
        clear = self.search([0.5, 0.01], loss_verification_repeats=3)
        self.assertNotIn('verification', clear['trials'][2]['tags'])
        self.assertLess(clear['trials'][2]['intended_fps'],
                        clear['trials'][1]['intended_fps'])
        spent = self.search([0.5, 1e-5, 1e-5], loss_verification_repeats=1)
        self.assertEqual({'goal': 'NDR'}, spent['trials'][3]['tags'])
        self.assertLess(spent['trials'][3]['intended_fps'],
                        spent['trials'][1]['intended_fps'])

    def test_a_few_lost_frames_are_a_narrow_miss(self):
        case = self.search([0.5, 0.01, 0.0], loss_verification_repeats=1,
                           loss_verification_ratio=0.0,
                           loss_verification_frames=10 ** 7)
        self.assertEqual({'goal': 'NDR', 'verification': 1},
                         case['trials'][2]['tags'])


class TestMlrDurationSum(testtools.TestCase):

    def test_the_goal_sums_full_trials(self):
        from epa_chain.measurement.searches import mlr
        plan = campaign.Campaign(trial_duration_s=60.0,
                                 search_profile='noise-robust')
        goal = mlr.goals_for(plan)[0]
        self.assertEqual(180.0, goal.duration_sum)
        self.assertEqual(0.5, goal.exceed_ratio)
        plain = mlr.goals_for(campaign.Campaign(trial_duration_s=60.0))[0]
        self.assertEqual((60.0, 0.0), (plain.duration_sum,
                                       plain.exceed_ratio))

    def test_no_preceding_target_with_a_longer_sum(self):
        from epa_chain.measurement.searches import mlr
        plan = campaign.Campaign(trial_duration_s=1.0,
                                 mlr_initial_trial_duration_s=1.0,
                                 mlr_preceding_targets=0,
                                 mlr_duration_sum_trials=3.0)
        self.assertEqual(1, mlr.goals_for(plan)[0].preceding_targets)


class TestNoiseBrackets(testtools.TestCase):
    """EANTC (seed 002): single runs fall between Worst-of-N and Best-of-N.

    With transient losses and a jittering curve, one run's result depends
    on luck; over several seeds the single runs' median lies between the
    medians of Worst-of-N and Best-of-N, and Best-of-N never reports less
    than Worst-of-N on the same seed.
    """

    def ndr(self, method, seed):
        sut = model.ModelGenerator(ndr_fps=4e6, jitter=0.01,
                                   spurious_rate=0.004, seed=seed)
        document = run(sut, method, repetitions=5, resolution=0.01,
                       loss_goals={'NDR': 0.0})
        return document['cases'][0]['search']['goals'][0]['throughput_fps']

    def test_best_and_worst_bracket_single_runs(self):
        seeds = range(1, 10)
        single = [self.ndr('rfc2544', seed) for seed in seeds]
        best = [self.ndr('best-of-n', seed) for seed in seeds]
        worst = [self.ndr('worst-of-n', seed) for seed in seeds]
        self.assertGreater(len(set(single)), 1, 'noise had no effect')
        self.assertLessEqual(statistics.median(worst),
                             statistics.median(single))
        self.assertLessEqual(statistics.median(single),
                             statistics.median(best))
        self.assertLess(statistics.median(worst), statistics.median(best))
        for low, high in zip(worst, best):
            self.assertLessEqual(low, high)


class TestProgress(testtools.TestCase):

    def test_a_trial_sent_longer_than_asked_says_so(self):
        class LongerSender(trial.Generator):
            name = 'longer'
            link_bps = 10e9

            def run_trial(self, spec):
                sent = spec.duration_s * (1.9 if spec.measure_latency else 1)
                frames = int(spec.load_fps * sent)
                return trial.TrialResult(spec, [trial.DirectionResult(
                    'forward', spec.load_fps, spec.load_fps, spec.load_fps,
                    frames, frames)], 0.0, sent)

        lines = []
        profile = trial.TrafficProfile(trial.FrameSize.parse('64'), 1,
                                       ('forward',))
        recorder = common.TrialRecorder(LongerSender(), profile, 'case',
                                        progress=lines.append)
        recorder.run(1800, 5, 'search')
        recorder.run(1800, 5, 'latency', measure_latency=True)
        self.assertIn('1,800 fps/dir (0.01 % line) for 5 s: loss', lines[0])
        self.assertIn('for 5 s (sent 9.5 s): loss', lines[1])


class FallsShort(trial.Generator):
    """Offers the asked rate, except in the trials listed in `short`."""

    name = 'falls-short'
    link_bps = 10e9
    rate_tolerance = 0.01

    def __init__(self, short, cause=guards.RATE_SHORTFALL):
        self.short = set(short)
        self.cause = cause
        self.calls = 0

    def run_trial(self, spec):
        self.calls += 1
        if self.calls in self.short:
            raise trial.GeneratorError(self.cause, 'forward: offered %d fps '
                                       'of %d' % (spec.load_fps * 0.6,
                                                  spec.load_fps))
        frames = int(spec.load_fps * spec.duration_s)
        return trial.TrialResult(spec, [trial.DirectionResult(
            'forward', spec.load_fps, spec.load_fps, spec.load_fps,
            frames, frames)], 0.0, spec.duration_s)


class TestInvalidTrials(testtools.TestCase):

    def recorder(self, generator, retries):
        self.lines = []
        profile = trial.TrafficProfile(trial.FrameSize.parse('64'), 1,
                                       ('forward',))
        return common.TrialRecorder(generator, profile, 'case',
                                    progress=self.lines.append,
                                    retries=retries)

    def test_a_shortfall_runs_again_and_is_recorded(self):
        recorder = self.recorder(FallsShort({2, 3}), retries=2)
        recorder.run(2000, 1, 'search')
        recorder.run(2000, 2, 'search')
        self.assertEqual(2, recorder.count)
        self.assertEqual([1, 1], [i['before_trial']
                                  for i in recorder.invalid])
        self.assertEqual(guards.RATE_SHORTFALL, recorder.invalid[0]['cause'])
        self.assertEqual('forward: offered 1200 fps of 2000',
                         recorder.invalid[1]['detail'])
        self.assertIn('case: trial 2 search: invalid, the generator cannot '
                      'reach the intended rate', self.lines[1])
        self.assertIn('running it again (2 of 2)', self.lines[2])

    def test_retries_run_out(self):
        recorder = self.recorder(FallsShort({1, 2}), retries=1)
        error = self.assertRaises(trial.GeneratorError, recorder.run, 2000,
                                  1, 'search')
        self.assertEqual(guards.RATE_SHORTFALL, error.cause)
        self.assertEqual(1, len(recorder.invalid))
        self.assertEqual(0, recorder.count)

    def test_no_retries_by_default(self):
        recorder = self.recorder(FallsShort({1}), retries=0)
        self.assertRaises(trial.GeneratorError, recorder.run, 2000, 1,
                          'search')
        self.assertEqual([], recorder.invalid)

    def test_a_moments_preemption_runs_the_trial_again(self):
        # frames of an earlier trial arriving late; a generator that
        # stopped answering for a while
        for cause in (guards.COUNTERS_INCONSISTENT,
                      guards.GENERATOR_STALLED):
            generator = FallsShort({1}, cause=cause)
            recorder = self.recorder(generator, retries=1)
            recorder.run(2000, 1, 'search')
            self.assertEqual(2, generator.calls)
            (invalid,) = recorder.invalid
            self.assertEqual(cause, invalid['cause'])

    def test_a_chain_that_stops_forwarding_is_not_run_again(self):
        generator = FallsShort({1}, cause=guards.STOPPED_FORWARDING)
        recorder = self.recorder(generator, retries=2)
        self.assertRaises(trial.GeneratorError, recorder.run, 2000, 1,
                          'search')
        self.assertEqual(1, generator.calls)

    def test_the_results_hold_the_invalid_trials(self):
        plan = campaign.Campaign(
            frame_sizes=[trial.FrameSize(size=64)], flow_counts=[1],
            directions=('forward',), method='rfc2544', max_load_fps=2000,
            trial_duration_s=1.0, latency_duration_s=0,
            invalid_trial_retries=1)
        document = campaign.run(FallsShort({1}), plan)
        results.validate(document)
        (case,) = document['cases']
        self.assertIsNone(case['error'])
        (invalid,) = case['totals']['invalid_trials']
        self.assertEqual((0, 'search', 2000), (
            invalid['before_trial'], invalid['phase'],
            invalid['intended_fps']))
        self.assertEqual(1, document['parameters']['invalid_trial_retries'])
