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

"""Repeated runs (--repeat N): the merged document, its spread and plot."""

import copy
import os
import shutil
import tempfile

import testtools

from epa_chain import generators
from epa_chain.measurement import campaign
from epa_chain.measurement import plots
from epa_chain.measurement import repeats
from epa_chain.measurement import results
from epa_chain.measurement.searches import common as search_common


def _plan(**values):
    values.setdefault('frame_sizes', [64, 1518])
    return campaign.Campaign(trial_duration_s=1.0, latency_duration_s=0.0,
                             **values)


def _document():
    generator = generators.create('model')
    return campaign.run(generator, _plan(), None)


class _Runs:
    """run_once: the same document with each goal's figure scaled."""

    def __init__(self, base, factors):
        self.base, self.factors, self.calls = base, list(factors), 0

    def __call__(self):
        document = copy.deepcopy(self.base)
        factor = self.factors[self.calls]
        self.calls += 1
        for case in document['cases']:
            for goal in case['search']['goals']:
                if factor is None:
                    goal['throughput_fps'] = None
                else:
                    goal['throughput_fps'] *= factor
        return document


class RunTest(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.base = _document()

    def test_one_run_is_the_campaign_unchanged(self):
        runs = _Runs(self.base, [1.0])
        document = repeats.run(runs, 1)
        self.assertEqual(1, runs.calls)
        self.assertNotIn('spread', document)
        self.assertEqual(self.base, document)

    def test_every_repetition_kept_and_announced(self):
        said = []
        document = repeats.run(_Runs(self.base, [1.0, 0.9, 1.1]), 3,
                               said.append)
        self.assertEqual(['repetition 1 of 3', 'repetition 2 of 3',
                          'repetition 3 of 3'], said)
        self.assertEqual(3 * len(self.base['cases']),
                         len(document['cases']))
        self.assertEqual([1, 1, 2, 2, 3, 3],
                         [c['repetition'] for c in document['cases']])
        self.assertEqual(3 * self.base['totals']['trials'],
                         document['totals']['trials'])
        self.assertTrue(document['complete'])
        results.validate(document)

    def test_median_min_max_name_their_repetition(self):
        document = repeats.run(_Runs(self.base, [1.0, 0.9, 1.1]), 3)
        self.assertEqual(3, document['spread']['repeat'])
        row = document['spread']['rows'][0]
        self.assertEqual(('64', 1, 'unidirectional', 'NDR', 'throughput_fps'),
                         (row['frame_size'], row['flows'],
                          row['directions'], row['goal'], row['figure']))
        self.assertEqual((1, 2, 3), (row['median_repetition'],
                                     row['min_repetition'],
                                     row['max_repetition']))
        self.assertEqual(row['values'][0], row['median'])
        self.assertEqual(4, len(document['spread']['rows']))

    def test_an_incomplete_repetition_makes_the_whole_incomplete(self):
        runs = _Runs(self.base, [1.0, 1.0])
        original = runs.__call__

        def partial():
            document = original()
            if runs.calls == 2:
                document['complete'] = False
            return document
        self.assertFalse(repeats.run(partial, 2)['complete'])

    def test_inconsistent_goal_marks_its_row(self):
        base = copy.deepcopy(self.base)
        for case in base['cases']:
            case['consistency'] = {'consistent': True,
                                   'inconsistent_goals': [], 'issues': []}
        document = repeats.run(_Runs(base, [1.0, 1.0]), 2)
        document['cases'][1]['consistency']['inconsistent_goals'] = ['PDR']
        rows = repeats.spread_rows(document['cases'], 2)
        marked = {(r['frame_size'], r['goal']): r['inconsistent']
                  for r in rows}
        self.assertEqual({('64', 'NDR'): False, ('64', 'PDR'): False,
                          ('1518', 'NDR'): False, ('1518', 'PDR'): True},
                         marked)

    def test_a_case_in_error_keeps_its_rows(self):
        failed = copy.deepcopy(self.base)
        for case in failed['cases']:
            case['search'] = None
            case['error'] = {'cause': 'x', 'detail': 'y', 'phase': 'search'}
        document = repeats.merge([self.base, failed])
        self.assertEqual(4, len(document['spread']['rows']))
        row = document['spread']['rows'][0]
        self.assertIsNone(row['values'][1])
        self.assertEqual((1, 1), (row['median_repetition'],
                                  row['max_repetition']))
        results.validate(document)


class StatisticsTest(testtools.TestCase):

    def test_even_count_takes_the_lower_middle(self):
        found = repeats.statistics([4.0, 1.0, 3.0, 2.0])
        self.assertEqual((2.0, 4), (found['median'],
                                    found['median_repetition']))
        self.assertEqual((1.0, 2, 4.0, 1), (
            found['min'], found['min_repetition'], found['max'],
            found['max_repetition']))

    def test_a_repetition_without_figure_is_skipped(self):
        found = repeats.statistics([None, 5.0, 7.0])
        self.assertEqual((5.0, 2, 7.0, 3), (
            found['median'], found['median_repetition'], found['max'],
            found['max_repetition']))

    def test_no_figure_at_all(self):
        found = repeats.statistics([None, None])
        self.assertIsNone(found['median'])
        self.assertIsNone(found['min_repetition'])


class TableAndPlotTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.document = repeats.run(
            _Runs(_document(), [1.0, None, 1.2]), 3)

    def test_table_says_the_figure_and_each_repetition(self):
        title, headers, rows, footer = repeats.spread_table(self.document)
        self.assertIn('3 repetitions', title)
        self.assertIn('throughput_fps', title)
        self.assertEqual(['Median', 'Min', 'Max'], headers[-3:])
        self.assertIn('(rep 1)', rows[0][4])
        self.assertIn('(rep 3)', rows[0][6])
        self.assertIn('not the searches\' --repetitions', footer)

    def test_a_bound_is_printed_as_at_least(self):
        case = self.document['cases'][-1]
        case['max_load_fps'] = case['line_rate_fps'] / 2
        for goal in case['search']['goals']:
            goal['status'] = search_common.STATUS_MAX_LOAD
        _title, _headers, rows, footer = repeats.spread_table(self.document)
        self.assertEqual('>= ', rows[-1][6][:3])
        self.assertNotIn('>=', rows[0][6])
        self.assertIn('at least', footer)

    def test_plot_of_the_spread(self):
        directory = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, directory)
        paths = plots.render(self.document, directory)
        self.assertEqual([os.path.join(directory, 'spread.png')], paths)
        with open(paths[0], 'rb') as f:
            self.assertEqual(b'\x89PNG', f.read(4))
