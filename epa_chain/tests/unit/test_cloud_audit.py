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
import subprocess
from unittest import mock

import fixtures
import testtools

from epa_chain import cli
from epa_chain.cloud import audit_model
from epa_chain.cloud import audit_rules
from epa_chain.cloud import epa_audit
from epa_chain.cloud import host_commands
from epa_chain.cloud import host_readers
from epa_chain.cloud import openstack_cli
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
        self.rxqs = host_readers.rxqs_of(_read('pmd-rxq-show.txt'))

    def audit(self, server=None, domain_xml=None, rxqs=None):
        domain = host_readers.DomainGiven.of_xml(domain_xml or self.domain_xml)
        return audit_rules.audit_server('vnf1', server or _server(), domain,
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
        findings = self.audit(rxqs=host_readers.rxqs_of(text))
        warned = [f for f in findings if f.severity == 'warning']
        self.assertEqual(3, len(warned))
        self.assertIn('another NUMA node than the guest memory (0)',
                      warned[0].message)

    def test_a_port_no_pmd_polls_warns(self):
        findings = self.audit(rxqs={})
        self.assertEqual({'no PMD'}, {f.given for f in findings
                                      if f.aspect == 'pmd'})

    def test_without_the_host_nova_alone_is_audited(self):
        findings = audit_rules.audit_server('vnf1', _server())
        self.assertEqual(['cpu', 'pages', 'numa'],
                         [f.aspect for f in findings])
        self.assertEqual('2 MB', findings[1].given)

    def test_without_topology_nova_cannot_tell(self):
        server = _server()
        del server['topology']
        (cpu,) = _by_aspect(audit_rules.audit_server('vnf1', server))['cpu']
        self.assertEqual('warning', cpu.severity)
        self.assertIn('2.78', cpu.message)

    def test_table_and_document(self):
        findings = self.audit()
        text = epa_audit.table(findings)
        self.assertTrue(text.startswith('EPA: asked vs given\nSERVER'))
        document = epa_audit.document('vecpe', findings, ['vnf1'])
        self.assertEqual(audit_model.SCHEMA, document['schema'])
        self.assertTrue(document['valid'])


class ReadersTest(testtools.TestCase):

    def test_cpuset(self):
        self.assertEqual(frozenset({0, 1, 3, 6}),
                         host_readers._cpuset('0-3,^2,6'))

    def test_rxqs_of_pmd_rxq_show(self):
        rxqs = host_readers.rxqs_of(_read('pmd-rxq-show.txt'))
        self.assertEqual(6, len(rxqs))
        (first,) = rxqs['vhu40eee1d4-a4']
        self.assertEqual((0, 1, 0, None), (first.queue, first.pmd_core,
                                           first.pmd_numa,
                                           first.usage_percent))
        busy = host_readers.rxqs_of(_read('pmd-rxq-show.txt').replace(
            'NOT AVAIL', '12 %'))
        self.assertEqual(12, busy['vhu40eee1d4-a4'][0].usage_percent)

    def test_a_domain_name_that_is_not_novas_never_reaches_virsh(self):
        server = copy.deepcopy(_server())
        server['OS-EXT-SRV-ATTR:instance_name'] = '--connect=evil'
        error = self.assertRaises(host_commands.HostError,
                                  host_commands.domain_xml, server)
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


class _AuditMain(testtools.TestCase):
    """`epa-chain audit` on a fake client and host."""

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.host_commands = []

    def main(self, server, *argv, here='vm', client=None,
             domain_xml=None):
        def host_command(command, run=None):
            self.host_commands.append(command)
            if command[0] == 'virsh':
                return domain_xml or _read('domain-small-host.xml')
            return _read('pmd-rxq-show.txt')

        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(audit_command.openstack_cli, 'OpenStackCLI',
                               return_value=client or _Cloud(server)), \
                mock.patch.object(host_commands, 'host_command',
                                  side_effect=host_command), \
                mock.patch.object(host_commands.socket, 'gethostname',
                                  return_value=here), \
                mock.patch.object(host_commands.shutil, 'which',
                                  return_value='/usr/bin/virsh'), \
                contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            status = cli.main(['audit', '--os-cloud', 'epa-chain',
                               'vecpe'] + list(argv))
        return status, out.getvalue(), err.getvalue()


class AuditCommandTest(_AuditMain):

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


class _Client:
    """subprocess.run for OpenStackCLI: a stack of one server.

    Its topology is answered with `topology`, text as the client printed.
    """

    def __init__(self, topology):
        self.topology = topology

    def __call__(self, argv, **kwargs):
        if 'resource' in argv:
            text = json.dumps([{'physical_resource_id': SERVER_ID,
                                'resource_type': 'OS::Nova::Server'}])
        elif '--topology' in argv:
            text = self.topology
        else:
            text = json.dumps({'id': SERVER_ID, 'name': 'vnf1'})
        return subprocess.CompletedProcess(argv, 0, text, '')


SERVER_ID = '6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'


class AuditBadAnswersTest(_AuditMain):
    """What the cloud or the host answered wrong: one line, exit 1."""

    def _client(self, topology):
        return openstack_cli.OpenStackCLI('epa-chain',
                                          run=_Client(topology))

    def assertOneLine(self, err, *parts):
        (line,) = err.splitlines()
        self.assertNotIn('internal error', line)
        for part in parts:
            self.assertIn(part, line)

    def test_a_client_answer_that_is_not_json(self):
        status, out, err = self.main(
            None, client=self._client('Starting new HTTPS connection'))
        self.assertEqual(1, status)
        self.assertEqual('', out)
        self.assertOneLine(
            err, '`openstack server show --topology %s`' % SERVER_ID,
            'cannot be read (JSONDecodeError: Expecting value',
            'fix: run the command by hand with --debug')

    def test_a_server_of_another_shape(self):
        status, _, err = self.main(None, client=self._client('[]'))
        self.assertEqual(1, status)
        self.assertOneLine(err, 'server %s as Nova showed it' % SERVER_ID,
                           'TypeError', 'fix:')

    def test_a_topology_of_another_shape(self):
        server = _server()
        server['topology'] = 'pinned'
        status, _, err = self.main(None, client=self._client(
            json.dumps(server)), here='elsewhere')
        self.assertEqual(1, status)
        self.assertOneLine(err, 'as Nova showed it (`server show --topology`)',
                           'AttributeError',
                           'fix:')

    def test_a_domain_xml_that_does_not_parse(self):
        status, _, err = self.main(_server(), domain_xml='<domain><cputune')
        self.assertEqual(1, status)
        self.assertOneLine(err, '`virsh dumpxml` of server', 'ParseError',
                           'fix: check libvirtd on this host')

    def test_nothing_read_is_not_clean(self):
        target = os.path.join(self.directory, 'audit.json')
        cloud = _Cloud(_server())
        cloud.stack_servers = lambda stack: {}
        status, _, err = self.main(None, '--json', target, client=cloud)
        self.assertEqual(1, status)
        self.assertIn('vecpe: nothing was read', err)
        with open(target) as stream:
            self.assertFalse(json.load(stream)['valid'])

    def test_an_audit_of_no_server_is_not_valid(self):
        findings, checked = epa_audit.audit_servers({}, 'no')
        self.assertFalse(epa_audit.document('vecpe', findings,
                                            checked)['valid'])


IMAGE_ID = '0c7c7ac3-9a3c-4ad1-bb3f-29d3b2b8c8a1'


class ImagePropertiesTest(testtools.TestCase):
    """What the image asks where the flavor leaves the choice open."""

    def server(self, **specs):
        server = _server()
        server['flavor']['extra_specs'] = dict(specs)
        server['image'] = 'epa-chain-vnf (%s)' % IMAGE_ID
        return server

    def test_the_image_decides_what_the_flavor_leaves_open(self):
        asked = audit_model.Asked.of_server(
            self.server(**{'hw:mem_page_size': 'large'}),
            {'hw_mem_page_size': '2MB', 'hw_cpu_policy': 'dedicated'})
        self.assertEqual(('dedicated', '2MB'), (asked.cpu_policy,
                                                asked.mem_page_size))
        self.assertEqual({'cpu_policy': 'image', 'mem_page_size': 'image'},
                         {k: asked.sources[k] for k in
                          ('cpu_policy', 'mem_page_size')})

    def test_the_flavor_wins_where_it_decides(self):
        asked = audit_model.Asked.of_server(
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
        self.assertEqual(('dedicated', audit_model.INVALIDATES),
                         (cpu.asked, cpu.severity))

    def test_nothing_asked_is_said_so(self):
        findings = audit_rules.audit_server('vnf', self.server(), None,
                                            None, {})
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


class BetweenChainsTest(testtools.TestCase):
    """What chains side by side share: CPUs, PMD cores, NUMA nodes."""

    @staticmethod
    def _domain(pins, ports, nodes=(0,)):
        return host_readers.DomainGiven(
            vcpu_pins={i: frozenset(c) for i, c in enumerate(pins)},
            emulator_pin=frozenset(), page_kib=2048,
            memory_nodes=frozenset(nodes), vhost_user_ports=tuple(ports))

    RXQS = {'vhuA': [host_readers.Rxq('vhuA', 0, 1, 0, None)],
            'vhuB': [host_readers.Rxq('vhuB', 0, 1, 0, None)],
            'vhuC': [host_readers.Rxq('vhuC', 0, 3, 1, None)]}

    def test_the_chain_of_a_server_by_its_name(self):
        self.assertEqual([0, 1, 12], [audit_rules.chain_of(name) for name in (
            'two-vnf1', 'two-chain1-vnf1', 'x-chain12-generator')])

    def test_floating_chains_share_cpus_pmds_and_a_node(self):
        found = audit_rules.between_chains([
            ('two-vnf1', self._domain([(0, 1)], ['vhuA']), self.RXQS),
            ('two-chain1-vnf1', self._domain([(0, 1)], ['vhuB']), self.RXQS),
            ('two-chain1-generator', None, None)])
        (finding,) = found
        self.assertEqual(('chains 0,1', audit_rules.INFO), (finding.server,
                                                            finding.severity))
        self.assertEqual('host CPUs 0,1; PMD cores 1; NUMA nodes 0',
                         finding.given)

    def test_a_pinned_cpu_of_two_chains_warns(self):
        (finding,) = audit_rules.between_chains([
            ('s-vnf1', self._domain([(2,), (3,)], ['vhuA']), self.RXQS),
            ('s-chain1-vnf1', self._domain([(3,), (4,)], ['vhuC'], (1,)),
             self.RXQS)])
        self.assertEqual(audit_rules.WARNING, finding.severity)
        self.assertIn('pinned CPUs 3 run both chains', finding.message)

    def test_chains_apart_and_one_chain(self):
        (finding,) = audit_rules.between_chains([
            ('s-vnf1', self._domain([(2,)], ['vhuA']), self.RXQS),
            ('s-chain1-vnf1', self._domain([(4,)], ['vhuC'], (1,)),
             self.RXQS)])
        self.assertEqual('nothing', finding.given)
        self.assertEqual([], audit_rules.between_chains([
            ('s-vnf1', self._domain([(2,)], ['vhuA']), self.RXQS)]))
