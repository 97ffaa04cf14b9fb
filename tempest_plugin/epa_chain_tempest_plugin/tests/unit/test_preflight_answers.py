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

"""Preflight through Tempest's clients says what it says through the CLI.

One cloud state, the single-host cloud's as its openstack client
answered (epa_chain's recorded fixture), given twice: as that client's
JSON to cloud_answers.CloudView, and in the REST APIs' own shapes to the
plugin's TempestCloudAnswers. The findings must be the same.
"""

import os
from unittest import mock

from tempest.lib import exceptions as lib_exc
import testtools

from epa_chain.cloud import cloud_answers
from epa_chain.cloud import openstack_cli
from epa_chain.cloud import preflight
from epa_chain.cloud import stack_needs
from epa_chain.hot import resolve
from epa_chain.tests import repo
from epa_chain.tests.unit import recorded_cloud
from epa_chain_tempest_plugin.services import clients

PVP = os.path.join(repo.TEMPLATES, 'presets', 'pvp-bidir.yaml')
SMALL_HOST = os.path.join(repo.TEMPLATES, 'environments', 'small-host.yaml')
# Pinned whatever chain.yaml's default: a chain the recorded cloud (no
# PCPU) cannot host.
PINNED = os.path.join(repo.ROOT, 'epa_chain', 'tests', 'fixtures',
                      'preflight', 'pinned.yaml')


def _stdout(answers, key):
    answer = answers.get(key)
    return answer['stdout'] if answer and answer['returncode'] == 0 else None


def _manager(answers):
    """Tempest's admin clients answering the recorded state via the APIs."""
    manager = mock.Mock()
    _images(manager, answers)
    _networks(manager, answers)
    _placement(manager, answers)
    _limits_and_quotas(manager, answers)
    return manager


def _images(manager, answers):
    """Images by name; none by ID."""
    def list_images(params):
        image = _stdout(answers, 'image show -f json -- ' + params['name'])
        return {'images': [image] if image else []}

    manager.image_client_v2.list_images.side_effect = list_images
    manager.image_client_v2.show_image.side_effect = lib_exc.NotFound()


def _networks(manager, answers):
    """Networks by name or by segment, extensions, segment ranges."""
    def list_networks(**filters):
        if 'name' in filters:
            network = _stdout(answers, 'network show -f json -- %s'
                              % filters['name'])
            return {'networks': [network] if network else []}
        held = _stdout(answers, 'network list --provider-network-type vlan '
                       '--provider-physical-network %s --provider-segment '
                       '%s -f json' % (filters['provider:physical_network'],
                                       filters['provider:segmentation_id']))
        return {'networks': [{'name': n['Name'], 'id': n['ID']}
                             for n in held or []]}

    manager.networks_client.list_networks.side_effect = list_networks
    manager.network_extensions_client.list_extensions.return_value = {
        'extensions': [{'alias': e['Alias']} for e in _stdout(
            answers, 'extension list --network -f json')]}
    manager.networks_client.list_resources.return_value = {
        'network_segment_ranges': [
            {'network_type': r['Network Type'],
             'physical_network': r['Physical Network'],
             'minimum': r['Minimum ID'], 'maximum': r['Maximum ID']}
            for r in _stdout(answers, 'network segment range list --long '
                             '-f json')]}


def _placement(manager, answers):
    """The resource providers, their inventories and usages."""
    providers = manager.resource_providers_client
    providers.list_resource_providers.return_value = {
        'resource_providers': _stdout(answers,
                                      'resource provider list -f json')}
    providers.list_resource_provider_inventories.return_value = {
        'inventories': {r['resource_class']: r for r in _stdout(
            answers, recorded_cloud.INVENTORY)}}
    providers.list_resource_provider_usages.return_value = {
        'usages': {u['resource_class']: u['usage'] for u in _stdout(
            answers, 'resource provider usage show -f json -- %s'
            % recorded_cloud.PROVIDER)}}


def _limits_and_quotas(manager, answers):
    """Nova's absolute limits and Neutron's quota details."""
    limits = {row['Name']: row['Value'] for row in _stdout(
        answers, 'limits show --absolute -f json')}
    # The compute API's own names.
    manager.limits_client.show_limits.return_value = {'limits': {
        'absolute': {'maxTotalCores': limits['max_total_cores'],
                     'totalCoresUsed': limits['total_cores_used'],
                     'maxTotalRAMSize': limits['max_total_ram_size'],
                     'totalRAMUsed': limits['total_ram_used'],
                     'maxTotalInstances': limits['max_total_instances'],
                     'totalInstancesUsed': limits['total_instances_used']},
        'rate': []}}
    # Neutron's quota details: its own singular names, 'used'.
    manager.credentials.project_id = 'project-1'
    manager.network_quotas_client.show_quota_details.return_value = {
        'quota': {row['Resource'].rstrip('s'): {
            'limit': row['Limit'], 'used': row['In Use'],
            'reserved': row['Reserved']} for row in _stdout(
                answers, 'quota show --usage --network -f json')}}


class TempestCloudAnswersTest(testtools.TestCase):

    def _both(self, *environments):
        needs = stack_needs.needs_of(resolve.resolve(repo.CHAIN,
                                                     list(environments)))
        answers = recorded_cloud.answers()
        through_cli = preflight.check(needs, cloud_answers.CloudView(
            openstack_cli.OpenStackCLI('epa-chain',
                                       run=recorded_cloud.ReplayedClient(
                                           answers))))
        manager = _manager(answers)
        through_tempest = preflight.check(
            needs, clients.TempestCloudAnswers(manager))
        return through_cli, through_tempest, manager

    def test_the_pinned_preset_is_refused_alike(self):
        through_cli, through_tempest, _ = self._both(PVP, PINNED)
        self.assertEqual(through_cli, through_tempest)
        self.assertFalse(preflight.passed(through_tempest))
        self.assertIn('no compute host reports PCPU', ' '.join(
            f.message for f in through_tempest))

    def test_small_host_passes_alike(self):
        through_cli, through_tempest, manager = self._both(PVP, SMALL_HOST)
        self.assertEqual(through_cli, through_tempest)
        self.assertTrue(preflight.passed(through_tempest))
        manager.networks_client.list_resources.assert_called_once_with(
            '/network_segment_ranges')

    def test_a_refused_request_is_unchecked(self):
        answers = clients.TempestCloudAnswers(_manager(
            recorded_cloud.answers()))
        answers.manager.resource_providers_client.list_resource_providers\
            .side_effect = lib_exc.Forbidden('placement: admin only')
        error = self.assertRaises(cloud_answers.Unanswered,
                                  answers.providers)
        self.assertIn('Forbidden', str(error))

    def test_network_quotas_from_neutrons_details(self):
        manager = _manager(recorded_cloud.answers())
        answers = clients.TempestCloudAnswers(manager)
        self.assertEqual((500, 0), answers.network_quotas()['port'])
        manager.network_quotas_client.show_quota_details\
            .assert_called_once_with('project-1')
        manager.network_quotas_client.show_quota_details.return_value = {
            'quota': {'port': {'limit': 500}}}
        error = self.assertRaises(cloud_answers.Unanswered,
                                  answers.network_quotas)
        self.assertIn("lack 'used'", str(error))

    def test_a_client_tempest_did_not_make_is_unchecked(self):
        answers = clients.TempestCloudAnswers(mock.Mock(spec=[]))
        error = self.assertRaises(cloud_answers.Unanswered, answers.image,
                                  'epa-chain-vnf')
        self.assertIn('image_client_v2', str(error))
