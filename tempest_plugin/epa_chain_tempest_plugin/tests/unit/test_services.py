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

"""The Heat RestClient and the Nova console reader, without a cloud.

Requests go to a scripted http object in place of urllib3: what is sent,
what heatclient-shaped values StackService gets back, the errors it
knows, and that each request lands in Tempest's request log.
"""

import json
import logging
from unittest import mock

import fixtures
from heatclient import exc as heat_exc
from tempest.lib import exceptions as lib_exc
from tempest.lib.services.compute import servers_client
from tempest.tests.lib import fake_auth_provider
from tempest.tests.lib import fake_http
import testtools

from epa_chain.cloud import readiness
from epa_chain.cloud import stack
from epa_chain_tempest_plugin.services import clients
from epa_chain_tempest_plugin.services import orchestration

BASE = 'https://heat.example.com/v1/project-1'


class ScriptedHttp:
    """Answers requests with (status, JSON body) in turn; records them."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def request(self, url, method, headers=None, body=None, chunked=False,
                preload_content=True):
        self.requests.append((method, url, json.loads(body) if body
                              else None))
        self.headers = headers
        status, answer = self.answers.pop(0)
        text = json.dumps(answer) if answer is not None else ''
        return (fake_http.fake_http_response(
            {'content-type': 'application/json'}, status=status), text)


class OrchestrationClientTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.client = orchestration.OrchestrationClient(
            fake_auth_provider.FakeAuthProvider(fake_base_url=BASE),
            'orchestration', 'RegionOne', endpoint_type='internalURL')
        self.heat = orchestration.HeatFacade(self.client)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='tempest.lib.common.rest_client', level=logging.INFO))

    def answer(self, *answers):
        self.client.http_obj = ScriptedHttp(*answers)
        return self.client.http_obj

    def test_stack_service_calls_over_the_rest_client(self):
        http = self.answer(
            (201, {'stack': {'id': 'sid', 'links': []}}),
            (200, {'stack': {'id': 'sid', 'stack_status': 'CREATE_COMPLETE',
                             'stack_status_reason': 'done'}}),
            (200, {'resources': [{
                'resource_name': 'vnf1', 'resource_type': 'OS::Nova::Server',
                'resource_status': 'CREATE_COMPLETE',
                'physical_resource_id': 'server-1'}]}),
            (200, {'stacks': [{'id': 'old', 'stack_name': 'epa-chain-x'}]}),
            (204, None))
        service = stack.StackService(self.heat, sleep=lambda s: None)
        self.assertEqual('sid', service.create(
            {'stack_name': 's', 'template': {}, 'tags': stack.STACK_TAG}))
        self.assertEqual('CREATE_COMPLETE',
                         service.wait_for_create('sid', 10).stack_status)
        self.assertEqual(['server-1'], service.server_ids('sid'))
        (old,) = self.heat.stacks.list(tags=stack.STACK_TAG,
                                       global_tenant=True)
        self.assertEqual('old', old.id)
        self.heat.stacks.delete('sid')
        # Paths relative to the endpoint: the auth provider (a fake here)
        # puts the catalog's base URL in front.
        self.assertEqual(
            [('POST', 'stacks'),
             ('GET', 'stacks/sid?resolve_outputs=False'),
             ('GET', 'stacks/sid/resources?nested_depth=%d'
              % stack.NESTED_DEPTH),
             ('GET', 'stacks?tags=epa-chain-benchmark&global_tenant=True'),
             ('DELETE', 'stacks/sid')],
            [r[:2] for r in http.requests])
        self.assertEqual(stack.STACK_TAG, http.requests[0][2]['tags'])

    def test_requests_are_in_tempests_log(self):
        self.answer((200, {'stacks': []}))
        self.heat.stacks.list()
        self.assertIn('OrchestrationClientTest:test_requests_are_in_tempests'
                      '_log): 200 GET stacks', self.log.output)

    def test_errors_are_heatclients(self):
        self.answer((404, {'error': 'not found'}),
                    (409, {'error': 'in progress'}),
                    (403, {'error': 'stacks:global_index'}))
        self.assertRaises(heat_exc.HTTPNotFound, self.heat.stacks.get, 'x')
        self.assertRaises(heat_exc.HTTPException, self.heat.stacks.delete,
                          'x')
        # StackService falls back to its own project on a policy refusal.
        self.assertRaises(heat_exc.HTTPForbidden, self.heat.stacks.list,
                          global_tenant=True)

    def test_endpoint_filters(self):
        self.assertEqual('internalURL', self.client.filters['endpoint_type'])
        self.assertEqual('RegionOne', self.client.filters['region'])
        self.assertEqual('orchestration', self.client.filters['service'])


class TempestComputeTest(testtools.TestCase):

    def test_server_topology_as_the_openstack_client_shows_it(self):
        servers = servers_client.ServersClient(
            fake_auth_provider.FakeAuthProvider(
                fake_base_url='https://nova.example.com/v2.1'),
            'compute', 'RegionOne')
        servers.http_obj = ScriptedHttp(
            (200, {'server': {'id': 'id1', 'name': 'vnf1', 'flavor': {
                'extra_specs': {'hw:cpu_policy': 'dedicated'}}}}),
            (200, {'nodes': [{'host_node': 0, 'cpu_pinning': {'0': 2}}],
                   'pagesize_kb': 2048}))
        shown = clients.TempestCompute(servers).server_topology('id1')
        self.assertEqual([('GET', 'servers/id1'),
                          ('GET', 'servers/id1/topology')],
                         [r[:2] for r in servers.http_obj.requests])
        self.assertEqual('2.78', servers.http_obj.headers[
            'X-OpenStack-Nova-API-Version'])
        # What epa_audit reads: the flavor's specs and the topology.
        self.assertEqual('dedicated',
                         shown['flavor']['extra_specs']['hw:cpu_policy'])
        self.assertEqual(2048, shown['topology']['pagesize_kb'])

    def test_image_properties_are_glances_hw_keys(self):
        images = mock.Mock()
        images.show_image.return_value = {
            'id': 'img', 'name': 'epa-chain-vnf', 'os_distro': 'debian',
            'hw_mem_page_size': '2MB', 'hw_vif_multiqueue_enabled': True}
        compute = clients.TempestCompute(mock.Mock(), images)
        self.assertEqual({'hw_mem_page_size': '2MB',
                          'hw_vif_multiqueue_enabled': 'True'},
                         compute.image_properties('img'))
        images.show_image.assert_called_once_with('img')
        # Without an images client the flavor alone is what was asked.
        self.assertEqual({}, clients.TempestCompute(
            mock.Mock()).image_properties('img'))

    def test_hard_reboot_or_why_not(self):
        servers = mock.Mock()
        compute = clients.TempestCompute(servers)
        compute.hard_reboot('id1')
        servers.reboot_server.assert_called_once_with('id1', type='HARD')
        servers.reboot_server.side_effect = lib_exc.Conflict('in task_state')
        raised = self.assertRaises(readiness.RebootFailed,
                                   compute.hard_reboot, 'id1')
        self.assertIn('in task_state', str(raised))

    def test_console_not_there_yet_is_console_unavailable(self):
        servers = mock.Mock()
        compute = clients.TempestCompute(servers)
        for error in (lib_exc.Conflict('Instance is building'),
                      lib_exc.NotFound('console log not found')):
            servers.get_console_output.side_effect = error
            raised = self.assertRaises(readiness.ConsoleUnavailable,
                                       compute.console_output, 'id1')
            self.assertIn(str(error.status_code), str(raised))
        servers.get_console_output.side_effect = None
        servers.get_console_output.return_value = {'output': 'EPA-CHAIN'}
        self.assertEqual('EPA-CHAIN', compute.console_output('id1'))
        servers.get_console_output.side_effect = lib_exc.Forbidden()
        self.assertRaises(lib_exc.Forbidden, compute.console_output, 'id1')
