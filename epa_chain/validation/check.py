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

"""The one resolve-and-check every path goes through before creating.

`check_stack` resolves a stack with Heat's engine offline (hot/resolve.py)
and runs the NFV rules (validation/rules.py) on what Heat resolved. The
local bed, the cloud benchmark, `epa-chain validate` and `epa-chain prove`
call it; what it refuses is one StackRefused, formatted here once, which
says that nothing was created.
"""

import dataclasses
import typing

from epa_chain.hot import resolve as resolve_mod
from epa_chain.validation import findings
from epa_chain.validation import heat_errors
from epa_chain.validation import rules

# A file not read: missing, unreadable, refused (safe_yaml, hot/tree).
LOAD = 'LOAD'
# Checked.findings shadows the module in the class body.
_Finding = findings.Finding


@dataclasses.dataclass
class Checked(resolve_mod.Resolved):
    """A resolved stack the rules passed, with what they still found.

    `findings` are the warnings and the checks skipped offline (cloud
    lookups, flavors outside the stack): never an error.
    """

    findings: typing.List[_Finding] = dataclasses.field(default_factory=list)


class StackRefused(Exception):
    """Heat or the NFV rules refused the stack; nothing was created.

    `findings` holds every finding (warnings and skipped checks too),
    `errors` the ones that refused it;
    `template_set` is the loaded files (None when a file did not load)
    and `resolved` the stack Heat resolved (None when Heat refused it).
    """

    def __init__(self, stack_name, found, template_set=None, resolved=None):
        self.stack_name = stack_name
        self.findings = list(found)
        self.template_set = template_set
        self.resolved = resolved
        super().__init__(
            'stack %s does not validate; nothing was created:\n%s' % (
                stack_name, '\n'.join('  %s' % finding
                                      for finding in self.errors)))

    @property
    def errors(self):
        return [f for f in self.findings if f.severity == findings.ERROR]


def check_stack(template, environments=(), parameters=None,
                stack_name='epa-chain', allow_outside=False, inline=False):
    """Resolve a stack offline and run the NFV rules; a Checked or refused.

    `template` and `environments` are paths, loaded as `openstack stack
    create -t TEMPLATE -e ENV...` uploads them (or `template` is a
    hot.files.TemplateSet already loaded, a created stack's from
    files.from_heat, and `environments` is empty); `parameters` ({name:
    value}) merge as `openstack stack create --parameter` sends them
    and Heat merges them: an environment file's value beats them, which
    is a warning (PARAM-OVERRIDDEN), unless `inline` (the environments
    sent inline, as heatclient's stacks.create does: parameters win);
    `stack_name` is what OS::stack_name resolves to. Files outside the
    template's directory tree are refused unless `allow_outside`
    (hot/tree.py). Nothing is created anywhere: Heat's engine runs in
    this process with its cloud lookups skipped.

    Returns a Checked (a hot.resolve.Resolved with the non-error
    `findings`); raises StackRefused carrying every finding when a file
    does not load, Heat refuses the stack or a rule finds an error.
    """
    try:
        resolved = resolve_mod.resolve(template, environments, parameters,
                                       stack_name, allow_outside, inline)
    except resolve_mod.ResolveError as exc:
        raise StackRefused(stack_name, refusal_findings(exc),
                           exc.template_set)
    found = overridden_findings(resolved, parameters or {}) + \
        rule_findings(resolved)
    if any(f.severity == findings.ERROR for f in found):
        raise StackRefused(stack_name, found, resolved.template_set,
                           resolved)
    return Checked(findings=found, **{
        field.name: getattr(resolved, field.name)
        for field in dataclasses.fields(resolve_mod.Resolved)})


def overridden_findings(resolved, parameters):
    """A warning per --parameter an environment file overrides."""
    top = resolved.display_template
    return [findings.Finding(
        rule='PARAM-OVERRIDDEN', severity=findings.WARNING, file=top,
        parameter=name, message='given %r, but %s sets %r, and Heat merges '
        'environment files over --parameter' % (given, where, kept),
        fix='give it in an environment file passed after %s (-e), as '
        'templates/environments/in-stack-generator.yaml does for '
        'endpoints' % where)
        for name, (given, kept, where) in sorted(resolve_mod.overridden(
            resolved.template_set, parameters).items())]


def refusal_findings(error):
    """Why the stack did not resolve (a ResolveError), as findings."""
    if error.load_error:
        return [load_finding(error.error)]
    top = error.template_set.display_path(
        error.template_set.template_path)
    if isinstance(error.error, resolve_mod.TopologyError):
        return [findings.Finding(
            rule='NODE-CONFIG', file=top, message='a server\'s user_data '
            'cannot be read as a node config (%s)' % error.error,
            fix='write user_data as lib/chain_server.yaml does (a '
            '#cloud-config document with an epa_chain key)')]
    return [heat_errors.to_finding(error.error, error.template_set,
                                   error.template, error.context)
            ] + _lookups(error.skipped, top)


def rule_findings(resolved):
    """The findings on a resolved stack: cloud lookups, then the rules."""
    return _lookups(resolved.cloud_lookups(), resolved.display_template) + \
        list(rules.check(resolved.topology, resolved.realisation))


def _lookups(lookups, top):
    # Sorted: Heat validates resources in an order of its sets, which
    # differs from run to run; a report should not.
    return [findings.Finding(rule='CLOUD-LOOKUP', severity=findings.SKIPPED,
                             file=top, message='%s %r: needs a cloud to '
                             'look up' % (lookup.constraint, lookup.value))
            for lookup in sorted(lookups, key=lambda found: (
                found.constraint, found.value))]


def load_finding(error):
    """A file that cannot be read or must not be (files.LoadError)."""
    return findings.Finding(rule=LOAD, file=error.path,
                            message=error.message, fix=error.fix)
