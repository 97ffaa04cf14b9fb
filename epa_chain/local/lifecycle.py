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

"""A bed's life: up, run, down and status, the one home of `epa-chain local`.

commands/local.py parses its arguments into a Request (up, run) or a
BedState (down, status) and calls one of these:

- `up`: preflight, the PROX binary, the stack resolved and checked
  (validation.check.check_stack, the one resolve-and-check of the cloud
  benchmark and `epa-chain validate`: Heat's engine in-process, then the
  NFV rules, before anything is created on the host), the plan, the bed
  brought up (bed.py) and proven (proof.py); left up.
- `run`: the same for each chain length, then measured (runner.py), taken
  down (teardown.py) and reported.
- `down`, `status`: of a bed by its record, whatever became of its run.

LocalError stops a run (the bed is taken down first); Interrupted is
SIGTERM or SIGINT, after which the bed is taken down too.
"""

import dataclasses
import os
import signal
import time
import typing

from epa_chain.local import bed as bed_mod
from epa_chain.local import host
from epa_chain.local import names
from epa_chain.local import plan as plan_mod
from epa_chain.local import proof as proof_mod
from epa_chain.local import state as state_mod
from epa_chain.local import teardown
from epa_chain.prox import binary
from epa_chain.validation import findings


class LocalError(RuntimeError):
    """Stops `epa-chain local` before or while a bed is up (taken down)."""


class Interrupted(BaseException):
    """SIGTERM or SIGINT: take the bed down and stop."""


@dataclasses.dataclass(frozen=True)
class Stack:
    """The stack as `openstack stack create` takes it, files checked.

    `parameters` are the user's (--parameter): as in `openstack stack
    create`, an environment file's value beats them. The bed adds its own
    settings as a last environment file (for_bed).
    """

    template: str
    environments: typing.Tuple[str, ...]
    parameters: typing.Mapping[str, str]
    stack_name: str = 'epa'

    def for_bed(self, engine, vnf_count=None, chain_count=None):
        """The bed's own settings: an environment file's parameters."""
        # The bed always runs its own generator in the stack: a preset
        # made for an external hardware tester (vecpe) gets the in-stack
        # one, as templates/environments/in-stack-generator.yaml does.
        # Its VNFs are processes with no management NIC to start parked
        # tasks through: they forward from READY on.
        parameters = {'vnf_engine': engine, 'endpoints': 'generator',
                      'vnf_tasks_at_ready': 'running'}
        if vnf_count is not None:
            parameters['vnf_count'] = max(1, vnf_count)
        if chain_count is not None:
            parameters['chain_count'] = chain_count
        return parameters


@dataclasses.dataclass(frozen=True)
class Request:
    """`epa-chain local up` or `run`, parsed and checked at the edge."""

    state: state_mod.BedState
    stack: Stack
    prox: binary.Given
    #: None: prox when there is a PROX binary, else testpmd
    engine: typing.Optional[str] = None
    engine_binary: typing.Optional[str] = None
    #: a kind of generators.local_kinds(); None: prox when there is a
    #: PROX binary, else afpacket
    generator: typing.Optional[str] = None
    install: bool = True
    #: --chain-count(s); None: the stack's own chain_count
    chain_counts: typing.Tuple[typing.Optional[int], ...] = (None,)
    # `run` only
    campaign: typing.Any = None     # measurement.campaign.Campaign
    vnf_counts: typing.Tuple[typing.Optional[int], ...] = (None,)
    keep_up: bool = False
    json: typing.Optional[str] = None
    plots: typing.Optional[str] = None
    throttle: typing.Any = None     # local.throttle.Throttle
    #: --noisy-neighbours: the neighbours' share of their lossless rate
    noisy_fraction: typing.Optional[float] = None

    def runs(self):
        """(vnf count, chain count) of each bed, in order."""
        return [(vnfs, chains) for vnfs in self.vnf_counts
                for chains in self.chain_counts]


@dataclasses.dataclass(frozen=True)
class Choice:
    """Engines and generator of a run, once the PROX binary is known."""

    prox_binary: typing.Optional[str]
    engine: str
    engine_binary: typing.Optional[str]
    generator: str
    generator_why: str


def bed_state(prefix, state_root, new=False):
    """The bed's record from --prefix and --state-root, checked first.

    Before preflight, apt-get or anything else: `down` removes and stops
    what these name. `new`: a bed is to be brought up there, so none may
    be, nor anything a bed did not make. names.BadName otherwise.
    """
    prefix = names.check_prefix(prefix)
    root = names.check_state_root(state_root)
    names.bed_directory(root, prefix)
    state = state_mod.BedState(root, prefix)
    if not new:
        return state
    if state.exists():
        raise names.BadName('--prefix', prefix, 'a bed is up in %s, or was '
                            'killed: `epa-chain local down --prefix %s '
                            '--state-root %s` first' % (
                                state.directory, prefix, root))
    foreign = state.foreign()
    if foreign:
        raise names.BadName('--prefix', prefix, '%s holds %s, not made by '
                            'a bed; choose another --prefix or '
                            '--state-root' % (state.directory,
                                              ', '.join(foreign)))
    return state


# ---- the four actions -----------------------------------------------------

def up(request, progress, out):
    """Bring the bed up and prove it; leave it up. Exit status 0."""
    with Signals():
        choice = _prepare(request, progress)
        bed = _bed_up(request, choice, progress,
                      chain_count=request.chain_counts[0])
        bed.close_generator()
    prefix = request.state.prefix
    out.write('%s is up: `epa-chain local status --prefix %s`, `epa-chain '
              'local down --prefix %s`\n' % (prefix, prefix, prefix))
    out.flush()
    return 0


def run(request, progress, out):
    """Up, prove, measure and down per chain length; report.

    Exit status 0 clean, 1 a measurement or an end check failed.
    """
    from epa_chain.local import runner

    documents = []
    with Signals():
        choice = _prepare(request, progress)
        runs = request.runs()
        for number, (vnfs, chains) in enumerate(runs, 1):
            bed = _bed_up(request, choice, progress, vnfs, chains)
            documents.append(_measured(
                bed, request, progress,
                keep_up=request.keep_up and number == len(runs)))
    return runner.finish(documents, request.json, progress, out,
                         plots_dir=request.plots)


def down(state, progress):
    """Take a bed down; exit status 1 if a part could not be undone."""
    done = teardown.down(state, progress)
    return 1 if done['gave_up'] else 0


def status(state, out, as_json=False):
    """What a bed holds now, as text or JSON; reads only. Exit status 0."""
    import json

    found = bed_mod.status(state)
    if as_json:
        json.dump(found, out, indent=1, sort_keys=True)
        out.write('\n')
    else:
        out.write(''.join(line + '\n' for line in _status_lines(state,
                                                                found)))
    return 0


def _status_lines(state, found):
    if not found.get('phase'):
        return ['%s: no bed in %s%s' % (
            state.prefix, state.directory,
            '; namespaces %s exist without one (a bed under another '
            '--state-root, or leftovers: ip netns delete NAME)' % ', '.join(
                found['leftovers']) if found.get('leftovers') else '')]
    lines = ['%s: %s (%s)' % (state.prefix, found['phase'],
                              found['directory'])]
    for process in found['processes']:
        status_found = process.get('status') or {}
        lines.append('  %-24s pid %-7s %s, engine %s, %s restart(s)' % (
            process['name'], process['pid'],
            'alive' if process['alive'] else 'GONE',
            status_found.get('state'), status_found.get('restarts') or 0))
    lines.append('  namespaces: %s' % ', '.join(found['namespaces']))
    plan = found.get('plan') or {}
    for bridge in plan.get('bridges', []):
        ports = [p for p in plan.get('ports', [])
                 if p['bridge'] == bridge['name']]
        lines.append('  bridge %s: %s' % (bridge['name'], ', '.join(
            '%s (VLAN %d, %s)' % (p['name'], p['vlan'], p['mac'])
            for p in ports)))
    pages = found.get('hugepages') or {}
    if 'added' in pages:
        lines.append('  huge pages: %d x 2 MB wanted, %d added (given back '
                     'by down), hugetlbfs at %s' % (
                         pages['pages'], pages['added'],
                         pages['mount_point']))
    return lines


# ---- the steps ------------------------------------------------------------

def _prepare(request, progress):
    """Preflight, then the engines: once a command, for every bed."""
    preflight(request.install, progress)
    return choose(request, progress)


def preflight(install, progress):
    if os.geteuid() != 0:
        raise LocalError('epa-chain local needs root (network namespaces, '
                         'huge pages, OVS): run it as root')
    missing = host.missing_packages()
    if missing and not install:
        raise LocalError('missing Debian packages %s: install them or '
                         'drop --no-install' % ', '.join(missing))
    host.install_packages(missing, progress)
    still = host.missing_packages()
    if still:
        raise LocalError('still missing after apt-get: %s'
                         % ', '.join(still))


def choose(request, progress):
    """PROX as engine and generator when there is a binary (built here)."""
    try:
        found, how = binary.obtain(request.prox, progress)
    except binary.ProxBinaryError as exc:
        raise LocalError(str(exc)) from exc
    if found:
        progress('PROX: %s' % found)
    engine = request.engine or ('prox' if found else 'testpmd')
    generator = request.generator
    if generator is None:
        generator = 'prox' if found else 'afpacket'
        why = ('default: a PROX binary (%s)' % how if found
               else 'default: no PROX binary (%s)' % how)
    else:
        why = '--generator %s' % generator
    if generator == 'prox' and not found:
        raise LocalError('--generator prox: no PROX binary (%s); give '
                         '--prox-binary PATH or --prox-source SRC' % how)
    engine_binary = request.engine_binary
    if not engine_binary and engine == 'prox':
        engine_binary = found
    return Choice(prox_binary=found, engine=engine,
                  engine_binary=engine_binary, generator=generator,
                  generator_why=why)


def resolve(stack, bed_settings):
    """The stack resolved by Heat with the NFV rules passed (a Checked).

    `bed_settings` ({parameter: value}) go in a last environment file, as
    a user would pass them to `openstack stack create -e`. LocalError
    carrying Heat's refusal or the rules' errors otherwise, saying that
    nothing was created.
    """
    import tempfile

    import yaml

    from epa_chain.validation import check

    with tempfile.TemporaryDirectory(prefix='epa-chain-local-') as tmp:
        settings = os.path.join(tmp, 'bed-settings.yaml')
        with open(settings, 'w') as stream:
            yaml.safe_dump({'parameters': dict(bed_settings)}, stream)
        try:
            return check.check_stack(
                stack.template, tuple(stack.environments) + (settings,),
                dict(stack.parameters), stack.stack_name)
        except check.StackRefused as exc:
            raise LocalError(str(exc)) from exc


def make_plan(topology, state, choice, vnf_count_override=None):
    plan = plan_mod.build(topology, state.prefix, state.socket_dir,
                          host.online_cpus(), generator=choice.generator,
                          generator_why=choice.generator_why)
    if vnf_count_override == 0:
        plan = plan_mod.without_vnfs(plan)
    return plan


def _bed_up(request, choice, progress, vnf_count=None, chain_count=None):
    """Resolve, plan, bring up, prove: the Bed (taken down on failure)."""
    stack = request.stack
    progress('resolving %s with %s (Heat engine, in-process)' % (
        stack.template, ', '.join(stack.environments)))
    checked = resolve(stack, stack.for_bed(choice.engine, vnf_count,
                                           chain_count))
    for finding in checked.findings:
        if finding.severity == findings.WARNING:
            progress('warning: %s' % finding)
    plan = make_plan(checked.topology, request.state, choice, vnf_count)
    for note in plan.notes + plan.flavors:
        progress('plan: ' + note)
    _check_request(request, plan)
    return bring_up(plan, request.state, progress, choice,
                    throttle=request.throttle)


def _check_request(request, plan):
    """What the run asks of the plan, before anything is created."""
    vnfs = plan.vnfs_per_chain
    if request.throttle and request.throttle.vnf > vnfs:
        raise LocalError('--throttle-vnf %d: the chain has %d VNF(s); name '
                         'one of 1-%d' % (request.throttle.vnf, vnfs, vnfs)
                         if vnfs else '--throttle-vnf: this chain has '
                         'no VNF to throttle (--vnf-counts 0)')
    if request.noisy_fraction and plan.chain_count < 2:
        raise LocalError('--noisy-neighbours: the stack has %d chain; give '
                         '--chain-count 2 or more' % plan.chain_count)


def bring_up(plan, state, progress, choice, throttle=None):
    """Up and proven, or taken down again and LocalError/Interrupted.

    `throttle`: a VNF held to a share of a CPU once the chain is proven.
    """
    bed = bed_mod.Bed(plan, state, progress,
                      engine_binary=choice.engine_binary,
                      prox_binary=choice.prox_binary)
    try:
        bed.up()
        proof = proof_mod.prove_chains(plan, bed.switch, bed.generators)
        for line in proof.lines():
            progress('proof: ' + line)
        bed.proof = proof
        if not proof.ok:
            raise LocalError('the chain is not wired as configured: %s'
                             % '; '.join(proof.problems))
        bed.flood_baseline = proof_mod.flood_counts(bed.switch, plan)
        if throttle is not None:
            bed.throttle(throttle)
        return bed
    except BaseException as exc:
        progress('bringing the bed down after: %s' % (
            str(exc) or type(exc).__name__))
        bed.close_generator()
        teardown.down(state, progress)
        if isinstance(exc, _bed_errors()):
            raise LocalError(str(exc)) from exc
        raise


def _bed_errors():
    from epa_chain.local import hugepages
    from epa_chain.local import switch
    from epa_chain.local import throttle
    from epa_chain.measurement import trial

    return (bed_mod.BedError, host.HostError, switch.SwitchError,
            hugepages.HugepageError, trial.GeneratorError,
            throttle.ThrottleError)


def _measured(bed, request, progress, keep_up=False):
    """The bed measured (runner.measure), then down unless kept up."""
    from epa_chain.local import runner

    try:
        if request.noisy_fraction:
            document = runner.measure_noisy(bed, request.campaign,
                                            request.noisy_fraction, progress)
        else:
            document = runner.measure(bed, request.campaign, progress)
    finally:
        if not keep_up:
            bed.close_generator()
            started = time.monotonic()
            teardown.down(bed.state, progress)
            down_s = time.monotonic() - started
    if not keep_up:
        document['testbed']['timings']['down_s'] = down_s
    return document


class Signals:
    """SIGTERM/SIGINT raise Interrupted in the main thread, once."""

    def __enter__(self):
        self._previous = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, self._raise)
        return self

    def _raise(self, signum, _frame):
        # Further signals during teardown are ignored: down must finish.
        for number in self._previous:
            signal.signal(number, signal.SIG_IGN)
        raise Interrupted(signal.Signals(signum).name)

    def __exit__(self, *exc):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        return False
