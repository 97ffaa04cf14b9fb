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

"""Validate HOT templates and presets offline, with Heat's own engine.

Runs the checks `openstack stack create` runs (Heat strict validation,
nested templates resolved with their real parameter values), then the NFV
rules Heat lacks: Nova extra specs, provider VLANs, port security, the MAC
chain, management access (a warning when management_allowed_cidr admits
the internet). Lookups that need a cloud (images, existing flavors and
networks) are listed as skipped. Files a template uses must be inside its
directory tree; URLs are never fetched. A file that cannot be read, or is
refused, is a LOAD error (exit 1, as any error found). Each template that
fails is also said on one line of stderr. Exit status: 0 all valid, 1
errors found, 2 usage.

  epa-chain validate templates/                 every template and preset
  epa-chain validate templates/chain.yaml -e templates/presets/pvp-bidir.yaml
"""

import json
import os
import sys
import time

from epa_chain.commands import _arguments
from epa_chain.hot import tree
from epa_chain import safe_yaml


def add_arguments(parser):
    parser.add_argument('paths', nargs='+', metavar='PATH',
                        help='a template file, or a directory whose '
                             'templates are validated with every preset')
    parser.add_argument('-e', '--environment', action='append', default=[],
                        metavar='ENV', help='environment file for a template '
                        'PATH (repeatable, merged in order like heat -e)')
    parser.add_argument('--parameter', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='template parameter, repeatable, as '
                             '`openstack stack create --parameter`: an '
                             'environment file setting it wins, as in Heat '
                             '(a warning says so)')
    parser.add_argument('--json', action='store_true',
                        help='print a JSON document instead of text')
    parser.add_argument('-q', '--quiet', action='store_true',
                        help='do not list the checks skipped offline')
    parser.add_argument(tree.ALLOW_OPTION, action='store_true',
                        help=tree.ALLOW_HELP)


def run(args):
    # Imported here: Heat's engine takes seconds to load and other
    # subcommands do not need it.
    from epa_chain.validation import runner

    started = time.monotonic()
    parameters = _arguments.parse_pairs(args.parameter, '--parameter',
                                        'endpoints=generator')
    reports = []
    for path in args.paths:
        if os.path.isdir(path):
            if args.environment or parameters:
                _error('-e and --parameter apply to template files, not to '
                       'directory %s' % path)
                return 2
            found = runner.validate_tree(path, args.allow_files_outside)
            if not found:
                _error('%s: no template (a .yaml file with '
                       'heat_template_version) in it; give a directory '
                       'of templates' % path)
            reports.extend(found)
        else:
            reports.append(runner.validate(
                path, args.environment, parameters,
                allow_outside=args.allow_files_outside))
    elapsed = time.monotonic() - started
    for line in _failures(reports):
        _error(line)
    if args.json:
        _print_json(reports, elapsed)
    else:
        _print_text(reports, elapsed, args.quiet)
    return 0 if reports and all(r.ok for r in reports) else 1


def _error(message):
    print('epa-chain validate: %s' % message, file=sys.stderr)


def _failures(reports):
    """One line per failed report (each line once): why it failed.

    A file not read (LOAD) first, else the first error, and how many more
    the report holds.
    """
    from epa_chain.validation import runner

    lines = []
    for report in reports:
        if not report.errors:
            continue
        loads = [f for f in report.errors if f.rule == runner.LOAD]
        first = (loads or report.errors)[0]
        line = '%s: %s%s%s' % (
            first.location(),
            '' if first.rule == runner.LOAD else '[%s] ' % first.rule,
            ' '.join(first.message.split()),
            '; %s' % first.fix if first.fix else '')
        more = len(report.errors) - 1
        if more and first.rule != runner.LOAD:
            line += ' (and %d more error%s in the report)' % (
                more, '' if more == 1 else 's')
        if line not in lines:
            lines.append(line)
    return lines


def _print_json(reports, elapsed):
    json.dump({'schema': 'epa-chain/validate/1',
               'valid': all(r.ok for r in reports),
               'seconds': round(elapsed, 3),
               'reports': [r.as_dict() for r in reports]},
              sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write('\n')


def _print_text(reports, elapsed, quiet):
    skipped = {}
    for report in reports:
        name = _label(report)
        print('%s %s' % ('OK  ' if report.ok else 'FAIL', name))
        if report.errors or report.warnings:
            print('  ' + report.table().replace('\n', '\n  '))
        for finding in report.skipped:
            skipped.setdefault(finding.message, set()).add(name)
    if skipped and not quiet:
        print('\nSkipped offline (need a cloud):')
        for message in sorted(skipped):
            print('  - %s' % message)
    failed = sum(1 for r in reports if not r.ok)
    warned = sum(1 for r in reports if r.warnings)
    print('\n%d checked, %d failed, %sin %.2f s'
          % (len(reports), failed, '%d with warnings, ' % warned
             if warned else '', elapsed))


def _label(report):
    parts = [_shown(report.template)] if report.template else []
    parts += ['-e %s' % _shown(e) for e in report.environments]
    return ' '.join(parts)


def _shown(path):
    """Relative to the working directory when below it, else absolute."""
    return safe_yaml.shown(path) if path else repr(path)
