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

"""Prove that a created chain stack forwards, hop by hop.

For a stack made with `openstack stack create -t templates/chain.yaml`:
puts what Heat holds for it (template, environment, files) through the
one resolve-and-check (validation/check.py) to learn its nodes and say
what the NFV rules find, waits until every server's console says
EPA-CHAIN READY (keeping where each guest's boot went), starts the
parked VNFs' tasks (vnf_control_endpoints), then sends a low-rate trial
per direction through the stack's generator (its PROX control endpoint)
and checks that the frames came back, and parks the tasks again. On the compute
host (all-in-one clouds) it also reads each hop's Open vSwitch counters:
the generator's port sent the frames, each VNF's ingress port was
delivered them and its egress port sent them on. Uses the `openstack`
client and its clouds.yaml entry. Every option is checked before the
client is called: a stack name or ID as Heat makes them, --attempts
1-10, --load-fraction in [1e-06, 1], --max-loss-ratio in [0, 0.5) (a
chain losing half its frames does not forward), --ready-timeout up to a
day, a --json file that can be written. Exit status: 0 proven, 1 not, 2
usage.

  openstack stack create -t templates/chain.yaml \\
      -e templates/presets/pvp-bidir.yaml pvp
  epa-chain prove --os-cloud mycloud pvp --json proof.json

A chain with an external tester (endpoints=external, e.g. the vecpe
presets as shipped) is driven through that tester's PROX control address:

  epa-chain tester up --os-cloud mycloud vecpe ...   (prints it)
  epa-chain prove --os-cloud mycloud vecpe \\
      --generator-endpoint 127.0.0.1:8474
"""

import importlib.util
import math
import sys
import time

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import readiness as node_readiness
from epa_chain.cloud import benchmark
from epa_chain.cloud import hop_check
from epa_chain.cloud import openstack_cli
from epa_chain.cloud import ovs_hops
from epa_chain.cloud import placement
from epa_chain.cloud import proof as proof_doc
from epa_chain.cloud import readiness
from epa_chain.cloud import vnf_tasks
from epa_chain.commands import _arguments
from epa_chain.measurement import trial
from epa_chain import outputs
from epa_chain.validation import findings

# The proof's schema (cloud/proof.py owns the document).
PROOF_SCHEMA = proof_doc.SCHEMA
MAX_READY_TIMEOUT_S = 86400.0
# The hop check's settings, as this command's options name them.
SETTING_FLAGS = {'load_fraction': '--load-fraction',
                 'max_loss_ratio': '--max-loss-ratio',
                 'attempts': '--attempts'}


def add_arguments(parser):
    parser.add_argument('stack', help='name or ID of the chain stack')
    parser.add_argument('--os-cloud', metavar='CLOUD',
                        help='clouds.yaml entry (default: the client\'s '
                             'OS_CLOUD / OS_* environment)')
    parser.add_argument('--ready-timeout', type=float, default=900.0,
                        metavar='S',
                        help='seconds to wait for EPA-CHAIN READY on every '
                             'console (default: 900; guests under QEMU '
                             'without KVM take minutes)')
    parser.add_argument('--load-fraction', type=float,
                        default=hop_check.LOAD_FRACTION, metavar='F',
                        help='trial load as a fraction of the generator\'s '
                             'line rate (default: %(default)s, the seeds\' '
                             'hop check)')
    parser.add_argument('--max-loss-ratio', type=float,
                        default=hop_check.MAX_LOSS_RATIO, metavar='R',
                        help='frames a trial or hop may lose '
                             '(default: %(default)s)')
    parser.add_argument('--attempts', type=int,
                        default=hop_check.ATTEMPTS, metavar='N',
                        help='trials per direction, %g s apart, before the '
                             'direction fails: a path just brought up can '
                             'drop frames for a moment (default: '
                             '%%(default)s; the JSON keeps every failed '
                             'one)' % hop_check.SETTLE_S)
    parser.add_argument('--generator-endpoint', metavar='HOST:PORT',
                        help='PROX control address of the external tester '
                             'of a stack with endpoints=external (e.g. the '
                             'one `epa-chain tester up` started)')
    parser.add_argument('--no-ovs', action='store_true',
                        help='skip the per-hop Open vSwitch counters (when '
                             'not on the compute host)')
    parser.add_argument('--json', metavar='OUT',
                        help='write the proof as JSON ("-" for stdout)')


def _say(text):
    print(text, file=sys.stderr, flush=True)


def _one_line(text):
    # The client's stderr, a console log: many lines; an error is one.
    return ' '.join(str(text).split())


def check_arguments(args):
    """Refuse, before the cloud is asked anything, what cannot be right.

    ValueError naming the option; the stack name never becomes an option
    of the client.
    """
    openstack_cli.check_stack_reference(args.stack)
    if args.os_cloud is not None and (
            not args.os_cloud.strip() or args.os_cloud.startswith('-') or
            not args.os_cloud.isprintable()):
        raise ValueError('--os-cloud %r: give the name of a clouds.yaml '
                         'entry' % args.os_cloud)
    if not (math.isfinite(args.ready_timeout) and
            0 < args.ready_timeout <= MAX_READY_TIMEOUT_S):
        raise ValueError('--ready-timeout %r: give seconds, more than 0 and '
                         'at most %g' % (args.ready_timeout,
                                         MAX_READY_TIMEOUT_S))
    try:
        hop_check.check_settings(args.load_fraction, args.max_loss_ratio,
                                 args.attempts)
    except hop_check.SettingError as error:
        raise ValueError('%s %r: %s' % (SETTING_FLAGS[error.setting],
                                        error.value, error.fix)) from None
    if args.generator_endpoint is not None:
        _arguments.parse_endpoint(args.generator_endpoint,
                                  '--generator-endpoint')
    if args.json is not None:
        outputs.check_file(args.json, '--json', allow_stdout=True)


def _generator_endpoint(stack_outputs, args):
    """{host, port} of the generator: in the stack, or the tester's."""
    endpoint = stack_outputs.get('generator_control_endpoint')
    in_stack = bool(endpoint and endpoint.get('host'))
    if in_stack and args.generator_endpoint:
        raise benchmark.BenchmarkError(
            'stack %s has its own generator (%s:%s): --generator-endpoint '
            'is for a stack with endpoints=external' % (
                args.stack, endpoint['host'], endpoint['port']))
    if in_stack:
        return endpoint
    if not args.generator_endpoint:
        raise benchmark.BenchmarkError(
            'stack %s has no generator_control_endpoint (endpoints='
            'external): give the external tester\'s PROX control address '
            'with --generator-endpoint HOST:PORT (`epa-chain tester up` '
            'prints it)' % args.stack)
    host, port = _arguments.parse_endpoint(args.generator_endpoint,
                                           '--generator-endpoint')
    return {'host': host, 'port': port}


def _preflight_hint(cli, stack, shown):
    """Why Nova found no host, as preflight sees it now; '' if unknown.

    For a stack Nova refused ("No valid host was found") without a hard
    placement policy to blame: the capacity blockers preflight finds for
    the template Heat holds (no host reporting PCPU, say), with their fix.
    """
    if not any(message in (shown.reason or '')
               for message in placement.NOVA_NO_HOST) or \
            importlib.util.find_spec('heat') is None:
        return ''
    from epa_chain.cloud import cloud_answers
    from epa_chain.cloud import preflight
    from epa_chain.cloud import stack_needs
    from epa_chain.hot import files
    from epa_chain.hot import resolve

    name = shown.name or stack
    try:
        resolved = resolve.resolve(files.from_heat(
            name, *cli.created_from(stack)), stack_name=name)
    except (openstack_cli.CLIError, ValueError, resolve.ResolveError):
        return ''
    findings = preflight.check(stack_needs.needs_of(resolved),
                               cloud_answers.CloudView(cli))
    return '; '.join('preflight: %s; fix: %s' % (f.message, f.fix)
                     for f in findings if f.verdict == preflight.BLOCKS and
                     f.check == 'capacity')


def _check_created(cli, stack, shown, proof):
    """The created stack resolved and checked offline, or None.

    The one resolve-and-check (validation/check.py) on the template,
    environment and files Heat holds for the stack: the chain's nodes
    and engines come from what Heat resolved, and what the NFV rules
    find is said (and kept in the proof) before waiting for the stack,
    as warnings: the stack exists, its frames are the verdict. Without
    Heat's engine (epa-chain[validation]), or when Heat does not give
    the files, the chain is read from the stack's outputs and
    parameters, and prove says so.
    """
    if importlib.util.find_spec('heat') is None:
        _say('note: the stack is not checked (Heat\'s engine is not '
             'installed: pip install \'epa-chain[validation]\'); its '
             'chain is read from its outputs')
        return None
    from epa_chain.hot import files
    from epa_chain.validation import check

    name = shown.name or stack
    try:
        template_set = files.from_heat(name, *cli.created_from(stack))
        checked = check.check_stack(template_set, stack_name=name)
    except (openstack_cli.CLIError, ValueError) as exc:
        # LoadError is a ValueError, as is JSON the client garbled.
        _say('note: the stack is not checked (%s); its chain is read '
             'from its outputs' % _one_line(exc))
        return None
    except check.StackRefused as exc:
        checked, found = exc.resolved, exc.findings
    else:
        found = checked.findings
    shown_findings = [f for f in found if f.severity != findings.SKIPPED]
    for finding in shown_findings:
        _say('warning: %s' % _one_line(finding))
    proof['findings'] = [f.as_dict() for f in shown_findings]
    return checked


def _expected_nodes(shown, stack, outputs, parameters, checked):
    """The stack's servers with the engine each must report.

    `shown` is {server id: `server show`} of the stack's servers. From the
    resolved stack's node configs when it was checked (as the Tempest
    benchmark does), else the generator (the first hop of the forward
    chain) runs PROX and every VNF the stack's vnf_engine.
    """
    if not shown:
        raise node_readiness.NotReadyError('stack %s has no server' % stack)
    servers = {server_id: server['name']
               for server_id, server in shown.items()}
    if checked is not None:
        return readiness.expected_nodes(checked.topology, servers)
    generator = (outputs.get('forward_chain') or [{}])[0].get('server')
    return [readiness.Node(server_id, name, 'prox' if name == generator
                           else parameters.get('vnf_engine', 'prox'))
            for server_id, name in sorted(servers.items(),
                                          key=lambda item: item[1])]


def _wait_ready(cli, nodes, timeout, shown, proof):
    """Wait for every READY; record how long, and each guest's boot."""
    started = time.monotonic()
    _say('waiting for EPA-CHAIN READY from %s' % ', '.join(
        '%s (%s)' % (node.name, node.engine) for node in nodes))
    timelines = readiness.wait_until_ready(nodes, cli, timeout, interval=5.0)
    proof['ready_after_s'] = round(time.monotonic() - started, 1)
    proof['boot'] = readiness.boot_record(timelines, {
        server['name']: server for server in shown.values()})
    for line in readiness.describe_boot(proof['boot']):
        _say('boot: ' + line)


def _hop_counter(direction, hops, max_loss_ratio, seen):
    """An observe hook for hop_check.check: OVS counters around a trial.

    Each attempt is counted on its own; `seen` keeps the last attempt's
    counts for the proof.
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
            _say('  %-9s %s:%s %s %d frames' % (
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


def _prove_direction(generator, direction, outputs, args, proof):
    hops = outputs.get(hop_check.CHAIN_OUTPUTS[direction]) or []
    counts = []
    watch = {} if args.no_ovs else {'observe': _hop_counter(
        direction, hops, args.max_loss_ratio, counts)}
    (checked,) = hop_check.check(generator, [direction], outputs,
                                 load_fraction=args.load_fraction,
                                 max_loss_ratio=args.max_loss_ratio,
                                 attempts=args.attempts, **watch)
    proof['directions'].append(proof_doc.direction_entry(
        checked, hops, None if args.no_ovs else counts))


def run(args):
    try:
        check_arguments(args)
    except ValueError as error:
        _say('epa-chain prove: %s' % _one_line(error))
        return 2
    cli = openstack_cli.OpenStackCLI(args.os_cloud)
    proof = proof_doc.new(args.stack)
    try:
        stack = cli.stack(args.stack)
        if stack.status != 'CREATE_COMPLETE':
            hint = placement.failure_hint(stack.parameters, stack.reason)
            hint = hint or _preflight_hint(cli, args.stack, stack)
            raise openstack_cli.CLIError('stack %s is %s: %s%s' % (
                args.stack, stack.status, stack.reason,
                ' (%s)' % hint if hint else ''))
        stack_outputs = stack.outputs
        endpoint = _generator_endpoint(stack_outputs, args)
        checked = _check_created(cli, args.stack, stack, proof)
        shown = cli.stack_servers(args.stack)
        nodes = _expected_nodes(shown, args.stack, stack_outputs,
                                stack.parameters, checked)
        proof['servers'] = {node.name: node.engine for node in nodes}
        proof['placement'] = placement.record(
            {server['name']: server for server in shown.values()},
            stack.parameters)
        _say('placement: %s' % placement.describe(proof['placement']))
        _wait_ready(cli, nodes, args.ready_timeout, shown, proof)
        _say('every server is ready; generator at %s:%s'
             % (endpoint['host'], endpoint['port']))
        directions = chain_directions.parse(
            'bi' if stack_outputs.get('reverse_chain') else 'uni')
        proof['directions'] = []
        parked = vnf_tasks.endpoints(stack_outputs)
        proof_doc.record_parked(proof, parked)
        tasks = vnf_tasks.Tasks(parked, log=_say)
        with benchmark.prox_generator(endpoint) as generator, \
                vnf_tasks.running(tasks):
            proof['vnf_tasks'] = vnf_tasks.record(tasks)
            for direction in directions:
                _prove_direction(generator, direction, stack_outputs, args,
                                 proof)
                entry = proof['directions'][-1]
                _say('%s: %d/%d frames through the chain (attempt %d)' % (
                    direction, entry['rx_frames'], entry['tx_frames'],
                    entry['attempts']))
        proof['proven'] = True
    except (openstack_cli.CLIError, node_readiness.NotReadyError,
            benchmark.BenchmarkError, hop_check.HopCheckError,
            ovs_hops.OVSError, trial.GeneratorError, vnf_tasks.TasksError,
            OSError) as exc:
        proof['error'] = str(exc)
        _say('epa-chain prove: %s' % _one_line(exc))
    if args.json is not None:
        proof_doc.write(proof, args.json)
    if proof['proven']:
        _say('proven: every direction forwards%s' % (
            '' if args.no_ovs else ', hop by hop'))
    return 0 if proof['proven'] else 1
