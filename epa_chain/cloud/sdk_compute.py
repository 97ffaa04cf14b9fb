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

"""The readiness wait's two questions, asked in this process.

`epa-chain prove` asks the `openstack` client, whose start costs ~3 s of
CPU (its plugins load). The readiness wait asks every few seconds while
the guests boot, on a host where they may boot under emulation: measured
on the single-host cloud, three guests took 137-157 s to READY with a
console asked every 5 s through the client, 107-109 s with nobody asking.
openstacksdk (the library the client is built on, so present wherever
the client was pip-installed) reads the same clouds.yaml entry or OS_*
variables and answers each question in one HTTP request (~0.1 s). Where
it does not import or cannot connect, the client is asked as before.
"""

import logging

from epa_chain.cloud import readiness

LOG = logging.getLogger(__name__)
# Each question is one request; keystoneauth itself sets no timeout.
API_TIMEOUT_S = 30


class SdkCompute:
    """What cloud.readiness asks: a server's status and console, a reboot."""

    def __init__(self, connection, errors, failed):
        self._compute = connection.compute
        # openstacksdk's exception base class, imported with it.
        self._errors = errors
        # What a failed question raises (openstack_cli.CLIError).
        self._failed = failed

    def server_status(self, server_id):
        try:
            server = self._compute.get_server(server_id)
        except self._errors as exc:
            raise self._failed('compute API: server %s: %s'
                               % (server_id, exc))
        fault = server.fault or {}
        return server.status, (fault.get('message')
                               if isinstance(fault, dict) else fault)

    def hard_reboot(self, server_id):
        try:
            self._compute.reboot_server(server_id, 'HARD')
        except self._errors as exc:
            raise readiness.RebootFailed('compute API: server %s: %s'
                                         % (server_id, exc))

    def console_output(self, server_id):
        try:
            shown = self._compute.get_server_console_output(server_id)
        except self._errors as exc:
            # Nova's 409 (building) and 404 (no log yet): ask again later.
            raise readiness.ConsoleUnavailable(str(exc))
        return shown.get('output') or ''


def readiness_compute(cloud, client, failed):
    """SdkCompute for the clouds.yaml entry `cloud`, or `client` itself.

    `cloud` None: the OS_* variables, as the client reads them. `failed`:
    the error class a failed status question raises.
    """
    try:
        import openstack
        from openstack import exceptions
    except ImportError:
        return client
    try:
        connection = openstack.connect(cloud=cloud,
                                       api_timeout=API_TIMEOUT_S)
    except exceptions.SDKException as exc:
        LOG.info('readiness asks the openstack client: openstacksdk '
                 'cannot connect (%s)', exc)
        return client
    return SdkCompute(connection, exceptions.SDKException, failed)
