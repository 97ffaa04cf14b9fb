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

"""A bottleneck on purpose: one VNF held to a share of one CPU.

`epa-chain local run --throttle-vnf N:PERCENT` moves the N-th VNF's
runtime and engine into a CPU cgroup whose CFS quota is PERCENT of one
CPU (every PERIOD_US). A polling engine descheduled for most of each
period cannot drain its receive ring, so the switch drops frames it
cannot deliver to that VNF: a known place of loss, to check the hop by
hop loss split against (measurement/hop_loss.py), as a VNF starved by a
noisy neighbour would lose them.

The spec is checked against every chain the run brings up as the
arguments are parsed (check_chains): a VNF no chain has is refused
before preflight, a PROX build or the resolve.

The group's name derives from the bed's prefix and directory, so `down`
finds it from the bed alone; it is removed after the bed's processes
are stopped. cgroup v1 (the cpu hierarchy) and v2 (cpu.max) both work.
"""

import dataclasses
import hashlib
import os
import re

from epa_chain import safe_yaml

V1_ROOT = '/sys/fs/cgroup/cpu'
V2_ROOT = '/sys/fs/cgroup'
PERIOD_US = 10000           # 10 ms: a ring of 256 fills within one
_SPEC = re.compile(r'^([1-9][0-9]?):([0-9]+(?:\.[0-9]+)?)$')


class ThrottleError(RuntimeError):
    """The host cannot cap a process's CPU time, or the spec is bad."""


@dataclasses.dataclass(frozen=True)
class Throttle:
    """The `vnf`-th VNF of the chain (1-based) at `percent` of one CPU."""

    vnf: int
    percent: float

    @classmethod
    def parse(cls, text, option='--throttle-vnf'):
        match = _SPEC.match(str(text).strip())
        percent = float(match.group(2)) if match else 0.0
        if not match or not 1.0 <= percent <= 100.0:
            raise ValueError('%s %r: give N:PERCENT, the N-th VNF of the '
                             'chain and its share of one CPU, 1-100 (e.g. '
                             '2:10)' % (option, text))
        return cls(int(match.group(1)), percent)

    @property
    def quota_us(self):
        return max(1000, int(PERIOD_US * self.percent / 100.0))

    @property
    def spec(self):
        return '%d:%g' % (self.vnf, self.percent)


def check_chains(throttle, stack, vnf_counts):
    """ValueError unless every chain the run brings up has the VNF.

    `stack`: the lifecycle.Stack; `vnf_counts`: the request's (None: the
    stack's own vnf_count). Checked when the arguments are parsed, before
    preflight, a PROX build or the resolve; a count the stack's files do
    not give (a file that does not load, a vnf_count that is no number)
    is left to the resolve, which names what is wrong.
    """
    if vnf_counts != (None,):
        for count in vnf_counts:
            _check_length(throttle, count, '--vnf-counts brings up a chain '
                          'of %d VNF(s)' % count, 'leave %d out of '
                          '--vnf-counts' % count)
        return
    count = _stack_vnf_count(stack)
    if count is not None:
        sources = [safe_yaml.shown(path) for path in (
            stack.template,) + tuple(stack.environments)]
        sources += ['--parameter'] if stack.parameters else []
        _check_length(throttle, count, 'the chain has %d VNF(s) (vnf_count '
                      'of %s, as Heat merges it)' % (count, ', '.join(
                          sources)),
                      'choose a longer chain (--preset, -e, --vnf-counts)')


def _check_length(throttle, count, what, other_fix):
    if throttle.vnf <= count:
        return
    fix = ('name %s (e.g. --throttle-vnf %d:%g)' % (
        'one of 1-%d' % count if count > 1 else 'VNF 1', count,
        throttle.percent) if count else 'run without --throttle-vnf')
    raise ValueError('--throttle-vnf %s: %s; %s or %s' % (
        throttle.spec, what, fix, other_fix))


def _stack_vnf_count(stack):
    """The vnf_count Heat gives `stack`: its files and --parameter merged."""
    from epa_chain.hot import files
    from epa_chain.hot import resolve

    try:
        template_set = files.load(stack.template, stack.environments)
        environment = resolve.heat_merge(template_set, stack.parameters)
        count = _first_set('vnf_count', environment.get('parameters'),
                           environment.get('parameter_defaults'),
                           _template_default(template_set, 'vnf_count'))
        return int(count)
    except Exception:   # whatever it is, the resolve names it
        return None


def _first_set(name, parameters, parameter_defaults, default):
    """A parameter's value as Heat takes it: given, defaulted, template."""
    for section in (parameters, parameter_defaults):
        if isinstance(section, dict) and name in section:
            return section[name]
    return default


def _template_default(template_set, name):
    definition = (template_set.template.get('parameters') or {}).get(name)
    return definition.get('default') if isinstance(definition,
                                                   dict) else None


def group_name(state):
    """The group of one bed: its prefix and a digest of its directory."""
    digest = hashlib.sha256(state.directory.encode()).hexdigest()[:8]
    return 'epa-chain-%s-%s' % (state.prefix, digest)


def _roots():
    """[(root, version)] of the CPU controllers this host mounts."""
    found = []
    if os.path.isfile(os.path.join(V1_ROOT, 'cpu.cfs_quota_us')):
        found.append((V1_ROOT, 1))
    try:
        with open(os.path.join(V2_ROOT, 'cgroup.subtree_control')) as stream:
            if 'cpu' in stream.read().split():
                found.append((V2_ROOT, 2))
    except OSError:
        pass
    return found


def _write(path, value):
    with open(path, 'w') as stream:
        stream.write('%s\n' % value)


def apply(throttle, state, pids, roots=None):
    """Cap `pids` (the VNF's runtime and engine) as `throttle` says.

    Returns the group's path. ThrottleError when the host has no CPU
    controller or refuses a write; the group is removed again then.
    """
    roots = _roots() if roots is None else roots
    if not roots:
        raise ThrottleError(
            '--throttle-vnf: this host mounts no CPU cgroup controller (%s '
            'or %s with cpu in cgroup.subtree_control); run without it'
            % (V1_ROOT, V2_ROOT))
    root, version = roots[0]
    path = os.path.join(root, group_name(state))
    try:
        os.mkdir(path)
        if version == 1:
            _write(os.path.join(path, 'cpu.cfs_period_us'), PERIOD_US)
            _write(os.path.join(path, 'cpu.cfs_quota_us'), throttle.quota_us)
        else:
            _write(os.path.join(path, 'cpu.max'), '%d %d' % (
                throttle.quota_us, PERIOD_US))
        for pid in pids:
            _write(os.path.join(path, 'cgroup.procs'), pid)
    except OSError as error:
        remove(state, roots)
        raise ThrottleError('--throttle-vnf: %s: %s' % (path, error))
    return path


def remove(state, roots=None):
    """The bed's group gone, its processes back in the root group.

    What was done, or None when there was no group.
    """
    done = None
    for root, _version in (_roots() if roots is None else roots):
        path = os.path.join(root, group_name(state))
        if not os.path.isdir(path):
            continue
        try:
            with open(os.path.join(path, 'cgroup.procs')) as stream:
                left = [line.strip() for line in stream if line.strip()]
            for pid in left:
                try:
                    _write(os.path.join(root, 'cgroup.procs'), pid)
                except OSError:
                    pass    # exited meanwhile
            os.rmdir(path)
            done = 'removed %s' % path
        except OSError as error:
            raise ThrottleError('cgroup %s not removed: %s' % (path, error))
    return done
