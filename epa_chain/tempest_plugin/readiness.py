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

"""Wait until every chain node says on its console that it forwards.

The VNF runtime in the images prints one line to /dev/console once its
engine runs: `EPA-CHAIN READY <name> <engine>`, or `EPA-CHAIN FAILED
<name>: <reason>` (interfaces.md section 4). A server that is ACTIVE is
not yet forwarding: DPDK binds its NICs and starts PROX or testpmd after
boot, so the benchmark reads the consoles through the compute API.
"""

import dataclasses
import logging
import time

from epa_chain.vnf_runtime import readiness as node_readiness

LOG = logging.getLogger(__name__)

CONSOLE_TAIL_LINES = 10


class NotReadyError(RuntimeError):
    """A node failed, or did not report ready in time."""


@dataclasses.dataclass(frozen=True)
class Node:
    """A server the benchmark waits for, and the engine it must run."""

    server_id: str
    name: str
    engine: str


def expected_nodes(stack_name, chain_length, vnf_engine, server_names):
    """Nodes to wait for, from the stack's servers {server_id: name}.

    chain.yaml names servers <stack>-vnf1.. and <stack>-generator, and the
    runtime reports that name; a missing server is an error here rather
    than a timeout later.
    """
    wanted = {'%s-vnf%d' % (stack_name, i): vnf_engine
              for i in range(1, chain_length + 1)}
    wanted['%s-generator' % stack_name] = 'prox'
    by_name = {name: server_id for server_id, name in server_names.items()}
    missing = sorted(set(wanted) - set(by_name))
    if missing:
        raise NotReadyError(
            'stack %s has no server named %s (servers: %s)' % (
                stack_name, ', '.join(missing),
                ', '.join(sorted(by_name)) or 'none'))
    return [Node(by_name[name], name, engine)
            for name, engine in sorted(wanted.items())]


def wait_until_ready(nodes, compute, timeout, interval=10.0,
                     clock=time.monotonic, sleep=time.sleep):
    """Poll consoles until every node is ready; raise NotReadyError.

    `compute` provides server_status(server_id) -> (status, fault) and
    console_output(server_id) -> str.
    """
    deadline = clock() + timeout
    pending = {node.server_id: node for node in nodes}
    consoles = {}
    while True:
        for server_id, node in list(pending.items()):
            status, fault = compute.server_status(server_id)
            if status == 'ERROR':
                raise NotReadyError('%s (%s) is in ERROR: %s' % (
                    node.name, server_id, fault or 'no fault recorded'))
            consoles[server_id] = compute.console_output(server_id)
            state = node_readiness.console_state(consoles[server_id],
                                                 node.name)
            if state is None:
                continue
            kind, detail = state
            if kind == 'failed':
                raise NotReadyError('%s reports EPA-CHAIN FAILED: %s'
                                    % (node.name, detail))
            if detail != node.engine:
                raise NotReadyError(
                    '%s runs %s, but %s was asked for ([epa_chain] '
                    'vnf_engine, or the image\'s runtime)' % (
                        node.name, detail, node.engine))
            LOG.info('%s ready (%s)', node.name, detail)
            del pending[server_id]
        if not pending:
            return
        if clock() >= deadline:
            raise NotReadyError(
                'not ready after %d s ([epa_chain] vnf_ready_timeout): %s'
                % (timeout, '; '.join(
                    '%s, console ends: %s' % (
                        node.name, _tail(consoles.get(server_id)))
                    for server_id, node in sorted(pending.items()))))
        sleep(interval)


def _tail(text):
    lines = (text or '').strip().splitlines()[-CONSOLE_TAIL_LINES:]
    return ' | '.join(line.strip() for line in lines) or '(empty)'
