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

"""`epa-chain validate`: the one resolve-and-check, as a report per template.

Each template with its environments goes through check.check_stack
(Heat first, then the NFV rules); the report lists every finding, with
the checks against older Heat releases, whether the stack passed or not.
"""

import gc
import multiprocessing
import os
import sys
import time

from epa_chain.hot import files
from epa_chain.hot import memo
from epa_chain.validation import check as stack_check
from epa_chain.validation import findings
from epa_chain.validation import heat_releases
from epa_chain.validation import nova_rules

LOAD = stack_check.LOAD


def validate(template_path, environment_paths=(), parameters=None,
             stack_name='epa-chain', allow_outside=False):
    """Validate one template with its environments; return a Report.

    Validation is the one resolve-and-check (check.check_stack), whose
    findings the report lists whether it refused the stack or not, then
    the checks against older Heat releases. `parameters` override the
    environments' as `openstack stack create --parameter` does;
    `allow_outside` lets the template use files outside its directory
    tree (hot/tree.py).
    """
    started = time.monotonic()
    report = findings.Report(template_path, list(environment_paths))
    try:
        checked = stack_check.check_stack(
            template_path, environment_paths, parameters, stack_name,
            allow_outside)
    except stack_check.StackRefused as exc:
        template_set = exc.template_set
        report.findings.extend(exc.findings)
    else:
        template_set = checked.template_set
        report.findings.extend(checked.findings)
    if template_set is not None:
        # The files as written: what the imported Heat accepts may still
        # break an older release that supports the template's version.
        report.findings.extend(heat_releases.check(template_set))
    report.seconds = time.monotonic() - started
    return report


def validate_tree(directory, allow_outside=False):
    """Validate every top-level template under a directory, with presets."""
    # Reading the files loads Heat's configuration (safe_yaml's limits):
    # kept to the end, as the engine is (memo.resident).
    with memo.resident():
        discovery = files.discover(directory, allow_outside)
    reports = []
    for error in discovery.unreadable:
        report = findings.Report(error.path, [])
        report.findings.append(stack_check.load_finding(error))
        reports.append(report)
    for env in discovery.orphan_environments:
        report = findings.Report('', [env])
        report.findings.append(findings.Finding(
            rule='PRESET', file=env,
            message='sets no parameter of any template under %s' % directory,
            fix='name parameters the template declares'))
        reports.append(report)
    return reports + validate_pairs(discovery.pairs, allow_outside)


def validate_pairs(pairs, allow_outside=False):
    """A Report per (template, environments), in order, on every CPU.

    The first is validated here: it loads Heat's engine, the client and
    constraint plugins a template uses (Nova's rules load meanwhile in a
    process of their own: nova_rules.loaded_aside), and parses the
    tree once (hot/memo.py), all kept to the end of the process, so
    loaded with the collector paused and frozen after (memo.resident);
    the first check's own garbage is collected before. The others go
    to worker processes forked from this one, which inherit all of
    that; each check is whole in one worker, so the reports are those
    of one process doing them in turn.
    """
    jobs = [(template, list(environments), allow_outside)
            for template, environments in pairs]
    if not jobs:
        return []
    workers = min(_cpus(), len(jobs) - 1)
    if workers < 2 or 'fork' not in multiprocessing.get_all_start_methods():
        return _first_here(jobs) + [_validate_job(job) for job in jobs[1:]]
    # Buffered output would be written again by each forked process.
    sys.stdout.flush()
    sys.stderr.flush()
    # Nova loads on another CPU while this one loads Heat.
    with nova_rules.loaded_aside():
        reports = _first_here(jobs)
        with multiprocessing.get_context('fork').Pool(workers) as pool:
            reports += pool.map(_validate_job, jobs[1:], chunksize=1)
    return reports


def _first_here(jobs):
    with memo.resident():
        reports = [_validate_job(jobs[0])]
        gc.collect()
    return reports


def _validate_job(job):
    template, environments, allow_outside = job
    return validate(template, environments, allow_outside=allow_outside)


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # not on Linux
        return os.cpu_count() or 1
