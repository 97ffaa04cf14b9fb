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
Exit status: 0 nothing invalidates a measurement, 1 something does (or
the cloud could not be read), 2 usage.

  epa-chain audit --os-cloud mycloud vecpe --json audit.json
"""

import json
import shutil
import socket
import subprocess
import sys

from epa_chain.cloud import epa_audit
from epa_chain.cloud import openstack_cli
from epa_chain import outputs

HOST_PART = ('auto', 'yes', 'no')
# Bounds of each host command: a wedged libvirtd or ovs-vswitchd must not
# hang the audit.
HOST_COMMAND_TIMEOUT_S = 60


def add_arguments(parser):
    parser.add_argument('stack', help='the chain stack (name or ID)')
    parser.add_argument('--os-cloud', metavar='CLOUD',
                        help='clouds.yaml entry (admin: Nova shows the '
                             'topology and the host to admins)')
    parser.add_argument('--host', choices=HOST_PART, default='auto',
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
        servers = cli.stack_servers(args.stack)
        shown = {server_id: cli.server_topology(server_id)
                 for server_id in sorted(servers)}
        here = socket.gethostname()
        rxqs = None
        findings = []
        host_checked = []
        for server_id, server in sorted(shown.items(),
                                        key=lambda item: item[1]['name']):
            domain = None
            if _host_part(args.host, server, here):
                if rxqs is None:
                    rxqs = epa_audit.rxqs_of(_host_command(
                        ['ovs-appctl', '--timeout=10',
                         'dpif-netdev/pmd-rxq-show']))
                domain = epa_audit.DomainGiven.of_xml(_domain_xml(server))
                host_checked.append(server['name'])
            findings += epa_audit.audit_server(server['name'], server,
                                               domain, rxqs)
    except (openstack_cli.CLIError, HostError, ValueError, KeyError) as exc:
        _error(' '.join(str(exc).split()))
        return 1
    if args.json is not None:
        outputs.write_text(args.json, json.dumps(epa_audit.document(
            args.stack, findings, host_checked), indent=2,
            sort_keys=True) + '\n', '--json', allow_stdout=True)
    if args.json != outputs.STDOUT:
        print(epa_audit.table(findings))
    bad = epa_audit.invalidating(findings)
    print('%s: %s' % (args.stack, '%d finding(s) invalidate a measurement'
                      % len(bad) if bad else 'nothing invalidates a '
                      'measurement (host read for %d of %d servers)'
                      % (len(host_checked), len(shown))), file=sys.stderr)
    return 1 if bad else 0


class HostError(RuntimeError):
    """A host command failed or is missing."""


def _host_part(choice, server, here):
    if choice == 'no':
        return False
    if choice == 'yes':
        return True
    return (server.get('OS-EXT-SRV-ATTR:host') == here and
            shutil.which('virsh') is not None)


def _domain_xml(server):
    name = server.get('OS-EXT-SRV-ATTR:instance_name') or ''
    # Nova's own name for the domain; anything else never reaches virsh.
    if not epa_audit.INSTANCE_NAME.fullmatch(name):
        raise HostError('server %s: libvirt domain name %r is not Nova\'s '
                        'instance-XXXXXXXX form (admin credentials show '
                        'it)' % (server.get('name'), name))
    return _host_command(['virsh', '-c', 'qemu:///system', 'dumpxml',
                          '--domain', name])


def _host_command(argv):
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              timeout=HOST_COMMAND_TIMEOUT_S)
    except FileNotFoundError:
        raise HostError('%s: not found on this host (--host no skips the '
                        'host part)' % argv[0])
    except subprocess.TimeoutExpired:
        raise HostError('%s did not answer in %d s' % (
            ' '.join(argv), HOST_COMMAND_TIMEOUT_S))
    if done.returncode != 0:
        raise HostError('%s failed: %s' % (' '.join(argv),
                                           done.stderr.strip()))
    return done.stdout


def _error(message):
    print('epa-chain audit: %s' % (message,), file=sys.stderr)
