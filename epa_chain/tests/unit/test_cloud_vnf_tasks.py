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

"""The parked VNFs' tasks: started for the traffic, parked however it ends.

Against the replay of a real PROX control socket (prox_replay) where the
protocol matters, and a recording stand-in where only the order does.
"""

import testtools

from epa_chain.cloud import vnf_tasks
from epa_chain.prox import client as prox_client
from epa_chain.tests.unit import prox_replay

OUTPUTS = {'vnf_control_endpoints': {
    'vnf2': {'host': '10.0.0.7', 'port': 8474},
    'vnf1': {'host': '10.0.0.6', 'port': 8474},
    'vnf3': None}}


class Recording:
    """A ProxClient stand-in; `refuse` hosts fail to connect."""

    calls = []
    refuse = ()

    def __init__(self, host, port):
        self.host = host

    def __enter__(self):
        if self.host in self.refuse:
            raise prox_client.ProxConnectionError(
                'connect', 'cannot reach PROX at %s:8474' % self.host)
        return self

    def __exit__(self, *_):
        pass

    def start(self):
        self.calls.append(('start', self.host))

    def stop(self):
        self.calls.append(('stop', self.host))


class TasksTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        Recording.calls = []
        Recording.refuse = ()
        self.clock = iter('t%d' % i for i in range(100))

    def tasks(self, outputs=OUTPUTS):
        return vnf_tasks.Tasks(vnf_tasks.endpoints(outputs),
                               client_factory=Recording,
                               now=lambda: next(self.clock),
                               log=lambda line: None)

    def test_only_vnfs_with_an_endpoint_in_chain_order(self):
        self.assertEqual(
            (vnf_tasks.Endpoint('vnf1', '10.0.0.6', 8474),
             vnf_tasks.Endpoint('vnf2', '10.0.0.7', 8474)),
            vnf_tasks.endpoints(OUTPUTS))
        self.assertEqual((), vnf_tasks.endpoints({}))

    def test_started_for_the_block_and_parked_after_it(self):
        tasks = self.tasks()
        with vnf_tasks.running(tasks):
            self.assertEqual([('start', '10.0.0.6'), ('start', '10.0.0.7')],
                             Recording.calls)
        self.assertEqual([('stop', '10.0.0.6'), ('stop', '10.0.0.7')],
                         Recording.calls[2:])
        self.assertEqual(
            [('vnf1', 'started', 't0'), ('vnf2', 'started', 't1'),
             ('vnf1', 'parked', 't2'), ('vnf2', 'parked', 't3')],
            [(e['node'], e['action'], e['at']) for e in tasks.events])
        self.assertEqual(['vnf1', 'vnf2'],
                         vnf_tasks.record(tasks)['parked_at_ready'])

    def test_parked_again_when_the_block_fails(self):
        tasks = self.tasks()

        def measure():
            with vnf_tasks.running(tasks):
                raise RuntimeError('the generator went away')

        self.assertRaises(RuntimeError, measure)
        self.assertEqual(['start', 'start', 'stop', 'stop'],
                         [call for call, _ in Recording.calls])

    def test_a_vnf_that_cannot_be_started_fails_before_any_traffic(self):
        Recording.refuse = ('10.0.0.7',)
        tasks = self.tasks()
        ran = []

        def measure():
            with vnf_tasks.running(tasks):
                ran.append('traffic')

        error = self.assertRaises(vnf_tasks.TasksError, measure)
        self.assertIn('vnf2 (10.0.0.7:8474): ', str(error))
        self.assertIn('cannot reach PROX at 10.0.0.7:8474', str(error))
        self.assertEqual([], ran)
        # vnf1 had started: parked again.
        self.assertEqual([('start', '10.0.0.6'), ('stop', '10.0.0.6')],
                         Recording.calls)
        self.assertIn('cannot reach PROX', tasks.events[1]['error'])

    def test_one_that_cannot_be_parked_is_recorded_not_raised(self):
        tasks = self.tasks()
        with vnf_tasks.running(tasks):
            Recording.refuse = ('10.0.0.6',)
        parked = [e for e in tasks.events if e['action'] == 'parked']
        self.assertIn('cannot reach PROX', parked[0]['error'])
        self.assertIsNone(parked[1]['error'])

    def test_nothing_to_do_for_vnfs_that_run_at_ready(self):
        tasks = self.tasks({'vnf_control_endpoints': {'vnf1': None}})
        with vnf_tasks.running(tasks):
            pass
        self.assertEqual([], Recording.calls)
        self.assertEqual([], tasks.events)


class OnTheProtocolTest(testtools.TestCase):

    def test_start_all_then_stop_all_each_confirmed_by_prox(self):
        transcript = prox_replay.Transcript()
        silent = {'start all', 'stop all'}
        server = prox_replay.ReplayServer(
            lambda line: prox_replay.Reply() if line in silent else None,
            transcript.version_reply)
        with server:
            tasks = vnf_tasks.Tasks(
                [vnf_tasks.Endpoint('vnf1', '127.0.0.1', server.port)],
                log=lambda line: None)
            with vnf_tasks.running(tasks):
                self.assertIn('start all', server.received)
                self.assertNotIn('stop all', server.received)
        # Each followed by PROX's answer to `version`: it was executed.
        commands = [line for line in server.received if line != 'version']
        self.assertEqual(['start all', 'stop all'], commands)
        after = server.received.index('start all') + 1
        self.assertEqual('version', server.received[after])
        self.assertEqual([None, None], [e['error'] for e in tasks.events])
        self.assertEqual([], server.unexpected)
