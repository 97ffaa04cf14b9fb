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

"""The shipped templates and presets, realised through Heat's own engine."""

import json
import os

import fixtures
import testtools

from epa_chain.chain import node_config
from epa_chain.chain import topology
from epa_chain.hot import files
from epa_chain.hot import offline
from epa_chain.hot import realise
from epa_chain.hot import resolve
from epa_chain.hot import shipped
from epa_chain.tests import repo
from epa_chain.validation import runner

TOP = repo.ROOT
TEMPLATES = repo.TEMPLATES
CHAIN = repo.CHAIN
PRESETS = repo.PRESETS


SMALL_HOST_REL = 'environments/small-host.yaml'
SMALL_HOST = os.path.join(TEMPLATES, SMALL_HOST_REL)
IN_STACK_GENERATOR_REL = 'environments/in-stack-generator.yaml'
IN_STACK_GENERATOR = os.path.join(TEMPLATES, IN_STACK_GENERATOR_REL)
OVERLAYS = sorted([SMALL_HOST_REL, IN_STACK_GENERATOR_REL,
                   'environments/intra-node.yaml',
                   'environments/inter-node.yaml'])


def realised(preset, *more_envs):
    envs = [os.path.join(TEMPLATES, 'presets', preset + '.yaml')]
    envs += list(more_envs)
    template_set = files.load(CHAIN, envs)
    stack = offline.parse_stack(template_set)
    stack.validate()
    return realise.realise(stack, template_set)


def node_configs(realisation):
    configs = {}
    for res in realisation.of_type('OS::Nova::Server'):
        config = node_config.parse_user_data(res.properties['user_data'])
        configs[config.name.rsplit('-', 1)[-1]] = config
    return configs


class TestEveryPresetValidates(testtools.TestCase):

    def test_tree_validates_with_every_preset(self):
        reports = runner.validate_tree(TEMPLATES)
        checked = sorted(' '.join(
            [os.path.relpath(e, TEMPLATES) for e in r.environments] or ['-'])
            for r in reports)
        presets = ['presets/%s.yaml' % p for p in PRESETS]
        # Each environment of environments/ alone and on top of each
        # preset.
        self.assertEqual(sorted(
            ['-'] + OVERLAYS + presets +
            ['%s %s' % (p, o) for p in presets for o in OVERLAYS]), checked)
        for report in reports:
            self.assertEqual([], [str(f) for f in report.errors],
                             report.environments)

    def test_cloud_lookups_are_listed_as_skipped(self):
        report = runner.validate(CHAIN, [])
        skipped = ' '.join(f.message for f in report.skipped)
        self.assertIn("glance.image 'epa-chain-vnf'", skipped)
        self.assertIn("neutron.network 'private'", skipped)
        # Resources created by the stack itself are not cloud lookups.
        self.assertNotIn('nova.flavor', skipped)


class TestVeCpeMacChain(testtools.TestCase):
    """Seed 000 Figure 8-11, with Table 8-3's MACs and the Ixia ports."""

    def test_bidirectional_next_hops_are_the_seeds(self):
        configs = node_configs(realised('vecpe-bidir'))
        hops = {name: {f.direction: f.next_hop_mac for f in c.flows}
                for name, c in configs.items()}
        self.assertEqual({
            'vnf1': {'forward': '00:00:00:00:00:20',
                     'reverse': '00:11:00:00:00:10'},
            'vnf2': {'forward': '00:00:00:00:00:30',
                     'reverse': '00:00:00:00:00:11'},
            'vnf3': {'forward': '00:22:00:00:00:10',
                     'reverse': '00:00:00:00:00:21'},
        }, hops)

    def test_segments_are_table_8_3(self):
        topo = topology.build(realised('vecpe-unidir'))
        segments = sorted((n.name, n.physical_network, n.vlan)
                          for n in topo.networks.values() if not n.existing)
        self.assertEqual([('net-phys1-1001', 'physnet1', 1001),
                          ('net-phys1-1002', 'physnet1', 1002),
                          ('net-phys2-2001', 'physnet2', 2001),
                          ('net-phys2-2002', 'physnet2', 2002)], segments)

    def test_unidirectional_has_forward_flows_only(self):
        realisation = realised('vecpe-unidir')
        for config in node_configs(realisation).values():
            self.assertEqual(['forward'], [f.direction for f in config.flows])
        self.assertEqual([], realisation.outputs['reverse_chain'])


class TestGeneratorChains(testtools.TestCase):

    def _check_chain(self, preset, vnfs):
        realisation = realised(preset)
        forward = realisation.outputs['forward_chain']
        servers = [h['server'].rsplit('-', 1)[-1] for h in forward]
        expected = ['generator']
        for index in range(1, vnfs + 1):
            expected += ['vnf%d' % index] * 2
        self.assertEqual(expected + ['generator'], servers)
        # Hops pair up on one network: sender's port, receiver's port.
        for sender, receiver in zip(forward[0::2], forward[1::2]):
            self.assertEqual(sender['network'], receiver['network'])
            self.assertEqual(sender['vlan'], receiver['vlan'])
        # Every sender's next hop is the receiving port of the hop pair.
        configs = node_configs(realisation)
        for sender, receiver in zip(forward[0::2], forward[1::2]):
            flow = configs[sender['server'].rsplit('-', 1)[-1]].flow(
                'forward')
            self.assertEqual(receiver['mac'], flow.next_hop_mac)
        return realisation, configs

    def test_pvp_unidirectional(self):
        realisation, configs = self._check_chain('pvp-unidir', 1)
        self.assertEqual(1, configs['generator'].forwarding_cores)
        self.assertEqual({'host', 'port'}, set(
            realisation.outputs['generator_control_endpoint']))

    def test_pvvp_bidirectional_reverse_mirrors_forward(self):
        realisation, configs = self._check_chain('pvvp-bidir', 2)
        forward = realisation.outputs['forward_chain']
        reverse = realisation.outputs['reverse_chain']
        self.assertEqual([h['mac'] for h in reversed(forward)],
                         [h['mac'] for h in reverse])
        self.assertEqual(2, configs['generator'].forwarding_cores)
        self.assertEqual(set(['vnf1', 'vnf2', 'generator']),
                         set(realisation.outputs['management_addresses']))

    def test_data_ports_have_no_port_security(self):
        topo = topology.build(realised('pvp-bidir'))
        for node in topo.nodes:
            self.assertEqual(2, len(node.data_ports))
            for port in node.data_ports:
                self.assertIs(False,
                              port.properties['port_security_enabled'])
                self.assertEqual([], port.properties['security_groups'])
            for port in node.other_ports:
                self.assertEqual(1, len(port.properties['security_groups']))

    def test_epa_flavor_extra_specs(self):
        # chain.yaml's defaults, the thread and emulator policies with
        # pinned CPUs only.
        defaults = shipped.parameter_defaults((
            'cpu_policy', 'cpu_thread_policy', 'emulator_threads_policy',
            'mem_page_size', 'numa_nodes'))
        specs = {'hw:' + name: str(value) for name, value in
                 defaults.items()}
        if defaults['cpu_policy'] != 'dedicated':
            del specs['hw:cpu_thread_policy']
            del specs['hw:emulator_threads_policy']
        flavors = realised('pvp-unidir').of_type('OS::Nova::Flavor')
        self.assertEqual(2, len(flavors))
        for flavor in flavors:
            self.assertEqual(specs, flavor.properties['extra_specs'])

    def test_user_data_is_cloud_config_with_json_node_config(self):
        server = realised('pvp-bidir').of_type('OS::Nova::Server')[0]
        user_data = server.properties['user_data']
        first, rest = user_data.split('\n', 1)
        self.assertEqual('#cloud-config', first)
        key, value = rest.split(': ', 1)
        self.assertEqual('epa_chain', key)
        self.assertEqual(1, json.loads(value)['schema_version'])


class TestHeat19Constructs(testtools.TestCase):
    """What replaced the two-argument `if`, which crashes Heat 19."""

    def test_fixed_mac_reaches_neutron_through_value_specs(self):
        realisation = realised('vecpe-bidir')
        port = realisation.get(('chains', '0', 'vnf2_left', 'port'))
        self.assertNotIn('mac_address', port.given)
        self.assertEqual({'mac_address': '00:00:00:00:00:20'},
                         port.properties['value_specs'])
        self.assertEqual('00:00:00:00:00:20', port.attributes['mac_address'])

    def test_port_without_fixed_mac_lets_neutron_choose(self):
        port = realised('pvp-bidir').get(('chains', '0', 'vnf1_left', 'port'))
        self.assertEqual({}, port.properties['value_specs'])
        self.assertTrue(port.attributes['mac_address'].startswith(
            'fa:16:3e:'))

    def test_synthesised_mac_prefers_value_specs(self):
        # Heat merges value_specs over the properties into Neutron's body.
        self.assertEqual('00:00:00:00:00:99', realise.fixed_mac(
            {'mac_address': '00:00:00:00:00:01',
             'value_specs': {'mac_address': '00:00:00:00:00:99'}}))
        self.assertEqual('00:00:00:00:00:01', realise.fixed_mac(
            {'mac_address': '00:00:00:00:00:01', 'value_specs': {}}))
        self.assertIsNone(realise.fixed_mac({'mac_address': None}))

    def test_a_vnf_forwarding_at_ready_has_null_control_port_and_no_key(self):
        tmp = self.useFixture(fixtures.TempDir()).path
        running = os.path.join(tmp, 'running.yaml')
        with open(running, 'w') as stream:
            stream.write('parameters: {vnf_tasks_at_ready: running}\n')
        realisation = realised('pvp-bidir', running)
        vnf = realisation.get(('chains', '0', 'vnf1', 'server'))
        # Heat resolves the null to '' for a string property, and boots
        # without a key pair (tested on Heat 19).
        self.assertEqual('', vnf.properties['key_name'])
        config = json.loads(vnf.properties['user_data'].split(': ', 1)[1])
        self.assertIn('control_port', config)
        self.assertIsNone(config['control_port'])
        self.assertEqual('running', config['tasks_at_ready'])
        generator = realisation.get(('chains', '0', 'generator', 'server'))
        self.assertEqual(shipped.parameter_default('generator_control_port'),
                         node_config.parse_user_data(
                             generator.properties['user_data']).control_port)

    def test_parked_vnfs_listen_on_the_generators_control_port(self):
        configs = node_configs(realised('vecpe-bidir'))
        port = shipped.parameter_default('generator_control_port')
        for name in ('vnf1', 'vnf2', 'vnf3'):
            self.assertTrue(configs[name].parked, name)
            self.assertEqual(port, configs[name].control_port, name)


class TestGeneratorImageOnlyWhenBooted(testtools.TestCase):
    """An external tester needs no generator image (Heat 19 finding 2)."""

    def _lookups(self, preset, *overlays):
        envs = [os.path.join(TEMPLATES, 'presets', preset + '.yaml')]
        resolved = resolve.resolve(CHAIN, envs + list(overlays))
        return {(lookup.constraint, lookup.value)
                for lookup in resolved.cloud_lookups()}

    def test_external_tester_looks_up_no_generator_image(self):
        lookups = self._lookups('vecpe-bidir')
        self.assertIn(('glance.image', 'epa-chain-vnf'), lookups)
        self.assertNotIn(('glance.image', 'epa-chain-generator'), lookups)

    def test_in_stack_generator_image_is_still_looked_up(self):
        self.assertIn(('glance.image', 'epa-chain-generator'),
                      self._lookups('vecpe-bidir', IN_STACK_GENERATOR))

    def test_parameter_has_no_image_constraint_but_vnf_image_does(self):
        template = files.read_yaml(CHAIN)['parameters']
        kinds = {name: [c.get('custom_constraint') for c in
                        template[name].get('constraints', [])]
                 for name in ('generator_image', 'vnf_image')}
        self.assertEqual({'generator_image': [None],
                          'vnf_image': ['glance.image']}, kinds)


class TestSmallHost(testtools.TestCase):
    """environments/small-host.yaml: 2 shared CPUs, ~8 GiB of huge pages."""

    def test_every_epa_key_but_pinning_stays(self):
        flavors = realised('pvp-bidir', SMALL_HOST).of_type(
            'OS::Nova::Flavor')
        self.assertEqual(2, len(flavors))
        for flavor in flavors:
            # Thread and emulator policies go with pinning: Nova refuses
            # them on shared CPUs, so lib/epa_flavor.yaml leaves them out.
            self.assertEqual({'hw:cpu_policy': 'shared',
                              'hw:mem_page_size': 'large',
                              'hw:numa_nodes': '1'},
                             flavor.properties['extra_specs'])
            self.assertEqual((2, 2048), (flavor.properties['vcpus'],
                                         flavor.properties['ram']))

    def test_every_preset_fits_two_cpus_and_4_gib_of_huge_pages(self):
        for preset in PRESETS:
            for endpoints in ('generator', 'external'):
                resolved = resolve.resolve(
                    CHAIN, [os.path.join(TEMPLATES, 'presets',
                                         preset + '.yaml'), SMALL_HOST],
                    {'endpoints': endpoints,
                     'external_ingress_mac': '00:11:00:00:00:10',
                     'external_egress_mac': '00:22:00:00:00:10'})
                nodes = resolved.topology.nodes
                self.assertTrue(nodes, preset)
                total = 0
                for node in nodes:
                    props = node.flavor.properties
                    self.assertLessEqual(props['vcpus'], 2, preset)
                    total += props['ram']
                # tools/single-host-cloud's guest share of its huge pages.
                self.assertLessEqual(total, 8192, (preset, endpoints))

    def test_documented_usage_and_reason(self):
        with open(SMALL_HOST) as f:
            text = f.read()
        self.assertIn('-e templates/presets/pvp-bidir.yaml', text)
        self.assertIn('-e templates/environments/small-host.yaml', text)
        self.assertIn('cpu_dedicated_set', text)
        self.assertEqual({'cpu_policy': 'shared', 'mem_page_size': 'large',
                          'numa_nodes': 1, 'vnf_vcpus': 2, 'vnf_ram': 2048,
                          'generator_vcpus': 2, 'generator_ram': 2048},
                         files.read_yaml(SMALL_HOST)['parameters'])
