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


"""Data ports as virtio-user devices on vhost-user sockets.

On a host without a hypervisor (`epa-chain local`) a node's data ports are
not PCI virtio NICs but vhost-user sockets that OVS's dpdkvhostuserclient
ports connect to. The engine itself plays the guest's virtio driver: DPDK's
virtio-user PMD, one `--vdev` per port, as the server side of the socket
(`server=1`), so that OVS may restart and reconnect. Nothing is bound and
no PCI bus is scanned (`--no-pci`); `--in-memory` keeps DPDK's files out of
the shared runtime directory, so any number of engines can run side by
side without file prefixes.

The socket file is the engine's: a stale one (from a killed run) is removed
before start, since DPDK cannot bind over it, and it is removed again once
the engine has stopped.
"""

import os
import stat

from epa_chain.vnf_runtime import errors

OPTION = '--virtio-user'
EAL_ARGS = ('--no-pci', '--in-memory', '--single-file-segments')
PMD = 'net_virtio_user'
SUN_PATH_MAX = 107          # bytes of an AF_UNIX path, without the NUL
UNIX_SOCKETS = '/proc/net/unix'
_LISTENING = 0x10000        # __SO_ACCEPTCON in /proc/net/unix's Flags
_MAC_CHARS = frozenset('0123456789abcdef')


def parse_option(text):
    """'MAC=SOCKET' -> (mac, absolute socket path); ValueError if bad.

    The path is made absolute here: the engine runs in the run directory,
    and a relative path would name another file there.
    """
    mac, sep, path = text.partition('=')
    mac = mac.strip().lower()
    parts = mac.split(':')
    if len(parts) != 6 or any(len(p) != 2 or not set(p) <= _MAC_CHARS
                              for p in parts):
        raise ValueError('%r: expected MAC=SOCKET with a MAC like '
                         'fa:16:3e:00:00:01' % text)
    if not sep or not path:
        raise ValueError('%r: expected MAC=SOCKET (the vhost-user socket '
                         'path after =)' % text)
    return mac, os.path.abspath(path)


def vdev_arg(index, port):
    """The EAL --vdev argument of a virtio-user PortDevice."""
    return '--vdev=%s%d,path=%s,server=1,mac=%s' % (
        PMD, index, port.virtio_user, port.mac)


def eal_args(ports):
    """EAL arguments for virtio-user ports, vdevs in DPDK port order.

    DPDK numbers vdev ports in the order of the --vdev arguments, which is
    how devices.match assigned PortDevice.dpdk_port.
    """
    by_dpdk = sorted(ports, key=lambda p: p.dpdk_port)
    return list(EAL_ARGS) + [vdev_arg(p.dpdk_port, p) for p in by_dpdk]


def check_sockets(ports, unix_sockets=UNIX_SOCKETS):
    """Check each port's socket path before anything changes.

    SystemSetupError naming --virtio-user when the path cannot work:
    shared by two ports, with a comma or a space (DPDK splits devargs at
    commas, PROX its eal= line at spaces), too long for AF_UNIX, in a
    missing directory, taken by a file that is not a socket, or served by
    a running process.
    """
    listening = _listening_paths(unix_sockets)
    seen = {}
    for port in sorted(ports, key=lambda p: p.dpdk_port):
        path = port.virtio_user
        where = '%s %s=%s (port %s)' % (OPTION, port.mac, path, port.name)
        if path in seen:
            raise errors.SystemSetupError(
                '%s: the same socket as port %s: give each port its own'
                % (where, seen[path]))
        seen[path] = port.name
        if ',' in path or any(c.isspace() for c in path):
            raise errors.SystemSetupError(
                '%s: the path has a comma or a space, which would split '
                'the --vdev argument: choose another path' % where)
        if len(os.fsencode(path)) > SUN_PATH_MAX:
            raise errors.SystemSetupError(
                '%s: the path is %d bytes, AF_UNIX takes at most %d: use a '
                'shorter directory' % (where, len(os.fsencode(path)),
                                       SUN_PATH_MAX))
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            raise errors.SystemSetupError(
                '%s: no directory %s: create it first (DPDK creates only '
                'the socket)' % (where, directory))
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISSOCK(mode):
            raise errors.SystemSetupError(
                '%s: exists and is not a socket: remove it or choose '
                'another path' % where)
        if path in listening:
            raise errors.SystemSetupError(
                '%s: a running process serves this socket (another engine '
                'or runtime still running?): stop it first' % where)


def stale(path):
    """True if a socket file is left at `path` (removed at start)."""
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False


def claim(path):
    """Remove a stale socket file; returns the undo that removes ours.

    The undo runs once the engine has stopped (it is registered before
    the engine's stop): OVS's client end needs no file to disconnect.
    """
    _remove_socket(path)

    def undo():
        _remove_socket(path)
    return undo


def _remove_socket(path):
    if stale(path):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _listening_paths(unix_sockets):
    """Paths of listening AF_UNIX sockets (best effort: this netns)."""
    found = set()
    try:
        with open(unix_sockets) as stream:
            next(stream, None)      # the header
            for line in stream:
                fields = line.rstrip('\n').split(None, 7)
                # Num RefCount Protocol Flags Type St Inode [Path]
                if len(fields) < 8:
                    continue
                try:
                    flags = int(fields[3], 16)
                except ValueError:
                    continue
                if flags & _LISTENING:
                    found.add(fields[7])
    except OSError:
        pass
    return found
