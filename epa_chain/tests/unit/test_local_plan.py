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

"""The shipped presets, resolved by Heat, as the local bed would build them."""

import functools
import os

import testtools

from epa_chain.hot import resolve
from epa_chain.hot import shipped
from epa_chain.local import lifecycle
from epa_chain.local import plan as plan_mod
from epa_chain.prox import binary
from epa_chain.tests import repo

LOCAL = {'vnf_engine': 'testpmd', 'endpoints': 'generator',
         'vnf_tasks_at_ready': 'running'}


def _stack(preset, **parameters):
    return lifecycle.Stack(os.path.join(repo.TEMPLATES, 'chain.yaml'),
                           (shipped.preset_path(preset, repo.TEMPLATES),),
                           parameters, 'epa')


@functools.lru_cache(maxsize=None)
def _topology(preset, engine='testpmd', **overrides):
    stack = _stack(preset, **overrides)
    return lifecycle.resolve(stack, stack.for_bed(engine)).topology


def _plan(preset, cpus=(0, 1), generator='afpacket', generator_why='',
          engine='testpmd', **overrides):
    return plan_mod.build(_topology(preset, engine, **overrides), 'epa',
                          '/run/x/sockets', list(cpus), generator=generator,
                          generator_why=generator_why)


class TestPlan(testtools.TestCase):

    def test_vecpe_segments_become_vlans_on_one_bridge_per_physnet(self):
        plan = _plan('vecpe')
        self.assertEqual({'br-physnet1': 'physnet1',
                          'br-physnet2': 'physnet2'},
                         {b.name: b.physical_network for b in plan.bridges})
        by_name = {p.name: p for p in plan.ports}
        # Seed 000 Table 8-3: the VNF MACs the preset fixes, VLANs 1001..
        self.assertEqual(('br-physnet1', 1001, '00:00:00:00:00:10'), (
            by_name['vhu-v1-l'].bridge, by_name['vhu-v1-l'].vlan,
            by_name['vhu-v1-l'].mac))
        self.assertEqual(1002, by_name['vhu-v1-r'].vlan)
        self.assertEqual(1002, by_name['vhu-v2-l'].vlan)
        self.assertEqual(('br-physnet2', 2002), (by_name['gen-right'].bridge,
                                                 by_name['gen-right'].vlan))
        self.assertEqual('/run/x/sockets/vhu-v2-r.sock',
                         by_name['vhu-v2-r'].socket)
        self.assertEqual('right', by_name['gen-right'].peer)
        self.assertEqual(3, len(plan.vnfs))
        self.assertEqual(plan_mod.OVS_PAGES + 3 * plan_mod.VNF_PAGES +
                         plan_mod.SPARE_PAGES, plan.hugepages)

    def test_fixed_macs_given_through_value_specs_are_used(self):
        # The shipped data port fixes its MAC in value_specs (a false
        # two-argument `if` on mac_address crashes Heat 19): the bed must
        # read it from there, for every VNF port the preset fixes.
        topology = _topology('vecpe')
        fixed = {}
        for port in topology.ports.values():
            props = port.resource.properties
            self.assertIsNone(props.get('mac_address'), port.resource.dotted)
            if (props.get('value_specs') or {}).get('mac_address'):
                fixed[port.resource.dotted] = props['value_specs'][
                    'mac_address']
        self.assertEqual({'chains.0.vnf1_left.port': '00:00:00:00:00:10',
                          'chains.0.vnf1_right.port': '00:00:00:00:00:11',
                          'chains.0.vnf2_left.port': '00:00:00:00:00:20',
                          'chains.0.vnf2_right.port': '00:00:00:00:00:21',
                          'chains.0.vnf3_left.port': '00:00:00:00:00:30',
                          'chains.0.vnf3_right.port': '00:00:00:00:00:31'},
                         fixed)
        by_name = {p.name: p.mac for p in _plan('vecpe').ports}
        self.assertEqual(['00:00:00:00:00:10', '00:00:00:00:00:11',
                          '00:00:00:00:00:20', '00:00:00:00:00:21',
                          '00:00:00:00:00:30', '00:00:00:00:00:31'],
                         [by_name['vhu-v%d-%s' % (i, side)]
                          for i in (1, 2, 3) for side in 'lr'])

    def test_hops_follow_each_nodes_configured_next_hop(self):
        plan = _plan('vecpe')
        forward = [(h.in_port, h.dst, h.out_port) for h in plan.hops()
                   if h.direction == 'forward']
        gen_right = next(p for p in plan.ports if p.name == 'gen-right')
        self.assertEqual([
            ('gen-left', '00:00:00:00:00:10', 'vhu-v1-l'),
            ('vhu-v1-r', '00:00:00:00:00:20', 'vhu-v2-l'),
            ('vhu-v2-r', '00:00:00:00:00:30', 'vhu-v3-l'),
            ('vhu-v3-r', gen_right.mac, 'gen-right')], forward)
        reverse = [h.in_port for h in plan.hops()
                   if h.direction == 'reverse']
        self.assertEqual(['gen-right', 'vhu-v3-l', 'vhu-v2-l', 'vhu-v1-l'],
                         reverse)

    def test_unidirectional_chain_has_forward_hops_only(self):
        plan = _plan('pvvp-unidir')
        self.assertEqual(('forward',), plan.directions)
        self.assertEqual(3, len(plan.hops()))

    def test_two_cpus_share_and_say_so(self):
        plan = _plan('vecpe')
        self.assertEqual({(0, 1)}, {v.cpus for v in plan.vnfs})
        self.assertFalse(plan.vnfs[0].pinned)
        self.assertIn('CPU pinning not honoured', ' '.join(plan.notes))

    def test_enough_cpus_pin_each_vnf_to_its_own(self):
        plan = _plan('vecpe', cpus=range(8))
        self.assertEqual([(0, 2), (0, 3), (0, 4)],
                         [v.cpus for v in plan.vnfs])
        self.assertTrue(all(v.pinned for v in plan.vnfs))

    def test_without_vnfs_puts_both_generator_ports_on_one_segment(self):
        plan = plan_mod.without_vnfs(_plan('pvp'))
        left, right = plan.generator.port('left'), plan.generator.port(
            'right')
        self.assertEqual((left.bridge, left.vlan), (right.bridge,
                                                    right.vlan))
        self.assertEqual([('gen-left', right.mac, 'gen-right'),
                          ('gen-right', left.mac, 'gen-left')],
                         [(h.in_port, h.dst, h.out_port)
                          for h in plan.hops()])
        self.assertEqual((), plan.vnfs)

    def test_existing_networks_are_refused(self):
        error = self.assertRaises(
            plan_mod.PlanError, _plan, 'pvp',
            use_existing_networks='true')
        self.assertEqual('use_existing_networks', error.field)

    def test_external_endpoints_are_refused(self):
        # The vE-CPE presets' external tester, without the bed's own
        # settings (which bring the in-stack generator).
        stack = _stack('vecpe')
        topology = lifecycle.resolve(stack, {'vnf_engine': 'testpmd'}).topology
        error = self.assertRaises(plan_mod.PlanError, plan_mod.build,
                                  topology, 'epa', '/run/x/sockets', [0, 1])
        self.assertEqual('endpoints', error.field)

    def test_prox_for_every_vnf_of_a_chain(self):
        # each PROX VNF gets a /tmp of its own (private_tmp)
        self.assertEqual(('prox', 'prox'), tuple(
            v.config.engine for v in _plan('pvvp', engine='prox').vnfs))

    def test_prox_generator_ports_are_vhost_user_ports(self):
        plan = _plan('pvp', generator='prox', generator_why='asked')
        by_name = {p.name: p for p in plan.ports}
        self.assertEqual('vhost', by_name['vhu-g-l'].kind)
        self.assertEqual('/run/x/sockets/vhu-g-r.sock',
                         by_name['vhu-g-r'].socket)
        self.assertNotIn('gen-left', by_name)
        self.assertEqual('prox', plan.generator.kind)
        self.assertEqual(plan_mod.OVS_PAGES + plan_mod.VNF_PAGES +
                         plan_mod.SPARE_PAGES +
                         plan_mod.PROX_GENERATOR_PAGES, plan.hugepages)
        self.assertIn('generator: PROX', ' '.join(plan.notes))
        self.assertEqual('vhu-g-l', plan.hops()[0].in_port)

    def test_prox_generator_on_two_cpus_works_on_the_control_cpu(self):
        plan = _plan('pvp', generator='prox')
        # master on the PMD's CPU (asleep), every task on CPU 0
        self.assertEqual((1, 0), plan.generator.cpus)
        self.assertFalse(plan.generator.cpus_own)
        self.assertIn('all gen and lat tasks on CPU 0',
                      ' '.join(plan.notes))

    def test_prox_generator_gets_cpus_of_its_own_on_six(self):
        plan = _plan('pvp', cpus=range(6), generator='prox')
        self.assertEqual([(0, 2)], [v.cpus for v in plan.vnfs])
        self.assertEqual((0, 3, 4), plan.generator.cpus)
        self.assertTrue(plan.generator.cpus_own)

    def test_prox_generator_without_vnfs_keeps_its_kind(self):
        plan = plan_mod.without_vnfs(_plan('pvp', generator='prox'))
        self.assertEqual('prox', plan.generator.kind)
        self.assertEqual(['vhost', 'vhost'], [p.kind for p in plan.ports])
        self.assertEqual(plan_mod.OVS_PAGES + plan_mod.SPARE_PAGES +
                         plan_mod.PROX_GENERATOR_PAGES, plan.hugepages)

    def test_unknown_generator_is_refused(self):
        error = self.assertRaises(plan_mod.PlanError, _plan, 'pvp',
                                  generator='trex')
        self.assertEqual('--generator', error.field)

    def test_interface_names_fit_the_kernel(self):
        self.assertEqual('br-a-very-long-', plan_mod.interface_name(
            'br', 'a-very-long-physnet'))
        for port in _plan('vecpe').ports:
            self.assertLessEqual(len(port.name), plan_mod.IFNAMSIZ)


class TestPresets(testtools.TestCase):

    def test_aliases_and_names(self):
        self.assertTrue(shipped.preset_path('pvp', repo.TEMPLATES).endswith(
            'presets/pvp-bidir.yaml'))
        self.assertTrue(shipped.preset_path(
            'vecpe-unidir', repo.TEMPLATES).endswith(
                'presets/vecpe-unidir.yaml'))

    def test_a_preset_for_every_chain_length_and_direction(self):
        for length in (1, 2, 3):
            for direction in ('unidirectional', 'bidirectional'):
                path = shipped.preset_for(repo.TEMPLATES, length, direction)
                self.assertTrue(os.path.isfile(path), path)
        self.assertEqual(shipped.preset_path('vecpe', repo.TEMPLATES),
                         shipped.preset_for(repo.TEMPLATES, 3,
                                            'bidirectional'))
        self.assertEqual(shipped.preset_path('pvvp-unidir', repo.TEMPLATES),
                         shipped.preset_for(repo.TEMPLATES, 2,
                                            'unidirectional'))

    def test_unknown_preset_lists_the_known_ones(self):
        error = self.assertRaises(shipped.PresetError, shipped.preset_path,
                                  'pvvvp', repo.TEMPLATES)
        self.assertIn('pvvp-bidir', str(error))
        self.assertIn('pvvvp', str(error))

    def test_a_stack_that_does_not_validate_creates_nothing(self):
        stack = _stack('pvp')
        error = self.assertRaises(lifecycle.LocalError, lifecycle.resolve,
                                  stack, stack.for_bed('testpmd', 5))
        self.assertIn('nothing was created', str(error))
        self.assertIn('vnf_count', str(error))


class TestBedParameters(testtools.TestCase):

    def test_the_bed_runs_its_own_generator_and_the_user_wins(self):
        # The bed's settings are a last environment file: as with
        # `openstack stack create`, they (and the preset) beat --parameter,
        # which is said, and a --parameter no file sets is taken.
        self.assertEqual(LOCAL, _stack('pvp').for_bed('testpmd'))
        stack = _stack('vecpe', vnf_engine='prox', vnf_count='2',
                       cpu_policy='shared')
        checked = lifecycle.resolve(stack, stack.for_bed('testpmd'))
        engines = {node.config.role: node.config.engine
                   for node in checked.topology.nodes}
        self.assertEqual({'generator': 'prox', 'vnf': 'testpmd'}, engines)
        self.assertEqual('shared', checked.realisation.parameters[
            'cpu_policy'])
        overridden = sorted(f.parameter for f in checked.findings
                            if f.rule == 'PARAM-OVERRIDDEN')
        self.assertEqual(['vnf_count', 'vnf_engine'], overridden)

    def test_a_chain_length_overrides_and_zero_is_one_vnf(self):
        # 0 VNFs is plan.without_vnfs of a one-VNF stack
        self.assertEqual([3, 1, 1], [
            _stack('pvp', vnf_count='2').for_bed('prox', count)['vnf_count']
            for count in (3, 1, 0)])


class TestChoice(testtools.TestCase):
    """The engines and generator, once the PROX binary is known."""

    def choose(self, prox=None, **fields):
        request = lifecycle.Request(state=None, stack=_stack('pvp'),
                                    prox=prox or binary.Given(), **fields)
        return lifecycle.choose(request, lambda line: None)

    def test_without_prox_testpmd_and_afpacket_saying_why(self):
        choice = self.choose()
        self.assertEqual((None, 'testpmd', None, 'afpacket'), (
            choice.prox_binary, choice.engine, choice.engine_binary,
            choice.generator))
        self.assertEqual('default: no PROX binary (%s)'
                         % binary.nothing_given(), choice.generator_why)

    def test_with_a_binary_prox_everywhere(self):
        prox = binary.Given(binary='/opt/prox', option='--prox-binary',
                            label='--prox-binary /opt/prox')
        choice = self.choose(prox)
        self.assertEqual(('/opt/prox', 'prox', '/opt/prox', 'prox'), (
            choice.prox_binary, choice.engine, choice.engine_binary,
            choice.generator))
        self.assertEqual('default: a PROX binary (--prox-binary /opt/prox)',
                         choice.generator_why)
        # what the user asked for wins, and says so
        choice = self.choose(prox, engine='testpmd', generator='afpacket',
                             engine_binary='/usr/bin/dpdk-testpmd')
        self.assertEqual(('testpmd', '/usr/bin/dpdk-testpmd', 'afpacket',
                          '--generator afpacket'), (
            choice.engine, choice.engine_binary, choice.generator,
            choice.generator_why))

    def test_the_prox_generator_without_a_binary_is_refused(self):
        error = self.assertRaises(lifecycle.LocalError, self.choose,
                                  generator='prox')
        self.assertIn('--generator prox: no PROX binary', str(error))
        self.assertIn('--prox-source SRC', str(error))


class TestResolve(testtools.TestCase):

    def test_resolved_stack_with_its_parameters_and_nodes(self):
        parameters = dict(LOCAL, vnf_count=2)
        resolved = resolve.resolve(
            os.path.join(repo.TEMPLATES, 'chain.yaml'),
            [shipped.preset_path('pvvp', repo.TEMPLATES)], parameters,
            stack_name='st')
        self.assertEqual(parameters, resolved.parameters)
        self.assertEqual('st', resolved.stack_name)
        self.assertEqual(
            [('st-generator', 'prox'), ('st-vnf1', 'testpmd'),
             ('st-vnf2', 'testpmd')],
            sorted((n.config.name, n.config.engine)
                   for n in resolved.topology.nodes))
        self.assertIs(resolved.topology.nodes[0].server,
                      resolved.realisation.get(
                          resolved.topology.nodes[0].server.path))

    def test_heat_refusal_is_an_error_naming_the_parameter(self):
        error = self.assertRaises(
            resolve.ResolveError, resolve.resolve,
            os.path.join(repo.TEMPLATES, 'chain.yaml'),
            [shipped.preset_path('pvp', repo.TEMPLATES)],
            dict(LOCAL, vnf_count=5), inline=True)
        self.assertFalse(error.load_error)
        self.assertIn('vnf_count', str(error))

    def test_a_missing_file_is_a_load_error(self):
        error = self.assertRaises(resolve.ResolveError, resolve.resolve,
                                  os.path.join(repo.TEMPLATES, 'nope.yaml'))
        self.assertTrue(error.load_error)
        self.assertIn('nope.yaml', str(error))


class TestChainsSideBySide(testtools.TestCase):
    """chain_count 2: two chains on one switch, nothing shared but it."""

    def setUp(self):
        super().setUp()
        self.plan = _plan('pvp', chain_count=2)

    def test_each_chain_its_vnfs_generator_namespace_and_vlans(self):
        plan = self.plan
        self.assertEqual(2, plan.chain_count)
        self.assertEqual(1, plan.vnfs_per_chain)
        self.assertEqual(['epa-gen', 'epa-g1'],
                         [g.netns for g in plan.generators])
        self.assertEqual([0, 1], [v.chain for v in plan.vnfs])
        by_name = {p.name: p for p in plan.ports}
        self.assertEqual(('epa-g1', 1, 'left'), (
            by_name['g1-left'].netns, by_name['g1-left'].chain,
            by_name['g1-left'].peer))
        vlans = [{p.vlan for p in plan.ports if p.chain == chain}
                 for chain in (0, 1)]
        self.assertEqual(set(), vlans[0] & vlans[1])
        self.assertEqual(plan_mod.OVS_PAGES + 2 * plan_mod.VNF_PAGES +
                         plan_mod.SPARE_PAGES, plan.hugepages)

    def test_every_hop_stays_in_its_chain(self):
        plan = self.plan
        chain_of = {p.name: p.chain for p in plan.ports}
        hops = plan.hops()
        self.assertEqual(8, len(hops))
        for hop in hops:
            self.assertEqual(chain_of[hop.in_port], chain_of[hop.out_port])
        alone = plan.for_chain(1)
        self.assertEqual(4, len(alone.hops()))
        self.assertEqual({1}, {p.chain for p in alone.ports})
        self.assertEqual('epa-g1', alone.generator.netns)

    def test_the_prox_generator_gets_ports_and_pages_per_chain(self):
        plan = _plan('pvp', generator='prox', chain_count=2)
        self.assertEqual(['vhu-g-l', 'vhu-g-r', 'vhu-g1-l', 'vhu-g1-r'],
                         [p.name for g in plan.generators for p in g.ports])
        self.assertEqual(plan_mod.OVS_PAGES + 2 * plan_mod.VNF_PAGES +
                         plan_mod.SPARE_PAGES +
                         2 * plan_mod.PROX_GENERATOR_PAGES, plan.hugepages)

    def test_ovs_alone_takes_one_chain(self):
        error = self.assertRaises(plan_mod.PlanError, plan_mod.without_vnfs,
                                  self.plan)
        self.assertEqual('vnf_count', error.field)

    def test_more_chains_than_namespaces_is_refused(self):
        from epa_chain.local import names

        error = self.assertRaises(
            plan_mod.PlanError, _plan, 'pvp',
            chain_count=names.MAX_CHAINS + 1)
        self.assertEqual('chain_count', error.field)
