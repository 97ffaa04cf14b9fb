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

A server that is ACTIVE is not yet forwarding: DPDK binds its NICs and
starts PROX or testpmd after boot, then the runtime prints its verdict
line (chain/readiness.py). The benchmark reads the consoles through the
compute API with the wait the local bed uses too. A guest whose kernel
stalls before READY is hard-rebooted once (StallRecovery).
"""

import dataclasses
import datetime
import logging
import re
import time

from epa_chain.chain import readiness as node_readiness

LOG = logging.getLogger(__name__)

NotReadyError = node_readiness.NotReadyError


#: A guest kernel's own words that it stopped making progress.
KERNEL_STALL_RE = re.compile(
    r'BUG: soft lockup|rcu: INFO: \S+ (?:self-)?detected stall'
    r'|Kernel panic - not syncing')
#: Seconds a guest may go on after its kernel first reported a stall
#: before it is rebooted: a vCPU starved under emulation can print one
#: and still boot.
STALL_GRACE_S = 30.0


class ConsoleUnavailable(Exception):
    """The compute API has no console output for the server yet.

    Nova answers 409 while a server builds and 404 before its console log
    exists: the wait retries until its timeout.
    """


class RebootFailed(Exception):
    """The compute API refused or failed a hard reboot."""


@dataclasses.dataclass(frozen=True)
class Node:
    """A server the benchmark waits for, and the engine it must run."""

    server_id: str
    name: str
    engine: str


def expected_nodes(topology, server_names):
    """Nodes to wait for, from the resolved stack's topology.

    Every server of the resolved stack (chain/topology.py) reports under
    the name its configuration gives, which is its Nova name;
    `server_names` maps the created stack's servers {server_id: name}.
    A missing server is an error here rather than a timeout later.
    """
    wanted = {node.config.name: node.config.engine
              for node in topology.nodes if node.config}
    by_name = {name: server_id for server_id, name in server_names.items()}
    missing = sorted(set(wanted) - set(by_name))
    if missing:
        raise NotReadyError(
            'the stack has no server named %s (servers: %s)' % (
                ', '.join(missing), ', '.join(sorted(by_name)) or 'none'))
    return [Node(by_name[name], name, engine)
            for name, engine in sorted(wanted.items())]


def kernel_stall(text):
    """The first console line where the guest's kernel says it stalled."""
    for line in (text or '').splitlines():
        if KERNEL_STALL_RE.search(line):
            return ' '.join(line.split())
    return None


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


class StallRecovery:
    """Hard-reboot, once, a guest whose kernel stalled before its READY.

    Seen under TCG on a 2-core host (about one boot in forty): a vCPU
    spins for good 40 s into the boot, the kernel prints soft-lockup and
    RCU-stall reports for as long as it runs, and its QEMU takes a host
    CPU from the guests still booting. The same server booted again is
    READY in seconds. Once per server: a stall that comes back times out
    as any guest that is not ready. `restarts` {name: {reason,
    rebooted_at}} go into the boot record.
    """

    def __init__(self, compute, say=LOG.warning, grace_s=STALL_GRACE_S,
                 clock=time.monotonic, utcnow=_utcnow):
        self.restarts = {}
        self._compute = compute
        self._say = say
        self._grace_s = grace_s
        self._clock = clock
        self._utcnow = utcnow
        self._stalled_since = {}

    def check(self, node, text):
        """Reboot `node` if its console has shown a stall for grace_s.

        `text`: the console of a node that has no verdict yet (the wait's
        on_pending).
        """
        reason = kernel_stall(text)
        if reason is None or node.name in self.restarts:
            return
        since = self._stalled_since.setdefault(node.name, self._clock())
        if self._clock() - since < self._grace_s:
            return
        self._say('%s: its kernel stalled before READY (console: %s); '
                  'hard-rebooting it once' % (node.name, reason))
        try:
            self._compute.hard_reboot(node.server_id)
        except RebootFailed as exc:
            raise NotReadyError('%s stalled before READY (%s) and its hard '
                                'reboot failed: %s' % (node.name, reason,
                                                       exc), [node])
        self.restarts[node.name] = {
            'reason': reason, 'rebooted_at': self._utcnow().isoformat()}


def wait_until_ready(nodes, compute, timeout, interval=10.0,
                     clock=time.monotonic, sleep=time.sleep, recovery=None):
    """Poll consoles until every node is ready; raise NotReadyError.

    `compute` provides server_status(server_id) -> (status, fault) and
    console_output(server_id) -> str, raising ConsoleUnavailable while
    the server has none yet. Returns {name: boot timeline or None}.
    `recovery` (a StallRecovery) reads every console without a verdict
    and may call compute.hard_reboot(server_id).

    Each question may start an `openstack` client (seconds of CPU, on the
    host the guests boot on under emulation): a round asks for one
    console not yet READY (a stack's guests boot together), and a
    server's status only while its console is missing, empty or has not
    changed since the last round (a server in ERROR prints nothing more).
    """
    seen = {}

    def poll(node):
        try:
            text = compute.console_output(node.server_id)
        except ConsoleUnavailable as exc:
            # Shown as the console's tail if the wait times out.
            text = '(no console output yet: %s)' % exc
            stalled = True
        else:
            stalled = not text or text == seen.get(node.server_id)
        seen[node.server_id] = text
        if stalled:
            status, fault = compute.server_status(node.server_id)
            if status == 'ERROR':
                # No console to read: the server never ran.
                return '', '(%s) is in ERROR: %s' % (
                    node.server_id, fault or 'no fault recorded')
        return text, None

    return node_readiness.wait_until_ready(
        nodes, poll, timeout, interval=interval, clock=clock, sleep=sleep,
        on_ready=lambda node: LOG.info('%s ready (%s)', node.name,
                                       node.engine),
        engine_hint='([epa_chain] vnf_engine, or the image\'s runtime)',
        timeout_hint='([epa_chain] vnf_ready_timeout)',
        one_pending_per_round=True,
        on_pending=recovery.check if recovery is not None else None)


LAUNCHED_AT = 'OS-SRV-USG:launched_at'


def _launched(server):
    """When Nova started the server (its launched_at, UTC), or None."""
    return _utc((server or {}).get(LAUNCHED_AT))


def _utc(value):
    """An ISO 8601 time as an aware datetime (UTC if it names no zone)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(
        tzinfo=datetime.timezone.utc)


def boot_record(timelines, servers, restarts=None):
    """{name: seconds per boot phase} of the nodes that printed a timeline.

    `servers` are {name: the server as the compute API shows it}: its
    launched_at gives the firmware phase (before the guest's kernel). The
    phases add up to `ready_s`, the seconds from the guest's start to its
    READY (from its kernel's start where launched_at is unknown). A guest
    in `restarts` (StallRecovery's) started again at its reboot, and its
    phases say so under `restart`.
    """
    record = {}
    restarts = restarts or {}
    for name, timeline in sorted((timelines or {}).items()):
        if not timeline:
            continue
        restart = restarts.get(name)
        started = (_utc(restart['rebooted_at']) if restart
                   else _launched(servers.get(name)))
        phases = node_readiness.boot_phases(timeline, started)
        phases['ready_s'] = round(sum(v for v in phases.values()
                                      if v is not None), 2)
        if restart:
            phases['restart'] = dict(restart)
        record[name] = phases
    return record


def describe_boot(record):
    """One line per guest: where its seconds went."""
    order = ('firmware',) + tuple(p for p, _ in node_readiness.BOOT_PHASES)

    def seconds(value):
        return '?' if value is None else '%.1f' % value

    lines = []
    for name, phases in sorted(record.items()):
        restart = phases.get('restart')
        lines.append('%s READY %.1f s after its %s: %s%s' % (
            name, phases['ready_s'], 'reboot' if restart else 'start',
            ', '.join('%s %s' % (phase, seconds(phases[phase]))
                      for phase in order),
            '; hard-rebooted at %s after its kernel stalled (%s)' % (
                restart['rebooted_at'], restart['reason'])
            if restart else ''))
    return lines
