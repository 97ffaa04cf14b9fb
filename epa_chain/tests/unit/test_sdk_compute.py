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

"""The readiness wait's questions in process, and when the client answers.

The single-host cloud test runs it against Nova (epa-chain prove).
"""

import subprocess
import types
from unittest import mock

import testtools

from epa_chain.cloud import openstack_cli
from epa_chain.cloud import readiness
from epa_chain.cloud import sdk_compute


class Refused(Exception):
    """Stands for openstacksdk's SDKException."""


class FakeNova:
    """The compute proxy's two calls, with Nova's answers."""

    def __init__(self, servers, consoles):
        self.servers = servers
        self.consoles = consoles
        self.rebooted = []

    def get_server(self, server_id):
        if server_id not in self.servers:
            raise Refused('404: Instance %s could not be found.' % server_id)
        status, fault = self.servers[server_id]
        return types.SimpleNamespace(status=status, fault=fault)

    def reboot_server(self, server_id, reboot_type):
        if server_id not in self.servers:
            raise Refused('404: Instance %s could not be found.' % server_id)
        self.rebooted.append((server_id, reboot_type))

    def get_server_console_output(self, server_id):
        answer = self.consoles[server_id]
        if isinstance(answer, Exception):
            raise answer
        return {'output': answer}


def compute(servers=None, consoles=None):
    connection = types.SimpleNamespace(
        compute=FakeNova(servers or {}, consoles or {}))
    return sdk_compute.SdkCompute(connection, Refused,
                                  openstack_cli.CLIError)


class SdkComputeTest(testtools.TestCase):

    def test_status_and_fault(self):
        nova = compute({'a': ('ACTIVE', None),
                        'b': ('ERROR', {'message': 'No valid host'})})
        self.assertEqual(('ACTIVE', None), nova.server_status('a'))
        self.assertEqual(('ERROR', 'No valid host'), nova.server_status('b'))

    def test_a_failed_status_question_is_the_clients_error(self):
        error = self.assertRaises(openstack_cli.CLIError,
                                  compute().server_status, 'gone')
        self.assertIn('compute API: server gone: 404', str(error))

    def test_hard_reboot_or_why_not(self):
        fake = FakeNova({'a': ('ACTIVE', None)}, {})
        nova = sdk_compute.SdkCompute(types.SimpleNamespace(compute=fake),
                                      Refused, openstack_cli.CLIError)
        nova.hard_reboot('a')
        self.assertEqual([('a', 'HARD')], fake.rebooted)
        error = self.assertRaises(readiness.RebootFailed, nova.hard_reboot,
                                  'gone')
        self.assertIn('compute API: server gone: 404', str(error))

    def test_console_text_or_not_yet(self):
        nova = compute(consoles={
            'a': 'EPA-CHAIN READY n1 prox\n', 'b': None,
            'c': Refused('409 Conflict: building')})
        self.assertEqual('EPA-CHAIN READY n1 prox\n', nova.console_output('a'))
        self.assertEqual('', nova.console_output('b'))
        error = self.assertRaises(readiness.ConsoleUnavailable,
                                  nova.console_output, 'c')
        self.assertIn('409 Conflict', str(error))


class WhoAnswersTest(testtools.TestCase):

    def test_a_client_with_its_own_run_answers_itself(self):
        cli = openstack_cli.OpenStackCLI('mycloud', run=mock.Mock())
        self.assertIs(cli, cli.readiness_compute())

    def test_the_sdk_answers_for_the_real_client(self):
        cli = openstack_cli.OpenStackCLI('mycloud')
        self.assertIs(subprocess.run, cli._run)
        with mock.patch('openstack.connect') as connect:
            found = cli.readiness_compute()
        connect.assert_called_once_with(
            cloud='mycloud', api_timeout=sdk_compute.API_TIMEOUT_S)
        self.assertIsInstance(found, sdk_compute.SdkCompute)

    def test_a_cloud_the_sdk_cannot_reach_is_asked_through_the_client(self):
        from openstack import exceptions

        cli = openstack_cli.OpenStackCLI()
        with mock.patch('openstack.connect', side_effect=(
                exceptions.ConfigException('Cloud x was not found.'))):
            self.assertIs(cli, cli.readiness_compute())
        with mock.patch.dict('sys.modules', {'openstack': None}):
            self.assertIs(cli, cli.readiness_compute())
