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

"""Validate templates with their environments: Heat first, then NFV rules."""

import time

from epa_chain.hot import files
from epa_chain.hot import resolve as resolve_mod
from epa_chain.validation import findings
from epa_chain.validation import heat_errors
from epa_chain.validation import heat_releases
from epa_chain.validation import rules

# A file not read: missing, unreadable, refused (safe_yaml, hot/tree).
LOAD = 'LOAD'


def validate(template_path, environment_paths=(), parameters=None,
             stack_name='epa-chain', allow_outside=False):
    """Validate one template with its environments; return a Report.

    Validation is resolving the stack (hot/resolve.py) and checking the
    rules on what Heat resolved. `parameters` override the environments'
    as `openstack stack create --parameter` does; `allow_outside` lets
    the template use files outside its directory tree (hot/tree.py).
    """
    started = time.monotonic()
    report = findings.Report(template_path, list(environment_paths))
    try:
        resolved = resolve_mod.resolve(template_path, environment_paths,
                                       parameters, stack_name, allow_outside)
    except resolve_mod.ResolveError as exc:
        template_set = exc.template_set
        report.findings.extend(refusal_findings(exc))
    else:
        template_set = resolved.template_set
        report.findings.extend(check(resolved))
    if template_set is not None:
        # The files as written: what the imported Heat accepts may still
        # break an older release that supports the template's version.
        report.findings.extend(heat_releases.check(template_set))
    report.seconds = time.monotonic() - started
    return report


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


def check(resolved):
    """The findings on a resolved stack: cloud lookups, then the rules."""
    return _lookups(resolved.cloud_lookups(), resolved.display_template) + \
        list(rules.check(resolved.topology, resolved.realisation))


def _lookups(lookups, top):
    return [findings.Finding(rule='CLOUD-LOOKUP', severity=findings.SKIPPED,
                             file=top, message='%s %r: needs a cloud to '
                             'look up' % (lookup.constraint, lookup.value))
            for lookup in lookups]


def load_finding(error):
    """A file that cannot be read or must not be (files.LoadError)."""
    return findings.Finding(rule=LOAD, file=error.path,
                            message=error.message, fix=error.fix)


def validate_tree(directory, allow_outside=False):
    """Validate every top-level template under a directory, with presets."""
    discovery = files.discover(directory, allow_outside)
    reports = []
    for error in discovery.unreadable:
        report = findings.Report(error.path, [])
        report.findings.append(load_finding(error))
        reports.append(report)
    for env in discovery.orphan_environments:
        report = findings.Report('', [env])
        report.findings.append(findings.Finding(
            rule='PRESET', file=env,
            message='sets no parameter of any template under %s' % directory,
            fix='name parameters the template declares'))
        reports.append(report)
    for template, environments in discovery.pairs:
        reports.append(validate(template, environments,
                                allow_outside=allow_outside))
    return reports
