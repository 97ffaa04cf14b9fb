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

"""The parked VNFs' PROX tasks: started when traffic is due, parked after.

A PROX VNF of a stack created with vnf_tasks_at_ready parked (chain.yaml's
default) prints READY with its engine initialised and its forwarding
tasks stopped, and relays PROX's control socket on its management address
(the stack's vnf_control_endpoints output). A READY VNF whose tasks poll
takes a whole host CPU from the guests still booting and from the
vSwitch's PMD; parked it takes a few per cent. `running` starts every
VNF's tasks (PROX's `start all`, which returns once the cores obey),
yields, and parks them again (`stop all`) however the block ends. Every
action is recorded with its time and outcome: the proof and the results
say which tasks ran when.

A VNF that cannot be started fails the block before any traffic (frames
sent to a parked VNF are lost, and the loss would read as the chain's);
one that cannot be parked again is recorded and logged, not raised: the
measurement it follows stands.
"""

import contextlib
import dataclasses
import datetime
import logging
import typing

from epa_chain.prox import client as prox_client

LOG = logging.getLogger(__name__)
OUTPUT = 'vnf_control_endpoints'


class TasksError(RuntimeError):
    """A parked VNF's tasks could not be started: nothing would forward."""


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """Where one VNF's PROX control socket listens."""

    node: str
    host: str
    port: int


def endpoints(stack_outputs):
    """The parked VNFs of a stack, from its vnf_control_endpoints output.

    Empty for a stack whose VNFs forward from READY on (running, testpmd)
    or that predates the output.
    """
    found = []
    for node, value in sorted((stack_outputs.get(OUTPUT) or {}).items()):
        if isinstance(value, dict) and value.get('host'):
            found.append(Endpoint(node, str(value['host']),
                                  int(value['port'])))
    return tuple(found)


def of_chains(parked_per_chain):
    """Every chain's parked VNFs as one tuple, chain K's named chainK-<node>.

    `parked_per_chain`: each chain's endpoints(), in chain order. Chain 0
    keeps the names a one-chain stack has; the others would repeat them
    in the results' record of which tasks ran when.
    """
    return tuple(
        endpoint if index == 0 else dataclasses.replace(
            endpoint, node='chain%d-%s' % (index, endpoint.node))
        for index, parked in enumerate(parked_per_chain)
        for endpoint in parked)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec='milliseconds')


class Tasks:
    """Start and park the tasks of parked VNFs; `events` says when."""

    def __init__(self, found, client_factory=prox_client.ProxClient,
                 now=_now, log=LOG.info):
        self.endpoints = tuple(found)
        self.client_factory = client_factory
        self.now = now
        self.log = log
        self.events = []

    def _each(self, action):
        failures = []
        for endpoint in self.endpoints:
            event = {'node': endpoint.node, 'action': action,
                     'at': self.now(), 'error': None}
            try:
                with self.client_factory(endpoint.host,
                                         endpoint.port) as client:
                    getattr(client, 'start' if action == 'started'
                            else 'stop')()
            except (prox_client.ProxError, OSError) as exc:
                event['error'] = str(exc)
                failures.append('%s (%s:%d): %s' % (
                    endpoint.node, endpoint.host, endpoint.port, exc))
            self.events.append(event)
        return failures

    def start(self):
        failures = self._each('started')
        if failures:
            raise TasksError('the parked VNF tasks could not be started, '
                             'so nothing would forward: %s' % '; '.join(
                                 failures))
        if self.endpoints:
            self.log('VNF tasks started: %s' % ', '.join(
                e.node for e in self.endpoints))

    def park(self):
        failures = self._each('parked')
        for failure in failures:
            LOG.warning('VNF tasks not parked again: %s', failure)
        if self.endpoints and not failures:
            self.log('VNF tasks parked: %s' % ', '.join(
                e.node for e in self.endpoints))


@contextlib.contextmanager
def running(tasks):
    """`tasks` started for the block, parked after it, however it ends."""
    try:
        tasks.start()
        yield tasks
    finally:
        tasks.park()


def record(tasks: typing.Optional[Tasks]):
    """The results' and proof's account: which VNF's tasks ran when.

    The events are the live list: a document written later holds the
    actions taken until then.
    """
    if tasks is None:
        return None
    return {'parked_at_ready': [e.node for e in tasks.endpoints],
            'events': tasks.events}
