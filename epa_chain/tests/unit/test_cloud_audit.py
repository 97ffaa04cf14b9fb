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

"""The EPA audit, on what the single-host cloud showed for a VNF server.

fixtures/audit/ holds one server of a Tempest 1-VNF chain on
tools/single-host-cloud (small-host flavors: shared CPUs, large pages,
one NUMA node) as `openstack --os-compute-api-version 2.78 server show
--topology` gave it, its libvirt domain XML and the host's
`ovs-appctl dpif-netdev/pmd-rxq-show`. Variants change what the flavor
asked or what the host gave, the way a misconfigured compute node would.
"""

import contextlib
import copy
import io
import json
import os
import re
from unittest import mock

import fixtures
import testtools

from epa_chain import cli
from epa_chain.cloud import epa_audit
from epa_chain.commands import audit as audit_command
from epa_chain.tests import repo

FIXTURES = os.path.join(repo.FIXTURES, 'audit')


def _read(name):
    with open(os.path.join(FIXTURES, name)) as stream:
        return stream.read()


def _server():
    return json.loads(_read('server-small-host.json'))


def _by_aspect(findings):
    found = {}
    for finding in findings:
        found.setdefault(finding.aspect, []).append(finding)
    return found


class AuditRecordedTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.domain_xml = _read('domain-small-host.xml')
        self.rxqs = epa_audit.rxqs_of(_read('pmd-rxq-show.txt'))

    def audit(self, server=None, domain_xml=None, rxqs=None):
        domain = epa_audit.DomainGiven.of_xml(domain_xml or self.domain_xml)
        return epa_audit.audit_server('vnf1', server or _server(), domain,
                                      self.rxqs if rxqs is None else rxqs)

    def test_small_host_is_given_what_it_asked(self):
        findings = self.audit()
        self.assertEqual([], epa_audit.invalidating(findings))
        aspects = _by_aspect(findings)
        (cpu,) = aspects['cpu']
        self.assertEqual(('shared', 'floating over CPUs 0,1', 'info'),
                         (cpu.asked, cpu.given, cpu.severity))
        self.assertIn('as the flavor asked', cpu.message)
        (pages,) = aspects['pages']
        self.assertEqual(('large', '2 MB', 'info'),
                         (pages.asked, pages.given, pages.severity))
        (numa,) = aspects['numa']
        self.assertEqual(('1', '1 (host node 0)', 'info'),
                         (numa.asked, numa.given, numa.severity))
        # Every vhost-user port of the domain, each with its PMD.
        ports = [f.asked for f in aspects['pmd']]
        self.assertEqual(3, len(ports))
        self.assertTrue(all(p.startswith('vhu') for p in ports), ports)
        for finding in aspects['pmd']:
            # OVS had not sampled a minute of load yet: NOT AVAIL.
            self.assertEqual('core 1 (NUMA 0)', finding.given)
            self.assertEqual('info', finding.severity)

    def test_asked_dedicated_got_floating_invalidates(self):
        server = _server()
        server['flavor']['extra_specs']['hw:cpu_policy'] = 'dedicated'
        (bad,) = epa_audit.invalidating(self.audit(server))
        self.assertEqual(('cpu', 'dedicated', 'floating over CPUs 0,1'),
                         (bad.aspect, bad.asked, bad.given))
        self.assertIn('got floating ones', bad.message)

    def test_pinned_as_asked(self):
        server = _server()
        server['flavor']['extra_specs']['hw:cpu_policy'] = 'dedicated'
        server['topology']['nodes'][0]['cpu_pinning'] = {'0': 2, '1': 3}
        domain_xml = re.sub(r"<vcpupin vcpu='(\d)' cpuset='0-1'/>",
                            lambda m: "<vcpupin vcpu='%s' cpuset='%d'/>" % (
                                m.group(1), int(m.group(1)) + 2),
                            self.domain_xml)
        findings = self.audit(server, domain_xml)
        self.assertEqual([], epa_audit.invalidating(findings))
        (cpu,) = _by_aspect(findings)['cpu']
        self.assertEqual('vCPU 0 -> CPU 2, vCPU 1 -> CPU 3', cpu.given)

    def test_nova_pinned_but_libvirt_floating_invalidates(self):
        # What the host runs wins over what Nova recorded.
        server = _server()
        server['flavor']['extra_specs']['hw:cpu_policy'] = 'dedicated'
        server['topology']['nodes'][0]['cpu_pinning'] = {'0': 0, '1': 1}
        self.assertEqual(['cpu'], [f.aspect for f in
                                   epa_audit.invalidating(self.audit(server))])

    def test_asked_large_pages_got_small_invalidates(self):
        domain_xml = re.sub(r'<memoryBacking>.*?</memoryBacking>', '',
                            self.domain_xml, flags=re.S)
        (bad,) = epa_audit.invalidating(self.audit(domain_xml=domain_xml))
        self.assertEqual(('pages', 'large', 'small (4 KiB)'),
                         (bad.aspect, bad.asked, bad.given))

    def test_a_pmd_on_another_numa_node_warns(self):
        text = _read('pmd-rxq-show.txt').replace('numa_id 0', 'numa_id 1')
        findings = self.audit(rxqs=epa_audit.rxqs_of(text))
        warned = [f for f in findings if f.severity == 'warning']
        self.assertEqual(3, len(warned))
        self.assertIn('another NUMA node than the guest memory (0)',
                      warned[0].message)

    def test_a_port_no_pmd_polls_warns(self):
        findings = self.audit(rxqs={})
        self.assertEqual({'no PMD'}, {f.given for f in findings
                                      if f.aspect == 'pmd'})

    def test_without_the_host_nova_alone_is_audited(self):
        findings = epa_audit.audit_server('vnf1', _server())
        self.assertEqual(['cpu', 'pages', 'numa'],
                         [f.aspect for f in findings])
        self.assertEqual('2 MB', findings[1].given)

    def test_without_topology_nova_cannot_tell(self):
        server = _server()
        del server['topology']
        (cpu,) = _by_aspect(epa_audit.audit_server('vnf1', server))['cpu']
        self.assertEqual('warning', cpu.severity)
        self.assertIn('2.78', cpu.message)

    def test_table_and_document(self):
        findings = self.audit()
        text = epa_audit.table(findings)
        self.assertTrue(text.startswith('EPA: asked vs given\nSERVER'))
        document = epa_audit.document('vecpe', findings, ['vnf1'])
        self.assertEqual(epa_audit.SCHEMA, document['schema'])
        self.assertTrue(document['valid'])


class ReadersTest(testtools.TestCase):

    def test_cpuset(self):
        self.assertEqual(frozenset({0, 1, 3, 6}),
                         epa_audit._cpuset('0-3,^2,6'))

    def test_rxqs_of_pmd_rxq_show(self):
        rxqs = epa_audit.rxqs_of(_read('pmd-rxq-show.txt'))
        self.assertEqual(6, len(rxqs))
        (first,) = rxqs['vhu40eee1d4-a4']
        self.assertEqual((0, 1, 0, None), (first.queue, first.pmd_core,
                                           first.pmd_numa,
                                           first.usage_percent))
        busy = epa_audit.rxqs_of(_read('pmd-rxq-show.txt').replace(
            'NOT AVAIL', '12 %'))
        self.assertEqual(12, busy['vhu40eee1d4-a4'][0].usage_percent)

    def test_a_domain_name_that_is_not_novas_never_reaches_virsh(self):
        server = copy.deepcopy(_server())
        server['OS-EXT-SRV-ATTR:instance_name'] = '--connect=evil'
        error = self.assertRaises(epa_audit.HostError,
                                  epa_audit.domain_xml, server)
        self.assertIn("not Nova's instance-XXXXXXXX form", str(error))


class _Cloud:
    """The client's view of a one-server stack, from the fixture."""

    def __init__(self, server):
        self.server = server

    def stack_servers(self, stack):
        return {self.server['id']: {'name': self.server['name']}}

    def server_topology(self, server_id):
        return copy.deepcopy(self.server)

    def image_properties(self, image_id):
        self.images_asked = getattr(self, 'images_asked', []) + [image_id]
        return {'hw_vif_multiqueue_enabled': 'true'}


class AuditCommandTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.host_commands = []

    def main(self, server, *argv, here='vm'):
        def host_command(command, run=None):
            self.host_commands.append(command)
            return _read('domain-small-host.xml' if command[0] == 'virsh'
                         else 'pmd-rxq-show.txt')

        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(audit_command.openstack_cli, 'OpenStackCLI',
                               return_value=_Cloud(server)), \
                mock.patch.object(epa_audit, 'host_command',
                                  side_effect=host_command), \
                mock.patch.object(epa_audit.socket, 'gethostname',
                                  return_value=here), \
                mock.patch.object(epa_audit.shutil, 'which',
                                  return_value='/usr/bin/virsh'), \
                contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            status = cli.main(['audit', '--os-cloud', 'epa-chain',
                               'vecpe'] + list(argv))
        return status, out.getvalue(), err.getvalue()

    def test_a_server_on_this_host_is_read_from_libvirt_and_ovs(self):
        target = os.path.join(self.directory, 'audit.json')
        status, out, err = self.main(_server(), '--json', target)
        self.assertEqual(0, status, err)
        self.assertIn('EPA: asked vs given', out)
        self.assertIn('nothing invalidates a measurement (host read for 1 '
                      'of 1 servers)', err)
        # Nova's domain name, after the option that takes it.
        self.assertEqual(['virsh', '-c', 'qemu:///system', 'dumpxml',
                          '--domain', 'instance-00000003'],
                         self.host_commands[1])
        with open(target) as stream:
            document = json.load(stream)
        self.assertTrue(document['valid'])
        self.assertEqual(['epa-chain-1vnf-unidirectional-1553819666-vnf1'],
                         document['host_checked'])

    def test_elsewhere_nova_alone_and_a_dedicated_flavor_left_floating(self):
        server = _server()
        server['flavor']['extra_specs']['hw:cpu_policy'] = 'dedicated'
        status, out, err = self.main(server, here='another-host')
        self.assertEqual(1, status)
        self.assertEqual([], self.host_commands)
        self.assertIn('INVALIDATES', out)
        self.assertIn('1 finding(s) invalidate a measurement', err)

    def test_usage_errors_before_the_cloud(self):
        status, _, err = self.main(_server(), '--json',
                                   os.path.join(self.directory, ''))
        self.assertEqual(2, status)
        self.assertIn('--json', err)


IMAGE_ID = '0c7c7ac3-9a3c-4ad1-bb3f-29d3b2b8c8a1'


class ImagePropertiesTest(testtools.TestCase):
    """What the image asks where the flavor leaves the choice open."""

    def server(self, **specs):
        server = _server()
        server['flavor']['extra_specs'] = dict(specs)
        server['image'] = 'epa-chain-vnf (%s)' % IMAGE_ID
        return server

    def test_the_image_decides_what_the_flavor_leaves_open(self):
        asked = epa_audit.Asked.of_server(
            self.server(**{'hw:mem_page_size': 'large'}),
            {'hw_mem_page_size': '2MB', 'hw_cpu_policy': 'dedicated'})
        self.assertEqual(('dedicated', '2MB'), (asked.cpu_policy,
                                                asked.mem_page_size))
        self.assertEqual({'cpu_policy': 'image', 'mem_page_size': 'image'},
                         {k: asked.sources[k] for k in
                          ('cpu_policy', 'mem_page_size')})

    def test_the_flavor_wins_where_it_decides(self):
        asked = epa_audit.Asked.of_server(
            self.server(**{'hw:cpu_policy': 'shared',
                           'hw:mem_page_size': '1GB'}),
            {'hw_cpu_policy': 'dedicated', 'hw_mem_page_size': '2MB'})
        self.assertEqual(('shared', '1GB', 'flavor'), (
            asked.cpu_policy, asked.mem_page_size,
            asked.sources['cpu_policy']))

    def test_an_image_asking_dedicated_cpus_nova_left_floating(self):
        server = self.server(**{'hw:mem_page_size': 'large'})
        for node in server['topology']['nodes']:
            node['cpu_pinning'] = {}
        findings, _checked = epa_audit.audit_servers(
            {'id1': server}, 'no', image_properties=lambda image: {
                'hw_cpu_policy': 'dedicated'})
        (cpu,) = [f for f in findings if f.aspect == 'cpu']
        self.assertEqual(('dedicated', epa_audit.INVALIDATES),
                         (cpu.asked, cpu.severity))

    def test_nothing_asked_is_said_so(self):
        findings = epa_audit.audit_server('vnf', self.server(), None, None,
                                          {})
        (cpu,) = [f for f in findings if f.aspect == 'cpu']
        self.assertIn('neither the flavor nor the image asked', cpu.message)

    def test_image_ids_in_both_shapes_and_only_hw_properties(self):
        self.assertEqual(IMAGE_ID, epa_audit.image_of(
            {'image': 'epa-chain-vnf (%s)' % IMAGE_ID}))
        self.assertEqual(IMAGE_ID, epa_audit.image_of(
            {'image': {'id': IMAGE_ID, 'links': []}}))
        for booted_from_volume in ({'image': ''}, {'image': None}, {}):
            self.assertIsNone(epa_audit.image_of(booted_from_volume))
        self.assertEqual({'hw_cpu_policy': 'dedicated'},
                         epa_audit.hw_properties({
                             'hw_cpu_policy': 'dedicated', 'os_distro':
                             'debian', 'name': 'x'}))

    def test_each_image_is_asked_once(self):
        asked = []
        servers = {'a': self.server(), 'b': self.server()}
        servers['b']['name'] = 'other'
        epa_audit.audit_servers(servers, 'no', image_properties=lambda i: (
            asked.append(i) or {}))
        self.assertEqual([IMAGE_ID], asked)
