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

"""Ask the cloud whether a stack can be created, before creating it.

The template, environments and parameters are those `openstack stack
create` would get (resolved offline as Heat merges them, as validate
does); the cloud is asked with the clouds.yaml entry's credentials
through the `openstack` client (Placement through osc-placement). Every
blocker names the stack's resource, the key and the fix; what the APIs
cannot show is listed as unchecked. Nothing is created. Exit status: 0
nothing blocks, 1 something does (or Heat refused the template), 2 usage.

  epa-chain preflight --os-cloud mycloud templates/chain.yaml \\
      -e templates/presets/pvp-bidir.yaml \\
      -e templates/environments/small-host.yaml
"""

import json
import shutil
import sys

from epa_chain.cloud import cloud_answers
from epa_chain.cloud import openstack_cli
from epa_chain.cloud import preflight
from epa_chain.cloud import stack_needs
from epa_chain.commands import _arguments
from epa_chain.hot import tree
from epa_chain import outputs


def add_arguments(parser):
    parser.add_argument('template', metavar='TEMPLATE',
                        help='the HOT template `openstack stack create -t` '
                             'gets')
    parser.add_argument('-e', '--environment', action='append', default=[],
                        metavar='ENV', help='environment file (repeatable, '
                        'merged in order like openstack stack create -e)')
    parser.add_argument('--parameter', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='template parameter, repeatable, as '
                             '`openstack stack create --parameter`')
    parser.add_argument('--os-cloud', metavar='CLOUD',
                        help='clouds.yaml entry (default: the client\'s '
                             'OS_CLOUD or OS_* environment)')
    parser.add_argument('--stack-name', default='epa-chain',
                        help='the name the stack will have (its resources\' '
                             'names derive from it; default %(default)s)')
    parser.add_argument('--json', metavar='OUT',
                        help='write the findings as JSON ("-" for stdout)')
    parser.add_argument(tree.ALLOW_OPTION, action='store_true',
                        help=tree.ALLOW_HELP)


def run(args):
    from epa_chain.hot import resolve

    try:
        parameters = _arguments.parse_pairs(args.parameter, '--parameter',
                                            'endpoints=generator')
        openstack_cli.check_stack_reference(args.stack_name)
        cli = openstack_cli.OpenStackCLI(args.os_cloud)
        if args.json is not None:
            outputs.check_file(args.json, '--json', allow_stdout=True)
    except ValueError as exc:
        _error(exc)
        return 2
    if shutil.which(cli.base[0]) is None:
        _error('%s: not found; install python-openstackclient and '
               'osc-placement (preflight asks the cloud through them)'
               % cli.base[0])
        return 1
    try:
        resolved = resolve.resolve(args.template, args.environment,
                                   parameters, stack_name=args.stack_name,
                                   allow_outside=args.allow_files_outside)
    except resolve.ResolveError as exc:
        _error('%s (epa-chain validate says more)' % exc)
        return 1
    for name, (given, kept, where) in sorted(resolve.overridden(
            resolved.template_set, parameters).items()):
        _error('warning: --parameter %s=%s is overridden by %s (%s), as Heat '
               'merges them; set it in an environment file given after it'
               % (name, given, where, kept))
    findings = preflight.check(stack_needs.needs_of(resolved),
                               cloud_answers.CloudView(cli))
    shown = resolved.display_template
    if args.json is not None:
        outputs.write_text(args.json, json.dumps(
            preflight.document(findings, shown), indent=2,
            sort_keys=True) + '\n', '--json', allow_stdout=True)
    if args.json != outputs.STDOUT:
        print(preflight.table(findings))
    blockers = sum(f.verdict == preflight.BLOCKS for f in findings)
    print('%s: %s' % (shown, 'nothing blocks the create (%d unchecked)' % sum(
        f.verdict == preflight.UNCHECKED for f in findings)
        if not blockers else '%d blocker%s' % (
            blockers, '' if blockers == 1 else 's')), file=sys.stderr)
    return 0 if not blockers else 1


def _error(message):
    print('epa-chain preflight: %s' % (message,), file=sys.stderr)
