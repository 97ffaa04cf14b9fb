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

"""The benchmark against a cloud, without a cloud and without Tempest.

epa_chain/cloud: the [epa_chain] options as typed values, the stack
service against a fake heatclient, readiness, the hop check and the whole
benchmark flow with fakes, including deletion of the stack on failure.
The Tempest side (the oslo.config options, the entry point, the
scenarios, the `tempest` commands) is tested in the plugin's own unit
tests: tempest_plugin/epa_chain_tempest_plugin/tests/unit.
"""

import collections
import copy
import dataclasses
import glob
import importlib.util
import json
import os
import types
import unittest
from unittest import mock

import fixtures
from heatclient import exc as heat_exc
import testtools

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import readiness as node_readiness
from epa_chain.cloud import budget
from epa_chain.cloud import cloud_answers
from epa_chain.cloud import hop_check
from epa_chain.cloud import openstack_cli
from epa_chain.cloud import options as opts
from epa_chain.cloud import readiness
from epa_chain.cloud import stack
from epa_chain.hot import shipped
from epa_chain.measurement import chain_tables
from epa_chain.measurement import readers
from epa_chain.measurement import results as measurement_results
from epa_chain.measurement import trial
from epa_chain.tests import fake_clock
from epa_chain.tests import repo
from epa_chain.tests.unit import recorded_cloud

REPO = repo.ROOT
TEMPLATES = os.path.join(REPO, 'templates')
UNI = chain_directions.UNIDIRECTIONAL
BI = chain_directions.BIDIRECTIONAL
FIXTURES = os.path.join(REPO, 'epa_chain', 'tests', 'fixtures', 'cloud')


def as_group(**overrides):
    """Any object with the [epa_chain] attributes, as CONF.epa_chain has.

    Option values as oslo.config gives them (the options' defaults, then
    `overrides`): lists, frame sizes as text.
    """
    values = {opt.dest: opt.default for opt in opts.list_opts()}
    values.update(overrides)
    return types.SimpleNamespace(**values)


class ChainOptionsTest(testtools.TestCase):
    """The typed view; the oslo.config side is the plugin's test_config."""

    def test_read_from_any_object_with_the_options(self):
        self.assertEqual(opts.ChainOptions(),
                         opts.ChainOptions.from_conf(as_group()))
        options = opts.ChainOptions.from_conf(as_group(
            segments=['physnet1:101', 'physnet2:202'],
            frame_sizes=['64', 'imix'], flow_counts=[1, 1000]))
        self.assertEqual((opts.Segment('physnet1', 101),
                          opts.Segment('physnet2', 202)), options.segments)
        self.assertEqual(trial.IMIX_EANTC,
                         options.campaign.frame_sizes[1].imix)
        self.assertEqual([1, 1000], list(options.campaign.flow_counts))

    def test_empty_lists_name_the_option(self):
        for name in ('frame_sizes', 'flow_counts'):
            error = self.assertRaises(opts.OptionError,
                                      opts.ChainOptions.from_conf,
                                      as_group(**{name: []}))
            self.assertIn('[epa_chain] %s: empty' % name, str(error))

    def test_bad_segments_name_the_option(self):
        for value in ('physnet1', 'physnet1:0', 'physnet1:4095',
                      'p:1,p:2,p:3,p:4,p:5', 'p:1,p:1'):
            error = self.assertRaises(opts.OptionError,
                                      opts.parse_segments,
                                      value.split(','))
            self.assertIn('[epa_chain] segments', str(error))

    def test_management_allowed_cidr(self):
        options = opts.ChainOptions.from_conf(as_group(
            management_allowed_cidr='192.0.2.10/32'))
        self.assertEqual('192.0.2.10/32', options.management_allowed_cidr)
        self.assertEqual('10.0.0.0/8',
                         opts.ChainOptions().management_allowed_cidr)
        for value in ('192.0.2.10', 'tempest-host', '10.0.0.0/33'):
            error = self.assertRaises(opts.OptionError,
                                      opts.ChainOptions.from_conf,
                                      as_group(management_allowed_cidr=value))
            self.assertIn('[epa_chain] management_allowed_cidr: %r is not '
                          'a CIDR' % value, str(error))

    def test_skip_reasons(self):
        conf = mock.Mock(spec=['service_available'])
        conf.service_available = mock.Mock(spec=['epa_chain'],
                                           epa_chain=False)
        self.assertIn('[service_available] epa_chain = True',
                      opts.service_skip_reason(conf))
        conf.service_available.epa_chain = True
        self.assertIsNone(opts.service_skip_reason(conf))
        conf.service_available = mock.Mock(spec=['epa_chain', 'heat'],
                                           epa_chain=True, heat=False)
        self.assertIn('[service_available] heat is False',
                      opts.service_skip_reason(conf))
        options = opts.ChainOptions(chain_lengths=(2,), directions=(BI,))
        self.assertIsNone(opts.case_skip_reason(options, 2, BI))
        self.assertEqual(
            'chain length 1 is not in [epa_chain] chain_lengths (2)',
            opts.case_skip_reason(options, 1, BI))
        self.assertEqual(
            'direction unidirectional is not in [epa_chain] directions '
            '(bidirectional)',
            opts.case_skip_reason(options, 2, UNI))


# ---- Fakes -----------------------------------------------------------------

class FakeHeatClient:
    """A heatclient v1 Client, scripted: statuses come from lists.

    Each stacks.get returns the next status of the current phase (create,
    then delete once stacks.delete was called); the last one repeats.
    'GONE' makes get raise HTTPNotFound.
    """

    def __init__(self, create=('CREATE_COMPLETE',),
                 delete=('DELETE_COMPLETE',), outputs=(), resources=(),
                 leftovers=()):
        self.calls = []
        # Stacks of earlier runs: stack id -> (name, status, parameters);
        # stacks.delete makes them gone.
        self.leftovers = {stack_id: values
                          for stack_id, *values in leftovers}
        self.scripts = {'create': list(create), 'delete': list(delete)}
        # Heat's default policy: stacks:global_index denied to everyone.
        self.deny_global_index = False
        self.phase = 'create'
        self.outputs = list(outputs)
        self.resource_list = list(resources)
        self.stacks = FakeStacks(self)
        self.resources = FakeResources(self)

    def next_status(self):
        script = self.scripts[self.phase]
        return script.pop(0) if len(script) > 1 else script[0]


class FakeStacks:
    def __init__(self, heat):
        self.heat = heat

    def create(self, **kwargs):
        self.heat.calls.append(('create', kwargs))
        return {'stack': {'id': 'stack-id-1', 'links': []}}

    def list(self, **kwargs):
        self.heat.calls.append(('list', kwargs))
        if kwargs.get('global_tenant') and self.heat.deny_global_index:
            raise heat_exc.HTTPForbidden(
                'You are not authorized to use stacks:global_index.')
        return [mock.Mock(id=stack_id, stack_name=values[0])
                for stack_id, values in self.heat.leftovers.items()]

    def get(self, stack_id, resolve_outputs=True):
        self.heat.calls.append(('get', stack_id))
        if stack_id in self.heat.leftovers:
            _name, status, parameters = self.heat.leftovers[stack_id]
            if status == 'GONE':
                raise heat_exc.HTTPNotFound()
            return mock.Mock(stack_status=status, parameters=parameters,
                             stack_status_reason='reason of %s' % status)
        status = self.heat.next_status()
        if status == 'GONE':
            raise heat_exc.HTTPNotFound()
        return mock.Mock(stack_status=status,
                         stack_status_reason='reason of %s' % status,
                         outputs=self.heat.outputs)

    def delete(self, stack_id):
        self.heat.calls.append(('delete', stack_id))
        if stack_id in self.heat.leftovers:
            name, _status, parameters = self.heat.leftovers[stack_id]
            self.heat.leftovers[stack_id] = (name, 'GONE', parameters)
            return
        if self.heat.phase == 'delete' and self.heat.next_status() == 'GONE':
            raise heat_exc.HTTPNotFound()
        self.heat.phase = 'delete'


class FakeResources:
    def __init__(self, heat):
        self.heat = heat

    def list(self, stack_id, **kwargs):
        self.heat.calls.append(('resources', stack_id, kwargs))
        return self.heat.resource_list


def fake_resource(name, rtype, status='CREATE_COMPLETE', physical_id=None,
                  reason=''):
    return mock.Mock(resource_name=name, resource_type=rtype,
                     resource_status=status, physical_resource_id=physical_id,
                     resource_status_reason=reason)


class StackServiceTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = fake_clock.FakeClock()
        self.options = opts.ChainOptions(template_dir=TEMPLATES,
                                         stack_create_timeout=1800)

    def service(self, heat):
        return stack.StackService(heat, poll_interval=5, clock=self.clock,
                                  sleep=self.clock.sleep)

    def test_create_call_from_the_preset(self):
        heat = FakeHeatClient()
        args = stack.build_create_args('s1', self.options, 1,
                                       BI)
        self.assertEqual('stack-id-1', self.service(heat).create(args))
        (call,) = [c for c in heat.calls if c[0] == 'create']
        sent = call[1]
        self.assertEqual('s1', sent['stack_name'])
        self.assertIn('vnf_count', sent['template']['parameters'])
        # The preset goes as the environment, as `-e` would send it.
        self.assertEqual(1, sent['environment']['parameters']['vnf_count'])
        self.assertEqual('net-phys2-2001',
                         sent['environment']['parameters']['net1_name'])
        # Nested templates travel in files, keyed as the template uses them.
        chain_type = sent['template']['resources']['chains'][
            'properties']['resource_def']['type']
        self.assertIn(chain_type, sent['files'])
        self.assertTrue(any(name.endswith('lib/chain_server.yaml')
                            for name in sent['files']))
        params = sent['parameters']
        self.assertEqual('generator', params['endpoints'])
        self.assertEqual('bidirectional', params['direction'])
        # The options' defaults: chain.yaml's.
        defaults = shipped.parameter_defaults((
            'vnf_image', 'vnf_existing_flavor', 'generator_control_port'))
        for name, value in defaults.items():
            self.assertEqual(value, params[name], name)
        self.assertNotIn('net0_vlan', params)
        self.assertEqual(30, sent['timeout_mins'])
        self.assertIs(True, sent['disable_rollback'])

    def test_every_parameter_is_declared_by_the_template(self):
        options = dataclasses.replace(
            self.options, segments=opts.parse_segments(
                ['physnet3:7', 'physnet3:8', 'physnet4:9', 'physnet4:10']))
        for length in (1, 2, 3):
            for direction in (UNI, BI):
                args = stack.build_create_args('s', options, length,
                                               direction)
                declared = set(args['template']['parameters'])
                self.assertEqual(set(), set(args['parameters']) - declared)
                self.assertEqual(length, args['parameters']['vnf_count'])
                self.assertEqual(
                    length + 1, len([k for k in args['parameters']
                                     if k.endswith('_vlan')]))

    def test_segments_override_the_preset(self):
        options = dataclasses.replace(
            self.options,
            segments=opts.parse_segments(['physnet3:7', 'physnet4:9']),
            vnf_flavor='epa.small', vnf_engine='testpmd')
        params = stack.build_create_args('s', options, 1,
                                         UNI)['parameters']
        self.assertEqual('physnet3', params['net0_physical_network'])
        self.assertEqual(7, params['net0_vlan'])
        self.assertEqual('net-physnet4-9', params['net1_name'])
        self.assertEqual('epa.small', params['vnf_existing_flavor'])
        self.assertEqual('testpmd', params['vnf_engine'])

    def test_vecpe_preset_for_three_vnfs_with_the_generator(self):
        args = stack.build_create_args('s', self.options, 3,
                                       UNI)
        self.assertEqual('external',
                         args['environment']['parameters']['endpoints'])
        self.assertEqual('generator', args['parameters']['endpoints'])

    def test_missing_template_dir_names_the_option(self):
        options = dataclasses.replace(self.options,
                                      template_dir='/nonexistent')
        error = self.assertRaises(opts.OptionError, stack.build_create_args,
                                  's', options, 1, UNI)
        self.assertIn('[epa_chain] template_dir', str(error))

    def test_default_template_dir_is_found(self):
        self.assertTrue(os.path.isfile(os.path.join(
            stack.default_template_dir(), 'chain.yaml')))

    def test_wait_for_create(self):
        heat = FakeHeatClient(create=('CREATE_IN_PROGRESS',) * 3 +
                              ('CREATE_COMPLETE',))
        result = self.service(heat).wait_for_create('stack-id-1', 60)
        self.assertEqual('CREATE_COMPLETE', result.stack_status)
        self.assertEqual(15, self.clock.now)

    def test_create_failed_lists_failed_resources(self):
        heat = FakeHeatClient(
            create=('CREATE_IN_PROGRESS', 'CREATE_FAILED'),
            resources=[fake_resource('vnf1', 'lib/chain_server.yaml',
                                     'CREATE_FAILED',
                                     reason='No valid host was found'),
                       fake_resource('net0', 'OS::Neutron::ProviderNet')])
        error = self.assertRaises(stack.StackError,
                                  self.service(heat).wait_for_create,
                                  'stack-id-1', 60)
        self.assertIn('CREATE_FAILED', str(error))
        self.assertIn('vnf1 (lib/chain_server.yaml): No valid host',
                      str(error))
        self.assertNotIn('net0', str(error))

    def test_create_timeout(self):
        heat = FakeHeatClient(create=('CREATE_IN_PROGRESS',))
        error = self.assertRaises(stack.StackError,
                                  self.service(heat).wait_for_create,
                                  'stack-id-1', 30)
        self.assertIn('stack_create_timeout', str(error))
        self.assertGreaterEqual(self.clock.now, 30)

    def test_delete_waits_until_gone(self):
        heat = FakeHeatClient(delete=('DELETE_IN_PROGRESS',
                                      'DELETE_IN_PROGRESS', 'GONE'))
        self.service(heat).delete('stack-id-1', 60)
        self.assertEqual(1, len([c for c in heat.calls if c[0] == 'delete']))
        self.assertEqual(3, len([c for c in heat.calls if c[0] == 'get']))

    def test_delete_retries_a_failed_delete(self):
        heat = FakeHeatClient(delete=('DELETE_FAILED', 'DELETE_COMPLETE'))
        self.service(heat).delete('stack-id-1', 60)
        self.assertEqual(2, len([c for c in heat.calls if c[0] == 'delete']))

    def test_delete_gives_up_with_the_reason(self):
        heat = FakeHeatClient(delete=('DELETE_FAILED',))
        error = self.assertRaises(stack.StackError,
                                  self.service(heat).delete,
                                  'stack-id-1', 60)
        self.assertIn('reason of DELETE_FAILED', str(error))

    def test_management_cidr_and_tag_reach_the_stack(self):
        options = dataclasses.replace(
            self.options, management_allowed_cidr='172.24.4.0/24')
        args = stack.build_create_args('s1', options, 1, BI)
        self.assertEqual('172.24.4.0/24',
                         args['parameters']['management_allowed_cidr'])
        self.assertEqual(stack.STACK_TAG, args['tags'])

    def test_delete_failure_names_what_is_left(self):
        heat = FakeHeatClient(delete=('DELETE_FAILED',), resources=[
            fake_resource('net0', 'OS::Neutron::ProviderNet',
                          'DELETE_FAILED', reason='Conflict: port in use'),
            fake_resource('vnf1', 'OS::Nova::Server', 'DELETE_COMPLETE')])
        error = self.assertRaises(stack.StackError,
                                  self.service(heat).delete,
                                  'stack-id-1', 60)
        self.assertIn('stack stack-id-1 not deleted after 2 attempt(s)',
                      str(error))
        self.assertIn('net0 (OS::Neutron::ProviderNet): Conflict: port in '
                      'use', str(error))
        self.assertNotIn('vnf1', str(error))
        self.assertIn('the next run on these VLANs deletes it first',
                      str(error))

    def test_delete_attempts_share_the_timeout(self):
        heat = FakeHeatClient(delete=('DELETE_IN_PROGRESS',))
        error = self.assertRaises(stack.StackError,
                                  self.service(heat).delete,
                                  'stack-id-1', 60)
        self.assertIn('stack_delete_timeout 60 s', str(error))
        # The first attempt used the whole budget: no second one.
        self.assertEqual(1, len([c for c in heat.calls if c[0] == 'delete']))
        self.assertLess(self.clock.now, 70)

    def test_leftovers_holding_the_segments_are_deleted_first(self):
        mine = {'vnf_count': '1', 'net0_physical_network': 'physnet1',
                'net0_vlan': '1001', 'net1_physical_network': 'physnet2',
                'net1_vlan': '2001'}
        other = dict(mine, net0_vlan='3001', net1_vlan='3002')
        heat = FakeHeatClient(leftovers=[
            ('old-1', 'epa-chain-1vnf-x', 'DELETE_FAILED', mine),
            ('old-2', 'epa-chain-1vnf-y', 'CREATE_COMPLETE', other),
            ('old-3', 'epa-chain-1vnf-z', 'CREATE_FAILED', mine)])
        released = self.service(heat).release_segments(
            {('physnet1', 1001), ('physnet2', 2001)}, 60)
        self.assertEqual(['old-1', 'old-3'], released)
        (listed,) = [c for c in heat.calls if c[0] == 'list']
        self.assertEqual({'tags': stack.STACK_TAG, 'global_tenant': True},
                         listed[1])
        self.assertEqual([('delete', 'old-1'), ('delete', 'old-3')],
                         [c for c in heat.calls if c[0] == 'delete'])

    def test_a_policy_denying_the_global_list_falls_back_to_the_project(self):
        # Heat's default policy denies stacks:global_index to everyone.
        mine = {'vnf_count': '1', 'net0_physical_network': 'physnet1',
                'net0_vlan': '1001'}
        heat = FakeHeatClient(leftovers=[
            ('old-1', 'epa-chain-1vnf-x', 'DELETE_FAILED', mine)])
        heat.deny_global_index = True
        logged = self.useFixture(fixtures.FakeLogger())
        released = self.service(heat).release_segments(
            {('physnet1', 1001)}, 60)
        self.assertEqual(['old-1'], released)
        self.assertEqual(
            [{'tags': stack.STACK_TAG, 'global_tenant': True},
             {'tags': stack.STACK_TAG}],
            [c[1] for c in heat.calls if c[0] == 'list'])
        self.assertIn('rule:context_is_admin', logged.output)

    def test_a_healthy_stack_on_the_segments_is_not_touched(self):
        # Maybe another run's (two gates on one cloud): refuse, name it.
        heat = FakeHeatClient(leftovers=[
            ('live-1', 'epa-chain-1vnf-x', 'CREATE_COMPLETE',
             {'vnf_count': '1', 'net0_physical_network': 'physnet1',
              'net0_vlan': '1001'})])
        error = self.assertRaises(
            stack.StackError, self.service(heat).release_segments,
            {('physnet1', 1001)}, 60)
        self.assertIn('(live-1, CREATE_COMPLETE) holds physnet1:1001',
                      str(error))
        self.assertIn('another run may be using it', str(error))
        self.assertEqual([], [c for c in heat.calls if c[0] == 'delete'])

    def test_a_leftover_being_deleted_is_waited_for(self):
        heat = FakeHeatClient(leftovers=[
            ('old-1', 'epa-chain-1vnf-x', 'DELETE_IN_PROGRESS',
             {'vnf_count': '1', 'net1_physical_network': 'physnet2',
              'net1_vlan': '2001'})])
        error = self.assertRaises(
            stack.StackError, self.service(heat).release_segments,
            {('physnet2', 2001)}, 30)
        self.assertIn('still DELETE_IN_PROGRESS', str(error))
        self.assertGreaterEqual(self.clock.now, 30)
        self.assertEqual([], [c for c in heat.calls if c[0] == 'delete'])

    def test_segments_of_stack_parameters(self):
        parameters = {'vnf_count': '2', 'net0_physical_network': 'p1',
                      'net0_vlan': '11', 'net1_physical_network': 'p1',
                      'net1_vlan': 12, 'net2_physical_network': 'p2',
                      'net2_vlan': '21', 'net3_physical_network': 'p2',
                      'net3_vlan': '22'}
        self.assertEqual({('p1', 11), ('p1', 12), ('p2', 21)},
                         stack.segments_of(parameters))
        self.assertEqual({('p1', 11), ('p1', 12)},
                         stack.segments_of(parameters, 1))

    def test_delete_of_a_stack_already_gone(self):
        heat = FakeHeatClient()
        heat.phase = 'delete'
        heat.scripts['delete'] = ['GONE']
        self.service(heat).delete('stack-id-1', 60)
        self.assertEqual([('delete', 'stack-id-1')], heat.calls)

    def test_outputs_and_servers(self):
        heat = FakeHeatClient(
            outputs=[{'output_key': 'generator_control_endpoint',
                      'output_value': {'host': '10.0.0.5', 'port': 8474}}],
            resources=[fake_resource('server', 'OS::Nova::Server',
                                     physical_id='b'),
                       fake_resource('server', 'OS::Nova::Server',
                                     physical_id='a'),
                       fake_resource('vnf1', 'lib/chain_server.yaml',
                                     physical_id='n')])
        service = self.service(heat)
        self.assertEqual({'host': '10.0.0.5', 'port': 8474},
                         service.outputs('x')['generator_control_endpoint'])
        self.assertEqual(['a', 'b'], service.server_ids('x'))

    def test_output_error_is_named(self):
        heat = FakeHeatClient(outputs=[{'output_key': 'forward_chain',
                                        'output_error': 'boom'}])
        error = self.assertRaises(stack.StackError,
                                  self.service(heat).outputs, 'x')
        self.assertIn('forward_chain: boom', str(error))


@unittest.skipUnless(importlib.util.find_spec('heat') and
                     importlib.util.find_spec('nova'),
                     'offline validation needs the validation extra '
                     '(openstack-heat, nova)')
class ScenarioStacksValidateTest(testtools.TestCase):
    """The stacks the scenarios create pass `epa-chain validate`.

    The preset plus the scenario's parameters (as a second environment:
    Heat lets later parameters win, as the API's do) through Heat's engine
    offline and the NFV rules, MAC chain included.
    """

    def validate(self, options, chain_length, direction):
        from epa_chain.validation import runner
        parameters = stack.stack_parameters(options, chain_length, direction)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'scenario.yaml')
        with open(path, 'w') as f:
            json.dump({'parameters': parameters}, f)
        report = runner.validate(
            os.path.join(TEMPLATES, stack.TEMPLATE),
            [shipped.preset_for(TEMPLATES, chain_length,
                                chain_directions.word(direction)), path])
        return [(f.rule, f.message) for f in report.errors]

    def test_every_scenario_stack_is_valid(self):
        options = opts.ChainOptions(template_dir=TEMPLATES)
        for length in (1, 2, 3):
            for direction in (UNI, BI):
                self.assertEqual([], self.validate(options, length,
                                                   direction),
                                 '%d VNF(s) %s' % (length, direction))

    def test_configured_segments_and_engine(self):
        options = opts.ChainOptions(
            template_dir=TEMPLATES, vnf_engine='testpmd',
            segments=opts.parse_segments(['physnet3:7', 'physnet3:8',
                                          'physnet4:9', 'physnet4:10']))
        self.assertEqual([], self.validate(options, 3, BI))

    def test_an_invalid_option_is_caught(self):
        # 3 NUMA nodes cannot split the 2-vCPU VNF flavor.
        options = opts.ChainOptions(template_dir=TEMPLATES, numa_nodes=3)
        rules = {rule for rule, _message in
                 self.validate(options, 1, UNI)}
        self.assertEqual({'EPA-NUMA'}, rules)


class FakeCompute:
    def __init__(self, consoles, statuses=None, names=None):
        self.consoles = consoles        # server_id -> [text per poll]
        self.statuses = statuses or {}  # server_id -> (status, fault)
        self.names = names or {}
        self.extra_specs = {}           # changed in every flavor shown
        self.image_hw = {}              # every image's hw_* properties

    def show_server(self, server_id):
        return {'name': self.names[server_id],
                'OS-EXT-SRV-ATTR:host': 'compute-1',
                'OS-EXT-SRV-ATTR:hypervisor_hostname': 'compute-1.lab',
                'OS-EXT-AZ:availability_zone': 'nova',
                'hostId': 'c0ffee'}

    def server_topology(self, server_id):
        # The single-host cloud's server as `server show --topology`
        # showed it (flavor extra specs, topology), under this name.
        with open(os.path.join(repo.FIXTURES, 'audit',
                               'server-small-host.json')) as stream:
            server = json.load(stream)
        # On another host: the unit tests never read this host's libvirt.
        server.update({'name': self.names[server_id], 'id': server_id,
                       'OS-EXT-SRV-ATTR:host': 'compute-1'})
        server['flavor']['extra_specs'].update(self.extra_specs)
        server['image'] = {'id': '0c7c7ac3-9a3c-4ad1-bb3f-29d3b2b8c8a1'}
        return server

    def image_properties(self, image_id):
        return dict(self.image_hw)

    def server_status(self, server_id):
        return self.statuses.get(server_id, ('ACTIVE', None))

    def console_output(self, server_id):
        texts = self.consoles[server_id]
        return texts.pop(0) if len(texts) > 1 else texts[0]


FakeTopology = collections.namedtuple('FakeTopology', 'nodes')
FakeNode = collections.namedtuple('FakeNode', 'config')
FakeConfig = collections.namedtuple('FakeConfig', 'name engine')


def fake_topology(*nodes):
    """A resolved topology's nodes as expected_nodes reads them."""
    return FakeTopology([FakeNode(FakeConfig(name, engine))
                         for name, engine in nodes])


class ReadinessTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = fake_clock.FakeClock()
        with open(os.path.join(FIXTURES, 'console-restarted.log')) as f:
            self.console = f.read()

    def wait(self, nodes, compute, timeout=100):
        readiness.wait_until_ready(nodes, compute, timeout, interval=10,
                                   clock=self.clock, sleep=self.clock.sleep)

    def test_console_state_last_line_wins(self):
        self.assertEqual(('ready', 'prox'), node_readiness.console_state(
            self.console, 'chain-x-vnf1'))
        self.assertEqual(('ready', 'testpmd'), node_readiness.console_state(
            self.console, 'chain-x-vnf2'))
        self.assertIsNone(node_readiness.console_state(
            self.console, 'chain-x-vnf3'))
        failed = self.console.split('[   14.55')[0]
        self.assertEqual(
            ('failed', 'port fa:16:3e:00:00:01 not found (ports: eth0)'),
            node_readiness.console_state(failed, 'chain-x-vnf1'))

    def test_waits_for_every_node(self):
        compute = FakeCompute({'id1': ['booting', 'booting', self.console],
                               'id2': [self.console]})
        self.wait([readiness.Node('id1', 'chain-x-vnf1', 'prox'),
                   readiness.Node('id2', 'chain-x-vnf2', 'testpmd')],
                  compute)
        self.assertEqual(20, self.clock.now)

    def test_failed_node(self):
        compute = FakeCompute({'id1': ['EPA-CHAIN FAILED chain-x-vnf1: '
                                       'no hugepages']})
        error = self.assertRaises(readiness.NotReadyError, self.wait,
                                  [readiness.Node('id1', 'chain-x-vnf1',
                                                  'prox')], compute)
        self.assertIn('chain-x-vnf1 reports EPA-CHAIN FAILED: no hugepages',
                      str(error))

    def test_server_in_error(self):
        compute = FakeCompute({'id1': ['']},
                              {'id1': ('ERROR', 'No valid host')})
        error = self.assertRaises(readiness.NotReadyError, self.wait,
                                  [readiness.Node('id1', 'n1', 'prox')],
                                  compute)
        self.assertIn('n1 (id1) is in ERROR: No valid host', str(error))

    def test_wrong_engine(self):
        compute = FakeCompute({'id2': [self.console]})
        error = self.assertRaises(readiness.NotReadyError, self.wait,
                                  [readiness.Node('id2', 'chain-x-vnf2',
                                                  'prox')], compute)
        self.assertIn('runs testpmd, but prox was asked for', str(error))

    def test_timeout_shows_the_console_tail(self):
        compute = FakeCompute({'id1': ['line one\nkernel panic']})
        error = self.assertRaises(readiness.NotReadyError, self.wait,
                                  [readiness.Node('id1', 'n1', 'prox')],
                                  compute, 30)
        self.assertIn('vnf_ready_timeout', str(error))
        self.assertIn('line one | kernel panic', str(error))
        self.assertGreaterEqual(self.clock.now, 30)

    def test_console_not_available_yet_is_retried(self):
        ready = console_ready('n1', 'prox')

        class BootingCompute(FakeCompute):
            # Nova: 409 while building, 404 before the console log exists.
            answers = [readiness.ConsoleUnavailable('409 Conflict'),
                       readiness.ConsoleUnavailable('404 Not Found')]

            def console_output(self, server_id):
                if self.answers:
                    raise self.answers.pop(0)
                return super().console_output(server_id)

        self.wait([readiness.Node('id1', 'n1', 'prox')],
                  BootingCompute({'id1': [ready]}))
        self.assertEqual(20, self.clock.now)

    def test_console_never_available_times_out_saying_so(self):
        class NoConsole(FakeCompute):
            def console_output(self, server_id):
                raise readiness.ConsoleUnavailable('409 Conflict')

        error = self.assertRaises(readiness.NotReadyError, self.wait,
                                  [readiness.Node('id1', 'n1', 'prox')],
                                  NoConsole({}), 30)
        self.assertIn('no console output yet: 409 Conflict', str(error))
        self.assertIn('vnf_ready_timeout', str(error))

    def test_asks_little_while_guests_boot(self):
        # Each question may be an `openstack` client start on the host the
        # guests boot on: one console per round, the status only of a
        # console that is empty or has not moved.
        booting = ['', 'kernel', 'kernel\nsystemd']

        class CountingCompute(FakeCompute):
            asked = collections.Counter()

            def server_status(self, server_id):
                self.asked['status', server_id] += 1
                return super().server_status(server_id)

            def console_output(self, server_id):
                self.asked['console', server_id] += 1
                return super().console_output(server_id)

        compute = CountingCompute({
            'id1': booting + [console_ready('n1', 'prox')],
            'id2': ['kernel', console_ready('n2', 'prox')],
            'id3': [console_ready('n3', 'prox')]})
        self.wait([readiness.Node(server_id, name, 'prox')
                   for server_id, name in (('id1', 'n1'), ('id2', 'n2'),
                                           ('id3', 'n3'))], compute)
        # n1 READY in the fourth round, where n2 still boots (a new line:
        # no status asked); n2 and n3 READY in the fifth.
        self.assertEqual(40, self.clock.now)
        self.assertEqual({('console', 'id1'): 4, ('status', 'id1'): 1,
                          ('console', 'id2'): 2, ('console', 'id3'): 1},
                         dict(compute.asked))

    def test_timeout_names_the_nodes_not_asked(self):
        compute = FakeCompute({'id1': ['kernel'], 'id2': ['kernel']})
        error = self.assertRaises(
            readiness.NotReadyError, self.wait,
            [readiness.Node('id1', 'n1', 'prox'),
             readiness.Node('id2', 'n2', 'prox')], compute, 30)
        self.assertIn('n1, console ends: kernel', str(error))
        self.assertIn('n2, console ends: (not asked: an earlier node was '
                      'not ready)', str(error))

    def test_expected_nodes(self):
        topology = fake_topology(('s-vnf1', 'testpmd'),
                                 ('s-vnf2', 'testpmd'),
                                 ('s-generator', 'prox'))
        nodes = readiness.expected_nodes(
            topology, {'a': 's-vnf1', 'b': 's-vnf2', 'c': 's-generator'})
        self.assertEqual(
            [readiness.Node('c', 's-generator', 'prox'),
             readiness.Node('a', 's-vnf1', 'testpmd'),
             readiness.Node('b', 's-vnf2', 'testpmd')], nodes)
        error = self.assertRaises(readiness.NotReadyError,
                                  readiness.expected_nodes, topology,
                                  {'a': 's-vnf1', 'c': 's-generator'})
        self.assertIn('no server named s-vnf2', str(error))


class FakeGenerator(trial.Generator):
    """Forwards `forwarding[direction]` of what it sends."""

    name = 'fake'

    def __init__(self, forwarding=None, error=None):
        self.forwarding = forwarding or {}
        self.error = error
        self.specs = []
        self.closed = False

    @property
    def link_bps(self):
        return 10e9

    def run_trial(self, spec):
        self.specs.append(spec)
        if self.error:
            raise self.error
        directions = []
        for direction in spec.profile.directions:
            tx = int(spec.load_fps * spec.duration_s)
            rx = int(tx * self.forwarding.get(direction, 1.0))
            directions.append(trial.DirectionResult(
                direction, spec.load_fps, spec.load_fps,
                rx / spec.duration_s, tx, rx))
        return trial.TrialResult(spec, directions, 0.0, spec.duration_s)

    def close(self):
        self.closed = True


class SequencedGenerator(FakeGenerator):
    """Forwards by the next of `sequence` each trial, then by the last."""

    def __init__(self, sequence):
        super().__init__(sequence[0])
        self.sequence = list(sequence)

    def run_trial(self, spec):
        self.forwarding = (self.sequence.pop(0) if len(self.sequence) > 1
                           else self.sequence[0])
        return super().run_trial(spec)


CHAIN_OUTPUTS = {
    'forward_chain': [
        {'server': 's-generator', 'role': 'left', 'mac': 'fa:16:3e:00:00:01',
         'network': 'net-phys1-1001', 'vlan': 1001},
        {'server': 's-vnf1', 'role': 'left', 'mac': 'fa:16:3e:00:00:02',
         'network': 'net-phys1-1001', 'vlan': 1001}],
    'reverse_chain': [
        {'server': 's-generator', 'role': 'right', 'mac': 'fa:16:3e:00:00:04',
         'network': 'net-phys2-2001', 'vlan': 2001}],
    'generator_control_endpoint': {'host': '10.0.0.5', 'port': 8474},
}


class HopCheckTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # No real pause between attempts (tests that count them pass
        # their own sleep).
        self.useFixture(fixtures.MockPatchObject(hop_check, 'SETTLE_S', 0))

    def test_every_direction_at_a_low_rate(self):
        generator = FakeGenerator()
        results = hop_check.check(generator, ('forward', 'reverse'),
                                  CHAIN_OUTPUTS)
        self.assertEqual(2, len(results))
        self.assertEqual([('forward',), ('reverse',)],
                         [s.profile.directions for s in generator.specs])
        line_rate = trial.FrameSize(size=64).line_rate_fps(10e9)
        for spec in generator.specs:
            self.assertLess(spec.load_fps, 0.05 * line_rate)
            self.assertGreater(spec.load_fps, 0)
            self.assertLessEqual(spec.duration_s, 10)

    def test_a_direction_that_loses_everything_is_named(self):
        generator = FakeGenerator({'reverse': 0.0})
        error = self.assertRaises(hop_check.HopCheckError, hop_check.check,
                                  generator, ('forward', 'reverse'),
                                  CHAIN_OUTPUTS)
        self.assertIn('reverse direction does not forward', str(error))
        self.assertIn('s-generator:right (fa:16:3e:00:00:04', str(error))

    def test_heavy_loss_fails_and_light_loss_passes(self):
        self.assertRaises(hop_check.HopCheckError, hop_check.check,
                          FakeGenerator({'forward': 0.5}), ('forward',))
        hop_check.check(FakeGenerator({'forward': 0.999}), ('forward',))

    def test_load_and_loss_tolerance_from_the_options(self):
        generator = FakeGenerator({'forward': 0.9})
        error = self.assertRaises(hop_check.HopCheckError, hop_check.check,
                                  generator, ('forward',))
        self.assertIn('hop_check_max_loss_ratio', str(error))
        results = hop_check.check(generator, ('forward',),
                                  load_fraction=0.001, max_loss_ratio=0.2)
        line_rate = trial.FrameSize(size=64).line_rate_fps(10e9)
        self.assertAlmostEqual(0.001 * line_rate,
                               generator.specs[-1].load_fps)
        record = hop_check.record(results, 0.001, 0.2)
        self.assertEqual(0.001, record['load_fraction'])
        self.assertEqual(0.2, record['max_loss_ratio'])
        self.assertEqual(['forward'],
                         [d['direction'] for d in record['directions']])
        self.assertAlmostEqual(0.1, record['directions'][0]['loss_ratio'],
                               places=3)

    def test_generator_error_names_the_direction(self):
        generator = FakeGenerator(error=trial.GeneratorError(
            'system under test stopped forwarding'))
        error = self.assertRaises(hop_check.HopCheckError, hop_check.check,
                                  generator, ('forward',), CHAIN_OUTPUTS,
                                  attempts=2, sleep=lambda s: None)
        self.assertIn('forward direction: system under test stopped',
                      str(error))
        self.assertIn('s-vnf1:left', str(error))
        self.assertIn('2 of 2 attempts failed', str(error))

    def test_a_cold_path_passes_on_a_later_attempt_and_is_recorded(self):
        # As seen in CI: right after boot, 481 of 595 frames came back.
        generator = SequencedGenerator([{'forward': 0.8}, {'forward': 1.0}])
        pauses = []
        checks = hop_check.check(generator, ('forward', 'reverse'),
                                 CHAIN_OUTPUTS, sleep=pauses.append)
        self.assertEqual([hop_check.SETTLE_S], pauses)
        self.assertEqual(3, len(generator.specs))
        forward, reverse = checks
        self.assertEqual((2, 1), (forward.attempts, reverse.attempts))
        (failed,) = forward.failed_attempts
        self.assertAlmostEqual(0.2, failed['loss_ratio'], places=3)
        self.assertEqual(failed['tx_frames'] - failed['rx_frames'],
                         round(0.2 * failed['tx_frames']))
        self.assertIn('forward direction does not forward', failed['error'])
        record = hop_check.record(checks, attempts=3)
        self.assertEqual(3, record['attempts'])
        self.assertEqual([2, 1], [d['attempts']
                                  for d in record['directions']])
        self.assertEqual(0.0, record['directions'][0]['loss_ratio'])
        self.assertEqual([failed],
                         record['directions'][0]['failed_attempts'])

    def test_a_broken_hop_fails_every_attempt(self):
        generator = FakeGenerator({'reverse': 0.0})
        pauses = []
        error = self.assertRaises(hop_check.HopCheckError, hop_check.check,
                                  generator, ('forward', 'reverse'),
                                  CHAIN_OUTPUTS, attempts=3,
                                  sleep=pauses.append)
        self.assertIn('reverse direction does not forward: 0 of',
                      str(error))
        self.assertRegex(str(error), r'3 of 3 attempts failed; frames back '
                                     r'per attempt: 0/(\d+), 0/\1, 0/\1\)$')
        self.assertEqual(1 + 3, len(generator.specs))
        self.assertEqual(2, len(pauses))

    def test_one_attempt_fails_at_once(self):
        generator = FakeGenerator({'forward': 0.5})
        self.assertRaises(hop_check.HopCheckError, hop_check.check,
                          generator, ('forward',), attempts=1,
                          sleep=self.fail)
        self.assertEqual(1, len(generator.specs))
        self.assertRaises(ValueError, hop_check.check, generator,
                          ('forward',), attempts=0)

    def test_what_the_observer_sees_fails_the_attempt(self):
        seen = []

        def observe(run):
            result = run()
            seen.append(result)
            if len(seen) == 1:
                raise hop_check.HopCheckError('vnf1:right sent 3 of 1000')
            return result

        (checked,) = hop_check.check(FakeGenerator(), ('forward',),
                                     observe=observe, sleep=lambda s: None)
        self.assertEqual(2, checked.attempts)
        self.assertIs(seen[-1], checked.result)
        self.assertEqual([{'error': 'vnf1:right sent 3 of 1000'}],
                         checked.failed_attempts)


def console_ready(name, engine):
    return 'boot noise\nEPA-CHAIN READY %s %s\n' % (name, engine)


def as_outputs(values):
    return [{'output_key': k, 'output_value': v} for k, v in values.items()]


class BenchmarkFlowTest(testtools.TestCase):
    """The scenario's flow with fakes: stack, consoles, generator."""

    def setUp(self):
        super().setUp()
        from epa_chain.cloud import benchmark
        self.benchmark = benchmark
        self.results_dir = self.useFixture(fixtures.TempDir()).path
        self.conf = dict(
            template_dir=TEMPLATES, results_dir=self.results_dir,
            frame_sizes=['64', 'imix'], flow_counts=[1, 100],
            search_method='rfc2544', trial_duration=10.0,
            stack_create_timeout=120, vnf_ready_timeout=60)
        self.options = self.reconf()
        self.heat = FakeHeatClient(
            create=('CREATE_IN_PROGRESS', 'CREATE_COMPLETE'),
            outputs=as_outputs(CHAIN_OUTPUTS),
            resources=[fake_resource('server', 'OS::Nova::Server',
                                     physical_id='id-vnf1'),
                       fake_resource('server', 'OS::Nova::Server',
                                     physical_id='id-gen')])
        self.compute = FakeCompute(
            {'id-vnf1': ['', console_ready('s-vnf1', 'prox')],
             'id-gen': [console_ready('s-generator', 'prox')]},
            names={'id-vnf1': 's-vnf1', 'id-gen': 's-generator'})
        self.generator = FakeGenerator()
        self.endpoints = []
        self.plans = []
        self.cleanups = []
        self.clock = fake_clock.FakeClock()
        self.stacks = stack.StackService(self.heat, poll_interval=1,
                                         clock=self.clock,
                                         sleep=self.clock.sleep)

    def reconf(self, **changes):
        """The options of this test's [epa_chain] values with `changes`."""
        conf = dict(self.conf, **changes)
        options = opts.ChainOptions.from_conf(as_group(**conf))
        self.conf.update(changes)
        return options

    def record_campaigns(self):
        """Replace the campaigns (the engine's business) by a recorder."""
        recorded = {'schema': 'epa-chain/results/2', 'cases': []}

        def fake_run(generator, plan, progress=None):
            self.assertIs(self.generator, generator)
            self.plans.append(plan)
            return recorded

        patches = [mock.patch.object(self.benchmark.campaign, 'run',
                                     side_effect=fake_run),
                   mock.patch.object(self.benchmark.results, 'write',
                                     return_value=['a.json', 'a.txt'])]
        for patch in patches:
            patch.start()
            self.addCleanup(patch.stop)

    def generator_factory(self, endpoint):
        self.endpoints.append(endpoint)
        return self.generator

    def chain_benchmark(self, add_cleanup=None):
        return self.benchmark.ChainBenchmark(
            self.options, self.stacks, self.compute,
            add_cleanup or self.cleanups.append,
            generator_factory=self.generator_factory, ready_interval=1,
            clock=self.clock, sleep=self.clock.sleep)

    def run_cleanups(self):
        while self.cleanups:
            self.cleanups.pop()()

    def test_parked_vnfs_run_from_the_hop_check_to_the_last_case(self):
        from epa_chain.cloud import vnf_tasks
        self.record_campaigns()
        self.heat.outputs = as_outputs(dict(
            CHAIN_OUTPUTS, vnf_control_endpoints={
                'vnf1': {'host': '10.0.0.6', 'port': 8474}}))
        boot = ('EPA-CHAIN BOOT s-vnf1 initramfs_at=5.1 init_at=9.2 '
                'runtime_at=14.6 ready_at=21.4 '
                'kernel_started=2026-11-28T16:00:08.600+00:00\n')
        self.compute.consoles['id-vnf1'] = [
            boot + console_ready('s-vnf1', 'prox')]
        seen = []
        test = self

        class Prox:
            def __init__(self, host, port):
                self.endpoint = (host, port)

            def __enter__(self):
                return self

            def __exit__(self, *_):
                pass

            def start(self):
                # Before any frame: the hop check has not sent yet.
                seen.append(('start', self.endpoint,
                             len(test.generator.specs), len(test.plans)))

            def stop(self):
                seen.append(('stop', self.endpoint,
                             len(test.generator.specs), len(test.plans)))

        run = self.benchmark.ChainBenchmark(
            self.options, self.stacks, self.compute, self.cleanups.append,
            generator_factory=self.generator_factory, ready_interval=1,
            clock=self.clock, sleep=self.clock.sleep,
            tasks_factory=lambda found: vnf_tasks.Tasks(
                found, client_factory=Prox))
        resolved = stack.resolve('s', self.options, 1, BI)
        outputs, cloud = run.deploy('s', 1, BI, resolved)
        self.assertEqual(6.8, cloud['boot']['s-vnf1']['runtime'])
        self.assertNotIn('s-generator', cloud['boot'])
        run.measure(outputs, 1, BI, cloud)
        hop_trials = len(self.generator.specs)
        self.assertEqual([('start', ('10.0.0.6', 8474), 0, 0),
                          ('stop', ('10.0.0.6', 8474), hop_trials, 4)],
                         seen)

    def test_whole_flow_on_the_model(self):
        # The model generator (a simulated SUT with a known NDR, virtual
        # clock) behind the fake cloud: real campaigns, reports and files.
        from epa_chain import generators
        ndr_fps = 2.0e6
        self.generator = generators.create('model', ndr_fps=ndr_fps)
        written = self.chain_benchmark().run('s', 1, BI)
        self.assertEqual([CHAIN_OUTPUTS['generator_control_endpoint']],
                         self.endpoints)
        run_dir = os.path.dirname(written[0])
        self.assertTrue(run_dir.endswith('-1vnf-bidirectional'))
        jsons = sorted(p for p in written if p.endswith('.json'))
        self.assertEqual(
            ['64B-100flows.json', '64B-1flows.json',
             'imix-64x7-570x4-1518x1-100flows.json',
             'imix-64x7-570x4-1518x1-1flows.json'],
            [os.path.basename(p) for p in jsons])
        for path in jsons:
            self.check_model_result(path, ndr_fps, written)
        with open(os.path.join(run_dir, 'tables.txt')) as f:
            self.assertEqual(4, f.read().count('== '))
        # The stack is deleted by the registered cleanup, and waited for.
        self.assertEqual(1, len(self.cleanups))
        self.heat.scripts['delete'] = ['DELETE_IN_PROGRESS', 'GONE']
        self.run_cleanups()
        self.assertIn(('delete', 'stack-id-1'), self.heat.calls)
        self.assertEqual(('get', 'stack-id-1'), self.heat.calls[-1])

    def check_model_result(self, path, ndr_fps, written):
        """One results file of the whole flow on the model, and its plots."""
        with open(path) as f:
            document = json.load(f)
        self.assertEqual('epa-chain/results/2', document['schema'])
        measurement_results.validate(document, path)
        self.assertEqual(0.01, document['cloud']['hop_check'][
            'load_fraction'])
        # Where each server ran, as the compute API showed it.
        placed = document['cloud']['placement']
        self.assertEqual(1, placed['hosts'])
        self.assertIsNone(placed['server_group_policy'])
        self.assertEqual({'compute-1'}, {
            s['host'] for s in placed['servers'].values()})
        self.assertEqual(2, len(placed['servers']))
        self.assertEqual('rfc2544', document['method'])
        (case,) = document['cases']
        self.assertEqual(['forward', 'reverse'], case['directions'])
        self.assertIsNone(case['error'])
        ndr = [g for g in case['search']['goals']
               if g['name'] == 'NDR'][0]['throughput_fps']
        self.assertLessEqual(ndr, ndr_fps)
        self.assertGreater(ndr, ndr_fps * (1 - 2 * 0.005))
        self.assertIsNotNone(case['latency'])
        # The EPA audit of both servers, Nova's view (the fake servers
        # run on another host): shared CPUs as asked.
        audit = document['cloud']['epa_audit']
        self.assertEqual((True, []), (audit['valid'],
                                      audit['host_checked']))
        self.assertEqual({'s-vnf1', 's-generator'},
                         {f['server'] for f in audit['findings']})
        self.assertTrue(os.path.isfile(path[:-5] + '.txt'))
        # Throughput and latency plots beside the tables.
        plot_dir = path[:-5] + '-plots'
        plotted = sorted(os.listdir(plot_dir))
        self.assertEqual(2, len(plotted), plotted)
        self.assertTrue(plotted[0].startswith('latency-'), plotted)
        self.assertEqual('throughput.png', plotted[1])
        self.assertIn(os.path.join(plot_dir, 'throughput.png'), written)

    def test_an_invalidating_audit_marks_every_result(self):
        from epa_chain import generators
        from epa_chain.measurement import report
        # Dedicated CPUs asked, and Nova's topology shows no pinning; the
        # image's properties are read too (the flavor decides here).
        self.compute.extra_specs['hw:cpu_policy'] = 'dedicated'
        self.compute.image_hw['hw_cpu_policy'] = 'shared'
        self.options = self.reconf(frame_sizes=['64'], flow_counts=[1])
        self.generator = generators.create('model', ndr_fps=2.0e6)
        with self.assertLogs('epa_chain.cloud.benchmark', 'WARNING') as log:
            written = self.chain_benchmark().run('s', 1, BI)
        self.assertIn('invalidate the measurement of s', log.output[0])
        (path,) = [p for p in written if p.endswith('.json')]
        document = measurement_results.load(path)
        audit = document['cloud']['epa_audit']
        self.assertFalse(audit['valid'])
        text = report.render_tables(document)
        self.assertIn('EPA audit: INVALID - 2 finding(s) invalidate this '
                      'measurement: ', text)
        self.assertIn('EPA: asked vs given', text)
        self.assertIn('INVALIDATES', text)
        self.run_cleanups()

    def test_loss_split_along_the_outputs_where_the_switch_has_them(self):
        from epa_chain.cloud import ovs_hops
        from epa_chain.measurement import hop_loss

        class Switch:
            OVSError = ovs_hops.OVSError
            loss_paths = staticmethod(ovs_hops.loss_paths)
            counted_hops = staticmethod(ovs_hops.counted_hops)
            live_counters = staticmethod(dict)

            def __init__(self, ports):
                self.ports = ports

            def snapshot(self):
                return {port: ('vhu-' + port, 0, 0) for port in self.ports}

        def hop(server, role, port):
            return {'server': server, 'role': role, 'port': port}
        outputs = {
            'forward_chain': [hop('gen', 'left', 'p1'), hop('vnf', 'left',
                                                            'p2'),
                              hop('vnf', 'right', 'p3'), hop('gen', 'right',
                                                             'p4')],
            'reverse_chain': [hop('gen', 'right', 'p4'), hop('vnf', 'right',
                                                             'p3'),
                              hop('vnf', 'left', 'p2'), hop('gen', 'left',
                                                            'p1')]}
        generator = FakeGenerator()
        run = self.chain_benchmark()
        self.assertIsNone(run.loss_split(generator, outputs, BI))
        run.switch = Switch(['p1', 'p2', 'p3', 'p4'])
        counting = run.loss_split(generator, outputs, BI)
        self.assertIsInstance(counting, hop_loss.CountingGenerator)
        self.assertEqual(
            (hop_loss.Hop('gen', 'vhu-p1', 'vnf', 'vhu-p2'),
             hop_loss.Hop('vnf', 'vhu-p3', 'gen', 'vhu-p4')),
            counting._paths['forward'])
        self.assertEqual(hop_loss.Hop('gen', 'vhu-p4', 'vnf', 'vhu-p3'),
                         counting._paths['reverse'][0])
        # A chain elsewhere: said once, measured without the split.
        run.switch = Switch(['p1', 'p2'])
        with self.assertLogs('epa_chain.cloud.benchmark', 'INFO') as log:
            self.assertIsNone(run.loss_split(generator, outputs, BI))
        self.assertIn('port p3 (vnf:right) has no interface on this '
                      'host', log.output[0])

    def _judged(self, floor):
        """One run judged by an NDR floor: (its results, the error)."""
        from epa_chain import generators
        kpi_path = os.path.join(self.results_dir, 'kpi.yaml')
        with open(kpi_path, 'w') as stream:
            stream.write('throughput:\n  - {goal: NDR, frame_size: \'64\', '
                         'min_fps: %r}\n' % floor)
        self.options = self.reconf(kpi_file=kpi_path, frame_sizes=['64'],
                                   flow_counts=[1])
        self.generator = generators.create('model', ndr_fps=2.0e6)
        error = None
        try:
            self.chain_benchmark().run('s', 1, BI)
        except self.benchmark.BenchmarkError as exc:
            error = str(exc)
        (path,) = glob.glob(os.path.join(self.results_dir, '*', '*.json'))
        document = measurement_results.load(path)
        with open(path[:-5] + '.txt') as stream:
            self.assertIn('KPI verdicts (', stream.read())
        return document, error

    def test_a_kpi_met_passes_and_is_recorded(self):
        document, error = self._judged(1.0e6)
        self.assertIsNone(error)
        self.assertTrue(document['kpi']['passed'])
        self.assertEqual(['met'], [v['verdict'] for v in
                                   document['kpi']['findings']])

    def test_a_kpi_missed_fails_the_scenario_with_the_table(self):
        document, error = self._judged(3.0e6)
        self.assertFalse(document['kpi']['passed'])
        self.assertEqual(['MISSED'], [v['verdict'] for v in
                                      document['kpi']['findings']])
        self.assertIn('[epa_chain] kpi_file: a KPI not met', error)
        self.assertIn('| NDR min_fps', error)
        self.assertIn('0 of 1 KPI checks met; FAIL', error)

    def test_an_unreadable_kpi_file_names_the_option(self):
        error = self.assertRaises(
            opts.OptionError, self.reconf,
            kpi_file=os.path.join(self.results_dir, 'missing.yaml'))
        self.assertIn('[epa_chain] kpi_file: ', str(error))
        self.assertIn('missing.yaml', str(error))

    def test_the_search_ceiling_reaches_the_campaign_and_the_results(self):
        self.options = self.reconf(max_load_fps=500.0, frame_sizes=['64'],
                                   flow_counts=[1])
        written = self.chain_benchmark().run('s', 1, UNI)
        with open(written[0]) as stream:
            (case,) = json.load(stream)['cases']
        self.assertEqual(500.0, case['max_load_fps'])
        # After the hop check (its own load), no trial offers more.
        hop_check, *searched = self.generator.specs
        self.assertTrue(searched)
        self.assertLessEqual(max(s.load_fps for s in searched), 500.0)

    def test_hop_check_options_reach_the_check_and_the_results(self):
        self.record_campaigns()
        self.options = self.reconf(
            hop_check_load_fraction=0.002, hop_check_max_loss_ratio=0.3,
            frame_sizes=['64'], flow_counts=[1])
        self.generator.forwarding = {'forward': 0.8}
        self.chain_benchmark().run('s', 1, UNI)
        line_rate = trial.FrameSize(size=64).line_rate_fps(10e9)
        self.assertAlmostEqual(0.002 * line_rate,
                               self.generator.specs[0].load_fps)
        (write_call,) = self.benchmark.results.write.call_args_list
        document = write_call[0][2]
        self.assertEqual(0.3, document['cloud']['hop_check'][
            'max_loss_ratio'])

    def test_repeat_runs_each_case_again_into_one_results_file(self):
        runs = []

        def fake_run(generator, plan, progress=None):
            runs.append(plan)
            return {'cases': [], 'totals': {'trials': 3}, 'complete': True,
                    'parameters': {'loss_goals': {'NDR': 0.0}}}
        for patch in (mock.patch.object(self.benchmark.campaign, 'run',
                                        side_effect=fake_run),
                      mock.patch.object(self.benchmark.results, 'write',
                                        return_value=['a.json'])):
            patch.start()
            self.addCleanup(patch.stop)
        self.options = self.reconf(repeat=2, frame_sizes=['64'],
                                   flow_counts=[1])
        self.chain_benchmark().run('s', 1, UNI)
        self.assertEqual([2, 2], [plan.repeat for plan in runs])
        (write_call,) = self.benchmark.results.write.call_args_list
        document = write_call[0][2]
        self.assertEqual({'repeat': 2, 'rows': []}, document['spread'])
        self.assertEqual(6, document['totals']['trials'])

    def test_hop_check_attempts_reach_the_check_and_the_results(self):
        self.options = self.reconf(hop_check_attempts=2, frame_sizes=['64'],
                                   flow_counts=[1])
        self.generator = SequencedGenerator([{'forward': 0.0},
                                             {'forward': 1.0}])
        (path, *_) = self.chain_benchmark().run('s', 1, UNI)
        with open(path) as stream:
            document = json.load(stream)
        measurement_results.validate(document, path)
        checked = document['cloud']['hop_check']
        self.assertEqual(2, checked['attempts'])
        (forward,) = checked['directions']
        self.assertEqual(2, forward['attempts'])
        self.assertEqual(0, forward['failed_attempts'][0]['rx_frames'])
        # One more attempt than the option allows fails the scenario.
        self.generator = SequencedGenerator([{'forward': 0.0}] * 2 +
                                            [{'forward': 1.0}])
        error = self.assertRaises(hop_check.HopCheckError,
                                  self.chain_benchmark().run,
                                  's', 1, UNI)
        self.assertIn('2 of 2 attempts failed', str(error))

    def test_leftover_stack_on_the_segments_is_deleted_before_create(self):
        self.record_campaigns()
        self.heat.leftovers = {'old-1': (
            'epa-chain-1vnf-bidirectional-1', 'DELETE_FAILED',
            {'vnf_count': '1', 'net0_physical_network': 'physnet1',
             'net0_vlan': '1001', 'net1_physical_network': 'physnet2',
             'net1_vlan': '2001'})}
        self.chain_benchmark().run('s', 1, BI)
        order = [c[:2] for c in self.heat.calls
                 if c[0] in ('delete', 'create')]
        self.assertEqual(('delete', 'old-1'), order[0])
        self.assertEqual('create', order[1][0])

    def test_budget_that_cannot_fit_fails_before_any_stack(self):
        limit = budget.Budget(1000, ' (OS_TEST_TIMEOUT)', clock=self.clock)
        error = self.assertRaises(
            opts.OptionError, self.benchmark.ChainBenchmark(
                self.options, self.stacks, self.compute,
                self.cleanups.append, budget=limit).run,
            's', 1, BI)
        self.assertIn('cannot fit in the test timeout of 1000 s', str(error))
        self.assertIn('stack_delete_timeout 600', str(error))
        self.assertEqual([], self.heat.calls)

    def _answers(self, pinned_cpus=0):
        """preflight's questions, answered as the single-host cloud did.

        With `pinned_cpus`, its host also reports that many PCPU.
        """
        answers = recorded_cloud.answers()
        if pinned_cpus:
            answers[recorded_cloud.INVENTORY]['stdout'].append({
                'resource_class': 'PCPU', 'allocation_ratio': 1.0,
                'reserved': 0, 'total': pinned_cpus})
        return cloud_answers.CloudView(openstack_cli.OpenStackCLI(
            'epa-chain', run=recorded_cloud.ReplayedClient(answers)))

    def test_preflight_stops_a_stack_the_cloud_cannot_host(self):
        # The options' flavors ask dedicated CPUs; the host reports none.
        self.options = self.reconf(cpu_policy='dedicated')
        run = self.benchmark.ChainBenchmark(
            self.options, self.stacks, self.compute, self.cleanups.append,
            generator_factory=self.generator_factory, ready_interval=1,
            clock=self.clock, sleep=self.clock.sleep,
            answers=self._answers())
        error = self.assertRaises(self.benchmark.BenchmarkError, run.run,
                                  's', 1, BI)
        self.assertIn('preflight: the cloud cannot host the stack (nothing '
                      'created)', str(error))
        self.assertIn('no compute host reports PCPU', str(error))
        self.assertNotIn('create', [call[0] for call in self.heat.calls])
        self.assertEqual([], self.cleanups)

    def test_preflight_that_could_ask_nothing_creates_nothing(self):
        # Fail closed: a cloud that answers no question is no pass.
        run = self.benchmark.ChainBenchmark(
            self.options, self.stacks, self.compute, self.cleanups.append,
            generator_factory=self.generator_factory, ready_interval=1,
            clock=self.clock, sleep=self.clock.sleep,
            answers=cloud_answers.CloudView(openstack_cli.OpenStackCLI(
                'epa-chain', run=recorded_cloud.ReplayedClient({}))))
        error = self.assertRaises(self.benchmark.BenchmarkError, run.run,
                                  's', 1, BI)
        self.assertIn('preflight: the cloud left checks unanswered '
                      '(nothing created): the cloud answered nothing for '
                      'images, flavors, capacity, quotas', str(error))
        self.assertNotIn('create', [call[0] for call in self.heat.calls])

    def test_preflight_passed_lets_the_scenario_create(self):
        self.record_campaigns()
        run = self.benchmark.ChainBenchmark(
            self.options, self.stacks, self.compute, self.cleanups.append,
            generator_factory=self.generator_factory, ready_interval=1,
            clock=self.clock, sleep=self.clock.sleep,
            answers=self._answers(pinned_cpus=8))
        self.assertEqual(['a.json', 'a.txt'] * 4, run.run('s', 1, BI))
        self.assertIn('create', [call[0] for call in self.heat.calls])

    def test_measuring_stops_to_leave_time_for_the_delete(self):
        self.record_campaigns()

        def slow_run(generator, plan, progress=None):
            self.clock.sleep(450)
            self.plans.append(plan)
            return {'schema': 'epa-chain/results/2', 'cases': []}

        self.benchmark.campaign.run.side_effect = slow_run
        self.options = self.reconf(stack_delete_timeout=300,
                                   latency_duration=10.0)
        # 120 + 60 create/ready + 300 delete + 4 cases of >= 20 s fit in
        # 1200 s; two 450 s campaigns then leave too little for a third.
        run = self.benchmark.ChainBenchmark(
            self.options, self.stacks, self.compute, self.cleanups.append,
            generator_factory=self.generator_factory, ready_interval=1,
            clock=self.clock, sleep=self.clock.sleep,
            budget=budget.Budget(1200, clock=self.clock))
        error = self.assertRaises(self.benchmark.BenchmarkError, run.run,
                                  's', 1, BI)
        self.assertEqual(2, len(self.plans))
        self.assertIn('left no time for 2 case(s)', str(error))
        self.assertIn('imix-64x7-570x4-1518x1-1flows', str(error))
        self.assertEqual(1, len(self.cleanups))

    def test_flow_order_and_plans(self):
        self.record_campaigns()
        self.chain_benchmark().run('s', 1, BI)
        # Hop check first: one low-rate trial per direction.
        self.assertEqual([('forward',), ('reverse',)],
                         [s.profile.directions for s in self.generator.specs])
        self.assertEqual(
            [(64, 1), (64, 100), (None, 1), (None, 100)],
            [(p.frame_sizes[0].size, p.flow_counts[0]) for p in self.plans])
        for plan in self.plans:
            self.assertEqual(('forward', 'reverse'), tuple(plan.directions))
            self.assertEqual('rfc2544', plan.method)
            self.assertEqual(10.0, plan.trial_duration_s)
            self.assertEqual({'NDR': 0.0, 'PDR': 0.005}, plan.loss_goals)
            self.assertEqual(0.9, plan.latency_load_fraction)
            self.assertEqual(1, plan.chain_length)
            self.assertTrue(os.path.isdir(plan.results_dir))
        self.assertTrue(self.generator.closed)

    def test_failed_case_fails_the_scenario_after_writing(self):
        from epa_chain import generators
        # The VNF stops forwarding after the hop check's two trials.
        self.generator = generators.create('model',
                                           stop_forwarding_after=2)
        self.options = self.reconf(frame_sizes=['64'], flow_counts=[1])
        error = self.assertRaises(self.benchmark.BenchmarkError,
                                  self.chain_benchmark().run,
                                  's', 1, UNI)
        self.assertIn('1 case(s) failed', str(error))
        run_dir = str(error).split('results in ')[1].split(':')[0]
        self.assertTrue(os.path.isfile(os.path.join(run_dir,
                                                    '64B-1flows.json')))

    def test_stack_deleted_when_create_fails(self):
        self.heat.scripts['create'] = ['CREATE_IN_PROGRESS', 'CREATE_FAILED']
        flow = self

        class Scenario(testtools.TestCase):
            def test_it(self):
                flow.chain_benchmark(self.addCleanup).run(
                    's', 2, UNI)

        result = unittest.TestResult()
        Scenario('test_it').run(result)
        self.assertEqual(1, len(result.errors))
        self.assertIn('CREATE_FAILED', result.errors[0][1])
        deletes = [c for c in self.heat.calls if c[0] == 'delete']
        self.assertEqual([('delete', 'stack-id-1')], deletes)
        self.assertEqual([], self.plans)

    def test_stack_deleted_when_a_hop_does_not_forward(self):
        self.record_campaigns()
        self.generator.forwarding = {'reverse': 0.0}
        error = self.assertRaises(hop_check.HopCheckError,
                                  self.chain_benchmark().run,
                                  's', 1, BI)
        self.assertIn('reverse direction does not forward', str(error))
        self.assertEqual([], self.plans)
        self.assertTrue(self.generator.closed)
        self.run_cleanups()
        self.assertIn(('delete', 'stack-id-1'), self.heat.calls)

    def test_unidirectional_measures_forward_only(self):
        self.record_campaigns()
        self.options = self.reconf(frame_sizes=['1518'], flow_counts=[1])
        self.chain_benchmark().run('s', 1, UNI)
        self.assertEqual([('forward',)],
                         [s.profile.directions for s in self.generator.specs])
        (plan,) = self.plans
        self.assertEqual(('forward',), tuple(plan.directions))

    def test_default_generator_is_prox_at_the_endpoint(self):
        # The registry's 'prox' generator, built without connecting.
        generator = self.benchmark.prox_generator(
            {'host': '192.0.2.7', 'port': '9000'})
        self.addCleanup(generator.close)
        self.assertEqual('prox', generator.name)
        self.assertEqual(('192.0.2.7', 9000), (generator.host,
                                               generator.port))
        self.assertEqual(0.01, generator.rate_tolerance)

    def test_the_rate_tolerance_option_reaches_the_generator(self):
        options = dataclasses.replace(self.options,
                                      generator_rate_tolerance=0.1)
        run = self.benchmark.ChainBenchmark(options, None, None, None)
        generator = run.generator_factory(
            {'host': '192.0.2.7', 'port': '9000'})
        self.addCleanup(generator.close)
        self.assertEqual(0.1, generator.rate_tolerance)
        self.assertEqual(0.1, generator.describe()['rate_tolerance'])

    def test_refused_option_fails_before_any_stack(self):
        # Read once, at the edge: nothing runs with a refused value.
        error = self.assertRaises(opts.OptionError, self.reconf,
                                  latency_load_fraction=0.0)
        self.assertIn('[epa_chain] latency_load_fraction', str(error))
        # A case's plan is checked before the stack too.
        self.options = self.reconf(latency_soak_duration=10.0)
        # A value the frozen Campaign would refuse, forced past it.
        object.__setattr__(self.options.campaign, 'soak_interval_s', 1e-6)
        self.assertRaises(opts.OptionError, self.chain_benchmark().run,
                          's', 1, UNI)
        self.assertEqual([], self.heat.calls)
        self.assertEqual([], self.cleanups)

    def test_stack_heat_refuses_fails_before_any_stack(self):
        self.options = dataclasses.replace(self.options,
                                           cpu_thread_policy='sometimes')
        error = self.assertRaises(stack.StackError,
                                  self.chain_benchmark().run,
                                  's', 1, UNI)
        self.assertIn('nothing was created', str(error))
        self.assertIn('cpu_thread_policy', str(error))
        self.assertEqual([], self.heat.calls)
        self.assertEqual([], self.cleanups)

    def test_stack_the_rules_refuse_fails_before_any_stack(self):
        # Heat accepts 3 NUMA nodes; the NFV rules know Nova refuses them
        # for the 2-vCPU flavor: refused before any API call too.
        self.options = dataclasses.replace(self.options, numa_nodes=3)
        error = self.assertRaises(stack.StackError,
                                  self.chain_benchmark().run,
                                  's', 1, UNI)
        self.assertIn('stack s does not validate; nothing was created',
                      str(error))
        self.assertIn('[EPA-NUMA]', str(error))
        self.assertEqual([], self.heat.calls)
        self.assertEqual([], self.cleanups)

    def test_nodes_to_wait_for_come_from_the_resolved_stack(self):
        options = dataclasses.replace(self.options, vnf_engine='testpmd')
        resolved = stack.resolve('chain-x', options, 2, BI)
        nodes = readiness.expected_nodes(
            resolved.topology, {'i1': 'chain-x-vnf1', 'i2': 'chain-x-vnf2',
                                'i3': 'chain-x-generator'})
        self.assertEqual(
            [readiness.Node('i3', 'chain-x-generator', 'prox'),
             readiness.Node('i1', 'chain-x-vnf1', 'testpmd'),
             readiness.Node('i2', 'chain-x-vnf2', 'testpmd')], nodes)

    def test_stack_without_generator_endpoint(self):
        outputs = dict(CHAIN_OUTPUTS, generator_control_endpoint=None)
        error = self.assertRaises(self.benchmark.BenchmarkError,
                                  self.chain_benchmark().measure,
                                  outputs, 1, UNI)
        self.assertIn('generator_control_endpoint', str(error))

    def test_missing_vnf_server_is_reported(self):
        self.heat.resource_list = self.heat.resource_list[1:]
        error = self.assertRaises(readiness.NotReadyError,
                                  self.chain_benchmark().run,
                                  's', 1, UNI)
        self.assertIn('no server named s-vnf1', str(error))
        self.assertEqual(1, len(self.cleanups))

    def test_campaign_from_options(self):
        options = self.reconf(search_method='best-of-n', repetitions=5,
                              latency_duration=0.0,
                              latency_soak_duration=0.0)
        plan = options.case_campaign(trial.FrameSize(size=64), 1000, UNI, 2,
                                     None)
        self.assertEqual('best-of-n', plan.method)
        self.assertEqual(5, plan.repetitions)
        self.assertEqual([1000], list(plan.flow_counts))
        self.assertEqual(0.0, plan.latency_duration_s)
        self.assertEqual(2, plan.chain_length)

    def test_campaign_refusal_names_the_option(self):
        error = self.assertRaises(opts.OptionError, self.reconf,
                                  search_resolution=0.0)
        self.assertIn('[epa_chain] search_resolution', str(error))
        error = self.assertRaises(opts.OptionError, self.reconf,
                                  search_resolution=0.005,
                                  ndr_loss_ratio=0.005)
        self.assertIn('ndr_loss_ratio and pdr_loss_ratio', str(error))


def two_chains(outputs):
    """A chain_count 2 stack's outputs: chain 1 on its own ports."""
    chain1 = copy.deepcopy(outputs)
    for hop in chain1['forward_chain'] + chain1['reverse_chain']:
        hop['server'] = hop['server'].replace('s-', 's-chain1-')
        hop['mac'] = hop['mac'][:-2] + '1' + hop['mac'][-1]
        hop['vlan'] += 2
    chain1['generator_control_endpoint'] = {'host': '10.0.0.7',
                                            'port': 8474}
    return dict(outputs, chains=[dict(outputs, index=0),
                                 dict(chain1, index=1)])


class ChainsTogetherTest(testtools.TestCase):
    """chain_count N: every chain hop-checked, then measured together."""

    def setUp(self):
        super().setUp()
        from epa_chain.cloud import benchmark
        from epa_chain import generators
        self.benchmark = benchmark
        self.results_dir = self.useFixture(fixtures.TempDir()).path
        # Chain 1 is the slower: it sets the aggregate's lossless rate.
        self.generators = {
            '10.0.0.5': generators.create('model', ndr_fps=2.0e6),
            '10.0.0.7': generators.create('model', ndr_fps=1.0e6)}
        self.endpoints = []

    def options(self, **changes):
        conf = dict(template_dir=TEMPLATES, results_dir=self.results_dir,
                    frame_sizes=['64'], flow_counts=[1],
                    search_method='rfc2544', trial_duration=10.0,
                    chain_count=2)
        conf.update(changes)
        return opts.ChainOptions.from_conf(as_group(**conf))

    def factory(self, endpoint):
        self.endpoints.append(endpoint['host'])
        return self.generators[endpoint['host']]

    def measure(self, options, outputs):
        run = self.benchmark.ChainBenchmark(
            options, None, None, lambda *_: None,
            generator_factory=self.factory, sleep=lambda s: None)
        return run.measure(outputs, 1, BI, {})

    def _json(self, written, name):
        (path,) = [p for p in written if p.endswith(name)]
        with open(path) as f:
            return json.load(f)

    def test_two_chains_checked_apart_and_measured_together(self):
        written = self.measure(self.options(), two_chains(CHAIN_OUTPUTS))
        self.assertEqual(['10.0.0.5', '10.0.0.7'], self.endpoints)
        document = self._json(written, '64B-1flows.json')
        measurement_results.validate(document, '64B-1flows.json')
        hop = document['cloud']['hop_check']
        self.assertEqual([0, 1], [c['chain'] for c in hop['chains']])
        (case,) = document['cases']
        goal = readers.goal_of(case, 'NDR')
        # Together: both chains at half the total, the slow one decides.
        self.assertLessEqual(goal['throughput_fps'], 2.0e6)
        self.assertGreater(goal['throughput_fps'], 1.8e6)
        trial_at = chain_tables.trial_at(case, goal)
        self.assertEqual({0, 1}, set(chain_tables.chain_figures(trial_at)))
        self.assertFalse([p for p in written if 'density' in p])

    def test_the_density_sweep_measures_one_then_both(self):
        written = self.measure(self.options(density_sweep=True),
                               two_chains(CHAIN_OUTPUTS))
        table = self._json(written, 'density.json')
        measurement_results.validate(table, 'density.json',
                                     measurement_results.DENSITY_SCHEMA_ID)
        one, two = table['rows']
        self.assertEqual((1, 2), (one['chain_count'], two['chain_count']))
        # Chain 0 alone reaches its 2e6; two together 2 x chain 1's 1e6.
        self.assertGreater(one['aggregate_fps'], 1.8e6)
        self.assertLessEqual(two['per_chain_fps'], 1.0e6)
        self.assertLess(two['ratio'], 0.6)
        run_dir = os.path.dirname(written[0])
        self.assertEqual({'chains-1', 'chains-2'}, {
            name for name in os.listdir(os.path.dirname(run_dir))
            if name.startswith('chains-')})
        self.assertTrue(os.path.isfile(os.path.join(
            os.path.dirname(run_dir), 'density.png')))

    def test_a_capped_sweep_gives_bounds_and_no_ratio(self):
        # The gate's short campaign: a highest load both chains carry.
        written = self.measure(self.options(density_sweep=True,
                                            max_load_fps=500),
                               two_chains(CHAIN_OUTPUTS))
        table = self._json(written, 'density.json')
        self.assertEqual([True, True], [r['at_least'] for r in table['rows']])
        self.assertEqual([None, None], [r['ratio'] for r in table['rows']])
        (text,) = [p for p in written if p.endswith('density.txt')]
        with open(text) as stream:
            self.assertIn('only a lower bound', stream.read())

    def test_parked_vnfs_of_chain_k_are_named_apart(self):
        from epa_chain.cloud import vnf_tasks
        parked = {'vnf1': {'host': '10.0.0.6', 'port': 8474}}
        asked = []
        run = self.benchmark.ChainBenchmark(
            self.options(), None, None, lambda *_: None,
            generator_factory=self.factory, sleep=lambda s: None,
            tasks_factory=lambda found: asked.append(found) or
            vnf_tasks.Tasks(()))
        run.measure(two_chains(dict(CHAIN_OUTPUTS,
                                    vnf_control_endpoints=parked)),
                    1, BI, {})
        (found,) = asked
        self.assertEqual(['vnf1', 'chain1-vnf1'], [e.node for e in found])

    def test_a_stack_of_another_count_is_refused(self):
        error = self.assertRaises(
            self.benchmark.BenchmarkError, self.measure,
            self.options(chain_count=3), two_chains(CHAIN_OUTPUTS))
        self.assertIn('2 chain(s), [epa_chain] chain_count is 3',
                      str(error))
        self.assertEqual([], self.endpoints)

    def test_segments_of_every_chain(self):
        parameters = {'net0_physical_network': 'physnet1',
                      'net0_vlan': '1001', 'net1_physical_network':
                      'physnet2', 'net1_vlan': '2001',
                      'chain_count': '3', 'chain_vlan_stride': '2'}
        self.assertEqual(
            {('physnet1', 1001), ('physnet1', 1003), ('physnet1', 1005),
             ('physnet2', 2001), ('physnet2', 2003), ('physnet2', 2005)},
            stack.segments_of(parameters, 1))
        parameters['chain_count'] = 'x'
        self.assertEqual({('physnet1', 1001), ('physnet2', 2001)},
                         stack.segments_of(parameters, 1))

    def test_the_budget_counts_every_chain_and_sweep_step(self):
        one = budget.minimum_s(self.options(chain_count=1), BI)
        two = budget.minimum_s(self.options(), BI)
        sweep = budget.minimum_s(self.options(density_sweep=True), BI)
        self.assertEqual(2 * 2.0, two - one)
        self.assertEqual(budget.case_minimum_s(self.options()), sweep - two)


class BudgetTest(testtools.TestCase):

    def test_test_timeout_read_as_tempest_does(self):
        self.assertIsNone(budget.test_timeout({}))
        self.assertIsNone(budget.test_timeout({'OS_TEST_TIMEOUT': '0'}))
        self.assertIsNone(budget.test_timeout({'OS_TEST_TIMEOUT': 'x'}))
        self.assertEqual(1200, budget.test_timeout(
            {'OS_TEST_TIMEOUT': '1200'}))
        self.assertEqual(4800, budget.test_timeout(
            {'OS_TEST_TIMEOUT': '1200'}, scaling_factor=4))

    def test_minimum_of_a_scenario(self):
        options = opts.ChainOptions.from_conf(as_group(
            frame_sizes=['64'], flow_counts=[1, 10], trial_duration=10.0,
            latency_duration=5.0, latency_soak_duration=0.0,
            stack_create_timeout=1800, vnf_ready_timeout=600,
            stack_delete_timeout=600))
        self.assertEqual(1800 + 600 + 2 * 2.0 + 2 * 15.0 + 600,
                         budget.minimum_s(options, ('forward', 'reverse')))
        clock = fake_clock.FakeClock()
        fits = budget.Budget(3100, clock=clock)
        fits.check(options, ('forward', 'reverse'))
        self.assertRaises(opts.OptionError,
                          budget.Budget(3000, clock=clock).check,
                          options, ('forward', 'reverse'))
        budget.Budget(None).check(options, ('forward',))
        clock.sleep(3000)
        self.assertFalse(fits.allows(50, 60))
        self.assertTrue(fits.allows(40, 60))

    def test_a_repeated_run_needs_each_repetition(self):
        options = opts.ChainOptions.from_conf(as_group(
            frame_sizes=['64'], flow_counts=[1], trial_duration=10.0,
            latency_duration=5.0, latency_soak_duration=0.0, repeat=3))
        self.assertEqual(3 * 15.0, budget.case_minimum_s(options))


class ResultsTest(testtools.TestCase):

    def test_file_stems(self):
        from epa_chain.cloud import results
        self.assertEqual('64B-1flows', results.file_stem(
            trial.FrameSize(size=64), 1))
        self.assertEqual('imix-64x7-570x4-1518x1-1000flows',
                         results.file_stem(trial.FrameSize.parse('imix'),
                                           1000))

    def test_partial_directory_per_case(self):
        from epa_chain.cloud import results
        base = self.useFixture(fixtures.TempDir()).path
        first = results.partial_directory(base, '64B-1flows')
        second = results.partial_directory(base, '64B-100flows')
        self.assertNotEqual(first, second)
        self.assertTrue(os.path.isdir(first))
        self.assertTrue(os.path.isdir(second))
