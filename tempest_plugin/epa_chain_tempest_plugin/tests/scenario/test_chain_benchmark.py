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

"""Data-plane benchmarks of a 1-3 VNF chain on an OVS-DPDK cloud.

Each scenario deploys templates/chain.yaml (the PVP, PVVP or vE-CPE preset
for its chain length and direction, with the in-stack PROX generator),
waits for every node to report ready, checks that every direction
forwards at a low rate, then runs the configured throughput search and
latency test per frame size and flow count, and writes the results to
[epa_chain] results_dir. The stack is deleted even when a step fails.

Admin credentials: the stack creates provider networks and (unless
[epa_chain] vnf_flavor/generator_flavor name existing ones) EPA flavors.
Serial: a benchmark must not share its hosts' cores and NICs with another
test, and two stacks would claim the same VLAN segments.

Timeout: OS_TEST_TIMEOUT x [epa_chain] timeout_scaling_factor; the stack,
readiness, measurement and deletion budgets must fit in it
(epa_chain/cloud/budget.py).
"""

from tempest.common import credentials_factory
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc
from tempest import test

from epa_chain.chain import directions as chain_directions
from epa_chain.cloud import benchmark
from epa_chain.cloud import budget
from epa_chain.cloud import options as opts
from epa_chain.cloud import ovs_hops
from epa_chain.cloud import stack
from epa_chain_tempest_plugin.services import clients

CONF = config.CONF


def admin_skip_reason(identity_version):
    """Why the admin credentials the class needs are missing, or None.

    Tempest's own check trusts dynamic credentials blindly; creating them
    then fails in setUpClass when [auth] admin_* are not set.
    """
    if not credentials_factory.is_admin_available(identity_version):
        return ('the epa-chain benchmarks need admin credentials (provider '
                'networks, flavors): none in the accounts file or [auth]')
    if CONF.auth.use_dynamic_credentials:
        try:
            credentials_factory.get_configured_admin_credentials(
                fill_in=False, identity_version=identity_version)
        except lib_exc.InvalidConfiguration as exc:
            return ('the epa-chain benchmarks need admin credentials '
                    '(provider networks, flavors), and dynamic credentials '
                    'have no admin to create them with: set [auth] '
                    'admin_username, admin_password, admin_project_name '
                    '(%s)' % exc)
    return None


@decorators.serial
class ChainBenchmarkTest(test.BaseTestCase):
    """One scenario per chain length x direction."""

    credentials = ['admin']

    @classmethod
    def skip_checks(cls):
        super(ChainBenchmarkTest, cls).skip_checks()
        reason = (opts.service_skip_reason(CONF) or
                  admin_skip_reason(cls.get_identity_version()))
        if reason:
            raise cls.skipException(reason)
        if not CONF.compute_feature_enabled.console_output:
            raise cls.skipException(
                'the epa-chain benchmarks observe readiness on the servers\' '
                'consoles, and [compute-feature-enabled] console_output is '
                'False')

    @classmethod
    def setup_clients(cls):
        super(ChainBenchmarkTest, cls).setup_clients()
        cls.heat_client = clients.heat(cls.os_admin.auth_provider)
        cls.compute = clients.TempestCompute(
            cls.os_admin.servers_client, cls.os_admin.image_client_v2)
        cls.answers = clients.TempestCloudAnswers(cls.os_admin)

    @classmethod
    def resource_setup(cls):
        super(ChainBenchmarkTest, cls).resource_setup()
        # Read by Tempest's setUp for the test's fixtures.Timeout.
        cls.TIMEOUT_SCALING_FACTOR = CONF.epa_chain.timeout_scaling_factor

    def _benchmark(self, chain_length, word):
        # The scenario's own words, parsed once here.
        direction = chain_directions.parse(word)
        options = opts.ChainOptions.from_conf(CONF.epa_chain)
        reason = opts.case_skip_reason(options, chain_length, direction)
        if reason:
            self.skipTest(reason)
        stack_name = data_utils.rand_name(
            prefix='epa-chain', name='%dvnf-%s' % (chain_length, word))
        factor = self.TIMEOUT_SCALING_FACTOR
        time_budget = budget.Budget(
            budget.test_timeout(scaling_factor=factor),
            ' (%s x [epa_chain] timeout_scaling_factor %d)'
            % (budget.TIMEOUT_VARIABLE, factor))
        run = benchmark.ChainBenchmark(
            options, stack.StackService(self.heat_client), self.compute,
            self.addCleanup, budget=time_budget, answers=self.answers,
            # Tempest on the cloud's only host (all-in-one): the loss of
            # every lossy trial split by hop from its Open vSwitch.
            switch=ovs_hops)
        written = run.run(stack_name, chain_length, direction)
        self.assertTrue(written, 'no results written')

    @decorators.idempotent_id('46a564ae-2bb4-48ab-bb22-1ec82eff342c')
    @decorators.attr(type='slow')
    def test_chain_1vnf_unidirectional(self):
        """PVP, forward only."""
        self._benchmark(1, 'unidirectional')

    @decorators.idempotent_id('d384f6e7-77c0-4b5f-903a-34d7881097a5')
    @decorators.attr(type='slow')
    def test_chain_1vnf_bidirectional(self):
        """PVP, both directions (seed 000 section 8.3)."""
        self._benchmark(1, 'bidirectional')

    @decorators.idempotent_id('4c4ef6f9-7f8c-4080-8ecd-dec75c2b3477')
    @decorators.attr(type='slow')
    def test_chain_2vnf_unidirectional(self):
        """PVVP, forward only."""
        self._benchmark(2, 'unidirectional')

    @decorators.idempotent_id('9ca0795c-a49f-4e34-b9b1-186a37f97142')
    @decorators.attr(type='slow')
    def test_chain_2vnf_bidirectional(self):
        """PVVP, both directions."""
        self._benchmark(2, 'bidirectional')

    @decorators.idempotent_id('61fb20d4-7a09-4e0c-8cb8-4e3f88effd21')
    @decorators.attr(type='slow')
    def test_chain_3vnf_unidirectional(self):
        """The vE-CPE chain (seed 000 section 8.4), forward only."""
        self._benchmark(3, 'unidirectional')

    @decorators.idempotent_id('2abcd46f-616f-4a20-a737-750acb1459ad')
    @decorators.attr(type='slow')
    def test_chain_3vnf_bidirectional(self):
        """The vE-CPE chain, both directions."""
        self._benchmark(3, 'bidirectional')
