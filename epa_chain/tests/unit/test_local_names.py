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

"""A bed's --prefix and --state-root, and what `down` may touch.

Everything runs on scratch directories with processes this test starts;
the host's namespaces are never listed for real nor deleted (host's
namespace functions are replaced), and no bed is brought up: preflight
fails the test if it is reached.
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from unittest import mock

import testtools

from epa_chain import cli
from epa_chain.commands import local as local_command
from epa_chain.local import host
from epa_chain.local import lifecycle
from epa_chain.local import names
from epa_chain.local import state as state_mod
from epa_chain.local import teardown
from epa_chain.prox import build as prox_build


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _tree(top):
    """Every path under top with its content, to see that nothing moved."""
    found = {}
    for root, dirs, files in os.walk(top):
        for name in dirs:
            found[os.path.join(root, name)] = None
        for name in files:
            path = os.path.join(root, name)
            with open(path, 'rb') as stream:
                found[path] = stream.read()
    return found


class Scratch(testtools.TestCase):
    """A scratch state root; the host's namespaces faked, none present."""

    def setUp(self):
        super().setUp()
        self.top = tempfile.mkdtemp(prefix='epa-names-test-')
        self.addCleanup(subprocess.run, ['rm', '-rf', self.top])
        self.root = os.path.join(self.top, 'root')
        os.mkdir(self.root, 0o755)
        self.deleted = []
        for name, fake in (
                ('namespaces', lambda: []),
                ('namespace_pids', lambda name: []),
                ('delete_namespace', self.deleted.append)):
            patcher = mock.patch.object(host, name, side_effect=fake)
            patcher.start()
            self.addCleanup(patcher.stop)
        patcher = mock.patch.object(
            lifecycle, 'preflight',
            side_effect=AssertionError('preflight reached'))
        patcher.start()
        self.addCleanup(patcher.stop)

    def sleeper(self, *args):
        """A process of ours whose command line carries `args`."""
        process = subprocess.Popen(
            [sys.executable, '-c', 'import time; time.sleep(60)'] +
            list(args))
        self.addCleanup(process.wait)
        self.addCleanup(process.kill)
        # Until the interpreter has started, its cmdline is the parent's.
        deadline = time.monotonic() + 10
        while host.cmdline(process.pid) != process.args and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        return process

    def assertOneLineError(self, code, err, *needles):
        self.assertEqual(2, code, err)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertNotIn('Traceback', err)
        self.assertTrue(err.startswith('epa-chain local: '), err)
        for needle in needles:
            self.assertIn(needle, err)


class TestPrefix(testtools.TestCase):

    def test_bad_prefixes_are_refused_with_the_pattern(self):
        for prefix in ('', '..', '.', '/usr', 'a/b', '-x', '--x', 'EPA',
                       'Epa', '1epa', 'e\n', 'e pa', 'e_pa', 'e.pa',
                       'a' * (names.PREFIX_MAX + 1), 'épa', None):
            with self.subTest(prefix=prefix):
                error = self.assertRaises(names.BadName, names.check_prefix,
                                          prefix)
                self.assertIn(names.PREFIX_PATTERN, str(error))
                self.assertTrue(str(error).startswith('--prefix '))
                self.assertNotIn('\n', str(error))

    def test_good_prefixes(self):
        for prefix in ('epa', 'e', 'ect108', 'epa-bench', 'a' *
                       names.PREFIX_MAX):
            self.assertEqual(prefix, names.check_prefix(prefix))

    def test_the_longest_prefix_still_fits_every_derived_name(self):
        longest = 'a' * names.PREFIX_MAX
        for name in names.namespaces(longest):
            self.assertLessEqual(len(name), names.IFNAMSIZ)
        self.assertEqual(names.IFNAMSIZ, max(
            len(name) for name in names.namespaces(longest)))
        # Heat's stack names
        self.assertRegex(longest, r'^[a-zA-Z][a-zA-Z0-9_.-]*$')

    def test_the_plan_and_the_record_use_the_same_names(self):
        record = state_mod.BedState('/r', 'ab')
        self.assertEqual(names.namespaces('ab'), record.namespaces)

    def test_documented_pattern_is_the_checked_one(self):
        self.assertIn(names.PREFIX_PATTERN, local_command.__doc__)


class TestStateRoot(Scratch):

    def refused(self, path, *needles):
        error = self.assertRaises(names.BadName, names.check_state_root,
                                  path)
        self.assertTrue(str(error).startswith('--state-root '), error)
        self.assertNotIn('\n', str(error))
        for needle in needles:
            self.assertIn(needle, str(error))
        return error

    def test_a_safe_root_is_its_real_path(self):
        self.assertEqual(self.root, names.check_state_root(self.root))
        # A parent reached through a link resolves once.
        os.symlink(self.top, os.path.join(self.top, 'link'))
        self.assertEqual(self.root, names.check_state_root(
            os.path.join(self.top, 'link', 'root')))

    def test_a_missing_root_is_not_created(self):
        missing = os.path.join(self.top, 'new')
        self.assertEqual(missing, names.check_state_root(missing))
        self.assertFalse(os.path.exists(missing))
        self.refused(os.path.join(self.top, 'no', 'new'), 'create the parent')

    def test_a_root_that_could_never_be_made_is_refused(self):
        # A typo under /proc would make `down` report a clean host.
        self.refused('/proc/epa-chain-no-such-root', 'cannot be made in '
                     '/proc')

    def test_relative_and_empty(self):
        for path in ('', 'relative', './x', None):
            self.refused(path, 'must be an absolute path')

    def test_characters_dpdk_and_prox_split_at(self):
        for path in ('/tmp/a b', '/tmp/a,b', '/tmp/a=b', '/tmp/a:b',
                     '/tmp/a\nb', '/tmp/a\0b'):
            self.refused(path, 'may hold only')

    def test_a_symbolic_link_is_refused(self):
        link = os.path.join(self.top, 'link')
        os.symlink(self.root, link)
        self.refused(link, 'is a symbolic link')

    def test_a_file_is_refused(self):
        path = os.path.join(self.top, 'file')
        open(path, 'w').close()
        self.refused(path, 'is not a directory')

    def test_group_or_world_writable_is_refused(self):
        for mode in (0o775, 0o757, 0o1777):
            os.chmod(self.root, mode)
            self.refused(self.root, 'writable by its group or by others',
                         'chmod go-w')

    def test_a_parent_others_may_write_is_refused(self):
        parent = os.path.join(self.top, 'open')
        os.mkdir(parent)
        os.chmod(parent, 0o777)
        os.mkdir(os.path.join(parent, 'root'), 0o755)
        self.refused(os.path.join(parent, 'root'), 'others may write')
        # sticky, as /tmp: they cannot rename what they do not own
        os.chmod(parent, 0o1777)
        names.check_state_root(os.path.join(parent, 'root'))

    def test_too_long_for_the_sockets(self):
        deep = self.top
        while len(deep) < names.SUN_PATH_MAX:
            deep = os.path.join(deep, 'd' * 20)
        os.makedirs(deep, 0o755)
        self.refused(deep, 'too long', 'AF_UNIX')

    def test_a_bed_directory_that_is_a_link_is_refused(self):
        os.symlink(self.top, os.path.join(self.root, 'epa'))
        error = self.assertRaises(names.BadName, names.bed_directory,
                                  self.root, 'epa')
        self.assertIn('outside the state root', str(error))
        self.assertEqual(os.path.join(self.root, 'ab'),
                         names.bed_directory(self.root, 'ab'))


class TestOwner(Scratch):

    def test_owned_by_someone_else_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest('needs root to give a directory away')
        os.chown(self.root, 4242, 4242)
        error = self.assertRaises(names.BadName, names.check_state_root,
                                  self.root)
        self.assertIn('is owned by uid 4242, not by root', str(error))
        # someone else's directory is refused for a user too
        error = self.assertRaises(names.BadName, names.check_state_root,
                                  self.root, euid=1000)
        self.assertIn('not by root or you (uid 1000)', str(error))


class TestCommandEdge(Scratch):
    """The issue's reproduction: refused before anything runs."""

    def test_bad_prefixes_touch_nothing(self):
        decoy = os.path.join(self.root, 'decoy')
        os.mkdir(decoy)
        with open(os.path.join(decoy, 'keep'), 'w') as stream:
            stream.write('mine')
        before = _tree(self.top)
        for action in ('down', 'status', 'up', 'run'):
            for prefix in ('..', '', '/usr', 'a/b', '-x', 'EPA',
                           '../root/decoy'):
                with self.subTest(action=action, prefix=prefix):
                    code, out, err = run('local', action, '--prefix=' + prefix,
                                         '--state-root', self.root)
                    self.assertOneLineError(code, err, '--prefix',
                                            names.PREFIX_PATTERN)
                    self.assertEqual('', out)
        self.assertEqual(before, _tree(self.top))
        self.assertEqual([], self.deleted)

    def test_bad_state_roots_touch_nothing(self):
        link = os.path.join(self.top, 'link')
        os.symlink(self.root, link)
        open_root = os.path.join(self.top, 'open')
        os.mkdir(open_root)
        os.chmod(open_root, 0o777)
        for action in ('down', 'status', 'up', 'run'):
            for root, needle in (('relative', 'absolute'),
                                 ('', 'absolute'),
                                 (link, 'symbolic link'),
                                 (open_root, 'writable'),
                                 ('/tmp', 'writable'),
                                 (self.root + '/a b', 'may hold only')):
                with self.subTest(action=action, root=root):
                    code, _out, err = run('local', action,
                                          '--state-root=' + root)
                    self.assertOneLineError(code, err, '--state-root',
                                            needle)
        self.assertEqual([], os.listdir(self.root))

    def test_up_refuses_a_directory_no_bed_made(self):
        bed = os.path.join(self.root, 'epa')
        os.mkdir(bed)
        open(os.path.join(bed, 'notes.txt'), 'w').close()
        code, _out, err = run('local', 'up', '--state-root', self.root)
        self.assertOneLineError(code, err, 'notes.txt', 'not made by a bed')
        with open(os.path.join(bed, state_mod.RECORD), 'w') as stream:
            json.dump({'schema': state_mod.SCHEMA}, stream)
        code, _out, err = run('local', 'run', '--state-root', self.root)
        self.assertOneLineError(code, err, 'a bed is up', 'local down')

    def test_run_checks_its_json_before_anything(self):
        directory = os.path.join(self.top, 'out')
        os.mkdir(directory)
        code, _out, err = run('local', 'run', '--state-root', self.root,
                              '--json', directory)
        self.assertOneLineError(code, err, '--json', 'directory')
        self.assertEqual([], os.listdir(self.root))


class TestRequestEdge(Scratch):
    """Every value the command parses is refused before preflight."""

    def setUp(self):
        super().setUp()
        patcher = mock.patch.dict(os.environ)
        patcher.start()
        self.addCleanup(patcher.stop)
        for variable in (prox_build.BINARY_VARIABLE,
                         prox_build.SOURCE_VARIABLE):
            os.environ.pop(variable, None)

    def test_bad_values_are_one_line_and_touch_nothing(self):
        for argv, needle in (
                (['run', '--parameter', 'vnf_count'], '--parameter'),
                (['up', '--parameter', '=2'], '--parameter'),
                (['up', '--preset', 'pvvvp'], '--preset'),
                (['run', '--prox-binary', self.top + '/none'],
                 '--prox-binary %s/none: not an executable file' % self.top),
                (['run', '--vnf-counts', '0,4'], '--vnf-counts'),
                (['run', '--vnf-counts', 'x'], '--vnf-counts'),
                (['run', '--chain-counts', '1,9'], '--chain-counts'),
                (['run', '--chain-counts', '0'], '--chain-counts'),
                (['up', '--chain-count', 'two'], '--chain-count'),
                (['run', '--chain-count', '2', '--chain-counts', '1,2'],
                 '--chain-count or --chain-counts'),
                (['run', '--vnf-counts', '1,2', '--chain-counts', '1,2'],
                 '--vnf-counts or --chain-counts'),
                (['run', '--vnf-counts', '0', '--chain-count', '2'],
                 'OVS alone'),
                (['run', '--noisy-neighbours', '1.5'],
                 '--noisy-neighbours'),
                (['run', '--noisy-neighbours', '0.5', '--chain-count', '1'],
                 'needs neighbours'),
                (['run', '--frame-sizes', '12'], '--frame-sizes'),
                (['run', '--loss-goals', 'NDR'], '--loss-goals')):
            with self.subTest(argv=argv):
                code, out, err = run('local', *argv, '--state-root',
                                     self.root)
                self.assertOneLineError(code, err, needle)
                self.assertEqual('', out)
        self.assertEqual([], os.listdir(self.root))

    def test_the_command_passes_a_request_and_writes_nothing_on_args(self):
        args = cli.build_parser().parse_args([
            'local', 'run', '--state-root', self.root, '--parameter',
            'vnf_count=2', '--vnf-counts', '0,1', '--frame-sizes', '64,128',
            '--generator', 'afpacket'])
        before = dict(vars(args))
        seen = []
        with mock.patch.object(lifecycle, 'run', side_effect=lambda request,
                               progress, out: seen.append(request) or 0):
            self.assertEqual(0, local_command.run(args))
        self.assertEqual(before, vars(args))
        (request,) = seen
        self.assertIsInstance(request, lifecycle.Request)
        self.assertEqual((0, 1), request.vnf_counts)
        self.assertEqual({'vnf_count': '2'}, request.stack.parameters)
        self.assertEqual(['64', '128'], [
            f.label for f in request.campaign.frame_sizes])
        self.assertEqual(('afpacket', None), (request.generator,
                                              request.engine))
        self.assertTrue(request.prox.nothing)
        self.assertEqual(os.path.join(self.root, 'epa'),
                         request.state.directory)
        self.assertRaises(AttributeError, setattr, request, 'generator',
                          'prox')

    def test_chain_counts_and_neighbours_reach_the_request(self):
        args = cli.build_parser().parse_args([
            'local', 'run', '--state-root', self.root, '--chain-counts',
            '2,3', '--noisy-neighbours', '0.25', '--generator', 'afpacket'])
        seen = []
        with mock.patch.object(lifecycle, 'run', side_effect=lambda request,
                               progress, out: seen.append(request) or 0):
            self.assertEqual(0, local_command.run(args))
        (request,) = seen
        self.assertEqual((2, 3), request.chain_counts)
        self.assertEqual(0.25, request.noisy_fraction)
        self.assertEqual([(None, 2), (None, 3)], request.runs())
        self.assertEqual({'chain_count': 3}, {
            k: v for k, v in request.stack.for_bed('testpmd', None,
                                                   3).items()
            if k == 'chain_count'})


class TestNamesDirectory(testtools.TestCase):

    def test_paths_not_substrings(self):
        bed = '/run/x/epa'
        for argv in (['prox', '-f', '/run/x/epa/vnfs/v1/run/prox.cfg'],
                     ['ovs', '--pidfile=/run/x/epa/ovs/ovs.pid'],
                     ['t', '--vdev=net_virtio_user0,path=/run/x/epa/s.sock,'
                      'server=1'],
                     ['ovs-vsctl', 'unix:/run/x/epa/ovs/db.sock'],
                     ['x', '/run/x/epa'], ['x', '/run/x/epa/']):
            self.assertTrue(host.names_directory(argv, bed), argv)
        for argv in (['x', '/run/x/epa-old/y'], ['x', '/y/run/x/epa/z'],
                     ['x', 'run/x/epa/z'], ['x', '/run/x/epa/../z'],
                     ['x', 'xx/run/x/epa/'], ['x', '/run/x/ep']):
            self.assertFalse(host.names_directory(argv, bed), argv)


class TestDown(Scratch):

    def setUp(self):
        super().setUp()
        self.bed = os.path.join(self.root, 'epa')

    def down(self, *extra):
        return run('local', 'down', '--state-root', self.root, *extra)

    def record(self, **fields):
        record = state_mod.BedState(self.root, 'epa')
        record.begin({'prefix': 'epa'})
        record.set(**fields)
        return record

    def test_decoys_are_neither_stopped_nor_removed(self):
        # A directory that is not a bed where the bed would be, a sibling
        # with the bed's name as a prefix, and processes whose command
        # lines hold the bed's path as a substring or name it unrecorded.
        os.mkdir(self.bed)
        with open(os.path.join(self.bed, 'keep.txt'), 'w') as stream:
            stream.write('not a bed')
        os.mkdir(os.path.join(self.bed, 'vnfs'))
        os.mkdir(self.bed + '-old')
        substring = self.sleeper('/decoy' + self.bed + '/x',
                                 self.bed + '-old/y')
        naming = self.sleeper(self.bed + '/vnfs/x')
        before = _tree(self.top)
        code, _out, err = self.down()
        self.assertEqual(0, code, err)
        self.assertNotIn('Traceback', err)
        self.assertIsNone(substring.poll())
        self.assertIsNone(naming.poll())
        self.assertEqual(before, _tree(self.top))
        self.assertIn('not a bed, left whole', err)
        self.assertIn('pid %d' % naming.pid, err)
        self.assertNotIn('pid %d' % substring.pid, err)
        self.assertEqual([], self.deleted)

    def test_recorded_processes_are_stopped_only_while_ours(self):
        ours = self.sleeper('--config-drive', self.bed + '/vnfs/v1/cd')
        reused = self.sleeper('unrelated')
        other_program = subprocess.Popen(
            ['/bin/sh', '-c', 'sleep 60; true', 'sh',
             self.bed + '/vnfs/v1/cd'])
        self.addCleanup(other_program.wait)
        self.addCleanup(other_program.kill)
        record = self.record()
        for name, process in (('v1', ours), ('v2', reused),
                              ('v3', other_program)):
            record.add_process(name, process.pid, [sys.executable])
        code, _out, err = self.down()
        self.assertEqual(0, code, err)
        self.assertEqual(-15, ours.wait(10))
        self.assertIsNone(reused.poll())
        self.assertIsNone(other_program.poll())
        self.assertIn('1 process(es) stopped', err)
        self.assertFalse(os.path.exists(self.bed))

    def test_an_engine_recorded_by_its_runtime_is_stopped(self):
        engine = self.sleeper('-f', self.bed + '/vnfs/v1/run/prox.cfg')
        record = self.record()
        status = os.path.join(self.bed, 'vnfs', 'v1', 'status.json')
        os.makedirs(os.path.dirname(status))
        with open(status, 'w') as stream:
            json.dump({'pid': engine.pid}, stream)
        # its runtime is gone (killed -9)
        record.add_process('v1', 999999, [sys.executable], status)
        code, _out, err = self.down()
        self.assertEqual(0, code, err)
        self.assertEqual(-15, engine.wait(10))

    def test_a_half_built_bed_comes_down(self):
        os.mkdir(self.bed)
        with open(os.path.join(self.bed, state_mod.RECORD), 'w') as stream:
            json.dump({'schema': state_mod.SCHEMA, 'prefix': 'epa',
                       'processes': [{'pid': 'x'}, 7, {'name': 'v1'}],
                       'namespaces': ['epa-ovs', 'eth0'],
                       'hugepages': 'nonsense'}, stream)
        os.makedirs(os.path.join(self.bed, 'vnfs', 'v1'))
        with open(os.path.join(self.bed, 'vnfs', 'v1', 'console.log'),
                  'w') as stream:
            stream.write('booting\n')
        code, _out, err = self.down()
        self.assertEqual(0, code, err)
        self.assertFalse(os.path.exists(self.bed))
        with open(os.path.join(self.bed + '.logs',
                               'vnfs_v1_console.log')) as stream:
            self.assertEqual('booting\n', stream.read())
        # twice: idempotent
        code, _out, err = self.down()
        self.assertEqual(0, code, err)
        self.assertIn('none left', err)

    def test_an_unreadable_record_still_comes_down_by_name(self):
        os.mkdir(self.bed)
        with open(os.path.join(self.bed, state_mod.RECORD), 'w') as stream:
            stream.write('{"schema": ')
        host.namespaces.side_effect = lambda: ['epa-ovs', 'other']
        code, _out, err = self.down()
        self.assertEqual(0, code, err)
        self.assertIn('state record unreadable', err)
        self.assertEqual(['epa-ovs'], self.deleted)
        self.assertFalse(os.path.exists(self.bed))

    def test_namespaces_only_with_a_record_naming_them(self):
        host.namespaces.side_effect = lambda: ['epa-ovs', 'epa-gen']
        # No bed here: they may be a bed's under another state root.
        code, _out, err = self.down()
        self.assertEqual(0, code, err)
        self.assertEqual([], self.deleted)
        self.assertIn('namespace epa-ovs: no record', err)
        record = self.record()
        record.add_namespace('epa-gen')
        code, _out, err = self.down()
        self.assertEqual(['epa-gen'], self.deleted)
        self.assertIn('namespace epa-ovs: no record', err)

    def test_entries_no_bed_makes_are_left_and_named(self):
        self.record()
        os.makedirs(os.path.join(self.bed, 'sockets'))
        open(os.path.join(self.bed, 'mine.txt'), 'w').close()
        code, _out, err = self.down()
        self.assertEqual(0, code, err)
        self.assertEqual(['mine.txt'], os.listdir(self.bed))
        self.assertIn('mine.txt, not made by a bed', err)

    def test_a_step_that_fails_or_hangs_is_named_and_the_rest_done(self):
        self.record(namespaces=['epa-ovs'])
        host.namespaces.side_effect = host.HostError(
            'ip netns list: no answer after 60 s')
        code, _out, err = self.down()
        self.assertEqual(1, code, err)
        self.assertNotIn('Traceback', err)
        self.assertIn('gave up on namespaces: ip netns list: no answer', err)
        self.assertIn('gave up on 2 thing(s)', err)
        self.assertFalse(os.path.exists(self.bed))

    def test_a_mount_is_never_removed_through(self):
        record = self.record()
        os.makedirs(record.hugepage_mount)
        with mock.patch.object(teardown.os.path, 'ismount',
                               side_effect=lambda path:
                               path == record.hugepage_mount), \
                mock.patch.object(host, 'run',
                                  side_effect=host.HostError(
                                      'umount: target is busy')):
            code, _out, err = self.down()
        self.assertEqual(1, code, err)
        self.assertIn('umount: target is busy', err)
        self.assertIn('still mounted', err)
        self.assertTrue(os.path.isdir(record.hugepage_mount))

    def test_status_reads_only(self):
        record = self.record(phase='up')
        sleeper = self.sleeper(self.bed + '/vnfs/v1/x')
        record.add_process('v1', sleeper.pid, [sys.executable],
                           '/etc/passwd')
        before = _tree(self.top)
        code, out, err = run('local', 'status', '--state-root', self.root,
                             '--json')
        self.assertEqual(0, code, err)
        found = json.loads(out)
        self.assertTrue(found['processes'][0]['alive'])
        # a status file outside the bed is not read
        self.assertIsNone(found['processes'][0]['status'])
        self.assertEqual(before, _tree(self.top))
        self.assertIsNone(sleeper.poll())

    def test_status_of_a_partial_record(self):
        os.mkdir(self.bed)
        with open(os.path.join(self.bed, state_mod.RECORD), 'w') as stream:
            json.dump({'schema': state_mod.SCHEMA, 'phase': 'starting',
                       'plan': 'nonsense', 'hugepages': [1],
                       'processes': [{'pid': 'x'}]}, stream)
        code, out, err = run('local', 'status', '--state-root', self.root)
        self.assertEqual(0, code, err)
        self.assertIn('epa: starting', out)

    def test_a_record_that_is_no_file_never_blocks(self):
        # A FIFO as state.json blocked status and down for ever.
        os.mkdir(self.bed)
        os.mkfifo(os.path.join(self.bed, state_mod.RECORD))
        code, out, err = run('local', 'status', '--state-root', self.root)
        self.assertEqual(2, code)
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertIn('state.json: not a regular file', err)
        code, out, err = run('local', 'down', '--state-root', self.root)
        self.assertIn('cleaning up by name', err)

    def test_a_record_that_is_not_json_is_named(self):
        os.mkdir(self.bed)
        for data in (b'\xff\xfe\x00\x00', b'[' * 100000 + b']' * 100000,
                     b'{"schema": '):
            with open(os.path.join(self.bed, state_mod.RECORD), 'wb') as f:
                f.write(data)
            code, out, err = run('local', 'status', '--state-root',
                                 self.root)
            self.assertEqual(2, code)
            self.assertEqual(1, len(err.splitlines()), err)
            self.assertIn("state.json: not a bed's record", err)


class TestProxSourceEdge(Scratch):

    def test_a_hostile_source_is_refused_before_preflight(self):
        marker = os.path.join(self.top, 'PWNED')
        for argv, env, needle in (
                (['--prox-source=--upload-pack=touch %s;.git' % marker], {},
                 '--prox-source'),
                ([], {'EPA_CHAIN_PROX_SOURCE': 'ext::sh -c touch% ' + marker},
                 'EPA_CHAIN_PROX_SOURCE')):
            with self.subTest(argv=argv), mock.patch.dict(os.environ, env):
                os.environ.pop('EPA_CHAIN_PROX_BINARY', None)
                code, _out, err = run('local', 'run', '--state-root',
                                      self.root, *argv)
                self.assertOneLineError(code, err, needle)
        self.assertFalse(os.path.exists(marker))
        self.assertEqual([], os.listdir(self.root))
