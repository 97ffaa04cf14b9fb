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

"""chain_count: N chains side by side in one stack, kept apart.

Realised through Heat's own engine (its ResourceGroup included): each
chain's VLANs, names and MACs, the outputs listing every chain, and the
rules walking each chain on its own.
"""

import os

import fixtures
import testtools

from epa_chain.chain import topology
from epa_chain.hot import files
from epa_chain.hot import realise
from epa_chain.hot import resolve
from epa_chain.tests import repo
from epa_chain.validation import rules

PVP = os.path.join(repo.TEMPLATES, 'presets', 'pvp-bidir.yaml')
PVVP = os.path.join(repo.TEMPLATES, 'presets', 'pvvp-bidir.yaml')
VECPE = os.path.join(repo.TEMPLATES, 'presets', 'vecpe-bidir.yaml')
IN_STACK_GENERATOR = os.path.join(repo.TEMPLATES, 'environments',
                                  'in-stack-generator.yaml')


def _resolved(*environments, **parameters):
    return resolve.resolve(repo.CHAIN, list(environments), parameters,
                           stack_name='s', allow_outside=True)


def _segments(resolved):
    """{(chain index, segment): (name, physnet, VLAN)} of the networks."""
    found = {}
    for network in resolved.topology.networks.values():
        if network.existing:
            continue        # the management network
        path = network.resource.path
        found[(int(path[1]), path[2])] = (
            network.name, network.physical_network, network.vlan)
    return found


class TestTwoChains(testtools.TestCase):

    def test_one_chain_is_todays_stack(self):
        resolved = _resolved(PVP)
        self.assertEqual({(0, 'net0'): ('net-phys1-1001', 'physnet1', 1001),
                          (0, 'net1'): ('net-phys2-2001', 'physnet2', 2001)},
                         _segments(resolved))
        outputs = resolved.realisation.outputs
        (chain,) = outputs['chains']
        self.assertEqual(0, chain['index'])
        for name in ('forward_chain', 'reverse_chain', 'management_addresses',
                     'vnf_control_endpoints', 'generator_control_endpoint'):
            self.assertEqual(chain[name], outputs[name], name)
        servers = sorted(r.properties['name'] for r in
                         resolved.realisation.of_type('OS::Nova::Server'))
        self.assertEqual(['s-generator', 's-vnf1'], servers)

    def test_chain_k_moves_by_the_stride_on_the_same_physnets(self):
        resolved = _resolved(PVVP, chain_count=3, chain_vlan_stride=20)
        segments = _segments(resolved)
        self.assertEqual(9, len(segments))
        self.assertEqual(('net-phys1-1001', 'physnet1', 1001),
                         segments[(0, 'net0')])
        self.assertEqual(('net-phys1-1002-chain1', 'physnet1', 1022),
                         segments[(1, 'net1')])
        self.assertEqual(('net-phys2-2001-chain2', 'physnet2', 2041),
                         segments[(2, 'net2')])
        servers = sorted(r.properties['name'] for r in
                         resolved.realisation.of_type('OS::Nova::Server'))
        self.assertIn('s-chain2-vnf2', servers)
        self.assertEqual(9, len(servers))

    def test_outputs_list_every_chain_hop_by_hop(self):
        resolved = _resolved(PVP, chain_count=2)
        chains = resolved.realisation.outputs['chains']
        self.assertEqual([0, 1], [c['index'] for c in chains])
        first, second = (c['forward_chain'] for c in chains)
        self.assertEqual(['s-generator', 's-vnf1', 's-vnf1', 's-generator'],
                         [hop['server'] for hop in first])
        self.assertEqual(['s-chain1-generator', 's-chain1-vnf1',
                          's-chain1-vnf1', 's-chain1-generator'],
                         [hop['server'] for hop in second])
        self.assertEqual([1003, 1003, 2003, 2003],
                         [hop['vlan'] for hop in second])
        # No MAC of one chain anywhere in the other.
        self.assertFalse({h['mac'] for h in first} &
                         {h['mac'] for h in second})

    def test_fixed_macs_stay_with_chain_0(self):
        resolved = _resolved(VECPE, IN_STACK_GENERATOR, chain_count=2)
        chains = resolved.realisation.outputs['chains']
        macs = [{hop['mac'] for hop in c['forward_chain']} for c in chains]
        self.assertIn('00:00:00:00:00:10', macs[0])
        self.assertFalse(any(mac.startswith('00:00:00') for mac in macs[1]),
                         macs[1])

    def test_each_chain_is_walked_on_its_own(self):
        resolved = _resolved(PVVP, chain_count=2)
        chains = resolved.topology.chains()
        self.assertEqual(
            [['chains.0.generator.server', 'chains.0.vnf1.server',
              'chains.0.vnf2.server'],
             ['chains.1.generator.server', 'chains.1.vnf1.server',
              'chains.1.vnf2.server']],
            [sorted(node.name for node in chain) for chain in chains])
        self.assertEqual([], list(rules.mac_chain_rules(
            resolved.topology, resolved.realisation)))

    def test_a_stride_inside_one_chains_span_is_refused(self):
        # PVVP takes VLANs 1001 and 1002 on physnet1: with a stride of 1,
        # chain 1's net0 is chain 0's net1.
        resolved = _resolved(PVVP, chain_count=2, chain_vlan_stride=1)
        found = list(rules.network_rules(resolved.topology,
                                         resolved.realisation))
        self.assertEqual(['VLAN-UNIQUE'], [f.rule for f in found])
        self.assertIn('both VLAN 1002 on physnet1', found[0].message)


class TestNestedDiscovery(testtools.TestCase):

    def test_a_group_member_template_is_nested_not_top_level(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        top = os.path.join(tmp, 'top.yaml')
        document = {'resources': {'group': {
            'type': 'OS::Heat::ResourceGroup',
            'properties': {'resource_def': {'type': 'lib/member.yaml'}}}}}
        self.assertEqual({os.path.join(tmp, 'lib', 'member.yaml')},
                         files.nested_template_paths(top, document))


class TestMacFixedTwice(testtools.TestCase):

    @staticmethod
    def _port(path, mac):
        resource = realise.RealisedResource(
            path=path, type='OS::Neutron::Port', template='t.yaml',
            properties={'value_specs': {'mac_address': mac}},
            given=frozenset(['value_specs']), resource_id='/'.join(path),
            attributes={'mac_address': mac}, metadata={})
        return topology.Port(resource=resource, mac=mac,
                             network=topology.Network(key=path[1], name='n'))

    def test_a_mac_fixed_on_two_chains_ports_is_refused(self):
        ports = [self._port(('chains', str(k), 'vnf1_left', 'port'),
                            '00:00:00:00:00:10') for k in (0, 1)]
        ports.append(self._port(('chains', '1', 'vnf1_right', 'port'),
                                '00:00:00:00:00:11'))
        found = list(rules.port_rules(topology.Topology(
            networks={}, ports={p.resource.dotted: p for p in ports},
            nodes=[], flavors={}), None))
        self.assertEqual(['MAC-UNIQUE'], [f.rule for f in found])
        self.assertEqual('chains.1.vnf1_left.port', found[0].resource)
        self.assertIn('00:00:00:00:00:10 is fixed on '
                      'chains.0.vnf1_left.port', found[0].message)

    def test_the_shipped_chains_fix_no_mac_twice(self):
        resolved = _resolved(VECPE, IN_STACK_GENERATOR, chain_count=3)
        self.assertEqual([], [f for f in rules.port_rules(
            resolved.topology, resolved.realisation)
            if f.rule == 'MAC-UNIQUE'])


class TestVlanPlan(testtools.TestCase):

    def test_a_chain_pushed_past_4094_names_the_stride(self):
        # The preset's net0_vlan wins over a parameter: an environment.
        high = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'high.yaml')
        with open(high, 'w') as stream:
            stream.write('parameters: {net0_vlan: 4090}\n')
        resolved = _resolved(PVP, high, chain_count=4)
        found = list(rules.network_rules(resolved.topology,
                                         resolved.realisation))
        self.assertEqual([('VLAN-NET', 'chains.3.net0.network')],
                         [(f.rule, f.resource) for f in found])
        self.assertIn('segmentation_id 4096 is not a VLAN ID',
                      found[0].message)
        self.assertIn('chain_vlan_stride', found[0].fix)

    def test_a_resources_chain_is_read_from_its_path_alone(self):
        self.assertEqual(1, topology.chain_index('chains.1.net0.network'))
        self.assertEqual(0, topology.chain_index('chains.0.vnf1.server'))
        self.assertIsNone(topology.chain_index('vnf_flavor.flavor'))
        self.assertIsNone(topology.chain_index('chains.x.net0.network'))
