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

"""Preflight: the shipped stacks' needs, against what a cloud answered.

The cloud is the single-host cloud's own answers, recorded from the
`openstack` client (fixtures/preflight/single-host-cloud.json) and
replayed through OpenStackCLI's subprocess seam, so the parsing of the
client's JSON is the code under test too; variants change one answer
(a host with PCPU, a non-admin user, a taken VLAN). A chain the cloud
cannot host is pinned by fixtures/preflight/pinned.yaml, not by
chain.yaml's default. The cloud test runs the same commands against the
live cloud.
"""

import contextlib
import copy
import io
import json
import os
import subprocess
import threading
import time
from unittest import mock

import fixtures
import testtools

from epa_chain import cli
from epa_chain.cloud import cloud_answers
from epa_chain.cloud import density
from epa_chain.cloud import openstack_cli
from epa_chain.cloud import preflight
from epa_chain.cloud import stack_needs
from epa_chain.commands import preflight as preflight_command
from epa_chain.hot import resolve
from epa_chain.hot import shipped
from epa_chain.tests import repo
from epa_chain.tests.unit import recorded_cloud

PVP = os.path.join(repo.TEMPLATES, 'presets', 'pvp-bidir.yaml')
VECPE = os.path.join(repo.TEMPLATES, 'presets', 'vecpe-bidir.yaml')
SMALL_HOST = os.path.join(repo.TEMPLATES, 'environments', 'small-host.yaml')
INTER_NODE = os.path.join(repo.TEMPLATES, 'environments', 'inter-node.yaml')
# chain.yaml's resources of its first chain (lib/chain_instance.yaml).
CHAIN0 = 'chains.0.'
VNF1 = CHAIN0 + 'vnf1.server'
# Pinned whatever chain.yaml's default: a chain the recorded cloud (no
# PCPU) cannot host.
PINNED = os.path.join(repo.ROOT, 'epa_chain', 'tests', 'fixtures',
                      'preflight', 'pinned.yaml')
INVENTORY = recorded_cloud.INVENTORY
NETWORK_QUOTAS = 'quota show --usage --network -f json'


def _resolved(*environments, **parameters):
    return resolve.resolve(repo.CHAIN, list(environments), parameters,
                           allow_outside=True)


def _check(answers, *environments, **parameters):
    client = recorded_cloud.ReplayedClient(answers)
    cloud = cloud_answers.CloudView(openstack_cli.OpenStackCLI(
        'epa-chain', run=client))
    findings = preflight.check(
        stack_needs.needs_of(_resolved(*environments, **parameters)), cloud)
    return findings, client


class Overrides(fixtures.Fixture):
    """An environment file of parameters, given after the preset's.

    What a user writes to change a preset's value: Heat merges each
    environment file's parameters over --parameter.
    """

    def __init__(self, **parameters):
        self.parameters = parameters

    def _setUp(self):
        directory = self.useFixture(fixtures.TempDir()).path
        self.path = os.path.join(directory, 'overrides.yaml')
        with open(self.path, 'w') as stream:
            json.dump({'parameters': self.parameters}, stream)


def _blockers(findings):
    return [f for f in findings if f.verdict == preflight.BLOCKS]


class NeedsTest(testtools.TestCase):

    def test_pvp_as_shipped_asks_its_cpu_policys_cpus(self):
        needs = stack_needs.needs_of(_resolved(PVP))
        self.assertEqual([CHAIN0 + 'generator.server', CHAIN0 + 'vnf1.server'],
                         sorted(s.resource for s in needs.servers))
        pinned = shipped.parameter_default('cpu_policy') == 'dedicated'
        self.assertEqual({'PCPU' if pinned else 'VCPU'}, {
            f.cpu_class for f in needs.created_flavors.values()})
        self.assertEqual({('physnet1', 1001), ('physnet2', 2001)},
                         {(n.physical_network, n.vlan)
                          for n in needs.networks})
        self.assertEqual(('private',), needs.named_networks)
        self.assertEqual(('vnf_image',), needs.parameters['epa-chain-vnf'])

    def test_small_host_asks_shared_cpus_and_no_generator_for_vecpe(self):
        needs = stack_needs.needs_of(_resolved(VECPE, SMALL_HOST))
        self.assertEqual(3, len(needs.servers))
        (flavor,) = needs.created_flavors.values()
        self.assertEqual('VCPU', flavor.cpu_class)
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 2048}, flavor.demand())
        self.assertEqual(4, len(needs.networks))

    def test_an_existing_flavor_is_named_not_created(self):
        needs = stack_needs.needs_of(_resolved(
            PVP, SMALL_HOST, vnf_existing_flavor='epa-small-pages'))
        self.assertEqual(['generator_flavor.flavor'],
                         [f.source for f in needs.created_flavors.values()])
        vnf = [s for s in needs.servers if s.resource == VNF1]
        self.assertEqual('epa-small-pages', vnf[0].flavor)


class PreflightTest(testtools.TestCase):

    def test_pinned_preset_on_a_host_without_pcpu_is_blocked(self):
        findings, _ = _check(recorded_cloud.answers(), PVP, PINNED)
        (blocker,) = _blockers(findings)
        self.assertEqual('capacity', blocker.check)
        self.assertEqual('hw:cpu_policy', blocker.key)
        self.assertIn('no compute host reports PCPU', blocker.message)
        self.assertIn('cpu_dedicated_set', blocker.fix)
        self.assertIn(preflight.SMALL_HOST, blocker.fix)
        self.assertIn('generator_flavor.flavor', blocker.resource)
        self.assertFalse(preflight.passed(findings))

    def test_small_host_passes_and_says_what_it_could_not_check(self):
        findings, _ = _check(recorded_cloud.answers(), PVP, SMALL_HOST)
        self.assertEqual([], _blockers(findings))
        self.assertTrue(preflight.passed(findings))
        verdicts = {(f.check, f.key): f for f in findings}
        capacity = verdicts[('capacity', 'PCPU, VCPU, MEMORY_MB')]
        self.assertEqual(preflight.OK, capacity.verdict)
        # 2 VCPU x 16 and (24105 - 512) MB x 1.5 on the recorded host,
        # which ran a 1-VNF chain (4 VCPU, 4096 MB) when asked.
        self.assertIn('VCPU 28', capacity.message)
        self.assertIn('MEMORY_MB 31293', capacity.message)
        self.assertEqual(preflight.UNCHECKED,
                         verdicts[('capacity', 'large')].verdict)
        self.assertEqual(preflight.OK, verdicts[('quotas', 'cores')].verdict)
        vlans = [f.message for f in findings if f.key == 'segmentation_id']
        self.assertEqual(["VLAN 1001 on physnet1 is free (in Neutron's range "
                          "1000-1010)", "VLAN 2001 on physnet2 is free (in "
                          "Neutron's range 2000-2010)"], vlans)
        self.assertEqual(
            ['images', 'images', 'flavors', 'networks', 'networks',
             'networks', 'capacity', 'capacity', 'quotas', 'quotas',
             'quotas', 'quotas', 'quotas', 'quotas', 'density'],
            [f.check for f in findings])
        # Neutron's quotas: two provider networks and their subnets, a
        # data port each side of each server and its management port.
        self.assertEqual(
            ['networks: the chain creates 2, the project has 99 left',
             'ports: the chain creates 6, the project has 500 left',
             'subnets: the chain creates 2, the project has 99 left'],
            [f.message for f in findings if f.resource == 'network'])

    def test_the_checks_after_the_flavors_are_asked_at_once(self):
        # Each question is a client process of seconds: asked one after
        # another they took 42 s on the single-host cloud.
        replayed = recorded_cloud.ReplayedClient(recorded_cloud.answers())
        lock, in_flight, most = threading.Lock(), [0], [0]

        def slow(argv, **kwargs):
            with lock:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])
            time.sleep(0.05)
            with lock:
                in_flight[0] -= 1
            return replayed(argv, **kwargs)
        cloud = cloud_answers.CloudView(openstack_cli.OpenStackCLI(
            'epa-chain', run=slow))
        found = preflight.check(
            stack_needs.needs_of(_resolved(PVP, SMALL_HOST)), cloud)
        self.assertGreater(most[0], 1)
        # the same findings, in the same order, as asked one by one
        alone, _ = _check(recorded_cloud.answers(), PVP, SMALL_HOST)
        self.assertEqual(alone, found)
        self.assertEqual(1, sum(' '.join(argv[3:6]) == 'role assignment list'
                                for argv in replayed.asked))

    def test_a_port_quota_short_of_the_chain_blocks_with_the_fix(self):
        answers = recorded_cloud.answers()
        quotas = copy.deepcopy(answers[NETWORK_QUOTAS])
        ports = next(row for row in quotas['stdout']
                     if row['Resource'] == 'ports')
        ports.update({'Limit': 50, 'In Use': 47})
        answers[NETWORK_QUOTAS] = quotas
        (blocker,) = _blockers(_check(answers, PVP, SMALL_HOST)[0])
        self.assertEqual(('quotas', 'network', 'port'), (
            blocker.check, blocker.resource, blocker.key))
        self.assertEqual('ports: the chain creates 6, the project has 3 '
                         'left', blocker.message)
        self.assertEqual("raise the project's quota (openstack quota set "
                         "--ports 53)", blocker.fix)

    def test_network_quotas_not_shown_are_unchecked_not_guessed(self):
        answers = recorded_cloud.answers()
        answers[NETWORK_QUOTAS] = {
            'returncode': 1, 'stdout': None,
            'stderr': 'ResourceNotFound: quota details extension not '
                      'loaded'}
        findings, _ = _check(answers, PVP, SMALL_HOST)
        self.assertEqual([], _blockers(findings))
        (unchecked,) = [f for f in findings if f.resource == 'network']
        self.assertEqual(preflight.UNCHECKED, unchecked.verdict)
        self.assertEqual('network, port, subnet', unchecked.key)

    def test_a_host_with_pcpu_takes_the_pinned_preset(self):
        answers = recorded_cloud.answers()
        inventory = copy.deepcopy(answers[INVENTORY])
        inventory['stdout'].append({
            'resource_class': 'PCPU', 'allocation_ratio': 1.0,
            'min_unit': 1, 'max_unit': 6, 'reserved': 0, 'step_size': 1,
            'total': 6, 'used': 0})
        answers[INVENTORY] = inventory
        findings, _ = _check(answers, PVP)
        self.assertEqual([], _blockers(findings))
        capacity = [f for f in findings if f.check == 'capacity' and
                    f.verdict == preflight.OK]
        self.assertIn('PCPU 6', capacity[0].message)

    def test_too_few_pinned_cpus_block_with_the_numbers(self):
        answers = recorded_cloud.answers()
        inventory = copy.deepcopy(answers[INVENTORY])
        inventory['stdout'].append({
            'resource_class': 'PCPU', 'allocation_ratio': 1.0,
            'reserved': 1, 'total': 4})
        answers[INVENTORY] = inventory
        (blocker,) = _blockers(_check(answers, PVP, PINNED)[0])
        self.assertIn('no room for MEMORY_MB 6144, PCPU 6 over the hosts',
                      blocker.message)
        self.assertIn('PCPU 3', blocker.message)

    def test_anti_affinity_on_one_host_names_the_environment(self):
        findings, _ = _check(recorded_cloud.answers(), VECPE, SMALL_HOST,
                             INTER_NODE)
        (blocker,) = _blockers(findings)
        self.assertIn('a host per server (anti-affinity)', blocker.message)
        self.assertIn('each of the 3 servers on its own compute host and '
                      'Placement has 1', blocker.fix)
        self.assertIn('intra-node.yaml', blocker.fix)

    def test_a_missing_image_names_the_parameter(self):
        findings, _ = _check(recorded_cloud.answers(), PVP, SMALL_HOST,
                             vnf_image='no-such-image')
        (blocker,) = _blockers(findings)
        self.assertEqual(('images', CHAIN0 + 'vnf1.server', 'vnf_image'),
                         (blocker.check, blocker.resource, blocker.key))
        self.assertIn("'no-such-image' is not in Glance", blocker.message)

    def test_an_existing_flavor_needs_huge_pages(self):
        findings, _ = _check(recorded_cloud.answers(), PVP, SMALL_HOST,
                             vnf_existing_flavor='m1.plain')
        (blocker,) = _blockers(findings)
        self.assertEqual(('flavors', VNF1, 'vnf_existing_flavor'),
                         (blocker.check, blocker.resource, blocker.key))
        self.assertIn('hw:mem_page_size', blocker.message)
        self.assertIn('openstack flavor set --property '
                      'hw:mem_page_size=large m1.plain', blocker.fix)

    def test_a_flavor_named_like_the_image_keeps_the_keys_apart(self):
        # The Tempest workspace names its flavors after the images.
        findings, _ = _check(recorded_cloud.answers(), PVP, SMALL_HOST,
                             vnf_existing_flavor='epa-chain-vnf')
        keys = {(f.check, f.resource): f.key for f in findings
                if f.resource == VNF1}
        self.assertEqual({('images', VNF1): 'vnf_image',
                          ('flavors', VNF1): 'vnf_existing_flavor'},
                         keys)

    def test_an_existing_flavor_with_huge_pages_counts_its_own_size(self):
        findings, _ = _check(recorded_cloud.answers(), PVP, SMALL_HOST,
                             vnf_existing_flavor='epa-small-pages')
        self.assertEqual([], _blockers(findings))
        shown = [f for f in findings if f.key == 'vnf_existing_flavor']
        self.assertIn('2 vCPUs (VCPU), 2048 MB', shown[0].message)

    def test_a_missing_existing_flavor_blocks(self):
        (blocker,) = _blockers(_check(
            recorded_cloud.answers(), PVP, SMALL_HOST,
            vnf_existing_flavor='no-such-flavor')[0])
        self.assertIn("flavor 'no-such-flavor' does not exist",
                      blocker.message)

    def test_a_taken_vlan_names_the_network_and_the_parameter(self):
        taken = self.useFixture(Overrides(
            net0_physical_network='management', net0_vlan=100))
        findings, _ = _check(recorded_cloud.answers(), PVP, SMALL_HOST,
                             taken.path)
        (blocker,) = _blockers(findings)
        self.assertEqual(('networks', CHAIN0 + 'net0.network',
                          'segmentation_id'),
                         (blocker.check, blocker.resource, blocker.key))
        self.assertIn('VLAN 100 on management is taken by network private',
                      blocker.message)
        self.assertIn('net0_vlan', blocker.fix)

    def test_a_physnet_neutron_has_no_range_for_blocks(self):
        unknown = self.useFixture(Overrides(
            net1_physical_network='physnet9'))
        findings, _ = _check(recorded_cloud.answers(), PVP, SMALL_HOST,
                             unknown.path)
        (blocker,) = _blockers(findings)
        self.assertEqual((CHAIN0 + 'net1.network', 'physical_network'),
                         (blocker.resource, blocker.key))
        self.assertIn("no VLAN range on 'physnet9'", blocker.message)

    def test_without_segment_ranges_the_physnets_are_unchecked(self):
        answers = recorded_cloud.answers()
        extensions = 'extension list --network -f json'
        answers[extensions] = {'returncode': 0, 'stdout': [
            e for e in answers[extensions]['stdout']
            if e['Alias'] != 'network-segment-range'], 'stderr': ''}
        findings, _ = _check(answers, PVP, SMALL_HOST)
        self.assertTrue(preflight.passed(findings))
        physnets = [f for f in findings if f.key == 'physical_network']
        self.assertEqual(preflight.UNCHECKED, physnets[0].verdict)
        self.assertIn('network_vlan_ranges', physnets[0].fix)

    def test_a_member_may_not_create_flavors_or_provider_networks(self):
        answers = recorded_cloud.answers()
        roles = 'role assignment list --auth-user --auth-project ' \
                '--effective --names -f json'
        answers[roles] = {'returncode': 0, 'stdout': [
            {'Role': 'member', 'Project': 'demo@Default'}], 'stderr': ''}
        findings, _ = _check(answers, PVP, SMALL_HOST)
        self.assertEqual(['flavors', 'networks'],
                         [f.check for f in _blockers(findings)])
        self.assertIn('vnf_existing_flavor', _blockers(findings)[0].fix)
        self.assertIn('use_existing_networks', _blockers(findings)[1].fix)

    def test_a_failing_client_is_no_answer_not_a_missing_image(self):
        answers = recorded_cloud.answers()
        answers['image show -f json -- epa-chain-vnf'] = {
            'returncode': 1, 'stdout': None,
            'stderr': 'Failed to discover available identity versions'}
        findings, _ = _check(answers, PVP, SMALL_HOST)
        image = [f for f in findings if f.key == 'vnf_image']
        self.assertEqual(preflight.UNCHECKED, image[0].verdict)

    def test_without_osc_placement_capacity_is_unchecked(self):
        answers = recorded_cloud.answers()
        del answers['resource provider list -f json']
        findings, _ = _check(answers, PVP)
        # The PCPU question cannot be answered: not a block, but no pass
        # either (fail closed) unless unchecked is allowed.
        self.assertEqual([], _blockers(findings))
        self.assertFalse(preflight.passed(findings))
        self.assertTrue(preflight.passed(findings, allow_unchecked=True))
        capacity = [f for f in findings if f.key == 'PCPU, VCPU, MEMORY_MB']
        self.assertEqual(preflight.UNCHECKED, capacity[0].verdict)
        self.assertIn('osc-placement', capacity[0].message)
        gate = preflight.gate(findings)
        self.assertEqual(('capacity',), gate.unanswered)
        self.assertIn('answered nothing for capacity: the openstack client '
                      'has no Placement commands', gate.summary())
        self.assertIn('--allow-unchecked', gate.summary())

    def test_a_client_answer_that_is_not_json_names_the_command(self):
        answers = recorded_cloud.answers()
        answers['limits show --absolute -f json'] = {
            'returncode': 0, 'stdout': None, 'stderr': ''}
        findings, _ = _check(answers, PVP, SMALL_HOST)
        (limits,) = [f for f in findings if f.resource == 'compute']
        self.assertEqual(preflight.UNCHECKED, limits.verdict)
        self.assertIn('`openstack limits show --absolute` printed no JSON',
                      limits.message)

    def test_an_answer_of_another_shape_names_the_command(self):
        answers = recorded_cloud.answers()
        answers['limits show --absolute -f json']['stdout'] = [
            {'Key': 'maxTotalCores'}]
        findings, _ = _check(answers, PVP, SMALL_HOST)
        (limits,) = [f for f in findings if f.resource == 'compute']
        self.assertEqual(preflight.UNCHECKED, limits.verdict)
        self.assertIn('`openstack limits show --absolute` answered in a '
                      "shape preflight does not know (KeyError: 'Name')",
                      limits.message)

    def test_quota_short_of_cores_blocks(self):
        answers = recorded_cloud.answers()
        limits = 'limits show --absolute -f json'
        answers[limits] = {'returncode': 0, 'stdout': [
            {'Name': 'max_total_cores', 'Value': 4},
            {'Name': 'total_cores_used', 'Value': 1}], 'stderr': ''}
        (blocker,) = _blockers(_check(answers, PVP, SMALL_HOST)[0])
        self.assertEqual(('quotas', 'cores'), (blocker.check, blocker.key))
        self.assertIn('asks 4, the project has 3 left', blocker.message)

    def test_names_are_never_options_of_the_client(self):
        _, client = _check(recorded_cloud.answers(), PVP, SMALL_HOST,
                           vnf_image='--os-auth-url=http://evil')
        shown = [argv for argv in client.asked
                 if argv[3:5] in (['image', 'show'], ['flavor', 'show'])]
        self.assertEqual(2, len(shown))
        for argv in shown:
            self.assertEqual('--', argv[-2], argv)

    def test_table_and_document(self):
        findings, _ = _check(recorded_cloud.answers(), PVP, PINNED)
        text = preflight.table(findings)
        self.assertTrue(text.startswith('CHECK'))
        self.assertIn('BLOCKS', text)
        document = preflight.document(findings, 'templates/chain.yaml')
        self.assertEqual(preflight.SCHEMA, document['schema'])
        self.assertFalse(document['passed'])
        self.assertEqual(len(findings), len(document['findings']))


def _client_installed(test):
    # The command looks for the openstack client before it asks; these
    # tests answer in its place, so they run whether or not it is on PATH.
    test.useFixture(fixtures.MockPatchObject(
        preflight_command.shutil, 'which',
        return_value='/usr/bin/openstack'))


class CommandTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        _client_installed(self)

    def _main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            status = cli.main(['preflight'] + list(argv))
        return status, out.getvalue(), err.getvalue()

    def test_usage_errors_are_refused_before_the_cloud(self):
        status, _, err = self._main('--os-cloud=-x', repo.CHAIN)
        self.assertEqual(2, status)
        self.assertIn('--os-cloud', err)
        status, _, err = self._main(repo.CHAIN, '--parameter', 'novalue')
        self.assertEqual(2, status)
        self.assertIn('KEY=VALUE', err)
        status, _, err = self._main(repo.CHAIN, '--stack-name=-bad')
        self.assertEqual(2, status)

    def _on_the_recorded_cloud(self, *argv):
        client = openstack_cli.OpenStackCLI(
            'epa-chain', run=recorded_cloud.ReplayedClient(
                recorded_cloud.answers()))
        with mock.patch.object(preflight_command.openstack_cli,
                               'OpenStackCLI', return_value=client):
            return self._main('--os-cloud', 'epa-chain', repo.CHAIN, *argv)

    def test_the_pinned_preset_exits_1_with_its_table(self):
        status, out, err = self._on_the_recorded_cloud('-e', PVP,
                                                       '-e', PINNED)
        self.assertEqual(1, status)
        self.assertIn('BLOCKS', out)
        self.assertIn('templates/chain.yaml: 1 blocker', err)

    def test_small_host_exits_0_and_writes_the_document(self):
        target = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'preflight.json')
        status, out, err = self._on_the_recorded_cloud(
            '-e', PVP, '-e', SMALL_HOST, '--json', target)
        self.assertEqual(0, status, err)
        self.assertIn('nothing blocks the create (1 of 15 unchecked)', err)
        with open(target) as stream:
            document = json.load(stream)
        self.assertEqual(preflight.SCHEMA, document['schema'])
        self.assertTrue(document['passed'])

    def test_without_the_client_nothing_is_asked(self):
        with mock.patch.object(preflight_command.shutil, 'which',
                               return_value=None):
            status, out, err = self._main('--os-cloud', 'epa-chain',
                                          repo.CHAIN, '-e', PVP)
        self.assertEqual(1, status)
        self.assertEqual('', out)
        self.assertIn('openstack: not found; install '
                      'python-openstackclient', err)

    def test_an_overridden_parameter_is_warned(self):
        # The preset's endpoints wins over --parameter, as in Heat.
        _, _, err = self._on_the_recorded_cloud(
            '-e', VECPE, '-e', SMALL_HOST, '--parameter',
            'endpoints=generator')
        # Said once, by the one check (validation/check.py).
        (line,) = [line for line in err.splitlines()
                   if 'PARAM-OVERRIDDEN' in line]
        self.assertIn('parameter endpoints: [PARAM-OVERRIDDEN] warning: '
                      "given 'generator'", line)
        self.assertIn('; fix: give it in an environment file', line)

    def test_a_template_heat_refuses_is_said(self):
        status, _, err = self._main(repo.CHAIN, '--parameter',
                                    'vnf_count=7')
        self.assertEqual(1, status)
        self.assertIn('vnf_count', err)


def _typo_cloud(argv, **kwargs):
    """subprocess.run of a client given a cloud clouds.yaml lacks."""
    _typo_cloud.asked.append(argv)
    return subprocess.CompletedProcess(argv, 1, '',
                                       'Cloud typo was not found.')


class FailClosedTest(testtools.TestCase):
    """The gate passes nothing it could not ask, unless told to."""

    def setUp(self):
        super().setUp()
        _client_installed(self)
        _typo_cloud.asked = []

    def _typo(self, *argv):
        client = openstack_cli.OpenStackCLI('typo', run=_typo_cloud)
        with mock.patch.object(preflight_command.openstack_cli,
                               'OpenStackCLI', return_value=client):
            return CommandTest._main(self, '--os-cloud', 'typo',
                                     repo.CHAIN, '-e', PVP, '-e',
                                     SMALL_HOST, *argv)

    def test_an_unknown_cloud_fails_in_one_line_naming_it(self):
        status, out, err = self._typo()
        self.assertEqual(1, status)
        self.assertEqual('', out)
        (line,) = err.splitlines()
        self.assertIn('could not ask cloud typo: Cloud typo was not found.',
                      line)
        self.assertIn('fix: check the clouds.yaml entry', line)
        self.assertNotIn('nothing blocks', line)
        # Asked once: every other question would have failed alike.
        self.assertEqual(1, len(_typo_cloud.asked))

    def test_allow_unchecked_passes_and_counts_what_went_unchecked(self):
        target = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'preflight.json')
        status, out, err = self._typo('--allow-unchecked', '--json', target)
        self.assertEqual(0, status, err)
        self.assertRegex(err, r'nothing blocks the create \((\d+) of \1 '
                              r'unchecked, allowed by --allow-unchecked\)')
        with open(target) as stream:
            document = json.load(stream)
        self.assertTrue(document['passed'])
        self.assertTrue(document['allow_unchecked'])
        self.assertEqual(len(document['findings']), document['unchecked'])

    def test_the_document_of_a_cloud_not_reached_has_not_passed(self):
        status, out, _ = self._typo('--json', '-')
        self.assertEqual(1, status)
        document = json.loads(out)
        self.assertFalse(document['passed'])
        # density reads the others' answers: with none it says nothing.
        self.assertEqual([c for c in preflight.CHECKS if c != 'density'],
                         document['unanswered'])

    def test_placement_refused_fails_closed_with_the_table(self):
        answers = recorded_cloud.answers()
        del answers['resource provider list -f json']
        client = openstack_cli.OpenStackCLI(
            'epa-chain', run=recorded_cloud.ReplayedClient(answers))
        with mock.patch.object(preflight_command.openstack_cli,
                               'OpenStackCLI', return_value=client):
            status, out, err = CommandTest._main(
                self, '--os-cloud', 'epa-chain', repo.CHAIN, '-e', PVP)
        self.assertEqual(1, status)
        self.assertIn('UNCHECKED', out)
        self.assertIn('cloud epa-chain answered nothing for capacity', err)

    def test_a_nan_parameter_is_refused_before_the_cloud(self):
        # validate's NFV rules refuse it; preflight runs the same check.
        status, out, err = self._typo(
            '--parameter', 'generator_latency_bucket_shift=nan')
        self.assertEqual(1, status)
        self.assertEqual('', out)
        self.assertIn('generator_latency_bucket_shift', err)
        self.assertEqual([], _typo_cloud.asked)


class DensityTest(testtools.TestCase):
    """N_max: how many chains of the stack's shape the cloud can host."""

    def _density(self, **parameters):
        findings, _ = _check(recorded_cloud.answers(), PVP, SMALL_HOST,
                             **parameters)
        (found,) = [f for f in findings if f.check == 'density']
        return found

    def test_the_least_room_is_n_max_and_named(self):
        # A PVP chain on the small host: 4 vCPUs, 4 GiB, 2 servers. The
        # recorded project has 16 cores and 8 instances left (4 chains),
        # Placement room for 7, VLAN IDs for 64 (chain_count's bound).
        found = self._density()
        self.assertEqual(preflight.OK, found.verdict)
        self.assertIn('room for 4 chain(s) of this shape (chain_count 1 '
                      'asked)', found.message)
        self.assertIn('quota cores: 16 left, 4 per chain', found.message)
        self.assertIn('quota instances: 8 left, 2 per chain', found.message)
        self.assertNotIn('VLANs', found.message)

    def test_too_many_chains_are_refused_naming_the_limit(self):
        found = self._density(chain_count=5)
        self.assertEqual(preflight.BLOCKS, found.verdict)
        self.assertIn('quota cores', found.message)
        self.assertEqual('ask chain_count 4 or less, or free what limits it',
                         found.fix)

    def test_a_wide_stride_runs_out_of_vlan_ids(self):
        # Chain K's VLANs past Neutron's tenant ranges are the networks
        # check's to judge (a provider network may use them); 4094 ends
        # them.
        found = self._density(chain_vlan_stride=1500)
        self.assertIn('room for 2 chain(s)', found.message)
        self.assertIn('VLANs of physnet2: net-phys2-2001: VLAN 2001 + K x '
                      '1500 up to 4094', found.message)

    def test_a_template_without_chains_says_nothing(self):
        needs = stack_needs.Needs(servers=(), created_flavors={},
                                  networks=(), named_networks=(),
                                  server_group_policy='', parameters={})
        found = []
        preflight._density(needs, None, {}, found)
        self.assertEqual([], found)


class DensityArithmeticTest(testtools.TestCase):

    def test_capacity_is_the_last_count_that_fits(self):
        limit = density.by_capacity(lambda n: n * 3 <= 10)
        self.assertEqual(3, limit.chains)
        self.assertEqual(0, density.by_capacity(lambda n: False).chains)
        self.assertEqual(density.MAX_CHAINS,
                         density.by_capacity(lambda n: True).chains)

    def test_unlimited_quotas_do_not_limit(self):
        self.assertIsNone(density.by_quota('cores', 4, None))
        self.assertEqual(0, density.by_quota('cores', 4, 3).chains)

    def test_vlan_ids_end_at_4094(self):
        network = stack_needs.ProviderNetwork(
            resource='chains.0.net0.network', name='n', physical_network='p',
            vlan=4090)
        self.assertEqual(3, density.by_vlan_ids(network, 2).chains)
        self.assertEqual(1, density.by_vlan_ids(network, 5).chains)
