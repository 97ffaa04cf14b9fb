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

tempest.lib has no orchestration client, so Heat is reached with
python-heatclient, like heat-tempest-plugin does, over a keystoneauth
session built from the credentials Tempest allocated to the test class.
Servers are read with Tempest's own compute client.
"""

from heatclient import client as heat_client
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

from tempest import config

CONF = config.CONF
HEAT_API_VERSION = '1'


def keystone_session(credentials):
    """A keystoneauth session for Tempest credentials (identity v3).

    Password authentication rather than Tempest's token: a benchmark
    outlives a token (hours of trials), a session re-authenticates.
    """
    auth = v3.Password(
        auth_url=CONF.identity.uri_v3,
        username=credentials.username,
        password=credentials.password,
        user_domain_name=credentials.user_domain_name,
        user_domain_id=credentials.user_domain_id,
        project_name=credentials.project_name,
        project_id=credentials.project_id,
        project_domain_name=credentials.project_domain_name,
        project_domain_id=credentials.project_domain_id)
    if CONF.identity.disable_ssl_certificate_validation:
        verify = False
    else:
        verify = CONF.identity.ca_certificates_file or True
    return ks_session.Session(auth=auth, verify=verify)


def heat(session):
    """heatclient v1 on the session, in Tempest's identity region."""
    return heat_client.Client(HEAT_API_VERSION, session=session,
                              service_type='orchestration',
                              interface='public',
                              region_name=CONF.identity.region or None)


class TempestCompute:
    """What the benchmark reads from Nova, through Tempest's client."""

    def __init__(self, servers_client):
        self.servers_client = servers_client

    def server_name(self, server_id):
        return self.servers_client.show_server(server_id)['server']['name']

    def server_status(self, server_id):
        server = self.servers_client.show_server(server_id)['server']
        fault = (server.get('fault') or {}).get('message')
        return server['status'], fault

    def console_output(self, server_id):
        body = self.servers_client.get_console_output(server_id)
        return body['output'] or ''
