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

"""Whether a chain node forwards: its console line, and waiting for it.

The VNF runtime in the images prints one verdict line on the console
(/dev/console: the serial log Nova's console output returns) once its
engine runs, or once it gives up (interfaces.md section 4):

    EPA-CHAIN READY <name> <engine>
    EPA-CHAIN FAILED <name>: <reason>

and, just before READY in a guest, where its boot went (seconds since
the kernel started, vnf_runtime/boot_timeline.py):

    EPA-CHAIN BOOT <name> initramfs_at=S init_at=S runtime_at=S
        ready_at=S kernel_started=ISO-8601

Whatever waits for nodes reads those consoles with `wait_until_ready`:
the Tempest plugin through the compute API, the local bed from files.
"""

import dataclasses
import datetime
import re
import time

READY_RE = re.compile(r'EPA-CHAIN READY (?P<name>\S+) (?P<engine>\S+)')
FAILED_RE = re.compile(r'EPA-CHAIN FAILED (?P<name>[^\s:]+): (?P<reason>.*)')
BOOT_RE = re.compile(r'EPA-CHAIN BOOT (?P<name>\S+) (?P<fields>.*)')
BOOT_MOMENTS = ('initramfs_at', 'init_at', 'runtime_at', 'ready_at')
#: The phases, each ending at a moment of the timeline.
BOOT_PHASES = (('kernel', 'initramfs_at'), ('initramfs', 'init_at'),
               ('init', 'runtime_at'), ('runtime', 'ready_at'))
CONSOLE_TAIL_LINES = 10


def ready_line(name, engine):
    return 'EPA-CHAIN READY %s %s' % (name, engine)


def failed_line(name, reason):
    return 'EPA-CHAIN FAILED %s: %s' % (name, ' '.join(str(reason).split()))


def boot_line(name, timeline):
    """The console line of a timeline (boot_timeline.read's fields)."""
    return 'EPA-CHAIN BOOT %s %s' % (name, ' '.join(
        '%s=%s' % (key, '-' if timeline.get(key) is None else
                   timeline[key])
        for key in BOOT_MOMENTS + ('kernel_started',)))


def boot_timeline(text, name):
    """The last boot timeline `name` printed, or None.

    Moments are seconds since the kernel started (None: unknown);
    kernel_started is the guest's wall clock of that start.
    """
    found = None
    for line in (text or '').splitlines():
        match = BOOT_RE.search(line)
        if not match or match.group('name') != name:
            continue
        fields = dict(item.partition('=')[::2]
                      for item in match.group('fields').split())
        timeline = {'kernel_started': fields.get('kernel_started')}
        try:
            for key in BOOT_MOMENTS:
                value = fields.get(key, '-')
                timeline[key] = None if value == '-' else float(value)
        except ValueError:
            continue            # a garbled line: not a timeline
        found = timeline
    return found


def boot_phases(timeline, launched_at=None):
    """Seconds per phase of a timeline, and firmware if the start is known.

    `launched_at`: when the host started the guest (a datetime, e.g.
    Nova's launched_at); firmware and boot loader are the time from it
    to the kernel's start, by the guest's clock (seconds apart at most).
    A phase whose start is unknown is folded into the next one.
    """
    phases, previous = {}, 0.0
    for phase, moment in BOOT_PHASES:
        at = timeline.get(moment)
        if at is None:
            phases[phase] = None
            continue
        phases[phase] = round(max(at - previous, 0.0), 2)
        previous = at
    phases['firmware'] = None
    started = timeline.get('kernel_started')
    if launched_at is not None and started:
        try:
            kernel = datetime.datetime.fromisoformat(started)
            phases['firmware'] = round(max(
                (kernel - launched_at).total_seconds(), 0.0), 2)
        except (TypeError, ValueError):
            pass
    return phases


def console_state(text, name):
    """('ready', engine), ('failed', reason) or None, from a console log.

    The last line about `name` wins: a runtime restarted after a failure
    may report ready later.
    """
    state = None
    for line in (text or '').splitlines():
        ready = READY_RE.search(line)
        if ready and ready.group('name') == name:
            state = ('ready', ready.group('engine'))
            continue
        failed = FAILED_RE.search(line)
        if failed and failed.group('name') == name:
            state = ('failed', failed.group('reason').strip())
    return state


@dataclasses.dataclass(frozen=True)
class Node:
    """A node to wait for: the name it reports, the engine it must run."""

    name: str
    engine: str


class NotReadyError(RuntimeError):
    """A node failed, cannot report any more, or was not ready in time.

    `nodes` are the nodes the error is about.
    """

    def __init__(self, message, nodes=()):
        super().__init__(message)
        self.nodes = list(nodes)


def wait_until_ready(nodes, poll, timeout, interval=10.0,
                     clock=time.monotonic, sleep=time.sleep,
                     on_ready=None, engine_hint='', timeout_hint='',
                     one_pending_per_round=False, on_pending=None):
    """Poll every node's console until each says READY with its engine.

    `nodes` have a `name` (as the node reports itself) and the `engine` it
    must run. `poll(node)` returns (console text, problem): the problem is
    None, or why the node can never report (a server in ERROR, a runtime
    that exited), and counts only while the console has no verdict.
    `on_ready(node)` is called once per node, `on_pending(node, text)`
    with each console read that has no verdict yet (it may act on the
    node, or raise NotReadyError). NotReadyError on the first failure, or
    when `timeout` seconds pass; the hints (which option to look at) are
    added to those messages. Returns {name: the boot
    timeline the node printed, or None} (boot_timeline). With
    `one_pending_per_round`, a round ends at the first node not yet
    ready: for polls that cost the CPU the nodes boot with.
    """
    deadline = clock() + timeout
    pending = list(nodes)
    consoles = {}
    timelines = {}
    while True:
        for node in list(pending):
            text, problem = poll(node)
            consoles[node.name] = text
            state = console_state(text, node.name)
            if state is None:
                if problem:
                    raise NotReadyError('%s %s' % (node.name, problem),
                                        [node])
                if on_pending:
                    on_pending(node, text)
                if one_pending_per_round:
                    break
                continue
            _check_verdict(node, state, engine_hint)
            pending.remove(node)
            timelines[node.name] = boot_timeline(text, node.name)
            if on_ready:
                on_ready(node)
        if not pending:
            return timelines
        if clock() >= deadline:
            raise _timed_out(timeout, timeout_hint, pending, consoles)
        sleep(interval)


def _check_verdict(node, state, engine_hint):
    """NotReadyError unless the console's verdict is READY, as asked."""
    kind, detail = state
    if kind == 'failed':
        raise NotReadyError('%s reports EPA-CHAIN FAILED: %s'
                            % (node.name, detail), [node])
    if detail != node.engine:
        raise NotReadyError('%s runs %s, but %s was asked for%s' % (
            node.name, detail, node.engine, _hint(engine_hint)), [node])


def _timed_out(timeout, timeout_hint, pending, consoles):
    """The timeout's error: each pending node's console tail."""
    return NotReadyError('not ready after %d s%s: %s' % (
        timeout, _hint(timeout_hint), '; '.join(
            '%s, console ends: %s' % (node.name, tail(
                consoles[node.name]) if node.name in consoles
                else '(not asked: an earlier node was not ready)')
            for node in sorted(pending, key=lambda n: n.name))), pending)


def tail(text, lines=CONSOLE_TAIL_LINES):
    """The last lines of a console, on one line."""
    found = (text or '').strip().splitlines()[-lines:]
    return ' | '.join(line.strip() for line in found) or '(empty)'


def _hint(text):
    return ' %s' % text if text else ''
