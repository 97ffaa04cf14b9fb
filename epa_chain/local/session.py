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

"""One `epa-chain local` session: stack -> plan -> bed -> proof -> numbers.

Resolving is hot/resolve.py, as for `epa-chain validate`: the template
and its environments are loaded as the Heat client uploads them, every
intrinsic function and nested template is evaluated by Heat; then the
validation rules must pass before anything is created on the host.
"""

import dataclasses
import os
import signal
import time
import typing

from epa_chain.local import bed as bed_mod
from epa_chain.local import host
from epa_chain.local import plan as plan_mod
from epa_chain.local import proof as proof_mod
from epa_chain.local import state as state_mod
from epa_chain.local import teardown


class SessionError(RuntimeError):
    """Stops a session before or while the bed is up (bed taken down)."""


class Interrupted(BaseException):
    """SIGTERM or SIGINT: take the bed down and stop."""


@dataclasses.dataclass
class Stack:
    template: str
    environments: typing.List[str]
    parameters: typing.Dict[str, typing.Any]
    stack_name: str = 'epa'


def resolve(stack):
    """Heat's view of the stack (hot.resolve.Resolved), rules passed.

    SessionError listing Heat's refusal or the rules' errors otherwise.
    """
    from epa_chain.hot import resolve as resolve_mod
    from epa_chain.validation import findings
    from epa_chain.validation import runner

    try:
        resolved = resolve_mod.resolve(stack.template, stack.environments,
                                       stack.parameters, stack.stack_name)
    except resolve_mod.ResolveError as exc:
        resolved, found = None, runner.refusal_findings(exc)
    else:
        found = runner.check(resolved)
    errors = [f for f in found if f.severity == findings.ERROR]
    if errors:
        raise SessionError('the stack does not validate; nothing was '
                           'created:\n' + '\n'.join(
                               '  %s' % finding for finding in errors))
    return resolved


def make_plan(topology, state, vnf_count_override=None,
              generator='afpacket', generator_why=''):
    plan = plan_mod.build(topology, state.prefix, state.socket_dir,
                          host.online_cpus(), generator=generator,
                          generator_why=generator_why)
    if vnf_count_override == 0:
        plan = plan_mod.without_vnfs(plan)
    return plan


def preflight(install, progress):
    if os.geteuid() != 0:
        raise SessionError('epa-chain local needs root (network namespaces, '
                           'huge pages, OVS): run it as root')
    missing = host.missing_packages()
    if missing and not install:
        raise SessionError('missing Debian packages %s: install them or '
                           'drop --no-install' % ', '.join(missing))
    host.install_packages(missing, progress)
    still = host.missing_packages()
    if still:
        raise SessionError('still missing after apt-get: %s'
                           % ', '.join(still))


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


def bring_up(plan, state, progress, engine_binary=None, prox_binary=None):
    """Up and proven, or taken down again and SessionError/Interrupted."""
    bed = bed_mod.Bed(plan, state, progress, engine_binary=engine_binary,
                      prox_binary=prox_binary)
    try:
        bed.up()
        proof = proof_mod.prove(plan, bed.switch, bed.generator)
        for line in proof.lines():
            progress('proof: ' + line)
        bed.proof = proof
        if not proof.ok:
            raise SessionError('the chain is not wired as configured: %s'
                               % '; '.join(proof.problems))
        bed.flood_baseline = proof_mod.flood_counts(bed.switch, plan)
        return bed
    except BaseException as exc:
        progress('bringing the bed down after: %s' % (
            str(exc) or type(exc).__name__))
        bed.close_generator()
        teardown.down(state, progress)
        if isinstance(exc, _bed_errors()):
            raise SessionError(str(exc)) from exc
        raise


def _bed_errors():
    from epa_chain.local import hugepages
    from epa_chain.local import switch
    from epa_chain.measurement import trial

    return (bed_mod.BedError, host.HostError, switch.SwitchError,
            hugepages.HugepageError, trial.GeneratorError)


def end_checks(bed):
    """After measuring: still learned, nothing flooded since the proof."""
    learned = proof_mod.learned_ports(bed.switch, bed.plan)
    flooded = proof_mod.flooded_since(bed.switch, bed.plan,
                                      bed.flood_baseline)
    return {'learned': learned, 'all_learned': all(learned.values()),
            'flooded_since_proof': flooded}


def timed(function, *args):
    started = time.monotonic()
    value = function(*args)
    return value, time.monotonic() - started


def new_state(root, prefix):
    return state_mod.BedState(root, prefix)
