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

"""KPI files parsed once with errors naming the field; verdicts that
pass only what the results show; `epa-chain report --kpi` exits 1 on a
miss."""

import contextlib
import copy
import io
import json
import math
import os
import shutil
import tempfile

import testtools

from epa_chain import cli
from epa_chain.generators import model
from epa_chain.measurement import campaign
from epa_chain.measurement import kpi
from epa_chain.measurement import latency
from epa_chain.measurement import trial
from epa_chain.measurement import verdicts
from epa_chain import safe_yaml


def measure(ndr_fps=2e6, **options):
    sut = model.ModelGenerator(ndr_fps=ndr_fps, link_bps=10e9)
    plan = campaign.Campaign(frame_sizes=['64'], flow_counts=[1],
                             directions=('forward', 'reverse'),
                             method='rfc2544', trial_duration_s=10,
                             latency_duration_s=10, **options)
    return campaign.run(sut, plan)


class KpiTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix='epa-kpi-')
        self.addCleanup(shutil.rmtree, self.tmp)

    def write(self, text, name='kpi.yaml'):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as stream:
            stream.write(text)
        return path

    def kpis(self, text):
        return kpi.load(self.write(text))


class TestKpiFile(KpiTest):

    def test_every_section(self):
        kpis = self.kpis(
            'throughput:\n  - {goal: NDR, frame_size: 64, min_fps: 1e6}\n'
            '  - {goal: PDR, min_line_rate_percent: 50}\n'
            'latency:\n  - {percentile: 99.9, max_us: 40}\n'
            '  - {percentile: max, max_us: 400}\n'
            'pdv:\n  - {percentile: \'99\', max_us: 20}\n'
            'max_loss_ratio: 0\nmax_regression_percent: 5\n')
        self.assertEqual(kpi.ThroughputFloor('NDR', 'min_fps', 1e6, '64'),
                         kpis.throughput[0])
        self.assertEqual('min_line_rate_percent', kpis.throughput[1].unit)
        self.assertEqual(['99.9', 'max'],
                         [c.statistic for c in kpis.latency])
        self.assertEqual(('99', 20.0), (kpis.pdv[0].statistic,
                                        kpis.pdv[0].max_us))
        self.assertEqual((0.0, 5.0), (kpis.max_loss_ratio,
                                      kpis.max_regression_percent))

    def test_errors_name_the_file_the_field_and_the_fix(self):
        cases = {
            'througput: []\n': ('througput: unknown key', 'use throughput'),
            'throughput:\n  - {goal: NDR}\n': (
                'throughput[0]: no floor', 'exactly one of min_fps'),
            'throughput:\n  - {goal: NDR, min_fps: 1, min_bps: 2}\n': (
                'more than one floor', 'exactly one of'),
            'throughput:\n  - {goal: NDR, min_fps: -1}\n': (
                'throughput[0].min_fps: -1 is not a number', 'range'),
            'throughput:\n  - {min_fps: 1}\n': ('throughput[0].goal: '
                                                'missing', 'NDR or PDR'),
            'throughput:\n  - {goal: NDR, min_fps: 1, fps: 2}\n': (
                'throughput[0].fps: unknown key', 'use goal'),
            'latency:\n  - {percentile: p99, max_us: 1}\n': (
                "latency[0].percentile: 'p99'", "'99.9'"),
            'pdv:\n  - {percentile: max, max_us: 1}\n': (
                "pdv[0].percentile: 'max'", "'99.9'"),
            'latency:\n  - {percentile: 99}\n': ('latency[0].max_us: '
                                                 'missing', 'microseconds'),
            'max_loss_ratio: 2\n': ('max_loss_ratio: 2 is not a number',
                                    'range'),
            'max_loss_ratio: nan\n': ('max_loss_ratio', 'range'),
            'max_regression_percent: true\n': ('max_regression_percent',
                                               'range'),
            'latency: {percentile: 99}\n': ('latency: not a list',
                                            '"- key: value"'),
            '{}\n': ('no KPI in it', 'at least one'),
            # Keys YAML reads as numbers among names: no TypeError.
            '1: 2\nfoo: 3\n': (
                '1: unknown key (YAML reads it as a number', 'use throughput'),
            'throughput:\n  - {goal: NDR, min_fps: 1, 64: 1, fps: 2}\n': (
                'throughput[0].64: unknown key', 'use goal'),
            'latency:\n  - {percentile: 99, max_us: 1, ~: 1, x: 2}\n': (
                'latency[0].None: unknown key (YAML reads it as null',
                'use percentile'),
        }
        for text, (what, fix) in cases.items():
            path = self.write(text)
            error = self.assertRaises(safe_yaml.InputError, kpi.load, path)
            self.assertEqual(safe_yaml.shown(path), error.path, text)
            self.assertIn(what, error.message, text)
            self.assertIn(fix, error.fix, text)


class TestVerdicts(KpiTest):

    def test_a_floor_met_and_one_missed(self):
        document = measure()
        kpis = self.kpis('throughput:\n  - {goal: NDR, min_fps: 1.9e6}\n'
                         '  - {goal: NDR, min_fps: 2.1e6}\n')
        judged = verdicts.judge(document, kpis)
        self.assertEqual([verdicts.MET, verdicts.MISSED],
                         [v.verdict for v in judged])
        self.assertFalse(verdicts.passed(judged))
        self.assertTrue(verdicts.passed(judged[:1]))
        self.assertFalse(verdicts.passed([]))

    def test_bits_and_line_rate_are_per_direction_on_the_wire(self):
        document = measure()
        ndr = document['cases'][0]['search']['goals'][0]['throughput_fps']
        # 64 B frames: (64 + 20) x 8 bits each on the wire.
        wire_bps = ndr * 84 * 8
        for floor, expected in ((wire_bps * 0.99, verdicts.MET),
                                (wire_bps * 1.01, verdicts.MISSED)):
            kpis = self.kpis('throughput:\n  - {goal: NDR, min_bps: %r}\n'
                             % floor)
            self.assertEqual(expected, verdicts.judge(document, kpis)[0]
                             .verdict)
        percent = 100.0 * wire_bps / 10e9
        kpis = self.kpis('throughput:\n  - {goal: NDR, '
                         'min_line_rate_percent: %r}\n' % (percent * 0.99))
        self.assertEqual(verdicts.MET,
                         verdicts.judge(document, kpis)[0].verdict)

    def test_a_bound_is_met_above_the_floor_and_unknown_below(self):
        # The search stops at 1e6 frames/s with the goal still met.
        document = measure(max_load_fps=1e6)
        met, unknown = verdicts.judge(document, self.kpis(
            'throughput:\n  - {goal: NDR, min_fps: 9e5}\n'
            '  - {goal: NDR, min_fps: 1.5e6}\n'))
        self.assertEqual(verdicts.MET, met.verdict)
        self.assertEqual('>= 1,000,000', met.measured)
        self.assertEqual(verdicts.UNKNOWN, unknown.verdict)
        self.assertIn('raise max_load_fps', unknown.note)

    def test_delays_per_direction_and_a_range_across_the_ceiling(self):
        document = measure()
        case = document['cases'][0]
        # Reverse known only as "above 200 us, at most 23.7 ms".
        record = trial.LatencyRecord(
            min_ns=95000.0, avg_ns=1.8e6, max_ns=23.7e6,
            histogram=[(0.0, 100000.0, 900), (200000.0, math.inf, 100)])
        case['latency']['directions']['reverse'] = latency.summarize(
            [record])
        forward = case['latency']['directions']['forward']
        p99_us = forward['percentiles_ns']['99'] / 1e3
        judged = verdicts.judge(document, self.kpis(
            'latency:\n  - {percentile: 99, max_us: %r}\n'
            '  - {percentile: 99.9, max_us: 150}\n'
            '  - {percentile: 99.9, max_us: 100000}\n' % (p99_us + 1)))
        by_row = {(v.kpi, v.case, v.limit): v.verdict for v in judged}
        self.assertEqual(verdicts.MET, by_row[(
            'latency P99 (us)', '64 B, 1 flow, forward',
            '<= %s us' % format(p99_us + 1, ',.10g'))])
        # Beyond 200 us for sure: over a 150 us ceiling.
        self.assertEqual(verdicts.MISSED, by_row[(
            'latency P99.9 (us)', '64 B, 1 flow, reverse', '<= 150 us')])
        # Between 200 us and 23.7 ms: under 100 ms for sure.
        self.assertEqual(verdicts.MET, by_row[(
            'latency P99.9 (us)', '64 B, 1 flow, reverse',
            '<= 100,000 us')])
        ranged = verdicts.judge(document, self.kpis(
            'latency:\n  - {percentile: 99.9, max_us: 1000}\n'))
        (reverse,) = [v for v in ranged if v.case.endswith('reverse')]
        self.assertEqual(verdicts.UNKNOWN, reverse.verdict)
        self.assertEqual('200.0..23,700.0', reverse.measured)

    def test_a_percentile_the_results_lack_is_unknown(self):
        judged = verdicts.judge(measure(), self.kpis(
            'pdv:\n  - {percentile: 12.5, max_us: 1000}\n'))
        self.assertEqual({verdicts.UNKNOWN}, {v.verdict for v in judged})
        self.assertIn('no pdv P12.5', judged[0].note)

    def test_loss_of_the_latency_trial(self):
        document = measure()
        case = document['cases'][0]
        case['trials'][case['latency']['trial']]['loss_ratio'] = 0.002
        met, missed = verdicts.judge(document, self.kpis(
            'max_loss_ratio: 0.01\n')) + verdicts.judge(
            document, self.kpis('max_loss_ratio: 0.001\n'))
        self.assertEqual((verdicts.MET, verdicts.MISSED),
                         (met.verdict, missed.verdict))

    def test_baseline_regression(self):
        before = measure(ndr_fps=2e6)
        kpis = self.kpis('max_regression_percent: 10\n')
        judged = verdicts.judge(measure(ndr_fps=1.95e6), kpis, before)
        self.assertEqual(['NDR vs baseline', 'PDR vs baseline'],
                         [v.kpi for v in judged])
        self.assertTrue(verdicts.passed(judged))
        judged = verdicts.judge(measure(ndr_fps=1.5e6), kpis, before)
        self.assertEqual({verdicts.MISSED}, {v.verdict for v in judged})
        # A case the baseline lacks cannot be compared.
        other = copy.deepcopy(before)
        other['cases'][0]['flows'] = 8
        judged = verdicts.judge(measure(), kpis, other)
        self.assertEqual({verdicts.UNKNOWN}, {v.verdict for v in judged})


class TestReportCommand(KpiTest):

    def run_report(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(
                err):
            code = cli.main(['report'] + list(argv))
        return code, out.getvalue(), err.getvalue()

    def results(self, document, name):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as stream:
            json.dump(document, stream)
        return path

    def test_exit_status_is_the_verdict(self):
        document = self.results(measure(), 'results.json')
        code, out, _ = self.run_report(document, '--kpi', self.write(
            'throughput:\n  - {goal: NDR, min_fps: 1e6}\n'))
        self.assertEqual(0, code)
        self.assertIn('KPI verdicts (', out)
        self.assertIn('1 of 1 KPI checks met; PASS', out)
        code, out, _ = self.run_report(document, '--kpi', self.write(
            'throughput:\n  - {goal: NDR, min_fps: 1e7}\n'))
        self.assertEqual(1, code)
        self.assertIn('0 of 1 KPI checks met; FAIL', out)

    def test_bad_input_exits_2_before_any_table(self):
        document = self.results(measure(), 'results.json')
        code, out, err = self.run_report(document, '--kpi', self.write(
            'throughput:\n  - {goal: NDR}\n'))
        self.assertEqual((2, ''), (code, out))
        self.assertIn('kpi.yaml: throughput[0]: no floor', err)
        code, out, err = self.run_report(
            document, '--kpi', self.write('max_loss_ratio: 0\n'),
            '--baseline', document)
        self.assertEqual((2, ''), (code, out))
        self.assertIn('sets max_regression_percent', err)

    def test_keys_mixing_numbers_and_names_are_one_line_not_a_crash(self):
        document = self.results(measure(), 'results.json')
        path = self.write('throughput:\n  - {goal: NDR, min_fps: 1}\n'
                          '64: {min_fps: 1}\nlatncy: []\n')
        code, out, err = self.run_report(document, '--kpi', path)
        self.assertEqual((2, ''), (code, out))
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('epa-chain report: %s: 64: unknown key (YAML reads it '
                      'as a number, not a name); use throughput, latency'
                      % safe_yaml.shown(path), err)
