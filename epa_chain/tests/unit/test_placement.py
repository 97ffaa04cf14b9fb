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

"""Placement: chain.yaml's parameters, the PLACEMENT rule, the record."""

import jsonschema
import testtools

from epa_chain.cloud import placement
from epa_chain.hot import shipped
from epa_chain.measurement import results
from epa_chain.tests import repo
from epa_chain.validation import check
from epa_chain.validation import findings

PVP = [shipped.preset_path('pvp-bidir', repo.TEMPLATES)]
VECPE = [shipped.preset_path('vecpe-bidir', repo.TEMPLATES)]
GROUP = 'server_group'


def _check(parameters, environments=PVP):
    return check.check_stack(repo.CHAIN, environments, parameters, 's1',
                             inline=True)


def _refused(test, parameters, environments=PVP):
    return test.assertRaises(check.StackRefused, check.check_stack,
                             repo.CHAIN, environments, parameters, 's1',
                             inline=True)


def _servers(checked):
    return {node.name: node.server.properties for node in
            checked.topology.nodes}


def _placement_findings(found, severity):
    return [f for f in found
            if f.rule == 'PLACEMENT' and f.severity == severity]


class ChainPlacementTest(testtools.TestCase):
    """What the parameters make of the servers, as Heat resolves them."""

    def test_by_default_nova_places_every_server_freely(self):
        checked = _check({})
        self.assertNotIn((GROUP,), checked.realisation.resources)
        for name, properties in _servers(checked).items():
            # Heat gives an unset property as {} or '', which its Nova
            # plugin leaves out of the request.
            self.assertFalse(properties.get('scheduler_hints'), name)
            self.assertFalse(properties.get('availability_zone'), name)
        self.assertEqual([], [f for f in checked.findings
                              if f.rule == 'PLACEMENT'])

    def test_one_group_holds_every_server_of_the_chain(self):
        # Inline, as Tempest sends it: endpoints=generator wins.
        checked = _check({'server_group_policy': 'affinity',
                          'endpoints': 'generator'}, VECPE)
        group = checked.realisation.get((GROUP,))
        self.assertEqual(['affinity'], group.properties['policies'])
        servers = _servers(checked)
        self.assertEqual(4, len(servers))
        for name, properties in servers.items():
            self.assertEqual({'group': group.resource_id},
                             properties['scheduler_hints'], name)

    def test_zones_go_to_their_role(self):
        checked = _check({'vnf_availability_zone': 'az-vnf',
                          'generator_availability_zone': 'az-gen'})
        self.assertEqual({'chains.0.vnf1.server': 'az-vnf',
                          'chains.0.generator.server': 'az-gen'},
                         {name: properties['availability_zone']
                          for name, properties in _servers(checked).items()})

    def test_soft_policies_pass_with_the_microversion_assumed(self):
        for policy in ('soft-affinity', 'soft-anti-affinity'):
            checked = _check({'server_group_policy': policy})
            self.assertEqual([], [f for f in checked.findings
                                  if f.rule == 'PLACEMENT'], policy)
            self.assertIn('compute API microversion', ' '.join(
                f.message for f in checked.findings
                if f.severity == findings.SKIPPED))

    def test_heat_refuses_an_unknown_policy(self):
        error = _refused(self, {'server_group_policy': 'spread'})
        self.assertEqual(['HEAT'], [f.rule for f in error.errors])
        self.assertIn('server_group_policy', str(error))

    def test_heat_refuses_a_zone_that_could_become_an_option(self):
        error = _refused(self, {'vnf_availability_zone': 'nova host'})
        self.assertIn('vnf_availability_zone', str(error))


class PlacementRuleTest(testtools.TestCase):
    """PLACEMENT: what no host count can satisfy, and what needs admin."""

    def test_affinity_across_two_named_hosts_is_refused(self):
        error = _refused(self, {
            'server_group_policy': 'affinity',
            'vnf_availability_zone': 'nova:compute-1',
            'generator_availability_zone': 'nova:compute-2'})
        (finding,) = error.errors
        self.assertEqual('PLACEMENT', finding.rule)
        self.assertEqual('server_group_policy', finding.parameter)
        self.assertIn('compute-1 and compute-2', finding.message)
        self.assertIn('generator_availability_zone and '
                      'vnf_availability_zone', finding.fix)

    def test_affinity_across_two_zones_is_refused(self):
        error = _refused(self, {
            'server_group_policy': 'affinity',
            'vnf_availability_zone': 'az1',
            'generator_availability_zone': 'az2'})
        self.assertEqual(['PLACEMENT'], [f.rule for f in error.errors])

    def test_anti_affinity_on_one_named_host_is_refused(self):
        error = _refused(self, {
            'server_group_policy': 'anti-affinity',
            'vnf_availability_zone': 'nova:compute-1'}, VECPE)
        (finding,) = error.errors
        self.assertIn('3 servers are pinned to compute-1', finding.message)
        self.assertEqual('server_group_policy', finding.parameter)

    def test_anti_affinity_says_how_many_hosts_it_needs(self):
        checked = _check({'server_group_policy': 'anti-affinity'})
        (warning,) = _placement_findings(checked.findings, findings.WARNING)
        self.assertIn('needs 2 compute hosts', warning.message)
        self.assertIn('No valid host was found', warning.message)

    def test_a_named_host_needs_admin(self):
        checked = _check({'vnf_availability_zone': 'nova:compute-1'})
        (warning,) = _placement_findings(checked.findings, findings.WARNING)
        self.assertEqual('vnf_availability_zone', warning.parameter)
        self.assertIn('only admins', warning.message)

    def test_affinity_on_one_named_host_passes(self):
        checked = _check({
            'server_group_policy': 'affinity',
            'vnf_availability_zone': 'nova:compute-1',
            'generator_availability_zone': 'nova:compute-1'})
        self.assertEqual([], _placement_findings(checked.findings,
                                                 findings.ERROR))


class PlacementRecordTest(testtools.TestCase):
    """Where each server ran, from the compute API's view of it."""

    ADMIN_VIEW = {'name': 'pvp-vnf1', 'OS-EXT-SRV-ATTR:host': 'cmp1',
                  'OS-EXT-SRV-ATTR:hypervisor_hostname': 'cmp1.lab',
                  'OS-EXT-AZ:availability_zone': 'nova', 'hostId': 'ab12'}

    def test_either_spelling_of_the_fields(self):
        sdk_view = {'name': 'pvp-generator', 'compute_host': 'cmp2',
                    'hypervisor_hostname': 'cmp2.lab',
                    'availability_zone': 'nova', 'host_id': 'cd34'}
        section = placement.record(
            {'pvp-vnf1': self.ADMIN_VIEW, 'pvp-generator': sdk_view},
            {'server_group_policy': 'soft-anti-affinity'})
        self.assertEqual({'host': 'cmp2', 'hypervisor_hostname': 'cmp2.lab',
                          'availability_zone': 'nova', 'host_id': 'cd34'},
                         section['servers']['pvp-generator'])
        self.assertEqual('cmp1', section['servers']['pvp-vnf1']['host'])
        self.assertEqual(2, section['hosts'])
        self.assertEqual('soft-anti-affinity',
                         section['server_group_policy'])
        self.assertEqual('pvp-generator on cmp2.lab, pvp-vnf1 on cmp1.lab '
                         '(server group policy: soft-anti-affinity; 2 '
                         'hosts)', placement.describe(section))

    def test_a_project_user_sees_host_ids_only(self):
        user_view = {'name': 'v', 'hostId': 'ab12'}
        section = placement.record({'v': user_view, 'g': dict(user_view)},
                                   {'server_group_policy': ''})
        self.assertEqual(1, section['hosts'])
        self.assertIsNone(section['server_group_policy'])
        self.assertIsNone(section['servers']['v']['host'])
        self.assertIn('(server group policy: none; 1 host)',
                      placement.describe(section))

    def test_unknown_hosts_are_not_counted(self):
        section = placement.record({'v': {'name': 'v'}}, {})
        self.assertIsNone(section['hosts'])

    def test_the_results_schema_holds_the_record(self):
        schema = results.load_schema(results.SCHEMA_ID)
        declared = schema['properties']['cloud']['properties']['placement']
        section = placement.record({'pvp-vnf1': self.ADMIN_VIEW}, {})
        jsonschema.validate(section, declared)
        section['hosts'] = 0
        self.assertRaises(jsonschema.ValidationError, jsonschema.validate,
                          section, declared)


class FailureHintTest(testtools.TestCase):

    def test_only_a_hard_policy_and_novas_no_host_message(self):
        no_host = 'Message: No valid host was found. There are not enough'
        self.assertIn('affinity needs one compute host with room',
                      placement.failure_hint(
                          {'server_group_policy': 'affinity'}, no_host))
        self.assertEqual('', placement.failure_hint(
            {'server_group_policy': 'soft-affinity'}, no_host))
        self.assertEqual('', placement.failure_hint({}, no_host))
        self.assertEqual('', placement.failure_hint(
            {'server_group_policy': 'anti-affinity'}, 'Quota exceeded'))
        self.assertEqual('', placement.failure_hint(
            {'server_group_policy': 'anti-affinity'}, None))
