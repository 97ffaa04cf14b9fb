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

"""`epa-chain measure` -> `epa-chain report`, and the comparison tool."""

import contextlib
import importlib.util
import io
import json
import os
import shutil
import socket
import tempfile
import warnings

import testtools

from epa_chain import cli
from epa_chain.commands import _arguments
from epa_chain.commands import measure
from epa_chain.measurement import options as campaign_options
from epa_chain.measurement import results
from epa_chain.tests import repo

TOP = repo.ROOT


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


class TestMeasureAndReport(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = tempfile.mkdtemp(prefix='epa-cli-')
        self.addCleanup(shutil.rmtree, self.directory)

    def path(self, name):
        return os.path.join(self.directory, name)

    def test_round_trip(self):
        code, out, err = run(
            'measure', '--generator', 'model', '--frame-sizes', '64,imix',
            '--flows', '1000', '--direction', 'bi', '--method',
            'mlrsearch', '--trial-duration', '60', '--chain-length', '1',
            '--generator-option', 'ndr_fps=3e6', '--json',
            self.path('out.json'))
        self.assertEqual(0, code, err)
        self.assertEqual('', out)
        # Progress on stderr: one line per trial, then a case summary.
        self.assertIn('64 B, 1000 flows, forward+reverse: trial 1 search',
                      err)
        self.assertIn('mlrsearch: NDR ', err)
        document = results.load(self.path('out.json'))
        self.assertEqual(2, len(document['cases']))
        self.assertEqual(3e6, document['generator']['ndr_fps'])
        self.assertEqual(['forward', 'reverse'],
                         document['parameters']['directions'])
        code, out, err = run('report', self.path('out.json'), '--plots',
                             self.path('plots'))
        self.assertEqual(0, code, err)
        self.assertIn('Bidirectional throughput with 0 frame loss (NDR), '
                      '1000 flows', out)
        self.assertIn('chain of 1 VNF', out)
        self.assertIn('plot: %s' % self.path('plots/throughput.png'), out)
        self.assertTrue(os.path.exists(self.path('plots/throughput.png')))

    def test_repeat_runs_the_campaign_again_and_plots_the_spread(self):
        code, out, err = run(
            'measure', '--frame-sizes', '64,1518', '--repeat', '2',
            '--method', 'rfc2544', '--trial-duration', '1',
            '--latency-duration', '0', '--generator-option', 'jitter=0.01',
            '--json', self.path('repeat.json'))
        self.assertEqual(0, code, err)
        self.assertIn('repetition 2 of 2', err)
        document = results.load(self.path('repeat.json'))
        self.assertEqual([1, 1, 2, 2],
                         [case['repetition'] for case in document['cases']])
        self.assertEqual(2, document['spread']['repeat'])
        self.assertEqual(2, document['parameters']['repeat'])
        self.assertEqual(4, len(document['spread']['rows']))
        code, out, err = run('report', self.path('repeat.json'), '--plots',
                             self.path('plots'))
        self.assertEqual(0, code, err)
        self.assertTrue(os.path.exists(self.path('plots/spread.png')))

    def test_repeat_and_repetitions_say_how_they_differ(self):
        flags = {flag: campaign_options.BY_FIELD[field].help
                 for flag, field in (('--repeat', 'repeat'),
                                     ('--repetitions', 'repetitions'))}
        self.assertIn('not repetitions', flags['--repeat'])
        self.assertIn('not repeat,', flags['--repetitions'])
        code, _out, err = run('measure', '--repeat', '0', '--json',
                              self.path('x.json'))
        self.assertEqual(2, code)
        self.assertIn("--repeat '0'", err)

    def test_generator_error_exits_1_and_still_writes(self):
        code, _out, err = run(
            'measure', '--frame-sizes', '64', '--method', 'rfc2544',
            '--generator-option', 'stop_forwarding_after=2', '-q',
            '--json', self.path('dead.json'))
        self.assertEqual(1, code)
        self.assertIn('stopped forwarding', err)
        document = results.load(self.path('dead.json'))
        self.assertIsNone(document['cases'][0]['search'])

    def test_usage_errors_exit_2_naming_the_field(self):
        for argv, expected in (
                (['--frame-sizes', '32'], "--frame-sizes '32'"),
                (['--flows', 'many'], '--flows'),
                (['--loss-goals', 'NDR'], '--loss-goals'),
                (['--generator', 'ixia'], 'unknown generator'),
                (['--generator-option', 'jitter=lots'], 'jitter'),
                (['--prox-endpoint', 'h:1'], '--generator prox')):
            code, _out, err = run('measure', '--json', self.path('x.json'),
                                  *argv)
            self.assertEqual(2, code, argv)
            self.assertIn(expected, err, argv)
        self.assertFalse(os.path.exists(self.path('x.json')))

    def test_prox_out_of_reach_is_said_once_before_the_campaign(self):
        listener = socket.socket()
        listener.bind(('127.0.0.1', 0))
        port = listener.getsockname()[1]
        listener.close()   # nothing listens there now: refused at once
        code, out, err = run(
            'measure', '--generator', 'prox', '--prox-endpoint',
            '127.0.0.1:%d' % port, '--frame-sizes', '64,128',
            '--json', self.path('out.json'))
        self.assertEqual(1, code)
        self.assertEqual('', out)
        self.assertEqual(1, err.count('\n'), err)
        self.assertIn('epa-chain measure: --prox-endpoint 127.0.0.1:%d: '
                      'the PROX control connection failed' % port, err)
        self.assertIn('nothing measured', err)
        self.assertFalse(os.path.exists(self.path('out.json')))

    def test_report_plots_into_a_directory_that_cannot_be_made(self):
        code, _out, err = run('measure', '--frame-sizes', '64', '-q',
                              '--latency-duration', '0', '--json',
                              self.path('out.json'))
        self.assertEqual(0, code, err)
        with open(self.path('a-file'), 'w') as stream:
            stream.write('not a directory')
        plots = self.path('a-file/plots')
        code, out, err = run('report', self.path('out.json'), '--plots',
                             plots)
        self.assertEqual(2, code)
        self.assertEqual(
            'epa-chain report: --plots %s: %s exists and is not a '
            'directory; give another path\n' % (plots, self.path('a-file')),
            err)
        self.assertEqual('', out)   # no half report before the error

    def test_report_never_writes_a_plot_through_a_planted_link(self):
        code, _out, err = run('measure', '--frame-sizes', '64', '-q',
                              '--latency-duration', '0', '--json',
                              self.path('out.json'))
        self.assertEqual(0, code, err)
        os.mkdir(self.path('plots'))
        with open(self.path('victim'), 'w') as stream:
            stream.write('precious')
        os.symlink(self.path('victim'), self.path('plots/throughput.png'))
        code, out, err = run('report', self.path('out.json'), '--plots',
                             self.path('plots'))
        self.assertEqual(2, code)
        self.assertEqual('epa-chain report: --plots %s: exists and is a '
                         'symbolic link, not a regular file; give a file '
                         'path\n' % self.path('plots/throughput.png'), err)
        self.assertEqual('', out)   # no half report before the error
        self.assertTrue(os.path.islink(self.path('plots/throughput.png')))
        with open(self.path('victim')) as stream:
            self.assertEqual('precious', stream.read())
        # A regular file there is replaced whole, with nothing left over.
        os.unlink(self.path('plots/throughput.png'))
        open(self.path('plots/throughput.png'), 'w').close()
        code, out, err = run('report', self.path('out.json'), '--plots',
                             self.path('plots'))
        self.assertEqual(0, code, err)
        self.assertEqual(['throughput.png'],
                         os.listdir(self.path('plots')))
        with open(self.path('plots/throughput.png'), 'rb') as stream:
            self.assertEqual(b'\x89PNG', stream.read(4))

    def test_report_refuses_figures_it_cannot_render_in_one_line(self):
        code, _out, err = run('measure', '--frame-sizes', '64', '-q',
                              '--method', 'rfc2544', '--latency-duration',
                              '5', '--json', self.path('out.json'))
        self.assertEqual(0, code, err)
        with open(self.path('out.json')) as stream:
            document = json.load(stream)
        document['generator']['link_bps'] = 5e-324
        broken = self.path('broken.json')
        with open(broken, 'w') as stream:
            json.dump(document, stream)
        code, out, err = run('report', broken)
        self.assertEqual(2, code)
        self.assertEqual('', out)
        self.assertEqual(1, err.count('\n'), err)
        self.assertIn('epa-chain report: %s: cannot render its figures '
                      '(ZeroDivisionError' % broken, err)
        document['generator']['link_bps'] = 10e9
        for summary in document['cases'][0]['latency']['directions'].values():
            summary['hdr_delay_ns'] = 'not a histogram'
        with open(broken, 'w') as stream:
            json.dump(document, stream)
        code, out, err = run('report', broken, '--plots', self.path('p'))
        self.assertEqual(2, code)
        self.assertEqual('', out)
        self.assertIn('hdr_delay_ns is not an HdrHistogram', err)

    def test_report_refuses_a_bad_file(self):
        with open(self.path('bad.json'), 'w') as stream:
            json.dump({'schema': 'epa-chain/results/1', 'method': 'x'},
                      stream)
        code, out, err = run('report', self.path('bad.json'))
        self.assertEqual(2, code)
        self.assertIn(self.path('bad.json'), err)
        self.assertIn('field', err)
        self.assertEqual('', out)


class TestArgumentParsing(testtools.TestCase):

    def test_frame_sizes_group_mixes(self):
        self.assertEqual(['64', 'imix', '64:7,570:4', '1518'],
                         campaign_options.split_frame_sizes(
                             '64,imix,64:7,570:4,1518'))

    def test_goals_and_options(self):
        self.assertEqual({'NDR': 0.0, 'PDR': 0.001},
                         campaign_options.parse_goals('NDR=0,PDR=0.001'))
        self.assertEqual({'jitter': 0.01, 'seed': 4, 'latency_mode': 'off',
                          'max_tx_fps': None, 'host': '10.0.0.5',
                          'port': 8474},
                         _arguments.parse_generator_options(
                             ['jitter=0.01', 'seed=4', 'latency_mode=off',
                              'max_tx_fps=none'], '10.0.0.5:8474'))


class TestMovedNames(testtools.TestCase):

    def test_the_old_names_still_work_and_warn(self):
        args = cli.build_parser().parse_args(['measure', '--json', 'x'])
        for old, new, call in (
                ('build_plan', _arguments.campaign_from_arguments, (args,)),
                ('parse_pairs', _arguments.parse_pairs,
                 (['a=1'], '--x', 'a=1')),
                ('parse_endpoint', _arguments.parse_endpoint, ('h:1',)),
                ('parse_options', _arguments.parse_generator_options,
                 (['seed=4'], None))):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter('always')
                function = getattr(measure, old)
            self.assertIs(new, function)
            self.assertEqual([DeprecationWarning],
                             [w.category for w in caught], old)
            self.assertEqual(new(*call), function(*call))
        self.assertRaises(AttributeError, getattr, measure, 'nothing_such')


class TestCompareSearches(testtools.TestCase):

    def test_reports_both_searches_and_their_ratio(self):
        spec = importlib.util.spec_from_file_location(
            'compare_searches', os.path.join(TOP, 'tools',
                                             'compare_searches.py'))
        tool = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tool)
        args = tool.parse_args(['--frame-sizes', '64,1518'])
        comparison = tool.compare(args)
        totals = comparison['totals']
        self.assertEqual(totals['mlrsearch']['trial_seconds'] /
                         totals['rfc2544']['trial_seconds'],
                         comparison['trial_seconds_ratio'])
        self.assertTrue(comparison['all_bracket_truth'])
        duration = campaign_options.BY_FIELD['trial_duration_s'].default
        for case in comparison['runs']['rfc2544']:
            # RFC 2544 searched twice: every trial is a full one, of the
            # campaign table's default duration.
            self.assertEqual(case['trials'] * duration, case['trial_seconds'])
        text = tool.render(comparison, args)
        self.assertIn('MLRsearch / RFC 2544 trial-seconds: %.3f'
                      % comparison['trial_seconds_ratio'], text)
