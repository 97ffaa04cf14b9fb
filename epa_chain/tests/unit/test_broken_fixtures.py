#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS,
#    WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or
#    implied. See the License for the specific language governing
#    permissions and limitations under the License.

"""Every broken fixture fails with the right rule, at the right place.

Fixtures live in epa_chain/tests/fixtures: good/ holds valid self-contained
chains (the bases of the broken ones), broken/ one template per broken case
(each says in its top comment what is broken and what is expected), and
broken/env_*.yaml environments that break the shipped templates/chain.yaml.

Each broken fixture breaks exactly one thing, so each test also checks that
the report holds errors of the expected rule only.
"""

import os
import tempfile
import unittest

from epa_chain.validation import runner

_HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(_HERE), 'fixtures')
REPO = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
CHAIN = os.path.join(REPO, 'templates', 'chain.yaml')
CHAIN_INSTANCE = os.path.join(REPO, 'templates', 'lib', 'chain_instance.yaml')
# Both data ports of broken/nested_misspelled come from its broken lib file;
# which one Heat validates first depends on its dependency graph's order.
NESTED_PORTS = ('vnf1_left.port', 'vnf1_right.port')
NESTED_LIB = os.path.join(FIXTURES, 'broken', 'nested_misspelled', 'lib',
                          'data_port.yaml')


def fixture(*parts):
    """The absolute path of a fixture file."""
    return os.path.join(FIXTURES, *parts)


def broken(name):
    """A broken single-file fixture (the file its findings name, too)."""
    return fixture('broken', name)


def shipped(*parts):
    """A file of the shipped templates."""
    return os.path.join(REPO, 'templates', *parts)


class FixtureTestCase(unittest.TestCase):

    def validate(self, template, environments=()):
        return runner.validate(template, list(environments))

    def describe(self, report):
        return '\n'.join(str(f) for f in report.errors) or 'no errors'

    def assertValid(self, report):
        self.assertTrue(report.ok, self.describe(report))

    def assertFinding(self, report, rule, file, resource, prop, fragment):
        """The report fails with `rule` only; check its first finding."""
        self.assertFalse(report.ok, 'expected %s, got no errors' % rule)
        rules = sorted(set(f.rule for f in report.errors))
        self.assertEqual([rule], rules, self.describe(report))
        finding = report.errors[0]
        # Findings name files as the user would type them (relative to the
        # working directory, or absolute): compare where they lead.
        self.assertEqual(file, os.path.abspath(finding.file), str(finding))
        if isinstance(resource, tuple):
            # Any of these: Heat stops at the first it validates.
            self.assertIn(finding.resource, resource, str(finding))
        else:
            self.assertEqual(resource, finding.resource, str(finding))
        self.assertEqual(prop, finding.property, str(finding))
        self.assertIn(fragment, finding.message)
        self.assertTrue(finding.fix, 'finding without a fix: %s' % finding)
        return finding


class TestGoodFixtures(FixtureTestCase):
    """The bases the broken fixtures are derived from are valid."""

    def test_flat_pvp_is_valid(self):
        self.assertValid(self.validate(fixture('good', 'flat_pvp.yaml')))

    def test_flat_pvvp_is_valid(self):
        self.assertValid(self.validate(fixture('good', 'flat_pvvp.yaml')))

    def test_shipped_chain_is_valid(self):
        # The base of the broken/env_*.yaml fixtures.
        self.assertValid(self.validate(CHAIN))


class TestHeatErrors(FixtureTestCase):
    """Errors Heat's own engine finds, addressed to file and resource."""

    def test_unknown_resource_type(self):
        path = broken('heat_unknown_type.yaml')
        finding = self.assertFinding(
            self.validate(path), 'HEAT', path, 'vnf1_left', '',
            'The Resource Type (OS::Neutron::Prot) could not be found')
        self.assertIn('OS::Neutron::Port', finding.fix)

    def test_misspelled_property(self):
        path = broken('heat_misspelled_property.yaml')
        finding = self.assertFinding(
            self.validate(path), 'HEAT', path, 'vnf1_right',
            'port_securty_enabled', 'Unknown Property port_securty_enabled')
        self.assertIn('port_security_enabled', finding.fix)

    def test_misspelled_property_in_nested_template(self):
        report = self.validate(
            fixture('broken', 'nested_misspelled', 'chain.yaml'))
        finding = self.assertFinding(
            report, 'HEAT', NESTED_LIB,
            NESTED_PORTS, 'port_securty_enabled',
            'Unknown Property port_securty_enabled')
        self.assertIn('port_security_enabled', finding.fix)

    def test_nested_finding_names_the_nested_file(self):
        # The location alone, so that it is checked whatever the property.
        report = self.validate(
            fixture('broken', 'nested_misspelled', 'chain.yaml'))
        self.assertFalse(report.ok)
        finding = report.errors[0]
        self.assertEqual('HEAT', finding.rule)
        self.assertEqual(NESTED_LIB, os.path.abspath(finding.file))
        self.assertIn(finding.resource, NESTED_PORTS)

    def test_wrong_property_type(self):
        path = broken('heat_wrong_type.yaml')
        self.assertFinding(self.validate(path), 'HEAT', path, 'vnf_flavor',
                           'vcpus', "'many'")

    def test_get_attr_of_missing_attribute(self):
        path = broken('heat_bad_get_attr.yaml')
        finding = self.assertFinding(
            self.validate(path), 'HEAT', path, 'vnf1', 'user_data',
            'The Referenced Attribute (vnf1_left mac_adress) is incorrect')
        self.assertIn('did you mean attribute mac_address', finding.fix)


class TestEpaRules(FixtureTestCase):
    """Flavor extra specs: Nova's validators, NUMA, huge pages, cores."""

    def test_invalid_extra_spec_value(self):
        path = broken('epa_spec_bad_value.yaml')
        finding = self.assertFinding(
            self.validate(path), 'EPA-SPEC', path, 'vnf_flavor',
            'extra_specs', 'hw:cpu_policy')
        self.assertIn('dedicatd', finding.message)

    def test_unknown_extra_spec_key(self):
        path = broken('epa_spec_unknown_key.yaml')
        self.assertFinding(self.validate(path), 'EPA-SPEC', path,
                           'vnf_flavor', 'extra_specs', 'hw:mem_pagesize')

    def test_thread_policy_without_pinning(self):
        path = broken('epa_numa_thread_policy_shared.yaml')
        finding = self.assertFinding(
            self.validate(path), 'EPA-NUMA', path, 'vnf_flavor',
            'extra_specs', 'Nova refuses these extra specs')
        self.assertIn('thread', finding.message)
        # The fix must address the thread policy, not hw:numa_nodes.
        self.assertIn('hw:cpu_policy', finding.fix)

    def test_numa_nodes_not_dividing_vcpus(self):
        report = self.validate(
            CHAIN, [fixture('broken', 'env_numa_nodes_odd_vcpus.yaml')])
        finding = self.assertFinding(
            report, 'EPA-NUMA', shipped('lib', 'epa_flavor.yaml'),
            'vnf_flavor.flavor', 'extra_specs',
            'Nova refuses these extra specs')
        self.assertIn('hw:numa_nodes', finding.fix)

    def test_no_huge_pages(self):
        path = broken('epa_pages_missing.yaml')
        finding = self.assertFinding(
            self.validate(path), 'EPA-PAGES', path, 'vnf_flavor',
            'extra_specs', 'hw:mem_page_size is not set')
        self.assertIn('vnf1', finding.message)

    def test_ram_not_whole_huge_pages(self):
        report = self.validate(
            CHAIN, [fixture('broken', 'env_pages_ram_not_whole.yaml')])
        self.assertFinding(report, 'EPA-PAGES',
                           shipped('lib', 'epa_flavor.yaml'),
                           'vnf_flavor.flavor', 'ram',
                           'not a whole number of 1048576 KiB pages')

    def test_too_few_pinned_cores(self):
        report = self.validate(
            CHAIN, [fixture('broken', 'env_cores_one_vcpu.yaml')])
        finding = self.assertFinding(
            report, 'EPA-CORES', shipped('lib', 'epa_flavor.yaml'),
            'vnf_flavor.flavor', 'vcpus', 'needs 2 pinned vCPUs')
        self.assertIn('the flavor has 1', finding.message)

    def _generator_vcpus(self, vcpus):
        """flat_pvp.yaml's node as a bidirectional generator on vcpus."""
        with open(fixture('good', 'flat_pvp.yaml')) as stream:
            text = stream.read()
        for old, new in (('role: vnf\n', 'role: generator\n              '
                          'control_port: 8474\n'),
                         ('vcpus: 2\n', 'vcpus: %d\n' % vcpus)):
            self.assertEqual(1, text.count(old))
            text = text.replace(old, new)
        with tempfile.NamedTemporaryFile('w', suffix='.yaml') as template:
            template.write(text)
            template.flush()
            return self.validate(template.name), template.name

    # A lone generator is no chain (MAC-CHAIN findings): only the cores
    # rule is looked at.
    def test_two_vcpu_bidirectional_generator_has_its_cores(self):
        # Nova's ceiling on a 2-CPU host: the compact generator layout
        report, _path = self._generator_vcpus(2)
        self.assertEqual([], [str(f) for f in report.errors
                              if f.rule.startswith('EPA')])

    def test_one_vcpu_generator(self):
        report, path = self._generator_vcpus(1)
        finding, = [f for f in report.errors if f.rule == 'EPA-CORES']
        self.assertEqual(('vnf_flavor', 'vcpus'),
                         (finding.resource, finding.property))
        self.assertIn('vnf1 needs 2 pinned vCPUs', finding.message)
        self.assertIn('the flavor has 1', finding.message)


class TestNetworkRules(FixtureTestCase):
    """Chain segments are distinct provider VLAN networks."""

    def test_vlan_id_out_of_range(self):
        path = broken('vlan_net_out_of_range.yaml')
        self.assertFinding(self.validate(path), 'VLAN-NET', path, 'net1',
                           'segmentation_id', 'segmentation_id 5000')

    def test_segment_not_a_provider_network(self):
        path = broken('vlan_net_plain_net.yaml')
        self.assertFinding(self.validate(path), 'VLAN-NET', path, 'net1',
                           'network_type', 'not a provider VLAN network')

    def test_two_segments_on_one_vlan(self):
        report = self.validate(
            CHAIN, [fixture('broken', 'env_vlan_duplicate.yaml')])
        self.assertFinding(report, 'VLAN-UNIQUE',
                           shipped('lib', 'provider_segment.yaml'),
                           'chains.0.net1.network', 'segmentation_id',
                           'both VLAN 1001 on physnet1')


class TestPortRules(FixtureTestCase):
    """Data ports without port security; management ports with a group."""

    def test_data_port_with_port_security(self):
        path = broken('port_data_security_on.yaml')
        self.assertFinding(self.validate(path), 'PORT-DATA', path,
                           'vnf1_right', 'port_security_enabled',
                           'data port of vnf1 has port security on')

    def test_data_port_without_security_groups(self):
        path = broken('port_data_no_security_groups.yaml')
        self.assertFinding(self.validate(path), 'PORT-DATA', path,
                           'vnf1_right', 'security_groups',
                           'no security_groups property')

    def test_management_port_without_security_group(self):
        path = broken('port_mgmt_no_security_group.yaml')
        self.assertFinding(self.validate(path), 'PORT-MGMT', path,
                           'vnf1_mgmt', 'security_groups',
                           'management port of vnf1 has no security group')


class TestNodeRules(FixtureTestCase):

    def test_no_config_drive(self):
        path = broken('node_config_drive_off.yaml')
        self.assertFinding(self.validate(path), 'NODE-CONFIG', path,
                           'vnf1', 'config_drive', 'no config drive')


class TestMacChain(FixtureTestCase):
    """Each direction is one chain of next hops on the right segments."""

    def test_next_hop_on_another_network(self):
        path = broken('mac_chain_other_network.yaml')
        finding = self.assertFinding(
            self.validate(path), 'MAC-CHAIN', path, 'vnf1', 'user_data',
            'out of its right port on')
        self.assertIn('is vnf2_right on', finding.message)
        self.assertIn('vnf2_left', finding.fix)

    def test_next_hop_on_another_network_shipped_chain(self):
        report = self.validate(
            CHAIN, [fixture('broken', 'env_mac_egress_is_vnf_port.yaml')])
        # The VNF is declared in the chain's own template, one per chain.
        self.assertFinding(
            report, 'MAC-CHAIN', CHAIN_INSTANCE, 'chains.0.vnf1',
            'forward_next_hop_mac',
            'next hop 00:00:00:00:00:10 is chains.0.vnf1_left.port on')

    def test_next_hop_is_own_port(self):
        path = broken('mac_chain_own_port.yaml')
        finding = self.assertFinding(
            self.validate(path), 'MAC-CHAIN', path, 'vnf1', 'user_data',
            'vnf1 sends forward traffic to its own right port')
        self.assertIn('vnf2_left', finding.fix)

    def test_bidirectional_node_without_reverse_flow(self):
        path = broken('mac_chain_missing_reverse.yaml')
        self.assertFinding(self.validate(path), 'MAC-CHAIN', path, 'vnf2',
                           'user_data', 'vnf2 has no reverse flow')


class TestHeatReleases(FixtureTestCase):
    """Constructs the imported Heat accepts but Heat 19 (Zed) crashes on."""

    def test_two_argument_if(self):
        path = broken('heat_compat_two_argument_if.yaml')
        finding = self.assertFinding(
            self.validate(path), 'HEAT-COMPAT', path, 'vnf1', 'key_name',
            'two-argument `if` on condition has_key')
        self.assertIn('EllipsisType', finding.message)
        self.assertIn('{if: [has_key, VALUE, null]}', finding.fix)

    def test_two_argument_if_in_a_nested_template(self):
        # As templates/lib/data_port.yaml before the fix: the finding names
        # the nested file, and the fix for a MAC is value_specs, not null.
        finding = self.assertFinding(
            self.validate(fixture('broken', 'heat_compat_nested', 'top.yaml')),
            'HEAT-COMPAT',
            fixture('broken', 'heat_compat_nested', 'lib', 'port.yaml'),
            'port', 'mac_address', 'two-argument `if` on condition fixed_mac')
        self.assertIn('value_specs', finding.fix)

    def test_two_argument_if_addresses(self):
        from epa_chain.validation import heat_releases

        document = {
            'heat_template_version': '2021-04-16',
            'resources': {'port': {'type': 'OS::Neutron::Port',
                                   'properties': {'mac_address': {'if': [
                                       'fixed_mac',
                                       {'get_param': 'mac_address'}]}}}},
            'outputs': {'mac': {'value': {'if': ['fixed_mac', 'x']}}}}
        found = list(heat_releases.check_document(document,
                                                  'lib/data_port.yaml'))
        self.assertEqual(
            [('lib/data_port.yaml', 'port', 'mac_address'),
             ('lib/data_port.yaml', '', 'outputs.mac.value')],
            [(f.file, f.resource, f.property) for f in found])
        self.assertIn('value_specs: {if: [fixed_mac, {mac_address: VALUE}, '
                      '{}]}', found[0].fix)
        self.assertIn('null', found[1].fix)

    def test_older_template_versions_are_left_to_heat(self):
        # Before 2021-04-16 Heat itself refuses a two-argument `if`.
        from epa_chain.validation import heat_releases

        document = {'heat_template_version': '2018-08-31', 'outputs': {
            'x': {'value': {'if': ['c', 1]}}}}
        self.assertEqual([], list(heat_releases.check_document(document,
                                                               'x.yaml')))
        document['heat_template_version'] = 'wallaby'
        self.assertEqual(1, len(list(heat_releases.check_document(
            document, 'x.yaml'))))

    def test_three_argument_if_and_shipped_templates_pass(self):
        report = self.validate(CHAIN)
        self.assertEqual([], [f for f in report.findings
                              if f.rule == 'HEAT-COMPAT'])


class TestManagementAccess(FixtureTestCase):
    """MGMT-CIDR: management_allowed_cidr must not admit the internet."""

    def warnings(self, cidr=None, environments=()):
        if cidr is not None:
            with tempfile.NamedTemporaryFile('w', suffix='.yaml') as env:
                env.write('parameters:\n  management_allowed_cidr: "%s"\n'
                          % cidr)
                env.flush()
                report = self.validate(CHAIN, [env.name])
        else:
            report = self.validate(CHAIN, environments)
        self.assertValid(report)
        return report.warnings

    def test_the_whole_internet_is_a_warning_naming_the_parameter(self):
        (warning,) = self.warnings(environments=[
            fixture('broken', 'env_mgmt_cidr_open.yaml')])
        self.assertEqual(('MGMT-CIDR', 'warning', CHAIN,
                          'management_allowed_cidr'),
                         (warning.rule, warning.severity,
                          os.path.abspath(warning.file), warning.parameter))
        self.assertIn('0.0.0.0/0 admits the whole internet', warning.message)
        self.assertIn('192.0.2.0/24', warning.fix)
        self.assertIn('parameter management_allowed_cidr: [MGMT-CIDR] '
                      'warning: ', str(warning))

    def test_prefixes_wider_than_an_allocation_warn(self):
        for cidr in ('::/0', '0.0.0.0/1', '64.0.0.0/7', '2000::/3'):
            self.assertEqual(['MGMT-CIDR'], [w.rule for w in self.warnings(
                cidr)], cidr)
        for cidr in ('10.0.0.0/8', '192.0.2.0/24', '2001:db8::/32'):
            self.assertEqual([], self.warnings(cidr), cidr)

    def test_the_shipped_default_has_no_warning(self):
        self.assertEqual([], self.warnings())

    def test_text_that_is_not_a_cidr_is_an_error(self):
        # chain.yaml's net_cidr constraint refuses it first (HEAT); a
        # template without the constraint gets the rule's own error.
        from epa_chain.hot import realise
        from epa_chain.validation import rules

        realisation = realise.Realisation({}, {}, 'x.yaml', {
            'management_allowed_cidr': 'anywhere'})
        (finding,) = rules.management_rules(None, realisation)
        self.assertEqual(('error', 'management_allowed_cidr', 'x.yaml'),
                         (finding.severity, finding.parameter, finding.file))
        self.assertIn("'anywhere' is not a CIDR", finding.message)


class TestUnreadableNodeConfig(FixtureTestCase):
    """user_data the chain model cannot read is a finding, not a crash."""

    def validate_with_user_data(self, user_data):
        import yaml

        with open(fixture('good', 'flat_pvp.yaml')) as stream:
            document = yaml.safe_load(stream)
        document['resources']['vnf1']['properties']['user_data'] = user_data
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'chain.yaml')
            with open(path, 'w') as stream:
                yaml.safe_dump(document, stream)
            return self.validate(path)

    def test_deeply_nested_user_data(self):
        report = self.validate_with_user_data(
            '#cloud-config\nepa_chain: %s1%s\n' % ('[' * 5000, ']' * 5000))
        (finding,) = report.errors
        self.assertEqual('NODE-CONFIG', finding.rule)
        # The package's YAML loader refuses it before anything parses it.
        self.assertIn('nested deeper than 100 levels', finding.message)

    def test_ports_that_are_not_maps(self):
        report = self.validate_with_user_data(
            '#cloud-config\nepa_chain: {schema_version: 1, role: vnf, '
            'engine: prox, name: v, forwarding_cores: 1, ports: {left: a, '
            'right: b}}\n')
        self.assertEqual(['NODE-CONFIG'], [f.rule for f in report.errors])


class TestHeatMessagesOfAnyShape(FixtureTestCase):

    def test_a_message_heat_raises_as_a_tuple(self):
        # Heat's subnet raises ValueError(format, value) for a bad gateway:
        # in a nested stack, its error_message is that tuple.
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, 'subnet.yaml'), 'w') as stream:
                stream.write(
                    'heat_template_version: 2021-04-16\nresources:\n'
                    '  net: {type: OS::Neutron::Net}\n'
                    '  subnet:\n    type: OS::Neutron::Subnet\n'
                    '    properties: {network: {get_resource: net}, cidr: '
                    '10.0.0.0/24, gateway_ip: 1GB}\n')
            path = os.path.join(tmp, 't.yaml')
            with open(path, 'w') as stream:
                stream.write('heat_template_version: 2021-04-16\n'
                             'resources:\n  s: {type: subnet.yaml}\n')
            report = self.validate(path)
        (finding,) = report.errors
        self.assertEqual('HEAT', finding.rule)
        self.assertIn('1GB', finding.message)
