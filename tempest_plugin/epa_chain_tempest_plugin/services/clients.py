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
compute client.
"""

from tempest import config
from tempest.lib import exceptions as lib_exc

from epa_chain.cloud import readiness
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

    def __init__(self, servers_client):
        self.servers_client = servers_client

    def show_server(self, server_id):
        return self.servers_client.show_server(server_id)['server']

    def server_status(self, server_id):
        server = self.servers_client.show_server(server_id)['server']
        fault = (server.get('fault') or {}).get('message')
        return server['status'], fault

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
