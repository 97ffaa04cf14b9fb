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

from epa_chain.chain import topology as topo
from epa_chain.hot import files
from epa_chain.hot import offline
from epa_chain.hot import realise
from epa_chain.validation import findings
from epa_chain.validation import heat_errors
from epa_chain.validation import rules


def validate(template_path, environment_paths=(), parameters=None,
             stack_name='epa-chain', resolved=None):
    """Validate one template with its environments; return a Report.

    `parameters` override the environments' as `openstack stack create
    --parameter` does. When `resolved` is a dict it receives the
    template set, the realisation and the topology for callers that go on
    to build the stack (epa-chain local).
    """
    started = time.monotonic()
    report = findings.Report(template_path, list(environment_paths))
    report.findings.extend(_validate(template_path, environment_paths,
                                     parameters or {}, stack_name,
                                     {} if resolved is None else resolved))
    report.seconds = time.monotonic() - started
    return report


def _validate(template_path, environment_paths, parameters, stack_name,
              resolved):
    try:
        template_set = files.load(template_path, environment_paths)
    except files.LoadError as exc:
        yield findings.Finding(rule='LOAD', file=exc.path,
                               message=exc.message,
                               fix='make the file readable YAML')
        return
    if parameters:
        template_set.environment.setdefault('parameters', {}).update(
            parameters)
    resolved['template_set'] = template_set
    top = template_set.display_path(template_set.template_path)
    with offline.SkippedLookups() as skipped:
        try:
            stack = offline.parse_stack(template_set, stack_name)
            stack.validate()
            realisation = realise.realise(stack, template_set)
        except realise.RealisationError as exc:
            realisation = None
            yield heat_errors.to_finding(exc.error, template_set,
                                         exc.template, exc.path)
        except Exception as exc:
            realisation = None
            yield heat_errors.to_finding(exc, template_set, top)
    in_stack = set()
    if realisation is not None:
        in_stack = {r.resource_id for r in realisation.resources.values()}
    for lookup in skipped.lookups:
        if lookup.value in in_stack:
            continue  # a resource of this stack: it will exist
        yield findings.Finding(
            rule='CLOUD-LOOKUP', severity=findings.SKIPPED, file=top,
            message='%s %r: needs a cloud to look up' % (lookup.constraint,
                                                         lookup.value))
    if realisation is not None:
        topology = topo.build(realisation)
        resolved.update(realisation=realisation, topology=topology)
        yield from rules.check(topology, realisation)


def validate_tree(directory):
    """Validate every top-level template under a directory, with presets."""
    discovery = files.discover(directory)
    reports = []
    for error in discovery.unreadable:
        report = findings.Report(error.path, [])
        report.findings.append(findings.Finding(
            rule='LOAD', file=error.path, message=error.message,
            fix='make the file readable YAML'))
        reports.append(report)
    for env in discovery.orphan_environments:
        report = findings.Report('', [env])
        report.findings.append(findings.Finding(
            rule='PRESET', file=env,
            message='sets no parameter of any template under %s' % directory,
            fix='name parameters the template declares'))
        reports.append(report)
    for template, environments in discovery.pairs:
        reports.append(validate(template, environments))
    return reports
