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

"""Chains measured together: the aggregate, each chain, the neighbours."""

import io
import json
import os
import shutil
import tempfile
import threading
from unittest import mock

import testtools

from epa_chain.generators import model
from epa_chain.local import runner
from epa_chain.measurement import campaign
from epa_chain.measurement import chain_tables
from epa_chain.measurement import density_curve
from epa_chain.measurement import latency
from epa_chain.measurement import report
from epa_chain.measurement import results
from epa_chain.measurement import together
from epa_chain.measurement import trial

BIDIR = ('forward', 'reverse')
# chain 1 carries 5e5 fps at 64 B beside the measured chain 0
NEIGHBOUR = {1: {'64': 5e5}}


def _spec(load, label='64', latency=False):
    return trial.TrialSpec(
        profile=trial.TrafficProfile(trial.FrameSize.parse(label),
                                     directions=BIDIR),
        load_fps=load, duration_s=1.0, measure_latency=latency)


def _chains(*ndrs, **options):
    return [model.ModelGenerator(ndr_fps=ndr, epoch=0, **options)
            for ndr in ndrs]


class TestTrialsTogether(testtools.TestCase):

    def test_the_load_is_split_and_the_counters_summed(self):
        members = _chains(1e6, 1e6)
        result = together.TogetherGenerator(members).run_trial(_spec(2e6))
        forward = result.directions[0]
        self.assertEqual(2e6, forward.intended_fps)
        self.assertEqual(2000000, forward.tx_frames)
        self.assertEqual([0, 1], [p.chain for p in forward.chains])
        self.assertEqual([1e6, 1e6],
                         [p.result.intended_fps for p in forward.chains])
        self.assertEqual([1, 1], [m.trials_run for m in members])
        self.assertEqual(0.0, result.loss_ratio)

    def test_one_slow_chain_is_the_aggregate_s_loss_and_is_named(self):
        members = _chains(1e6, 0.5e6)
        result = together.TogetherGenerator(members).run_trial(_spec(2e6))
        forward = result.directions[0]
        losses = {p.chain: p.result.loss_ratio for p in forward.chains}
        self.assertEqual(0.0, losses[0])
        self.assertGreater(losses[1], 0.3)
        self.assertAlmostEqual(losses[1] / 2, forward.loss_ratio, places=3)

    def test_background_chains_carry_their_own_load_beside(self):
        members = _chains(1e6, 1e6, 1e6)
        generator = together.TogetherGenerator(
            members, measured=(0,), background={1: {'64': 300.0},
                                                2: {'1518': 5.0}})
        result = generator.run_trial(_spec(1e5))
        forward = result.directions[0]
        self.assertEqual(1e5, forward.intended_fps)
        self.assertEqual(100000, forward.tx_frames)   # chain 0's only
        self.assertEqual([(0, 'measured', 1e5), (1, 'background', 300.0)],
                         [(p.chain, p.role, p.result.intended_fps)
                          for p in forward.chains])
        self.assertEqual(0, members[2].trials_run)  # no load for 64 B
        self.assertEqual(members[0].link_bps, generator.link_bps)

    def test_described_with_every_chain_and_the_loosest_tolerance(self):
        members = _chains(1e6, 1e6)
        members[1].rate_tolerance = 0.2
        described = together.TogetherGenerator(members).describe()
        self.assertEqual(0.2, described['rate_tolerance'])
        self.assertEqual(2, len(described['chains']))

    def test_a_chain_that_fails_fails_the_trial_by_name(self):
        members = _chains(1e6, 1e6)
        members[1].max_tx_fps = 10.0
        members[1].rate_tolerance = 0.01

        def short(spec, inner=members[1].run_trial):
            found = inner(spec)
            raise trial.GeneratorError('the generator cannot reach the '
                                       'intended rate', 'forward: %d fps'
                                       % found.directions[0].offered_fps)
        members[1].run_trial = short
        error = self.assertRaises(
            trial.GeneratorError,
            together.TogetherGenerator(members).run_trial, _spec(2e6))
        self.assertTrue(error.detail.startswith('chain 1: forward'),
                        error.detail)

    def test_a_chain_that_never_answers_is_a_stalled_generator(self):
        members = _chains(1e6, 1e6)
        release = threading.Event()
        self.addCleanup(release.set)
        members[1].run_trial = lambda spec: release.wait(30)
        self.patch(together, 'JOIN_GRACE_S', 0.2)
        error = self.assertRaises(
            trial.GeneratorError,
            together.TogetherGenerator(members).run_trial, _spec(2e6))
        self.assertIn('chain-1', error.detail)

    def test_calibration_is_the_slowest_times_the_measured(self):
        members = _chains(1e6, 1e6)
        members[0].calibrate = lambda frame_size: 300.0
        members[1].calibrate = lambda frame_size: 200.0
        generator = together.TogetherGenerator(members)
        self.assertEqual(400.0, generator.calibrate(trial.FrameSize(64)))
        alone = together.TogetherGenerator(members, measured=(0,))
        self.assertEqual(300.0, alone.calibrate(trial.FrameSize(64)))

    def test_measured_and_background_may_not_overlap(self):
        self.assertRaises(ValueError, together.TogetherGenerator,
                          _chains(1e6, 1e6), (0,), {0: {'64': 1.0}})


class TestMergedLatency(testtools.TestCase):

    def test_samples_are_pooled_apart(self):
        merged = together.merged_latency([
            (0, trial.LatencyRecord(10, 15, 20, samples=[(0, 10), (1, 20)])),
            (1, trial.LatencyRecord(30, 30, 30, samples=[(0, 30)]))])
        self.assertEqual((10, 30, 20.0), (merged.min_ns, merged.max_ns,
                                          merged.avg_ns))
        self.assertEqual(3, len({seq for seq, _d in merged.samples}))

    def test_histograms_pool_whatever_their_buckets(self):
        bins = [(0, 8, 2), (8, 16, 1)]
        merged = together.merged_latency([
            (0, trial.LatencyRecord(1, 5, 9, histogram=bins)),
            (1, trial.LatencyRecord(2, 7, 15, histogram=bins))])
        self.assertEqual([(0, 8, 2), (0, 8, 2), (8, 16, 1), (8, 16, 1)],
                         merged.histogram)
        # Two PROX guests' clocks: buckets a little apart, still pooled.
        other = together.merged_latency([
            (0, trial.LatencyRecord(1, 5, 9, histogram=bins)),
            (1, trial.LatencyRecord(2, 8, 15, histogram=[(0, 9, 1)]))])
        self.assertEqual(4, sum(n for _lo, _hi, n in other.histogram))
        # The mean weighted by each chain's frames: (5 x 3 + 8 x 1) / 4.
        self.assertEqual((1, 15, 5.75), (other.min_ns, other.max_ns,
                                         other.avg_ns))
        summary = latency.summarize([other])
        self.assertEqual(4, summary['count'])
        only_summaries = together.merged_latency([
            (0, trial.LatencyRecord(1, 5, 9)),
            (1, trial.LatencyRecord(2, 7, 15))])
        self.assertEqual((1, 15, 6.0), (only_summaries.min_ns,
                                        only_summaries.max_ns,
                                        only_summaries.avg_ns))
        self.assertIsNone(together.merged_latency([(0, None)]))


def _document(members, chain_count, **options):
    document = campaign.run(members, campaign.Campaign(
        frame_sizes=['64'], method='rfc2544', trial_duration_s=5.0,
        latency_duration_s=5.0, chain_length=1, directions=BIDIR))
    document['testbed'] = {
        'plan': {'bridges': [], 'ports': [], 'vnfs': [],
                 'directions': list(BIDIR)},
        'proof': {'ok': True, 'problems': [], 'learned': {}, 'hops': [],
                  'delivered': {}, 'flooded_during_probe': 0},
        'end_checks': {'learned': {'a': True}, 'all_learned': True,
                       'flooded_since_proof': 0},
        'vnf_count': 1, 'chain_count': chain_count,
        'timings': {'up_s': 1.0}}
    return document


class TestReported(testtools.TestCase):
    """The documents of chains measured together, as files and tables."""

    def setUp(self):
        super().setUp()
        self.one = _document(_chains(2e6)[0], 1)
        self.two = _document(together.TogetherGenerator(
            _chains(2e6, 1e6)), 2)
        self.directory = tempfile.mkdtemp(prefix='epa-density-')
        self.addCleanup(shutil.rmtree, self.directory, True)

    def test_a_together_document_validates_and_tables_each_chain(self):
        results.validate(self.two, 'two chains')
        text = report.render_tables(self.two)
        self.assertIn('Chains measured together, per chain', text)
        self.assertIn('(2 chains, a port pair each), 10 Gbps per port',
                      text)
        self.assertIn('4 physical ports', text)
        title, headers, rows, _footer = chain_tables.per_chain_table(
            self.two)
        ndr = [r for r in rows if r[1] == 'NDR']
        self.assertEqual(['all', '0', '1'], [r[2] for r in ndr])
        # The slow chain (1e6 NDR) sets the aggregate: 2 x 1e6.
        total = int(ndr[0][4].replace(',', ''))
        self.assertLessEqual(total, 2e6)
        self.assertGreater(total, 1.8e6)
        self.assertIsNone(chain_tables.per_chain_table(self.one))

    def test_the_density_curve_validates_and_divides_by_n(self):
        path = os.path.join(self.directory, 'density.json')
        said = []
        code = runner.finish([self.one, self.two], path, said.append,
                             io.StringIO(), plots_dir=self.directory)
        self.assertEqual(0, code)
        with open(path) as stream:
            table = json.load(stream)
        results.validate(table, path, results.DENSITY_SCHEMA_ID)
        one, two = table['rows']
        self.assertEqual((1, 2), (one['chain_count'], two['chain_count']))
        self.assertEqual(two['aggregate_fps'] / 2, two['per_chain_fps'])
        self.assertAlmostEqual(two['per_chain_fps'] / one['per_chain_fps'],
                               two['ratio'])
        self.assertEqual(['0', '1'], sorted(two['chains_achieved_fps']))
        self.assertIn('Density', density_curve.render(table))
        self.assertIn('plot: %s' % os.path.join(self.directory,
                                                'density.png'), said)
        self.assertEqual(['chains-1', 'chains-2', 'density.json',
                          'density.png'], sorted(os.listdir(self.directory)))

    def _alone_and_beside(self):
        """Each chain alone, and chain 0 beside a neighbour at 5e5 fps.

        Beside the busy neighbour the measured chain loses half its rate.
        """
        alone = [_document(together.TogetherGenerator(
            _chains(2e6, 1e6), measured=(k,)), 2) for k in (0, 1)]
        beside = _document(together.TogetherGenerator(
            _chains(1e6, 1e6), measured=(0,), background=NEIGHBOUR), 2)
        return alone, beside

    def test_noisy_neighbours_compare_alone_and_beside(self):
        alone, beside = self._alone_and_beside()
        (case,) = alone[0]['cases']
        delay = chain_tables.latency_avg_ns(case)
        # One more latency trial beside them, at the load alone.
        same_load = {('64', 1): {'avg_ns': 3 * delay, 'min_ns': delay,
                                 'max_ns': 5 * delay}}
        section = chain_tables.noisy_section(alone, beside, 0.5,
                                             NEIGHBOUR, same_load)
        beside['testbed']['noisy_neighbour'] = section
        results.validate(beside, 'noisy')
        ndr = next(r for r in section['rows'] if r['goal'] == 'NDR')
        self.assertAlmostEqual(0.5, ndr['ratio'], places=1)
        self.assertEqual(case['latency']['load_fps'],
                         ndr['latency_load_fps'])
        self.assertAlmostEqual(3.0, ndr['latency_ratio'])
        # Its own latency test is at its own, lower load: kept, not compared.
        self.assertEqual(chain_tables.latency_avg_ns(beside['cases'][0]),
                         ndr['with_latency_avg_ns'])
        self.assertEqual([[], []], [a['errors'] for a in section['alone']])
        self.assertIn('Noisy neighbours', report.render_tables(beside))
        from epa_chain.measurement import plots
        paths = plots.render(beside, self.directory)
        self.assertIn(os.path.join(self.directory, 'noisy-neighbours.png'),
                      paths)

    def test_the_same_load_trial_runs_beside_the_neighbours(self):
        alone = _document(together.TogetherGenerator(
            _chains(2e6, 1e6), measured=(0,)), 2)
        specs = []

        def beside(bed, measured, background):
            generator = together.TogetherGenerator(_chains(1e6, 1e6),
                                                   measured, background)
            run = generator.run_trial
            generator.run_trial = lambda spec: specs.append(spec) or run(
                spec)
            return generator

        said = []
        with mock.patch.object(runner, 'measurement_generator',
                               side_effect=beside) as made:
            found = runner.same_load_latency('bed', alone,
                                             NEIGHBOUR, said.append)
        made.assert_called_once_with('bed', (0,), NEIGHBOUR)
        (case,) = alone['cases']
        (spec,) = specs
        self.assertEqual(case['latency']['load_fps'], spec.load_fps)
        self.assertTrue(spec.measure_latency)
        self.assertIsNotNone(found[('64', 1)]['avg_ns'])
        self.assertEqual(1, len(said))

    def test_a_failed_same_load_trial_says_why_and_has_no_ratio(self):
        alone, beside = self._alone_and_beside()
        section = chain_tables.noisy_section(
            alone, beside, 0.5, NEIGHBOUR,
            {('64', 1): 'latency trial failed: rate not reached'})
        beside['testbed']['noisy_neighbour'] = section
        results.validate(beside, 'noisy')
        ndr = next(r for r in section['rows'] if r['goal'] == 'NDR')
        self.assertIsNone(ndr['latency_ratio'])
        self.assertIn('rate not reached', report.render_tables(beside))
