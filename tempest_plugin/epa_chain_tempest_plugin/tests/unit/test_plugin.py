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

"""The plugin in Tempest, without a cloud.

The entry point, the scenarios skipping under Tempest's fake config (no
service, no admin for dynamic credentials, no console output), the test
timeout budget, the Heat client's endpoint, and the `tempest` commands in a
fresh workspace (`tempest init`, `list-plugins`, `run --list-tests`).
"""

import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import fixtures
from oslo_config import cfg
from tempest import config as tempest_config
from tempest.lib.common import rest_client
from tempest.test_discover import plugins
from tempest.tests import fake_config
from tempest.tests.lib import fake_auth_provider
from tempest.tests.lib.services import registry_fixture
import testtools

from epa_chain.hot import shipped
from epa_chain_tempest_plugin import config as epa_config
from epa_chain_tempest_plugin import plugin
from epa_chain_tempest_plugin.services import clients

PACKAGE_DIR = os.path.dirname(os.path.abspath(plugin.__file__))
SCENARIO_MODULE = ('epa_chain_tempest_plugin.tests.scenario.'
                   'test_chain_benchmark')
SCENARIO_NAMES = ['test_chain_%dvnf_%s' % (n, d) for n in (1, 2, 3)
                  for d in ('unidirectional', 'bidirectional')]


class PluginTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.plugin = plugin.EpaChainTempestPlugin()

    def test_is_a_tempest_plugin(self):
        self.assertIsInstance(self.plugin, plugins.TempestPlugin)

    def test_load_tests_gives_only_the_scenarios(self):
        test_dir, top_level = self.plugin.load_tests()
        self.assertEqual(os.path.join(PACKAGE_DIR, 'tests', 'scenario'),
                         test_dir)
        self.assertEqual(os.path.dirname(PACKAGE_DIR), top_level)
        self.assertTrue(os.path.isfile(os.path.join(
            test_dir, 'test_chain_benchmark.py')))
        # The unit tests must stay out of what Tempest discovers.
        unit_dir = os.path.dirname(os.path.abspath(__file__))
        self.assertFalse(unit_dir.startswith(test_dir))

    def test_register_opts_and_opt_lists(self):
        conf = cfg.ConfigOpts()
        self.plugin.register_opts(conf)
        conf([], default_config_files=[])
        self.assertIs(False, conf.service_available.epa_chain)
        self.assertEqual('mlrsearch', conf.epa_chain.search_method)
        listed = dict(self.plugin.get_opt_lists())
        self.assertEqual(['epa_chain', 'service_available'], sorted(listed))
        self.assertEqual(len(epa_config.EpaChainGroup),
                         len(listed['epa_chain']))

    def test_registering_twice_is_harmless(self):
        # Tempest's ConfigFixture registers installed plugins already.
        conf = cfg.ConfigOpts()
        self.plugin.register_opts(conf)
        self.plugin.register_opts(conf)
        conf([], default_config_files=[])
        self.assertEqual(shipped.parameter_default('generator_control_port'),
                         conf.epa_chain.generator_control_port)


class ScenarioSkipTest(testtools.TestCase):
    """The scenarios under Tempest's fake configuration: no cloud."""

    def setUp(self):
        super().setUp()
        self.useFixture(fake_config.ConfigFixture())
        self.useFixture(registry_fixture.RegistryFixture())
        # Registered by Tempest itself when the package is installed.
        plugin.EpaChainTempestPlugin().register_opts(cfg.CONF)

        class FakePrivate(fake_config.FakePrivate):
            # Tempest aliases plugin groups it finds by entry point only.
            def _set_attrs(self):
                super()._set_attrs()
                self.epa_chain = cfg.CONF.epa_chain

        patches = [mock.patch.object(tempest_config, 'TempestConfigPrivate',
                                     FakePrivate),
                   # A configuration cached by an earlier test would win.
                   mock.patch.object(tempest_config.CONF, '_config', None)]
        for patch in patches:
            patch.start()
            self.addCleanup(patch.stop)
        self.scenarios = importlib.import_module(SCENARIO_MODULE)

    def _run_all(self):
        suite = unittest.defaultTestLoader.loadTestsFromModule(
            self.scenarios)
        result = unittest.TestResult()
        suite.run(result)
        return result

    def test_six_scenarios_with_ids_and_slow(self):
        tests = list(iter_tests(
            unittest.defaultTestLoader.loadTestsFromModule(self.scenarios)))
        self.assertEqual(sorted(SCENARIO_NAMES),
                         sorted(t._testMethodName for t in tests))
        ids = set()
        for test in tests:
            attrs = getattr(getattr(test, test._testMethodName),
                            '__testtools_attrs')
            self.assertIn('slow', attrs, test.id())
            (idempotent,) = [a for a in attrs if a.startswith('id-')]
            ids.add(idempotent)
        self.assertEqual(6, len(ids))

    def test_everything_skips_without_the_service(self):
        result = self._run_all()
        self.assertEqual([], result.errors)
        self.assertEqual([], result.failures)
        self.assertTrue(result.skipped)
        for _test, reason in result.skipped:
            self.assertIn('[service_available] epa_chain = True', reason)

    def test_unselected_scenario_skips_with_the_option(self):
        cfg.CONF.set_override('chain_lengths', [2], 'epa_chain')
        cfg.CONF.set_override('directions', ['bidirectional'], 'epa_chain')
        self.addCleanup(cfg.CONF.clear_override, 'chain_lengths',
                        'epa_chain')
        self.addCleanup(cfg.CONF.clear_override, 'directions', 'epa_chain')
        case = self.scenarios.ChainBenchmarkTest(
            'test_chain_1vnf_bidirectional')
        error = self.assertRaises(unittest.SkipTest,
                                  case.test_chain_1vnf_bidirectional)
        self.assertIn('chain length 1 is not in [epa_chain] chain_lengths',
                      str(error))
        case = self.scenarios.ChainBenchmarkTest(
            'test_chain_2vnf_unidirectional')
        error = self.assertRaises(unittest.SkipTest,
                                  case.test_chain_2vnf_unidirectional)
        self.assertIn('direction unidirectional is not in', str(error))

    def enable(self, overrides):
        """[service_available] epa_chain on, and {(group, name): value}."""
        overrides = dict(overrides)
        overrides[('service_available', 'epa_chain')] = True
        for (group, name), value in overrides.items():
            cfg.CONF.set_override(name, value, group)
            self.addCleanup(cfg.CONF.clear_override, name, group)

    def skip_reason(self):
        error = self.assertRaises(
            unittest.SkipTest, self.scenarios.ChainBenchmarkTest.skip_checks)
        return str(error)

    def test_dynamic_credentials_without_admin_skip(self):
        # Tempest's own check passes (dynamic credentials "have" admin);
        # creating them would fail in setUpClass.
        self.enable({('auth', 'use_dynamic_credentials'): True,
                     ('auth', 'admin_username'): None})
        self.assertIn('dynamic credentials have no admin', self.skip_reason())
        # The class skips in setUpClass, not with a traceback.
        result = self._run_all()
        self.assertEqual([], result.errors)
        self.assertTrue(result.skipped)
        for _test, reason in result.skipped:
            self.assertIn('[auth] admin_username', reason)

    def test_configured_admin_does_not_skip(self):
        self.enable({('auth', 'use_dynamic_credentials'): True})
        self.assertIsNone(self.scenarios.admin_skip_reason('v2'))
        self.scenarios.ChainBenchmarkTest.skip_checks()

    def test_console_output_disabled_skips(self):
        self.enable({('compute-feature-enabled', 'console_output'): False})
        self.assertIn('[compute-feature-enabled] console_output is False',
                      self.skip_reason())

    def test_timeout_budget_is_os_test_timeout_times_the_factor(self):
        self.enable({('epa_chain', 'timeout_scaling_factor'): 3})
        cls = self.scenarios.ChainBenchmarkTest
        self.addCleanup(setattr, cls, 'TIMEOUT_SCALING_FACTOR',
                        cls.TIMEOUT_SCALING_FACTOR)
        cls.resource_setup()
        self.assertEqual(3, cls.TIMEOUT_SCALING_FACTOR)
        self.useFixture(fixtures.EnvironmentVariable('OS_TEST_TIMEOUT',
                                                     '1000'))
        for name in ('heat_client', 'compute', 'answers'):
            patch = mock.patch.object(cls, name, mock.Mock(), create=True)
            patch.start()
            self.addCleanup(patch.stop)
        with mock.patch.object(self.scenarios.benchmark,
                               'ChainBenchmark') as chain_benchmark:
            chain_benchmark.return_value.run.return_value = ['a.json']
            cls('test_chain_1vnf_bidirectional')._benchmark(
                1, 'bidirectional')
        time_budget = chain_benchmark.call_args[1]['budget']
        self.assertEqual(3000, time_budget.total_s)
        # Preflight asks the cloud through the class's admin clients.
        self.assertIs(cls.answers, chain_benchmark.call_args[1]['answers'])
        self.assertIn('timeout_scaling_factor 3', time_budget.description)

    def test_heat_client_endpoint_from_the_options(self):
        self.enable({('epa_chain', 'heat_endpoint_type'): 'internalURL',
                     ('epa_chain', 'heat_region'): 'RegionTwo'})
        heat = clients.heat(fake_auth_provider.FakeAuthProvider())
        self.assertIsInstance(heat.client, rest_client.RestClient)
        self.assertEqual({'service': 'orchestration',
                          'endpoint_type': 'internalURL',
                          'region': 'RegionTwo', 'name': None},
                         heat.client.filters)
        cfg.CONF.clear_override('heat_region', 'epa_chain')
        heat = clients.heat(fake_auth_provider.FakeAuthProvider())
        self.assertEqual(tempest_config.CONF.identity.region,
                         heat.client.filters['region'])


def iter_tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from iter_tests(item)
        else:
            yield item


ENTRY_POINT_GROUP = 'tempest.test_plugins'
ENTRY_POINT = 'epa_chain_tempest_plugin.plugin:EpaChainTempestPlugin'
DISTRIBUTION = 'epa-chain-tempest-plugin'


class TempestCommandTest(testtools.TestCase):
    """`tempest init`, `tempest list-plugins`, `tempest run --list-tests`.

    Tempest finds plugins by entry point, so this needs the
    epa-chain-tempest-plugin distribution installed next to the `tempest`
    command (`tox -e tempest-plugin` installs it; a bare source tree on
    PYTHONPATH does not count).
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tempest = os.path.join(os.path.dirname(sys.executable), 'tempest')
        if not os.access(cls.tempest, os.X_OK):
            raise unittest.SkipTest('no tempest command next to %s (pip '
                                    'install ./tempest_plugin)'
                                    % sys.executable)
        try:
            distribution = importlib.metadata.distribution(DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError:
            raise unittest.SkipTest(
                'the %s distribution is not installed in this environment '
                '(pip install ./tempest_plugin): Tempest finds plugins by '
                'entry point' % DISTRIBUTION)
        cls.entry_points = [ep.value for ep in distribution.entry_points
                            if ep.group == ENTRY_POINT_GROUP]
        # One workspace for the class: `tempest init` takes a second.
        # It registers workspaces in ~/.tempest, so HOME is a temp dir.
        cls.home = tempfile.mkdtemp(prefix='epa-chain-tempest-')
        cls.workspace = os.path.join(cls.home, 'workspace')
        cls.env = dict(os.environ, HOME=cls.home, TMPDIR=cls.home)
        cls.init = cls.run_tempest('init', cls.workspace, cwd=cls.home)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.home, ignore_errors=True)
        super().tearDownClass()

    @classmethod
    def run_tempest(cls, *args, cwd=None):
        return subprocess.run(
            [cls.tempest] + list(args), cwd=cwd or cls.workspace,
            env=cls.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True, timeout=120)

    def setUp(self):
        super().setUp()
        self.assertEqual(
            [ENTRY_POINT], self.entry_points,
            'tempest_plugin/setup.cfg [entry_points] needs '
            '"%s =\\n    epa-chain = %s"'
            % (ENTRY_POINT_GROUP, ENTRY_POINT))
        self.assertEqual(0, self.init.returncode, self.init.stdout)

    def tempest_command(self, *args):
        process = self.run_tempest(*args)
        self.assertEqual(0, process.returncode,
                         'tempest %s: %s' % (' '.join(args),
                                             process.stdout[-3000:]))
        return process.stdout

    def test_list_plugins(self):
        output = self.tempest_command('list-plugins')
        self.assertIn('epa-chain', output)
        self.assertIn(ENTRY_POINT, output)

    def test_list_tests(self):
        # `tempest run` itself is not run here (seconds of stestr): the
        # skip without a cloud is ScenarioSkipTest's, under fake config.
        output = self.tempest_command('run', '--list-tests')
        listed = sorted(line.strip() for line in output.splitlines()
                        if line.startswith(SCENARIO_MODULE))
        self.assertEqual(6, len(listed), output[-3000:])
        for name, line in zip(sorted(SCENARIO_NAMES), listed):
            self.assertIn('.ChainBenchmarkTest.%s[id-' % name, line)
            self.assertTrue(line.endswith(',slow]'), line)
