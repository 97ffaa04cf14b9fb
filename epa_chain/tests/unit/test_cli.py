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

"""The `epa-chain validate` command: exit codes, text and JSON output."""

import contextlib
import io
import json
import os
import subprocess
import sys

import testtools

from epa_chain import cli
from epa_chain.tests import repo

TOP = repo.ROOT
FIXTURES = os.path.join(os.path.dirname(__file__), '..', 'fixtures')


def run(*argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(list(argv))
    return code, out.getvalue()


class TestValidateCommand(testtools.TestCase):

    def test_shipped_tree_exits_0(self):
        code, out = run('validate', os.path.join(TOP, 'templates'))
        self.assertEqual(0, code, out)
        # chain.yaml alone, with each of the 6 presets, with each of the 4
        # environments alone and after each preset: 1 + 6 + 4 * 7.
        self.assertIn('35 checked, 0 failed', out)
        # inter-node's anti-affinity warns of the hosts it needs.
        self.assertIn('7 with warnings', out)
        self.assertIn('-e templates/presets/vecpe-bidir.yaml '
                      '-e templates/environments/small-host.yaml', out)
        self.assertIn('Skipped offline (need a cloud):', out)

    def test_every_broken_fixture_exits_1_naming_file_and_fix(self):
        broken = os.path.join(FIXTURES, 'broken')
        names = sorted(n for n in os.listdir(broken)
                       if n.endswith('.yaml') and not n.startswith('env_'))
        self.assertGreater(len(names), 10)
        for name in names:
            code, out = run('validate', '-q', os.path.join(broken, name))
            self.assertEqual(1, code, name)
            self.assertIn('FAIL', out, name)
            self.assertIn('fix: ', out, name)

    def test_json_output(self):
        code, out = run('validate', '--json',
                        os.path.join(TOP, 'templates', 'chain.yaml'),
                        '-e', os.path.join(TOP, 'templates', 'presets',
                                           'vecpe-bidir.yaml'))
        self.assertEqual(0, code)
        document = json.loads(out)
        self.assertEqual('epa-chain/validate/1', document['schema'])
        self.assertTrue(document['valid'])
        (report,) = document['reports']
        self.assertEqual([], report['errors'])
        self.assertTrue(all(s['rule'] == 'CLOUD-LOOKUP'
                            for s in report['skipped']))

    def test_missing_file_is_an_error_not_a_crash(self):
        code, out = run('validate', '/nonexistent/chain.yaml')
        self.assertEqual(1, code)
        self.assertIn('LOAD  ERROR     no such file', out)

    def test_environment_with_a_directory_is_a_usage_error(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code, _ = run('validate', os.path.join(TOP, 'templates'),
                          '-e', 'x.yaml')
        self.assertEqual(2, code)
        self.assertIn('-e and --parameter apply to template files',
                      err.getvalue())


class TestCommandLoading(testtools.TestCase):
    """A command loads its own module; the list of all needs them all."""

    def _loaded(self, *words):
        code = ('import sys\nfrom epa_chain import cli\n'
                'cli.build_parser(*sys.argv[1:])\n'
                'print(" ".join(sorted(name for name in sys.modules '
                'if name.startswith("epa_chain.commands.") and '
                'not name.startswith("epa_chain.commands._"))))')
        done = subprocess.run([sys.executable, '-c', code] + list(words),
                              capture_output=True, text=True, timeout=120,
                              cwd=repo.ROOT)
        self.assertEqual(0, done.returncode, done.stderr)
        return done.stdout.split()

    def test_a_command_loads_only_its_module(self):
        self.assertEqual(['epa_chain.commands.validate'],
                         self._loaded('validate'))
        self.assertEqual(['epa_chain.commands.prox'], self._loaded('prox'))

    def test_help_and_a_typo_list_every_command(self):
        every = self._loaded()
        self.assertIn('epa_chain.commands.validate', every)
        self.assertIn('epa_chain.commands.measure', every)
        self.assertEqual(every, self._loaded('validat'))
