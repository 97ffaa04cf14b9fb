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

"""A throttled VNF: the spec checked at the edge, its cgroup undone.

The cgroup file systems are stood in for by directories here (writes to
a real one need root and move real processes); the functional test
throttles a real VNF of a real bed.
"""

import contextlib
import io
import os
import shutil
import tempfile

import testtools

from epa_chain import cli
from epa_chain.commands import local as local_command
from epa_chain.local import state as state_mod
from epa_chain.local import throttle


class TestSpec(testtools.TestCase):

    def test_index_and_percent(self):
        parsed = throttle.Throttle.parse('2:10')
        self.assertEqual((2, 10.0), (parsed.vnf, parsed.percent))
        self.assertEqual(1000, parsed.quota_us)
        self.assertEqual(7500, throttle.Throttle.parse(' 1:75 ').quota_us)

    def test_bad_specs_name_the_option_and_the_form(self):
        for text in ('2', '0:10', '2:0', '2:101', 'vnf2:10', '2:-5',
                     '2:10;rm', '-2:10', '2:1e2'):
            error = self.assertRaises(ValueError, throttle.Throttle.parse,
                                      text)
            self.assertIn('--throttle-vnf %r' % text, str(error))
            self.assertIn('N:PERCENT', str(error))

    def test_the_command_line_refuses_it_before_anything_runs(self):
        parser = cli.build_parser()
        args = parser.parse_args(['local', 'run', '--throttle-vnf', '2:x'])
        error = self.assertRaises(ValueError, local_command._request, args,
                                  None)
        self.assertIn('--throttle-vnf', str(error))


class TestAgainstTheChain(testtools.TestCase):
    """A VNF the chain lacks: refused as the arguments are parsed."""

    def request(self, *argv):
        args = cli.build_parser().parse_args(['local', 'run'] + list(argv))
        return local_command._request(args, None)

    def refusal(self, *argv):
        return str(self.assertRaises(ValueError, self.request, *argv))

    def test_the_preset_vnf_count_bounds_it(self):
        error = self.refusal('--preset', 'pvvp', '--throttle-vnf', '3:10')
        self.assertIn('--throttle-vnf 3:10: the chain has 2 VNF(s)', error)
        self.assertIn('pvvp-bidir.yaml', error)
        self.assertIn('name one of 1-2 (e.g. --throttle-vnf 2:10)', error)
        self.assertIn('9:10: the chain has 1 VNF(s)', self.refusal(
            '--throttle-vnf', '9:10'))
        request = self.request('--preset', 'vecpe', '--throttle-vnf', '3:10')
        self.assertEqual(3, request.throttle.vnf)

    def test_an_environment_file_beats_the_parameter_as_in_heat(self):
        error = self.refusal('--preset', 'pvp', '--parameter',
                             'vnf_count=3', '--throttle-vnf', '2:10')
        self.assertIn('the chain has 1 VNF(s)', error)
        self.assertIn('name VNF 1 (e.g. --throttle-vnf 1:10)', error)

    def test_each_of_vnf_counts_bounds_it(self):
        error = self.refusal('--vnf-counts', '1,3', '--throttle-vnf', '2:5')
        self.assertIn('--throttle-vnf 2:5: --vnf-counts brings up a chain '
                      'of 1 VNF(s)', error)
        self.assertIn('leave 1 out of --vnf-counts', error)
        self.assertIn('run without --throttle-vnf', self.refusal(
            '--vnf-counts', '0,2', '--throttle-vnf', '1:5'))
        # The counts replace the preset's: pvp's 1 does not refuse 2.
        self.assertEqual((2, 3), self.request(
            '--vnf-counts', '2,3', '--throttle-vnf', '2:5').vnf_counts)

    def test_refused_before_preflight_in_one_line(self):
        from epa_chain.local import lifecycle

        state_root = tempfile.mkdtemp(prefix='epa-throttle-beds-')
        self.addCleanup(shutil.rmtree, state_root)
        ran = []
        self.patch(lifecycle, 'run', lambda *a: ran.append(a))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main(['local', 'run', '--state-root', state_root,
                             '--throttle-vnf', '9:10'])
        self.assertEqual((2, []), (code, ran))
        self.assertEqual(1, len(err.getvalue().splitlines()))
        self.assertIn('--throttle-vnf 9:10', err.getvalue())


class TestGroup(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = tempfile.mkdtemp(prefix='epa-throttle-test-')
        self.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        self.cpu = os.path.join(self.root, 'cpu')
        os.mkdir(self.cpu)
        self.roots = [(self.cpu, 1)]
        self.state = state_mod.BedState(os.path.join(self.root, 'beds'),
                                        'ect1')

    def _read(self, *parts):
        with open(os.path.join(*parts)) as stream:
            return stream.read().split()

    def test_quota_period_and_processes_written(self):
        path = throttle.apply(throttle.Throttle(2, 10.0), self.state,
                              [101, 102], self.roots)
        self.assertEqual(os.path.join(self.cpu, throttle.group_name(
            self.state)), path)
        self.assertEqual(['10000'], self._read(path, 'cpu.cfs_period_us'))
        self.assertEqual(['1000'], self._read(path, 'cpu.cfs_quota_us'))
        # One write per process: the file keeps the last (the kernel
        # keeps them all).
        self.assertEqual(['102'], self._read(path, 'cgroup.procs'))

    def test_cgroup_v2_writes_cpu_max(self):
        path = throttle.apply(throttle.Throttle(1, 50.0), self.state, [7],
                              [(self.cpu, 2)])
        self.assertEqual(['5000', '10000'], self._read(path, 'cpu.max'))

    def test_a_group_per_bed_directory(self):
        other = state_mod.BedState(os.path.join(self.root, 'others'),
                                   'ect1')
        self.assertNotEqual(throttle.group_name(self.state),
                            throttle.group_name(other))
        self.assertTrue(throttle.group_name(self.state).startswith(
            'epa-chain-ect1-'))

    def test_remove_moves_what_is_left_to_the_root_then_removes(self):
        path = throttle.apply(throttle.Throttle(2, 10.0), self.state,
                              [101], self.roots)
        # A directory stands in: rmdir needs it empty of files.
        for name in os.listdir(path):
            if name != 'cgroup.procs':
                os.unlink(os.path.join(path, name))
        real_rmdir = os.rmdir

        def rmdir(target):
            os.unlink(os.path.join(target, 'cgroup.procs'))
            real_rmdir(target)
        self.patch(os, 'rmdir', rmdir)
        self.assertEqual('removed %s' % path,
                         throttle.remove(self.state, self.roots))
        self.assertFalse(os.path.exists(path))
        self.assertEqual(['101'], self._read(self.cpu, 'cgroup.procs'))
        self.assertIsNone(throttle.remove(self.state, self.roots))

    def test_a_group_that_cannot_go_is_an_error_naming_it(self):
        path = throttle.apply(throttle.Throttle(2, 10.0), self.state,
                              [101], self.roots)
        error = self.assertRaises(throttle.ThrottleError, throttle.remove,
                                  self.state, self.roots)
        self.assertIn(path, str(error))

    def test_no_cpu_controller_is_said_with_the_way_out(self):
        error = self.assertRaises(throttle.ThrottleError, throttle.apply,
                                  throttle.Throttle(2, 10.0), self.state,
                                  [1], [])
        self.assertIn('no CPU cgroup controller', str(error))
        self.assertIn('run without it', str(error))

    def test_a_refused_write_leaves_no_group(self):
        # the group exists already and is not a directory we made: mkdir
        # fails, nothing is written, the error names the path
        blocker = os.path.join(self.cpu, throttle.group_name(self.state))
        with open(blocker, 'w'):
            pass
        error = self.assertRaises(throttle.ThrottleError, throttle.apply,
                                  throttle.Throttle(2, 10.0), self.state,
                                  [1], self.roots)
        self.assertIn(blocker, str(error))
        self.assertTrue(os.path.isfile(blocker))
