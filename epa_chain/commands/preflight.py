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
create` would get, checked offline first as validate checks them (one
resolve-and-check: what validate refuses, preflight refuses, asking the
cloud nothing); the cloud is asked with the clouds.yaml entry's
credentials through the `openstack` client (Placement through
osc-placement). Every blocker names the stack's resource, the key and
the fix; what the APIs cannot show is listed as unchecked. Nothing is
created. Preflight fails closed: when the cloud answered nothing at all
(an unknown cloud) or nothing for one check (Placement refused), it
says so in one line and exits 1; --allow-unchecked lets that pass and
counts what went unchecked. Exit status: 0 nothing blocks, 1 something
does (or Heat or the rules refused the stack, or the cloud did not
answer), 2 usage.

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
    parser.add_argument(preflight.ALLOW_UNCHECKED, action='store_true',
                        help='pass when nothing blocks even if the cloud '
                             'answered nothing for a check (credentials '
                             'without admin rights); default: fail closed')
    parser.add_argument(tree.ALLOW_OPTION, action='store_true',
                        help=tree.ALLOW_HELP)


def run(args):
    # Imported here: the offline check loads Heat's engine.
    from epa_chain.cloud import preflight_stack
    from epa_chain.validation import check

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
        found = preflight_stack.preflight_stack(
            args.template, args.environment, parameters,
            cloud_answers.CloudView(cli), stack_name=args.stack_name,
            allow_outside=args.allow_files_outside,
            allow_unchecked=args.allow_unchecked)
    except check.StackRefused as exc:
        for finding in exc.errors:
            _error(_one_line(finding))
        return 1
    return _report(found, args)


def _report(found, args):
    """Print (and write) what preflight found; the exit status."""
    for warning in found.warnings:
        _error(_one_line(warning))
    if args.json is not None:
        outputs.write_text(args.json, json.dumps(
            found.document(), indent=2, sort_keys=True) + '\n', '--json',
            allow_stdout=True)
    if args.json != outputs.STDOUT and found.gate.reached:
        print(preflight.table(found.findings))
    cloud = 'cloud %s' % (args.os_cloud or '(OS_CLOUD or OS_* environment)')
    print('%s: %s' % (found.template, found.gate.summary(cloud)),
          file=sys.stderr)
    return 0 if found.gate.passed else 1


def _one_line(finding):
    """A validation finding on one line, its fix after '; '."""
    return ' '.join(str(finding).replace('\n    fix:', '; fix:').split())


def _error(message):
    print('epa-chain preflight: %s' % (message,), file=sys.stderr)
