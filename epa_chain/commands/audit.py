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

"""Audit a created chain: what each server's flavor asked, what it got.

Nova's side through the `openstack` client (compute API 2.78, admin:
the server's flavor with its extra specs and its NUMA topology); the
host's side, when the servers run on this host (or with --host yes on a
compute node, as root), from libvirt (`virsh dumpxml`) and Open vSwitch
(`ovs-appctl dpif-netdev/pmd-rxq-show`). Prints "EPA: asked vs given".
An answer that cannot be read (not JSON, another shape, a domain XML
that does not parse) is one line naming its source and the fix. Exit
status: 0 nothing invalidates a measurement, 1 something does, or
nothing was read (no server: not clean), or the cloud or the host could
not be read, 2 usage.

  epa-chain audit --os-cloud mycloud vecpe --json audit.json
"""

import json
import sys

from epa_chain.cloud import epa_audit
from epa_chain.cloud import openstack_cli
from epa_chain import outputs


def add_arguments(parser):
    parser.add_argument('stack', help='the chain stack (name or ID)')
    parser.add_argument('--os-cloud', metavar='CLOUD',
                        help='clouds.yaml entry (admin: Nova shows the '
                             'topology and the host to admins)')
    parser.add_argument('--host', choices=epa_audit.HOST_PART,
                        default='auto',
                        help='read libvirt and Open vSwitch on this host: '
                             'auto when Nova says the servers run here '
                             '(default %(default)s)')
    parser.add_argument('--json', metavar='OUT',
                        help='write the findings as JSON ("-" for stdout)')


def run(args):
    try:
        openstack_cli.check_stack_reference(args.stack)
        cli = openstack_cli.OpenStackCLI(args.os_cloud)
        if args.json is not None:
            outputs.check_file(args.json, '--json', allow_stdout=True)
    except ValueError as exc:
        _error(exc)
        return 2
    try:
        audit = epa_audit.audit_stack(cli, args.stack, args.host)
    except (openstack_cli.CLIError, epa_audit.HostError,
            epa_audit.AnswerError) as exc:
        _error(' '.join(str(exc).split()))
        return 1
    if args.json is not None:
        outputs.write_text(args.json, json.dumps(
            audit.document(), indent=2, sort_keys=True) + '\n', '--json',
            allow_stdout=True)
    if args.json != outputs.STDOUT:
        print(epa_audit.table(audit.findings))
    print('%s: %s' % (args.stack, audit.summary()), file=sys.stderr)
    return 0 if audit.clean else 1


def _error(message):
    print('epa-chain audit: %s' % (message,), file=sys.stderr)
