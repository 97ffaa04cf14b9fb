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

"""Bad input to measure, report and prove: one line, exit 2, no harm.

Each row goes through the real entry point, cli.main. It must exit 2
with exactly one line on stderr that names the file, option or field,
print no traceback, write no output, leave what it was pointed at as it
was and, for prove, never call the cloud. '{d}' in an argument is a
scratch directory holding the files setUp makes.
"""

import collections
import contextlib
import copy
import gzip
import io
import json
import os
import shutil
import stat
import subprocess
import tempfile
from unittest import mock

import testtools

from epa_chain import cli
from epa_chain.commands import prove
from epa_chain.measurement import results

Case = collections.namedtuple('Case', 'argv expected patches')


def case(*argv, expected, patches=None):
    return Case(list(argv), expected, patches or {})


MEASURE = [
    # Generator options: typed and bounded at the edge.
    case('--generator-option', 'link_bps=inf',
         expected='--generator-option link_bps=inf: give a finite number'),
    case('--generator-option', 'jitter=nan',
         expected='--generator-option jitter=nan'),
    case('--generator-option', 'bogus=1',
         expected='--generator-option bogus=1: the model generator has no '
                  'such option; known: link_bps'),
    case('--generator-option', 'jitter',
         expected="--generator-option 'jitter': give KEY=VALUE"),
    case('--generator-option', '=1', expected="--generator-option '=1'"),
    case('--generator-option', 'ndr_fps=-5',
         expected='--generator-option ndr_fps=-5'),
    case('--generator-option', 'ndr_fps=1e400',
         expected='--generator-option ndr_fps=1e400'),
    case('--generator-option', 'latency_samples=1000000000000',
         expected='--generator-option latency_samples='),
    case('--generator-option', 'latency_mode=sometimes',
         expected='latency_mode=sometimes: choose one of samples'),
    case('--generator-option', 'seed=1.5', expected='seed=1.5'),
    case('--generator-option', 'knee_fps=10',
         expected='--generator-option knee_fps=10.0: must be at least '
                  'ndr_fps'),
    case('--generator-option', 'max_tx_fps=0', expected='max_tx_fps=0'),
    case('--generator', 'prox', '--prox-endpoint', '10.0.0.5:8474',
         '--generator-option', 'layout={d}/fifo',
         expected='--generator-option layout={d}/fifo: not a regular file'),
    case('--generator', 'prox', '--prox-endpoint', '10.0.0.5:8474',
         '--generator-option', 'rate_tolerance=nan',
         expected='--generator-option rate_tolerance=nan'),
    case('--generator', 'prox', '--prox-endpoint', '10.0.0.5:8474',
         '--generator-option', 'host=evil',
         expected='--generator-option host=evil: the prox generator has '
                  'no such option'),
    # Generators and the PROX endpoint.
    case('--generator', 'prox', expected='--prox-endpoint HOST:PORT'),
    case('--generator', 'prox', '--prox-endpoint=-oProxyCommand=x:8474',
         expected="--prox-endpoint '-oProxyCommand=x:8474'"),
    case('--generator', 'prox', '--prox-endpoint', 'h:0',
         expected="--prox-endpoint 'h:0': give HOST:PORT with a port in "
                  "1-65535"),
    case('--generator', 'prox', '--prox-endpoint', 'h:65536',
         expected="--prox-endpoint 'h:65536'"),
    case('--generator', 'prox', '--prox-endpoint', 'h',
         expected="--prox-endpoint 'h'"),
    case('--generator', 'prox', '--prox-endpoint', 'fd00::5:8474',
         expected="--prox-endpoint 'fd00::5:8474': write an IPv6 address "
                  "in brackets"),
    case('--generator', 'prox', '--prox-endpoint', 'a b:8474',
         expected="--prox-endpoint 'a b:8474'"),
    case('--prox-endpoint', 'h:1', expected='--prox-endpoint is for '
                                            '--generator prox'),
    case('--generator', 'local', expected='--generator local: its test bed '
                                          'runs it'),
    case('--generator', 'ixia', expected="--generator 'ixia': unknown "
                                         "generator"),
    # Outputs: checked before the work, never replaced if not a file.
    case('--json', '{d}/fifo', expected='--json {d}/fifo: exists and is a '
                                        'FIFO'),
    case('--json', '{d}/link', expected='--json {d}/link: exists and is a '
                                        'symbolic link'),
    case('--json', '{d}', expected='--json {d}: exists and is a directory'),
    case('--json', '{d}/file/out.json',
         expected='--json {d}/file/out.json: cannot be a file: Not a '
                  'directory'),
    case('--json', '', expected='--json: an empty path'),
    case('--results-dir', '{d}/file',
         expected='--results-dir {d}/file: {d}/file exists and is not a '
                  'directory'),
    case('--soak-duration', '60', expected='--results-dir: a soak writes '
                                           'partial results'),
    # Campaign options.
    case('--trial-duration', 'nan', expected="--trial-duration 'nan'"),
    case('--trial-duration', '1e300',
         expected="--trial-duration '1e300': give a positive number up to "
                  "86400"),
    case('--trial-duration', '-1', expected="--trial-duration '-1'"),
    case('--frame-sizes', '32', expected="--frame-sizes '32'"),
    case('--frame-sizes', '64:0', expected='--frame-sizes'),
    case('--frame-sizes', '64:1:2', expected="--frame-sizes '64:1:2'"),
    case('--loss-goals', 'NDR=0,NDR=0.1',
         expected="--loss-goals 'NDR=0,NDR=0.1': goal NDR is given twice"),
    case('--results-dir', '', expected='--results-dir: an empty path'),
    case('--flows', '0', expected="--flows '0'"),
    case('--flows', '1e3', expected="--flows '1e3'"),
    # Python reads these as numbers; a user means something else.
    case('--flows', '1_0', expected="--flows '1_0'"),
    case('--flows', '9' * 30, expected='from 1 to 16777216'),
    case('--frame-sizes', '6_4', expected="--frame-sizes '6_4'"),
    case('--frame-sizes', '64,,', expected="--frame-sizes '64,,': an empty "
                                           "item"),
    case('--trial-duration', '1_0', expected="--trial-duration '1_0': give "
                                             "a number"),
    case('--loss-goals', 'N\nDR=0', expected="--loss-goals 'N\\nDR=0'"),
    case('--loss-goals', 'a\x1b[31m=0',
         expected="--loss-goals 'a\\x1b[31m=0'"),
    case('--loss-goals', 'NDR=1', expected="--loss-goals 'NDR=1'"),
    case('--loss-goals', 'NDR=nan', expected="--loss-goals 'NDR=nan'"),
    case('--resolution', 'inf', expected="--resolution 'inf'"),
    case('--resolution', '1e-300',
         expected="--resolution '1e-300': give a number in (0, 1), at least "
                  "1e-06"),
    case('--soak-duration', '86400', '--soak-interval', '0.01',
         '--results-dir', '{d}/soak',
         expected="--soak-interval '0.01': a soak of 86400 s in intervals "
                  "this short makes 8640000 intervals"),
    case('--latency-fraction', '0', expected="--latency-fraction '0'"),
    case('--max-load', 'nan', expected="--max-load 'nan'"),
    case('--min-load', '10', '--max-load', '5', expected="--min-load '10'"),
    case('--linear-steps', '100000000', expected="--linear-steps"),
    case('--repetitions', '0', expected="--repetitions '0'"),
    case('--invalid-trial-retries', '11',
         expected="--invalid-trial-retries '11'"),
    case('--chain-length', '1' + '0' * 400, expected='--chain-length'),
    # The proof whose path --loss-by-hop splits the loss along.
    case('--loss-by-hop', '{d}/missing.json',
         expected='--loss-by-hop: {d}/missing.json: cannot read: No such '
                  'file'),
    case('--loss-by-hop', '{d}/fifo',
         expected='--loss-by-hop: {d}/fifo: is a device, FIFO or socket'),
    case('--loss-by-hop', '', expected='--loss-by-hop: proof: an empty '
                                       'path; give the --json file of '
                                       '`epa-chain prove`'),
    case('--loss-by-hop', '{d}/good.json',
         expected="--loss-by-hop {d}/good.json: schema is "
                  "'epa-chain/results/2', not epa-chain/proof/1"),
    case('--loss-by-hop', '{d}/empty.json',
         expected='--loss-by-hop: --loss-by-hop {d}/empty.json: not JSON'),
    case('--loss-by-hop', '{d}/proof-no-ovs.json', '--direction', 'bi',
         expected='--loss-by-hop {d}/proof-no-ovs.json: no hop counts for '
                  'the forward, reverse direction; give the --json file '
                  'of `epa-chain prove` (run without --no-ovs)'),
    case('--loss-by-hop', '{d}/proof-garbled.json',
         expected='--loss-by-hop {d}/proof-garbled.json: '
                  'directions[].hop_counts is not what prove writes'),
]

REPORT = [
    case('{d}/missing.json', expected='{d}/missing.json: cannot read: No '
                                      'such file'),
    case('{d}', expected='{d}: is a directory, not a regular file'),
    case('{d}/fifo', expected='{d}/fifo: is a device, FIFO or socket'),
    case('', expected='results file: an empty path'),
    case('{d}/nan.json', expected='{d}/nan.json: field '
                                  'cases[0].line_rate_fps is NaN'),
    case('{d}/infinity.json', expected='{d}/infinity.json: field '
                                       'generator.link_bps is Infinity'),
    case('{d}/1e999.json', expected='{d}/1e999.json: field '
                                    'totals.trial_seconds is 1e999'),
    case('{d}/list.json', expected='{d}/list.json: a results document is a '
                                   'JSON object, not list'),
    case('{d}/number.json', expected='{d}/number.json: a results document '
                                     'is a JSON object, not int'),
    case('{d}/empty.json', expected='{d}/empty.json: not JSON'),
    case('{d}/truncated.json', expected='{d}/truncated.json: not JSON'),
    case('{d}/binary.json', expected='{d}/binary.json: not UTF-8 text'),
    case('{d}/utf16.json', expected='{d}/utf16.json: not UTF-8 text'),
    case('{d}/good.json.gz', expected='{d}/good.json.gz: gzip-compressed'),
    case('{d}/cut.json.gz', expected='{d}/cut.json.gz: gzip-compressed'),
    case('{d}/deep.json', expected='{d}/deep.json: nested too deeply'),
    case('{d}/deep64.json', expected='{d}/deep64.json: field '
                                     'cases[0].trials[0].tags.x'),
    case('{d}/good.json', expected='{d}/good.json: larger than 0 MiB',
         patches={'MAX_BYTES': 1000}),
    case('{d}/old.json', expected='{d}/old.json: field "schema" is '
                                  "'epa-chain/results/0'"),
    case('{d}/negative.json', expected='{d}/negative.json: field '
                                       'cases[0].trials[0].tx_frames'),
    case('{d}/nokey.json', expected='{d}/nokey.json: field (top level): '
                                    "'cases' is a required property"),
    case('{d}/tiny-link.json',
         expected='{d}/tiny-link.json: cannot render its figures'),
    case('{d}/bad-histogram.json', '--plots', '{d}/plots',
         expected='{d}/bad-histogram.json: cannot render its figures '
                  '(ValueError: hdr_delay_ns is not an HdrHistogram'),
    case('{d}/good.json', '--plots', '{d}/file',
         expected='--plots {d}/file: {d}/file exists and is not a '
                  'directory'),
    case('{d}/good.json', '--plots', '', expected='--plots: an empty path'),
    case('{d}/good.json', '--plots', '{d}/planted',
         expected='--plots {d}/planted/throughput.png: exists and is a '
                  'symbolic link'),
]

PROVE = [
    case('pvp', '--attempts', '0', expected="--attempts 0: give a whole "
                                            "number in [1, 10]"),
    case('pvp', '--attempts', '11', expected='--attempts 11'),
    case('pvp', '--attempts', '-1', expected='--attempts -1'),
    case('pvp', '--max-loss-ratio', 'nan', expected='--max-loss-ratio nan'),
    case('pvp', '--max-loss-ratio', '1', expected='--max-loss-ratio 1.0'),
    case('pvp', '--max-loss-ratio', '0.5',
         expected='--max-loss-ratio 0.5: give a ratio in [0, 0.5): a chain '
                  'losing more does not forward'),
    case('pvp', '--max-loss-ratio', '-0.1', expected='--max-loss-ratio'),
    case('pvp', '--max-loss-ratio', 'inf', expected='--max-loss-ratio inf'),
    case('pvp', '--load-fraction', '5', expected='--load-fraction 5.0'),
    case('pvp', '--load-fraction', '0', expected='--load-fraction 0.0'),
    case('pvp', '--load-fraction', 'nan', expected='--load-fraction nan'),
    case('pvp', '--ready-timeout', '-1', expected='--ready-timeout -1.0'),
    case('pvp', '--ready-timeout', 'nan', expected='--ready-timeout nan'),
    case('pvp', '--ready-timeout', 'inf', expected='--ready-timeout inf'),
    case('pvp', '--ready-timeout', '0', expected='--ready-timeout 0.0'),
    case('pvp', '--ready-timeout', '1e9', expected='--ready-timeout'),
    case('--', '--os-auth-url=http://evil',
         expected="stack '--os-auth-url=http://evil': not a Heat stack "
                  "name"),
    case('--', '-x', expected="stack '-x'"),
    case('a b', expected="stack 'a b'"),
    case('', expected="stack ''"),
    case('x' * 256, expected="stack 'xxx"),
    case('1pvp', expected="stack '1pvp'"),
    case('pvp\n', expected="stack 'pvp\\n'"),
    case('pvp;reboot', expected="stack 'pvp;reboot'"),
    case('pvp', '--os-cloud=-x', expected="--os-cloud '-x'"),
    case('pvp', '--os-cloud=', expected="--os-cloud ''"),
    case('pvp', '--json', '{d}/fifo', expected='--json {d}/fifo: exists and '
                                               'is a FIFO'),
    case('pvp', '--json', '{d}', expected='--json {d}: exists and is a '
                                          'directory'),
    case('pvp', '--json', '{d}/link', expected='--json {d}/link: exists and '
                                               'is a symbolic link'),
    case('pvp', '--json', '{d}/file/proof.json',
         expected='--json {d}/file/proof.json: cannot be a file: Not a '
                  'directory'),
]


class BadInputTest(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # matplotlib lists the host's fonts (it runs fc-list) the first
        # time it loads on a host, and caches them: load it here, before
        # the check that no input makes a program run, not during it.
        from matplotlib import font_manager  # noqa: F401
        # One small, valid results document every broken file starts from.
        cls.good_dir = tempfile.mkdtemp(prefix='epa-bad-input-good-')
        good = os.path.join(cls.good_dir, 'good.json')
        with contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(['measure', '-q', '--frame-sizes', '64',
                             '--method', 'rfc2544', '--trial-duration', '1',
                             '--latency-duration', '1', '--json', good])
        assert code == 0, code
        with open(good) as stream:
            cls.good = json.load(stream)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.good_dir)
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.d = tempfile.mkdtemp(prefix='epa-bad-input-')
        self.addCleanup(shutil.rmtree, self.d)
        os.mkfifo(self.path('fifo'))
        self.write('file', 'a regular file')
        self.write('victim', 'precious')
        os.symlink(self.path('victim'), self.path('link'))
        os.mkdir(self.path('planted'))
        os.symlink(self.path('victim'), self.path('planted/throughput.png'))
        self.broken_files()
        self.before = self.listing()

    def path(self, name):
        return os.path.join(self.d, name)

    def write(self, name, data):
        with open(self.path(name), 'wb') as stream:
            stream.write(data if isinstance(data, bytes)
                         else data.encode('utf-8'))

    def document(self, change=None):
        document = copy.deepcopy(self.good)
        if change:
            change(document)
        return json.dumps(document)

    def broken_files(self):
        good = self.document()
        self.write('good.json', good)
        self.write('nan.json', self.document(
            lambda d: d['cases'][0].__setitem__('line_rate_fps', 12345.5)
        ).replace('12345.5', 'NaN'))
        self.write('infinity.json', self.document(
            lambda d: d['generator'].__setitem__('link_bps',
                                                 float('inf'))))
        self.write('1e999.json', self.document(
            lambda d: d['totals'].__setitem__('trial_seconds', 12345.5)
        ).replace('12345.5', '1e999'))
        self.write('list.json', '[%s]' % good)
        self.write('number.json', '42')
        self.write('empty.json', '')
        self.write('truncated.json', good[:len(good) // 2])
        self.write('binary.json', bytes(range(256)) * 4)
        self.write('utf16.json', good.encode('utf-16'))
        self.write('good.json.gz', gzip.compress(good.encode('utf-8')))
        self.write('cut.json.gz', gzip.compress(good.encode('utf-8'))[:40])
        self.write('deep.json', '[' * 200000 + ']' * 200000)
        depth = results.MAX_DEPTH + 1
        self.write('deep64.json', self.document(
            lambda d: d['cases'][0]['trials'][0]['tags'].__setitem__(
                'x', json.loads('[' * depth + ']' * depth))))
        self.write('old.json', self.document(
            lambda d: d.__setitem__('schema', 'epa-chain/results/0')))
        self.write('negative.json', self.document(
            lambda d: d['cases'][0]['trials'][0].__setitem__('tx_frames',
                                                             -1)))
        self.write('nokey.json', self.document(lambda d: d.pop('cases')))
        self.write('proof-no-ovs.json', json.dumps({
            'schema': prove.PROOF_SCHEMA, 'directions': [
                {'direction': 'forward'}, {'direction': 'reverse'}]}))
        self.write('proof-garbled.json', json.dumps({
            'schema': prove.PROOF_SCHEMA, 'directions': [
                {'direction': 'forward', 'hop_counts': [{'server': 'x'}]}]}))
        self.write('tiny-link.json', self.document(
            lambda d: d['generator'].__setitem__('link_bps', 5e-324)))

        def garble(document):
            directions = document['cases'][0]['latency']['directions']
            for summary in directions.values():
                summary['hdr_delay_ns'] = 'HISTFAAAA not base64'
        self.write('bad-histogram.json', self.document(garble))

    def listing(self):
        """Every path in the scratch directory with its kind and content."""
        found = {}
        for top, directories, files in os.walk(self.d):
            for name in directories + files:
                path = os.path.join(top, name)
                mode = os.lstat(path).st_mode
                content = None
                if stat.S_ISREG(mode):
                    with open(path, 'rb') as stream:
                        content = stream.read()
                found[path] = (stat.S_IFMT(mode), content)
        return found

    def run_command(self, command, row):
        argv = [a.replace('{d}', self.d) for a in row.argv]
        expected = row.expected.replace('{d}', self.d)
        out, err = io.StringIO(), io.StringIO()
        cloud = mock.Mock(side_effect=AssertionError('the cloud was called'))
        nothing_runs = AssertionError('a program was run')
        with mock.patch.object(prove.openstack_cli, 'OpenStackCLI', cloud), \
                mock.patch.object(subprocess, 'run',
                                  side_effect=nothing_runs), \
                mock.patch.object(subprocess, 'Popen',
                                  side_effect=nothing_runs), \
                mock.patch.multiple(results, **dict(
                    {'MAX_BYTES': results.MAX_BYTES}, **row.patches)), \
                mock.patch.dict(os.environ, {cli.DEBUG_VARIABLE: ''}), \
                contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            code = cli.main([command] + argv)
        message = '%s %r' % (command, argv)
        err = err.getvalue()
        self.assertEqual(2, code, '%s: %s' % (message, err))
        self.assertNotIn('Traceback', err, message)
        self.assertEqual(1, err.count('\n'), '%s: %s' % (message, err))
        self.assertTrue(err.startswith('epa-chain %s: ' % command), err)
        self.assertIn(expected, err, message)
        self.assertEqual('', out.getvalue(), message)
        cloud.assert_not_called()

    def assertUntouched(self):
        """Nothing changed; at most an empty output directory was made."""
        after = self.listing()
        made = set(after) - set(self.before)
        for path in made:
            self.assertEqual((stat.S_IFDIR, None), after[path], path)
            self.assertEqual([], os.listdir(path), path)
        self.assertEqual(self.before, {path: kind for path, kind
                                       in after.items() if path not in made})

    def check_rows(self, command, rows, extra=()):
        """Every row refused as the module docstring says; all reported."""
        failures = []
        for row in rows:
            try:
                self.run_command(command, row._replace(
                    argv=list(extra) + row.argv))
                self.assertUntouched()
            except AssertionError as error:
                failures.append('%r: %s' % (row.argv, error))
        self.assertEqual([], failures)

    def test_measure(self):
        self.assertGreaterEqual(len(MEASURE), 40)
        rows = [row if '--json' in row.argv else
                row._replace(argv=row.argv + ['--json', '{d}/out.json'])
                for row in MEASURE]
        self.check_rows('measure', rows, ['-q', '--latency-duration', '0'])

    def test_report(self):
        self.assertGreaterEqual(len(REPORT), 25)
        self.check_rows('report', REPORT)

    def test_prove_never_calls_the_cloud(self):
        self.assertGreaterEqual(len(PROVE), 30)
        self.check_rows('prove', PROVE)

    def test_the_table_holds_at_least_a_hundred_inputs(self):
        self.assertGreaterEqual(len(MEASURE) + len(REPORT) + len(PROVE),
                                100)
