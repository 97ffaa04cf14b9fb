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

"""The chain's steps on a cloud, each written once.

The Tempest scenario (benchmark.ChainBenchmark), `epa-chain prove` and
`epa-chain measure` run these steps, each choosing its own:

check_created   the one resolve-and-check on what Heat holds for a stack.
preflight       can the cloud host the resolved stack (cloud/preflight.py).
placed          where Nova put each server (cloud/placement.py).
wait_ready      every node's EPA-CHAIN READY, and where its boot went.
audit           the EPA audit of the booted chain (cloud/epa_audit.py).
hop_checks      a low-rate trial per direction, optionally with prove's
                per-hop Open vSwitch counters (ovs_observer).
vnf_tasks       the parked VNFs' tasks, started for the traffic only
                (cloud/vnf_tasks.py: Tasks, running).
measure_case    one campaign, its loss split by hop, its KPI verdicts.

prove() and measure() are those two commands' choice of steps; creating
and deleting the stack are the scenario's (stack.py). Every step says
what it does through `say` (a line: stderr for a command, the log for
the scenario).
"""

import dataclasses
import importlib.util
import logging
import time
import typing

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import readiness as node_readiness
from epa_chain.cloud import epa_audit
from epa_chain.cloud import hop_check
from epa_chain.cloud import openstack_cli
from epa_chain.cloud import ovs_hops
from epa_chain.cloud import placement
from epa_chain.cloud import preflight as preflight_mod
from epa_chain.cloud import proof as proof_doc
from epa_chain.cloud import readiness
from epa_chain.cloud import stack_needs
from epa_chain.cloud import vnf_tasks
from epa_chain import generators
from epa_chain.measurement import campaign
from epa_chain.measurement import hop_loss
from epa_chain.measurement import repeats
from epa_chain.measurement import trial
from epa_chain.measurement import verdicts
from epa_chain.prox import generator as prox_generator_mod
from epa_chain.validation import findings as findings_mod

LOG = logging.getLogger(__name__)


class StepError(RuntimeError):
    """A step cannot run on the stack (e.g. it has no generator)."""


class NothingMeasured(RuntimeError):
    """measure stopped before its first trial; the message names why."""


@dataclasses.dataclass(frozen=True)
class HopSettings:
    """The hop check's load, the loss it allows and its attempts."""

    load_fraction: float = hop_check.LOAD_FRACTION
    max_loss_ratio: float = hop_check.MAX_LOSS_RATIO
    attempts: int = hop_check.ATTEMPTS

    def record(self, checks):
        """The hop check as the results document's cloud.hop_check."""
        return hop_check.record(checks, self.load_fraction,
                                self.max_loss_ratio, self.attempts)


@dataclasses.dataclass(frozen=True)
class Ready:
    """wait_ready's account: each guest's boot, and the wait's seconds."""

    boot: dict
    ready_after_s: float


def one_line(text):
    # The client's stderr, a console log: many lines; an error is one.
    return ' '.join(str(text).split())


def prox_generator(endpoint,
                   rate_tolerance=prox_generator_mod.RATE_TOLERANCE):
    """The PROX generator behind the stack's generator_control_endpoint."""
    return generators.create('prox', host=endpoint['host'],
                             port=int(endpoint['port']),
                             rate_tolerance=rate_tolerance)


def _by_name(shown):
    return {server['name']: server for server in shown.values()}


# -- resolve-and-check, preflight ------------------------------------------

def _heat_missing():
    return importlib.util.find_spec('heat') is None


def check_created(cli, stack, shown, say):
    """The created stack resolved and checked offline, or None; findings.

    The one resolve-and-check (validation/check.py) on the template,
    environment and files Heat holds for the stack: the chain's nodes
    and engines come from what Heat resolved, and what the NFV rules
    find is said, as warnings: the stack exists, its frames are the
    verdict. Returns (checked, the findings shown as dicts, or None
    when unchecked): without Heat's engine (epa-chain[validation]), or
    when Heat does not give the files, the chain is read from the
    stack's outputs and parameters, and that is said.
    """
    if _heat_missing():
        say('note: the stack is not checked (Heat\'s engine is not '
            'installed: pip install \'epa-chain[validation]\'); its '
            'chain is read from its outputs')
        return None, None
    from epa_chain.validation import check

    try:
        checked, found = _resolve_and_check(cli, stack, shown)
    except (openstack_cli.CLIError, ValueError) as exc:
        # LoadError is a ValueError, as is JSON the client garbled.
        say('note: the stack is not checked (%s); its chain is read '
            'from its outputs' % one_line(exc))
        return None, None
    except check.StackRefused as exc:
        checked, found = exc.resolved, exc.findings
    shown_findings = [f for f in found if f.severity !=
                      findings_mod.SKIPPED]
    for finding in shown_findings:
        say('warning: %s' % one_line(finding))
    return checked, [f.as_dict() for f in shown_findings]


def _resolve_and_check(cli, stack, shown):
    """check_stack on what Heat holds: (checked, its findings)."""
    from epa_chain.hot import files
    from epa_chain.validation import check

    name = shown.name or stack
    template_set = files.from_heat(name, *cli.created_from(stack))
    checked = check.check_stack(template_set, stack_name=name)
    return checked, checked.findings


def refusal_hint(cli, stack, shown):
    """Why Nova found no host, as preflight sees it now; '' if unknown.

    For a stack Nova refused ("No valid host was found") without a hard
    placement policy to blame: the capacity blockers preflight finds for
    the stack Heat holds (no host reporting PCPU, say), with their fix.
    """
    if not any(message in (shown.reason or '')
               for message in placement.NOVA_NO_HOST) or _heat_missing():
        return ''
    from epa_chain.cloud import cloud_answers
    from epa_chain.validation import check

    try:
        resolved = _resolve_and_check(cli, stack, shown)[0]
    except (openstack_cli.CLIError, ValueError):
        return ''
    except check.StackRefused as exc:
        # Refused by a rule, resolved by Heat: its needs are known.
        resolved = exc.resolved
    if resolved is None:
        return ''
    found = preflight_mod.check(stack_needs.needs_of(resolved),
                                cloud_answers.CloudView(cli))
    return '; '.join('preflight: %s; fix: %s' % (f.message, f.fix)
                     for f in found if f.check == 'capacity' and
                     f.verdict == preflight_mod.BLOCKS)


def preflight(resolved, answers, say=LOG.info):
    """StepError, nothing created, when the cloud cannot host the stack.

    The findings are said either way: what was checked, and what no
    API could show. `answers` None skips preflight.
    """
    if answers is None:
        return
    found = preflight_mod.check(stack_needs.needs_of(resolved), answers)
    gate = preflight_mod.gate(found)
    if not gate.passed:
        # Blockers, or (failing closed) a check the cloud did not answer.
        raise StepError('preflight: %s (nothing created): %s\n%s' % (
            'the cloud cannot host the stack' if gate.blockers else
            'the cloud left checks unanswered', gate.summary(),
            preflight_mod.table(found)))
    say('Preflight:\n%s' % preflight_mod.table(found))


# -- ready and placement, audit --------------------------------------------

def placed(shown, parameters, say):
    """Where Nova put the servers (`shown`: {id: server}), said once."""
    where = placement.record(_by_name(shown), parameters)
    say('placement: %s' % placement.describe(where))
    return where


def wait_ready(compute, nodes, shown, timeout, say, interval=10.0,
               clock=time.monotonic, sleep=time.sleep):
    """Wait for every node's READY: a Ready, each guest's boot said.

    A guest whose kernel stalls on the way is hard-rebooted once
    (readiness.StallRecovery); its boot record says so.
    """
    started = clock()
    say('waiting for EPA-CHAIN READY from %s' % ', '.join(
        '%s (%s)' % (node.name, node.engine) for node in nodes))
    recovery = readiness.StallRecovery(compute, say=say, clock=clock)
    timelines = readiness.wait_until_ready(
        nodes, compute, timeout, interval=interval, clock=clock,
        sleep=sleep, recovery=recovery)
    ready_after_s = round(clock() - started, 1)
    boot = readiness.boot_record(timelines, _by_name(shown),
                                 recovery.restarts)
    for line in readiness.describe_boot(boot):
        say('boot: ' + line)
    return Ready(boot=boot, ready_after_s=ready_after_s)


def audit(compute, stack_name, server_ids, log=LOG):
    """The EPA audit of the booted chain, for every results file.

    Asked against given for each server (epa_audit): Nova's topology,
    and libvirt and Open vSwitch when the servers run on this host. A
    finding that invalidates a measurement is logged as a warning (on
    `log`, the caller's logger); the results carry the document (valid:
    false) and the report says so above its tables.
    """
    shown = {server_id: compute.server_topology(server_id)
             for server_id in server_ids}
    images = compute.image_properties
    try:
        found, host_checked = epa_audit.audit_servers(
            shown, image_properties=images)
    except epa_audit.HostError as error:
        log.warning('EPA audit: the host part could not be read (%s); '
                    'Nova\'s view alone', error)
        found, host_checked = epa_audit.audit_servers(
            shown, 'no', image_properties=images)
    document = epa_audit.document(stack_name, found, host_checked)
    log.info('%s', epa_audit.table(found))
    if not document['valid']:
        log.warning('EPA audit: %d finding(s) invalidate the measurement '
                    'of %s; its results are marked',
                    len(epa_audit.invalidating(found)), stack_name)
    return document


# -- hop check, VNF tasks, measure ----------------------------------------

def hop_checks(generator, directions, outputs, settings, watch=None,
               sleep=time.sleep):
    """Each direction's hop_check.DirectionCheck, yielded as it passes.

    `watch(direction)`: an observe hook for that direction's trials
    (ovs_observer), or None. The first direction that does not forward
    raises HopCheckError.
    """
    for direction in directions:
        observe = watch(direction) if watch else None
        (checked,) = hop_check.check(
            generator, [direction], outputs,
            load_fraction=settings.load_fraction,
            max_loss_ratio=settings.max_loss_ratio,
            attempts=settings.attempts, sleep=sleep,
            **({'observe': observe} if observe else {}))
        yield checked


def ovs_observer(direction, hops, max_loss_ratio, seen, say):
    """An observe hook for hop_checks: OVS counters around a trial.

    Each attempt is counted on its own; `seen` keeps the last attempt's
    counts for the proof. A hop short of the frames sent fails the
    attempt (HopCheckError).
    """
    def observe(run):
        before = ovs_hops.settled_snapshot()
        result = run()
        after = ovs_hops.settled_snapshot()
        counts = ovs_hops.hop_counts(hops, before, after)
        seen[:] = counts
        sent = [d for d in result.directions
                if d.direction == direction][0].tx_frames
        for count in counts:
            say('  %-9s %s:%s %s %d frames' % (
                direction, count.server, count.role, count.counted,
                count.frames))
        short = ovs_hops.first_short_hop(counts, sent, max_loss_ratio)
        if short is not None:
            raise hop_check.HopCheckError(
                '%s direction: %s:%s (%s) %s %d of the %d frames sent'
                % (direction, short.server, short.role, short.interface,
                   short.counted, short.frames, sent))
        return result
    return observe


def split_by_hop(generator, paths, live_counters):
    """`generator` splitting each lossy trial's loss along `paths`."""
    return hop_loss.CountingGenerator(generator, paths, live_counters)


def absent_ports(paths, read=None):
    """Why the ports of `paths` cannot be read here ('' when they can)."""
    try:
        counters = (read or ovs_hops.live_counters)()
    except ovs_hops.OVSError as error:
        return str(error)
    absent = sorted({port for hops in paths.values() for hop in hops
                     for port in (hop.in_port, hop.out_port)
                     if port is not None and port not in counters})
    if absent:
        return ('%s not on this host\'s Open vSwitch: run measure on the '
                'compute host that runs the chain' % ', '.join(absent))
    return ''


def measure_case(generator, plan, cloud, kpis, progress=LOG.info):
    """One campaign: its document and the table of a missed KPI or None.

    The document carries `cloud` (the chain's record) and, with a KPI
    file (measurement.verdicts), its verdicts.
    """
    document = repeats.run(
        lambda: campaign.run(generator, plan, progress=progress),
        plan.repeat, progress)
    document['cloud'] = cloud
    if kpis is None:
        return document, None
    judged = verdicts.judge(document, kpis)
    document['kpi'] = verdicts.record(judged, kpis.source)
    if verdicts.passed(judged):
        return document, None
    return document, verdicts.table(judged, kpis.source)


# -- prove -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ProveRequest:
    """`epa-chain prove` as typed, checked values."""

    stack: str
    ready_timeout: float
    hop: HopSettings = HopSettings()
    #: (host, port) of an external tester's PROX, or None
    generator_endpoint: typing.Optional[typing.Tuple[str, int]] = None
    #: skip the per-hop Open vSwitch counters
    no_ovs: bool = False


PROVE_ERRORS = (openstack_cli.CLIError, node_readiness.NotReadyError,
                StepError, hop_check.HopCheckError, ovs_hops.OVSError,
                trial.GeneratorError, vnf_tasks.TasksError, OSError)


def generator_endpoint(stack_outputs, request):
    """{host, port} of the generator: in the stack, or the tester's."""
    endpoint = stack_outputs.get('generator_control_endpoint')
    in_stack = bool(endpoint and endpoint.get('host'))
    if in_stack and request.generator_endpoint:
        raise StepError(
            'stack %s has its own generator (%s:%s): --generator-endpoint '
            'is for a stack with endpoints=external' % (
                request.stack, endpoint['host'], endpoint['port']))
    if in_stack:
        return endpoint
    if not request.generator_endpoint:
        raise StepError(
            'stack %s has no generator_control_endpoint (endpoints='
            'external): give the external tester\'s PROX control address '
            'with --generator-endpoint HOST:PORT (`epa-chain tester up` '
            'prints it)' % request.stack)
    host, port = request.generator_endpoint
    return {'host': host, 'port': port}


def expected_nodes(shown, stack, outputs, parameters, checked):
    """The stack's servers with the engine each must report.

    `shown` is {server id: `server show`} of the stack's servers. From the
    resolved stack's node configs when it was checked (as the Tempest
    benchmark does), else each chain's generator (the first hop of its
    forward chain) runs PROX and every VNF the stack's vnf_engine.
    """
    if not shown:
        raise node_readiness.NotReadyError('stack %s has no server' % stack)
    servers = {server_id: server['name']
               for server_id, server in shown.items()}
    if checked is not None:
        return readiness.expected_nodes(checked.topology, servers)
    generators = {(chain.get('forward_chain') or [{}])[0].get('server')
                  for chain in outputs.get('chains') or [outputs]}
    return [readiness.Node(server_id, name, 'prox' if name in generators
                           else parameters.get('vnf_engine', 'prox'))
            for server_id, name in sorted(servers.items(),
                                          key=lambda item: item[1])]


def created_stack(cli, stack):
    """The stack as the client shows it; CLIError unless it is created."""
    shown = cli.stack(stack)
    if shown.status != 'CREATE_COMPLETE':
        hint = placement.failure_hint(shown.parameters, shown.reason)
        hint = hint or refusal_hint(cli, stack, shown)
        raise openstack_cli.CLIError('stack %s is %s: %s%s' % (
            stack, shown.status, shown.reason,
            ' (%s)' % hint if hint else ''))
    return shown


def prove_direction(generator, direction, outputs, request, say):
    """The hop check of one direction, as its proof entry."""
    hops = outputs.get(hop_check.CHAIN_OUTPUTS[direction]) or []
    counts = None if request.no_ovs else []
    watch = None if request.no_ovs else (
        lambda name: ovs_observer(name, hops, request.hop.max_loss_ratio,
                                  counts, say))
    (checked,) = hop_checks(generator, [direction], outputs, request.hop,
                            watch)
    return proof_doc.direction_entry(checked, hops, counts)


def _prove_directions(endpoint, outputs, request, say, proof):
    """Start the parked tasks, prove every direction, park them again."""
    directions = chain_directions.parse(
        'bi' if outputs.get('reverse_chain') else 'uni')
    proof['directions'] = []
    parked = vnf_tasks.endpoints(outputs)
    proof_doc.record_parked(proof, parked)
    tasks = vnf_tasks.Tasks(parked, log=say)
    with prox_generator(endpoint) as generator, vnf_tasks.running(tasks):
        proof['vnf_tasks'] = vnf_tasks.record(tasks)
        for direction in directions:
            entry = prove_direction(generator, direction, outputs, request,
                                    say)
            proof['directions'].append(entry)
            say('%s: %d/%d frames through the chain (attempt %d)' % (
                direction, entry['rx_frames'], entry['tx_frames'],
                entry['attempts']))


def chain_outputs(stack_outputs, request):
    """Each chain's outputs and generator: [(outputs, endpoint)].

    chain.yaml lists its chains in `chains` (chain_count); a template
    without it (a TOSCA translation) is one chain, its outputs the
    stack's. An external tester (--generator-endpoint) drives one chain.
    """
    chains = stack_outputs.get('chains') or [stack_outputs]
    if len(chains) > 1 and request.generator_endpoint:
        raise StepError(
            'stack %s has %d chains: --generator-endpoint drives one; '
            'deploy chain_count 1, or an in-stack generator per chain'
            % (request.stack, len(chains)))
    return [(chain, generator_endpoint(chain, request)) for chain in chains]


def _prove_chains(chains, request, say, proof):
    """Prove each chain in turn; chain 0's entries also at the top.

    Also when a chain fails: the proof keeps what was learnt until then.
    """
    proof['chains'] = []
    try:
        for index, (outputs, endpoint) in enumerate(chains):
            entry = {'index': outputs.get('index', index)}
            proof['chains'].append(entry)
            chain_say = say if len(chains) == 1 else (
                lambda line, index=index: say('chain %d: %s' % (index, line)))
            _prove_directions(endpoint, outputs, request, chain_say, entry)
    finally:
        proof.update((key, value) for key, value in proof['chains'][0].items()
                     if key != 'index')


def _prove_steps(cli, request, say, proof):
    shown_stack = created_stack(cli, request.stack)
    stack_outputs = shown_stack.outputs
    chains = chain_outputs(stack_outputs, request)
    checked, found = check_created(cli, request.stack, shown_stack, say)
    if found is not None:
        proof['findings'] = found
    shown = cli.stack_servers(request.stack)
    nodes = expected_nodes(shown, request.stack, stack_outputs,
                           shown_stack.parameters, checked)
    proof['servers'] = {node.name: node.engine for node in nodes}
    proof['placement'] = placed(shown, shown_stack.parameters, say)
    ready = wait_ready(cli.readiness_compute(), nodes, shown,
                       request.ready_timeout, say, interval=5.0)
    proof.update(ready_after_s=ready.ready_after_s, boot=ready.boot)
    say('every server is ready; generator at %s'
        % ', '.join('%s:%s' % (chain_endpoint['host'], chain_endpoint['port'])
                    for _, chain_endpoint in chains))
    _prove_chains(chains, request, say, proof)


def prove(cli, request, say):
    """prove's steps on a created stack: its proof document.

    proven, or the error that stopped it (also kept in the proof, with
    what was learnt until then).
    """
    proof = proof_doc.new(request.stack)
    try:
        _prove_steps(cli, request, say, proof)
        proof['proven'] = True
    except PROVE_ERRORS as exc:
        proof['error'] = str(exc)
    return proof


# -- measure ---------------------------------------------------------------

def _refuse_unmeasurable(generator, request):
    """NothingMeasured when the campaign could not measure anything."""
    for paths in request.loss_paths or ():
        absent = absent_ports(paths)
        if absent:
            raise NothingMeasured('--loss-by-hop: %s; nothing measured'
                                  % absent)
    # PROX out of reach fails every case the same way, each after a
    # connect timeout: say it once, before the campaign.
    described = generator.describe()
    for endpoint, member in zip(request.prox_endpoints or ('',), described.get(
            'chains') or [described]):
        if member.get('connect_error'):
            raise NothingMeasured('--prox-endpoint %s: %s; nothing measured'
                                  % (endpoint, member['connect_error']))


def chains_generator(members, loss_paths=None):
    """One chain's generator, or several driven together.

    `loss_paths`: each chain's {direction: hops} (--loss-by-hop), so that
    every chain's lossy trials are split along its own path.
    """
    from epa_chain.measurement import together

    if loss_paths:
        members = [split_by_hop(member, paths, ovs_hops.live_counters)
                   for member, paths in zip(members, loss_paths)]
    if len(members) == 1:
        return members[0]
    return together.TogetherGenerator(members)


def measure(generator, request, progress):
    """measure's campaign through `generator`: its results document.

    `request` is `epa-chain measure`'s (commands/measure.py Request).
    `generator` is chains_generator's. With --loss-by-hop the proof's
    parked VNFs run their tasks for the campaign only. NothingMeasured
    when no trial could run.
    """
    tasks = vnf_tasks.Tasks(request.vnf_endpoints,
                            log=progress or (lambda line: None))
    with generator:
        _refuse_unmeasurable(generator, request)
        try:
            with vnf_tasks.running(tasks):
                document = repeats.run(
                    lambda: campaign.run(generator, request.campaign,
                                         progress),
                    request.campaign.repeat, progress)
        except vnf_tasks.TasksError as error:
            raise NothingMeasured('--loss-by-hop: %s; nothing measured'
                                  % error)
    if tasks.endpoints:
        document.setdefault('cloud', {})['vnf_tasks'] = vnf_tasks.record(
            tasks)
    return document
