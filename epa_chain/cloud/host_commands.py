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

"""The audit's commands on a compute host: virsh and ovs-appctl, bounded.

Run only where Nova says a server runs (or where the user says so with
--host yes), as root; only Nova's own domain names reach virsh, after
the option that takes them. A command that fails, hangs or is missing
is a HostError naming it.
"""

import re
import shutil
import socket
import subprocess

HOST_PART = ('auto', 'yes', 'no')
# Bounds of each host command: a wedged libvirtd or ovs-vswitchd must not
# hang the audit.
HOST_COMMAND_TIMEOUT_S = 60
# Nova's libvirt domain names (instance_name_template's default form);
# anything else is not passed to virsh.
INSTANCE_NAME = re.compile(r'instance-[0-9a-f]{8}')


class HostError(RuntimeError):
    """A host command failed or is missing."""


def on_this_host(choice, server, here=None):
    """Whether to read the host part of `server` (choice: HOST_PART).

    auto: Nova says it runs on `here` (this host's name) and virsh is
    installed.
    """
    if choice == 'no':
        return False
    if choice == 'yes':
        return True
    here = socket.gethostname() if here is None else here
    return (server.get('OS-EXT-SRV-ATTR:host') == here and
            shutil.which('virsh') is not None)


def pmd_rxq_show(run=None):
    """The text of `ovs-appctl dpif-netdev/pmd-rxq-show`."""
    return host_command(['ovs-appctl', '--timeout=10',
                         'dpif-netdev/pmd-rxq-show'], run)


def domain_xml(server, run=None):
    """libvirt's XML of a server's domain, by Nova's name for it."""
    name = server.get('OS-EXT-SRV-ATTR:instance_name') or ''
    # Nova's own name for the domain; anything else never reaches virsh.
    if not INSTANCE_NAME.fullmatch(name):
        raise HostError('server %s: libvirt domain name %r is not Nova\'s '
                        'instance-XXXXXXXX form (admin credentials show '
                        'it)' % (server.get('name'), name))
    return host_command(['virsh', '-c', 'qemu:///system', 'dumpxml',
                         '--domain', name], run)


def host_command(argv, run=None):
    try:
        done = (run or subprocess.run)(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
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
