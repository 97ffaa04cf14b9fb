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

"""What the host and the VNF images agree on (epa_chain/chain).

The readiness line and the one wait for it, the wire overhead, the
config-drive layout, the hugetlbfs mount reader; and that chain/ stays
what the images can run: standard library and PyYAML only.
"""

import ast
import os
import sys

import fixtures
import testtools

from epa_chain.chain import config_drive
from epa_chain.chain import hugetlbfs
from epa_chain.chain import readiness
from epa_chain.chain import wire
from epa_chain.tests import fake_clock
from epa_chain.tests import repo

CHAIN_DIR = os.path.join(repo.ROOT, 'epa_chain', 'chain')


class TestReadinessWait(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = fake_clock.FakeClock()
        self.ready = []

    def wait(self, nodes, consoles, problems=None, timeout=30, **hints):
        """consoles: name -> [text per poll]; the last text repeats."""
        def poll(node):
            texts = consoles[node.name]
            text = texts.pop(0) if len(texts) > 1 else texts[0]
            return text, (problems or {}).get(node.name)

        readiness.wait_until_ready(nodes, poll, timeout, interval=1.0,
                                   clock=self.clock, sleep=self.clock.sleep,
                                   on_ready=self.ready.append, **hints)

    def test_every_node_once_ready(self):
        nodes = [readiness.Node('a', 'prox'), readiness.Node('b', 'testpmd')]
        self.wait(nodes, {
            'a': ['', readiness.ready_line('a', 'prox')],
            'b': ['', '', 'boot\n' + readiness.ready_line('b', 'testpmd')]})
        self.assertEqual(['a', 'b'], [node.name for node in self.ready])
        self.assertEqual(2.0, self.clock.now)

    def test_the_console_verdict_comes_before_the_problem(self):
        # A runtime that printed FAILED and exited: the reason it gave.
        node = readiness.Node('a', 'prox')
        error = self.assertRaises(
            readiness.NotReadyError, self.wait, [node],
            {'a': [readiness.failed_line('a', 'no   huge\npages')]},
            {'a': 'runtime exited with 1'})
        self.assertEqual('a reports EPA-CHAIN FAILED: no huge pages',
                         str(error))
        self.assertEqual([node], error.nodes)

    def test_a_node_that_cannot_report_fails_at_once(self):
        error = self.assertRaises(
            readiness.NotReadyError, self.wait,
            [readiness.Node('a', 'prox')], {'a': ['booting']},
            {'a': 'runtime exited with 1'})
        self.assertEqual('a runtime exited with 1', str(error))
        self.assertEqual(0.0, self.clock.now)

    def test_wrong_engine_names_the_hint(self):
        error = self.assertRaises(
            readiness.NotReadyError, self.wait,
            [readiness.Node('a', 'prox')],
            {'a': [readiness.ready_line('a', 'testpmd')]},
            engine_hint='(option x)')
        self.assertEqual('a runs testpmd, but prox was asked for (option x)',
                         str(error))

    def test_timeout_lists_what_is_pending_with_its_console(self):
        nodes = [readiness.Node('b', 'prox'), readiness.Node('a', 'prox')]
        error = self.assertRaises(
            readiness.NotReadyError, self.wait, nodes,
            {'a': [readiness.ready_line('a', 'prox')],
             'b': ['one\ntwo']}, timeout=5, timeout_hint='(option t)')
        self.assertEqual('not ready after 5 s (option t): b, console ends: '
                         'one | two', str(error))
        self.assertEqual(['b'], [node.name for node in error.nodes])
        self.assertEqual(5.0, self.clock.now)


class TestWire(testtools.TestCase):

    def test_a_64_byte_frame_takes_84_byte_times(self):
        self.assertEqual(84, wire.wire_bytes(64))
        # 10 Gbit/s of 64-byte frames: the 14.88 Mframes/s of RFC 2544.
        self.assertAlmostEqual(14.88e6, 10e9 / (wire.wire_bytes(64) * 8),
                               delta=0.01e6)

    def test_measurement_and_prox_count_the_same(self):
        from epa_chain.measurement import trial
        from epa_chain.prox import client
        rate = trial.FrameSize(size=1518).line_rate_fps(10e9)
        self.assertAlmostEqual(100.0, client.speed_percent(rate, 1518))


class TestConfigDriveLayout(testtools.TestCase):

    def test_write_lays_out_the_three_files(self):
        directory = self.useFixture(fixtures.TempDir()).path
        config_drive.write(
            directory, config_drive.meta_data('id-1', 'vnf1'),
            config_drive.network_data([config_drive.link(
                'tap0', 'fa:16:3e:00:00:01', 'vhostuser', 'p0')]),
            '#cloud-config\n')
        for relative in (config_drive.META_DATA, config_drive.NETWORK_DATA,
                         config_drive.USER_DATA):
            self.assertTrue(os.path.isfile(os.path.join(directory,
                                                        relative)))
            self.assertTrue(relative.startswith('openstack/latest/'))
        with open(os.path.join(directory, config_drive.USER_DATA)) as f:
            self.assertEqual('#cloud-config\n', f.read())


class TestHugetlbfs(testtools.TestCase):

    def test_mounts_and_page_sizes(self):
        table = os.path.join(self.useFixture(fixtures.TempDir()).path, 'm')
        with open(table, 'w') as f:
            f.write('nodev /dev/hugepages hugetlbfs rw,pagesize=2M 0 0\n'
                    'nodev /mnt/huge\\0401G hugetlbfs rw,pagesize=1G 0 0\n'
                    'proc /proc proc rw 0 0\n')
        found = hugetlbfs.mounts(table)
        self.assertEqual(['/dev/hugepages', '/mnt/huge 1G'], sorted(found))
        self.assertEqual(2048, hugetlbfs.page_kb_of(found['/dev/hugepages']))
        self.assertEqual(1024 * 1024,
                         hugetlbfs.page_kb_of(found['/mnt/huge 1G']))
        self.assertIsNone(hugetlbfs.page_kb_of('rw'))
        self.assertEqual({}, hugetlbfs.mounts(table + '.missing'))


# Top-level modules diskimage-elements/epa-chain-runtime copies in too.
SHIPPED_MODULES = {'epa_chain.safe_yaml'}


class TestShippedIntoImages(testtools.TestCase):

    def test_chain_imports_only_the_standard_library_and_yaml(self):
        allowed_third_party = {'yaml'}
        for name in sorted(os.listdir(CHAIN_DIR)):
            if not name.endswith('.py'):
                continue
            with open(os.path.join(CHAIN_DIR, name)) as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    modules = ['%s.%s' % (node.module, alias.name)
                               for alias in node.names]
                else:
                    continue
                for module in modules:
                    top = module.split('.')[0]
                    if top == 'epa_chain':
                        # The image also gets the package's YAML loader.
                        self.assertTrue(
                            module.startswith('epa_chain.chain.') or
                            module in SHIPPED_MODULES,
                            '%s imports %s' % (name, module))
                    else:
                        self.assertTrue(
                            top in allowed_third_party or
                            top in _stdlib(), '%s imports %s' % (name,
                                                                 module))


def _stdlib():
    return sys.stdlib_module_names


def _imports(path):
    """epa_chain modules a file imports, at any level of the file."""
    with open(path) as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update('%s.%s' % (node.module, a.name) for a in node.names)
            found.add(node.module)
    return {m for m in found if m.split('.')[0] == 'epa_chain'}


def _package_modules():
    """Module name -> its file, for epa_chain without the tests."""
    modules = {}
    top = os.path.join(repo.ROOT, 'epa_chain')
    for root, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ('tests', '__pycache__')]
        for name in names:
            if name.endswith('.py'):
                path = os.path.join(root, name)
                relative = os.path.relpath(path, repo.ROOT)[:-3]
                module = relative.replace(os.sep, '.')
                if module.endswith('.__init__'):
                    module = module[:-len('.__init__')]
                modules[module] = path
    return modules


def _top_level_imports(path):
    """Top-level names of every module a file imports, at any level."""
    with open(path) as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.split('.')[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split('.')[0])
    return found


class TestLayering(testtools.TestCase):

    def test_nothing_in_epa_chain_needs_tempest(self):
        # Tempest and its test helpers are requirements of the plugin
        # (tempest_plugin/, its own distribution), not of epa-chain: no
        # module of epa_chain, tests included, imports them or the plugin.
        plugin_only = {'tempest', 'oslotest', 'epa_chain_tempest_plugin'}
        checked = 0
        for root, dirs, names in os.walk(os.path.join(repo.ROOT,
                                                      'epa_chain')):
            dirs[:] = [d for d in dirs if d != '__pycache__']
            for name in names:
                if not name.endswith('.py'):
                    continue
                path = os.path.join(root, name)
                checked += 1
                self.assertEqual(
                    set(), _top_level_imports(path) & plugin_only,
                    '%s imports the Tempest plugin\'s requirements: move '
                    'it to tempest_plugin/' % os.path.relpath(path,
                                                              repo.ROOT))
        self.assertGreater(checked, 100)

    def test_only_the_runtime_imports_the_runtime(self):
        for module, path in _package_modules().items():
            if module.startswith('epa_chain.vnf_runtime'):
                continue
            users = sorted(m for m in _imports(path)
                           if m.startswith('epa_chain.vnf_runtime'))
            self.assertEqual([], users, module)

    def test_commands_are_leaves(self):
        # A command parses its arguments and calls its domain (the cloud
        # workflow, the local bed, measurement...): nothing imports a
        # command but the CLI, and a command imports no other command
        # but the shared argument helpers.
        shared = {'epa_chain.commands', 'epa_chain.commands._arguments'}
        for module, path in _package_modules().items():
            if module in ('epa_chain.cli', 'epa_chain.commands'):
                continue
            commands = {m for m in _imports(path)
                        if m.startswith('epa_chain.commands')} - shared
            if module.startswith('epa_chain.commands.'):
                commands.discard(module)
            self.assertEqual(set(), commands,
                             '%s imports a command: move what it needs '
                             'into the command\'s domain package' % module)

    def test_no_import_cycle_between_modules(self):
        modules = _package_modules()
        graph = {module: {m for m in _imports(path) if m in modules and
                          m != module and not module.startswith(m + '.')}
                 for module, path in modules.items()}
        state = {}

        def visit(module, trail):
            state[module] = 'open'
            for target in sorted(graph[module]):
                if state.get(target) == 'open':
                    self.fail('import cycle: %s' % ' -> '.join(
                        trail[trail.index(target):] + [target]))
                if target not in state:
                    visit(target, trail + [target])
            state[module] = 'done'

        for module in sorted(graph):
            if module not in state:
                visit(module, [module])
