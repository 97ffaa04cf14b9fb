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

"""Cloud access for the scenarios, from Tempest's credentials.

Heat through the plugin's own tempest.lib RestClient (orchestration.py:
Tempest's auth provider, endpoint selection and request logging), in
the shape epa_chain.cloud.stack expects; servers through Tempest's own
compute client; preflight's questions through Tempest's admin clients.
"""

import json

from tempest import config
from tempest.lib import exceptions as lib_exc

from epa_chain.cloud import cloud_answers
from epa_chain.cloud import epa_audit
from epa_chain.cloud import openstack_cli
from epa_chain.cloud import readiness
from epa_chain.cloud import stack_needs
from epa_chain_tempest_plugin.services import orchestration

CONF = config.CONF


def heat(auth_provider):
    """Heat for the class's credentials, endpoint from [epa_chain] heat_*.

    The common client settings (TLS, HTTP timeout, trace_requests) are
    Tempest's, as for its own service clients.
    """
    params = config.service_client_config()
    group = CONF.epa_chain
    params.update(service=group.heat_catalog_type,
                  endpoint_type=group.heat_endpoint_type,
                  region=group.heat_region or CONF.identity.region,
                  build_interval=CONF.compute.build_interval,
                  build_timeout=CONF.compute.build_timeout)
    return orchestration.HeatFacade(
        orchestration.OrchestrationClient(auth_provider, **params))


class TempestCompute:
    """What the benchmark reads from Nova, through Tempest's client."""

    def __init__(self, servers_client, images_client=None):
        self.servers_client = servers_client
        self.images_client = images_client

    def show_server(self, server_id):
        return self.servers_client.show_server(server_id)['server']

    def server_topology(self, server_id):
        """The server at compute API 2.78, with its NUMA topology.

        What `openstack server show --topology` prints (the EPA audit's
        input): the flavor embedded with its extra specs (2.47+) and
        GET /servers/{id}/topology (2.78, host CPUs to admins).
        """
        headers = dict(self.servers_client.get_headers(),
                       **{'X-OpenStack-Nova-API-Version':
                          openstack_cli.TOPOLOGY_MICROVERSION})
        server = self._get('servers/%s' % server_id, headers)['server']
        server['topology'] = self._get('servers/%s/topology' % server_id,
                                       headers)
        return server

    def image_properties(self, image_id):
        """The image's hw_* properties (Glance v2: top-level keys)."""
        if self.images_client is None:
            return {}
        return epa_audit.hw_properties(
            self.images_client.show_image(image_id))

    def _get(self, url, headers):
        _resp, body = self.servers_client.get(url, headers=headers)
        return json.loads(body)

    def server_status(self, server_id):
        server = self.servers_client.show_server(server_id)['server']
        fault = (server.get('fault') or {}).get('message')
        return server['status'], fault

    def hard_reboot(self, server_id):
        try:
            self.servers_client.reboot_server(server_id, type='HARD')
        except lib_exc.TempestException as exc:
            raise readiness.RebootFailed(str(exc)) from exc

    def console_output(self, server_id):
        try:
            body = self.servers_client.get_console_output(server_id)
        except (lib_exc.Conflict, lib_exc.NotFound) as exc:
            # 409 while the server builds, 404 before its console log
            # exists: the readiness wait asks again. A server that is
            # gone shows in server_status first.
            raise readiness.ConsoleUnavailable(
                '%d %s' % (exc.status_code, exc)) from exc
        return body['output'] or ''


class TempestCloudAnswers:
    """What preflight asks a cloud, through Tempest's admin clients.

    The same questions as epa_chain.cloud.cloud_answers.CloudView (which
    asks the openstack client), answered from the class's admin
    credentials: a REST error is cloud_answers.Unanswered, which
    preflight reports as unchecked.
    """

    def __init__(self, manager):
        self.manager = manager

    def _client(self, name):
        # Tempest sets some clients only for services it is told exist.
        client = getattr(self.manager, name, None)
        if client is None:
            raise cloud_answers.Unanswered(
                'Tempest has no %s here (its [service_available])' % name)
        return client

    def _ask(self, call, *args, **kwargs):
        try:
            return call(*args, **kwargs)
        except (lib_exc.TempestException, KeyError) as exc:
            raise cloud_answers.Unanswered('%s: %s' % (
                type(exc).__name__, exc)) from exc

    def image(self, name):
        images = self._ask(self._client('image_client_v2').list_images,
                           params={'name': name})['images']
        if not images:
            try:
                return self._client('image_client_v2').show_image(name)
            except lib_exc.NotFound:
                return None
            except lib_exc.TempestException as exc:
                raise cloud_answers.Unanswered(str(exc)) from exc
        return images[0]

    def flavor(self, name):
        client = self._client('flavors_client')
        flavors = self._ask(client.list_flavors, detail=True,
                            is_public='None')['flavors']
        found = [f for f in flavors if name in (f['name'], f['id'])]
        if not found:
            return None
        specs = self._ask(client.list_flavor_extra_specs,
                          found[0]['id'])['extra_specs']
        return stack_needs.Flavor(
            source=name, vcpus=int(found[0]['vcpus']),
            ram_mb=int(found[0]['ram']),
            extra_specs={k: str(v) for k, v in specs.items()})

    def network(self, name):
        networks = self._ask(self._client('networks_client').list_networks,
                             name=name)['networks']
        return networks[0] if networks else None

    def is_admin(self):
        # The scenarios' credentials are admin ones (credentials =
        # ['admin']).
        return True

    def vlan_networks(self, physical_network, vlan):
        networks = self._ask(self._client('networks_client').list_networks, **{
            'provider:network_type': 'vlan',
            'provider:physical_network': physical_network,
            'provider:segmentation_id': vlan})['networks']
        return [n.get('name') or n['id'] for n in networks]

    def vlan_ranges(self):
        extensions = self._ask(
            self._client('network_extensions_client').list_extensions)
        if not any(e.get('alias') == cloud_answers.SEGMENT_RANGE_EXTENSION
                   for e in extensions['extensions']):
            raise cloud_answers.Unanswered(cloud_answers.NO_SEGMENT_RANGES)
        ranges = self._ask(self._client('networks_client').list_resources,
                           '/network_segment_ranges')
        return cloud_answers.vlan_ranges_of(
            (r.get('network_type'), r.get('physical_network'),
             r['minimum'], r['maximum'])
            for r in ranges['network_segment_ranges'])

    def providers(self):
        client = self._client('resource_providers_client')
        providers = []
        for item in self._ask(client.list_resource_providers)[
                'resource_providers']:
            provider = cloud_answers.provider_of(
                item['name'],
                self._ask(client.list_resource_provider_inventories,
                          item['uuid'])['inventories'],
                self._ask(client.list_resource_provider_usages,
                          item['uuid'])['usages'])
            if provider is not None:
                providers.append(provider)
        return providers

    def compute_limits(self):
        limits = self._ask(self._client('limits_client').show_limits)
        return cloud_answers.limits_of(limits['limits']['absolute'])

    def network_quotas(self):
        project = getattr(self.manager.credentials, 'project_id', None)
        if not project:
            raise cloud_answers.Unanswered('the credentials name no '
                                           'project')
        details = self._ask(self._client('network_quotas_client')
                            .show_quota_details, project)
        try:
            return cloud_answers.network_quotas_of(details['quota'])
        except (KeyError, TypeError, ValueError) as exc:
            raise cloud_answers.Unanswered(
                'Neutron\'s quota details lack %s' % exc) from exc
