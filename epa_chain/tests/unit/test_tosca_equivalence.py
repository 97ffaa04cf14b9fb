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

"""Each translated TOSCA preset builds the cloud its HOT preset builds.

Both are realised with Heat's engine (epa_chain.hot.realise) and compared
as normalised resource graphs (epa_chain.tosca.equivalence): flavors and
their extra specs, segments (physical network, VLAN, subnet), ports and
port security, each node's config, and the MAC chain by role.
"""

import testtools

from epa_chain.hot import shipped

from epa_chain.tests.unit import tosca_cases


def graphs(preset, chain_count=1):
    from epa_chain.tosca import equivalence

    hot = equivalence.graph(tosca_cases.realised_hot_preset(preset,
                                                            chain_count))
    tosca = equivalence.graph(tosca_cases.realised_translation(preset,
                                                               chain_count))
    return hot, tosca


class TestEquivalentToHotPresets(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()

    def _assert_equivalent(self, preset, chain_count=1):
        hot, tosca = graphs(preset, chain_count)
        # Section by section first: a difference shows where it is.
        for section in ('networks', 'outputs'):
            self.assertEqual(hot[section], tosca[section], section)
        self.assertEqual(sorted(hot['nodes']), sorted(tosca['nodes']))
        for name in hot['nodes']:
            for key in hot['nodes'][name]:
                self.assertEqual(hot['nodes'][name][key],
                                 tosca['nodes'][name][key],
                                 '%s: node %s, %s' % (preset, name, key))
        self.assertEqual(hot, tosca)
        return hot

    def test_pvp_unidir(self):
        graph = self._assert_equivalent('pvp-unidir')
        self.assertEqual(['forward'], sorted(graph['nodes']['vnf1']['flows']))

    def test_pvp_bidir(self):
        graph = self._assert_equivalent('pvp-bidir')
        self.assertEqual('generator.left',
                         graph['nodes']['vnf1']['flows']['reverse'][
                             'next_hop'])

    def test_pvvp_unidir(self):
        self._assert_equivalent('pvvp-unidir')

    def test_pvvp_bidir(self):
        graph = self._assert_equivalent('pvvp-bidir')
        self.assertEqual('vnf1.right', graph['nodes']['vnf2']['flows'][
            'reverse']['next_hop'])

    def test_vecpe_unidir(self):
        self._assert_equivalent('vecpe-unidir')

    def test_vecpe_bidir(self):
        graph = self._assert_equivalent('vecpe-bidir')
        # Seed 000 Figure 8-11, normalised by role: the tester's MACs stay.
        hops = {name: {d: f['next_hop'] for d, f in node['flows'].items()}
                for name, node in graph['nodes'].items()}
        self.assertEqual({
            'vnf1': {'forward': 'vnf2.left',
                     'reverse': 'external 00:11:00:00:00:10'},
            'vnf2': {'forward': 'vnf3.left', 'reverse': 'vnf1.right'},
            'vnf3': {'forward': 'external 00:22:00:00:00:10',
                     'reverse': 'vnf2.right'},
        }, hops)

    def test_pvp_bidir_two_chains(self):
        graph = self._assert_equivalent('pvp-bidir', chain_count=2)
        # Chain 1 is its own: its servers, its segments, its next hops.
        self.assertEqual('chain1-generator.left', graph['nodes'][
            'chain1-vnf1']['flows']['reverse']['next_hop'])
        self.assertEqual(
            {'net-phys1-1001': 1001, 'net-phys2-2001': 2001,
             'net-phys1-1001-chain1': 1003, 'net-phys2-2001-chain1': 2003},
            {name: net['vlan'] for name, net in graph['networks'].items()})
        self.assertEqual([0, 1], [c['index'] for c in graph['outputs'][
            'chains']])

    def test_vecpe_bidir_three_chains(self):
        graph = self._assert_equivalent('vecpe-bidir', chain_count=3)
        self.assertEqual(9, len(graph['nodes']))
        self.assertEqual(3, len(graph['outputs']['chains']))


class TestComparisonIsNotVacuous(testtools.TestCase):
    """The graphs carry what the comparison claims to compare."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()

    def test_direction_changes_the_graph(self):
        from epa_chain.tosca import equivalence

        uni = equivalence.graph(
            tosca_cases.realised_translation('pvp-unidir'))
        bi = equivalence.graph(tosca_cases.realised_hot_preset('pvp-bidir'))
        self.assertNotEqual(uni['nodes']['vnf1']['flows'],
                            bi['nodes']['vnf1']['flows'])

    def test_segments_carry_physnet_and_vlan(self):
        hot, tosca = graphs('pvvp-bidir')
        self.assertEqual(
            {'net-phys1-1001': ('physnet1', 1001),
             'net-phys1-1002': ('physnet1', 1002),
             'net-phys2-2001': ('physnet2', 2001)},
            {name: (net['physical_network'], net['vlan'])
             for name, net in tosca['networks'].items()})
        for net in tosca['networks'].values():
            self.assertEqual(('OS::Neutron::ProviderNet', 'vlan', False),
                             (net['type'], net['network_type'],
                              net['shared']))

    def test_flavors_and_data_ports(self):
        hot, tosca = graphs('pvp-bidir')
        vnf1 = tosca['nodes']['vnf1']
        # chain.yaml's defaults: the TOSCA inputs leave them to it.
        defaults = shipped.parameter_defaults(('cpu_policy',
                                               'mem_page_size'))
        self.assertEqual(defaults['cpu_policy'],
                         vnf1['flavor']['extra_specs']['hw:cpu_policy'])
        self.assertEqual(defaults['mem_page_size'],
                         vnf1['flavor']['extra_specs']['hw:mem_page_size'])
        for port in vnf1['data_ports'].values():
            self.assertIs(False, port['port_security_enabled'])
            self.assertEqual([], port['security_groups'])
        self.assertEqual(['vnf1.management', 'vnf1.left', 'vnf1.right'],
                         vnf1['nics'])

    def test_one_chain_lists_itself_in_chains(self):
        hot, tosca = graphs('pvvp-unidir')
        chain0 = dict(tosca['outputs'], index=0)
        del chain0['chains']
        self.assertEqual([chain0], tosca['outputs']['chains'])

    def test_a_wrong_next_hop_would_show(self):
        hot, tosca = graphs('pvvp-unidir')
        flows = tosca['nodes']['vnf1']['flows']
        self.assertEqual('vnf2.left', flows['forward']['next_hop'])
        flows['forward']['next_hop'] = 'vnf2.right'
        self.assertNotEqual(hot, tosca)
