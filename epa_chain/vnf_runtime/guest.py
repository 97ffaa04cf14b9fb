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


"""The guest's own set-up from the config drive, where no cloud-init runs.

The images boot without cloud-init (its stages and host keys took most of
a minute under emulation: diskimage-elements/epa-chain-lean-boot), so with
--manage-guest the runtime does the three things cloud-init did for a
chain node, from the same files:

- the host name, from meta_data.json (`hostname`, else `name`);
- the management NIC, from network_data.json: a fixed address with its
  routes and MTU through `ip`, or, on a DHCP subnet, systemd-networkd
  with a network file for that NIC alone (the data NICs are DPDK's);
- the metadata's SSH public keys, added to the login user's
  authorized_keys (never removed: keys put there by hand stay).

Nothing here is undone when the runtime stops: the guest keeps its name,
address and keys, as it did with cloud-init. A value that cannot be used
fails the node with the file and field at fault.
"""

import dataclasses
import ipaddress
import os
import pwd
import re
import socket
import subprocess
import typing

from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import errors
from epa_chain.vnf_runtime import management

NETWORKD_DIR = '/run/systemd/network'
NETWORKD_FILE = '10-epa-chain-management.network'
# RFC 1123 labels; Nova makes host names of server names this way.
_HOSTNAME = re.compile(r'^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}'
                       r'[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}'
                       r'[A-Za-z0-9])?)*$')
# What Nova's key pairs are: a type, base64 data, an optional comment; no
# authorized_keys options (command=, from=...) ever come from the metadata.
_KEY = re.compile(r'^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|'
                  r'sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com) '
                  r'[A-Za-z0-9+/=]+( [\x20-\x7e]*)?$')
STATIC_TYPES = ('ipv4', 'ipv6')
DHCP_TYPES = {'ipv4_dhcp': 'ipv4', 'ipv6_dhcp': 'ipv6',
              'ipv6_dhcpv6-stateful': 'ipv6',
              'ipv6_dhcpv6-stateless': 'ipv6', 'ipv6_slaac': 'ipv6'}


@dataclasses.dataclass(frozen=True)
class Address:
    """A fixed address of the management NIC, with its routes."""

    interface: str
    cidr: str                       # address/prefix
    routes: typing.Tuple[typing.Tuple[str, str], ...]  # (destination, via)


@dataclasses.dataclass(frozen=True)
class Plan:
    """What --manage-guest does, checked before anything is changed."""

    hostname: typing.Optional[str]
    interface: typing.Optional[str]
    mac: str
    mtu: typing.Optional[int]
    addresses: typing.Tuple[Address, ...]
    dhcp: typing.Tuple[str, ...]    # 'ipv4' / 'ipv6', by networkd
    keys: typing.Tuple[str, ...]
    login_user: str

    def describe(self):
        where = ', '.join(a.cidr for a in self.addresses) or (
            'DHCP (%s) by systemd-networkd' % '+'.join(self.dhcp)
            if self.dhcp else 'no address')
        return ('host name %s; management NIC %s (%s): %s; %d SSH key(s) '
                'for %s' % (self.hostname or '(unchanged)',
                            self.interface or '?', self.mac, where,
                            len(self.keys), self.login_user))


def plan(drive, node, links, nics, login_user):
    """The Plan; MetadataError naming the file and field at fault."""
    mgmt = management.link(node, links, needed_by='--manage-guest')
    interface = next((n.interface for n in nics if n.mac == mgmt.mac), None)
    if interface is None:
        raise errors.MetadataError(
            config_drive.NETWORK_DATA, 'links',
            'the management NIC %s is not a network interface of this '
            'server' % mgmt.mac)
    addresses, dhcp = _networks(drive, mgmt, interface)
    return Plan(hostname=_hostname(drive.meta_data), interface=interface,
                mac=mgmt.mac, mtu=mgmt.mtu, addresses=tuple(addresses),
                dhcp=tuple(dhcp), keys=tuple(_keys(drive.meta_data)),
                login_user=login_user)


def _hostname(meta_data):
    for field in ('hostname', 'name'):
        value = meta_data.get(field)
        if isinstance(value, str) and value:
            if not _HOSTNAME.match(value):
                raise errors.MetadataError(
                    config_drive.META_DATA, field,
                    'not a host name (RFC 1123 labels): %r' % value[:80])
            # The kernel keeps 64 characters: the first label is enough.
            return value if len(value) <= 64 else value.split('.')[0]
    return None


def _networks(drive, mgmt, interface):
    addresses, dhcp = [], []
    networks = drive.network_data.get('networks') or []
    for index, network in enumerate(networks):
        if not isinstance(network, dict) or network.get('link') != mgmt.id:
            continue
        field = 'networks[%d]' % index
        kind = network.get('type')
        if kind in DHCP_TYPES:
            dhcp.append(DHCP_TYPES[kind])
        elif kind in STATIC_TYPES:
            addresses.append(_address(network, field, interface))
        else:
            raise errors.MetadataError(
                config_drive.NETWORK_DATA, field + '.type',
                'unknown network type %r' % (kind,))
    return addresses, sorted(set(dhcp))


def _address(network, field, interface):
    try:
        address = ipaddress.ip_address(network.get('ip_address'))
        prefix = _prefix(network.get('netmask'), address.version)
        routes = tuple(_route(route, address.version)
                       for route in network.get('routes') or [])
    except (ValueError, TypeError, AttributeError) as exc:
        raise errors.MetadataError(config_drive.NETWORK_DATA, field,
                                   'not an address, netmask and routes Nova '
                                   'writes: %s' % exc)
    return Address(interface, '%s/%d' % (address, prefix), routes)


def _prefix(netmask, version):
    """The prefix length of a dotted (or IPv6 style) netmask, or a length."""
    if isinstance(netmask, int) or (isinstance(netmask, str) and
                                    netmask.isdigit()):
        length = int(netmask)
    else:
        bits = int(ipaddress.ip_address(netmask))
        width = 32 if version == 4 else 128
        length = bin(bits).count('1')
        if bits != ((1 << width) - 1) ^ ((1 << (width - length)) - 1):
            raise ValueError('netmask %s is not contiguous' % netmask)
    if not 0 <= length <= (32 if version == 4 else 128):
        raise ValueError('prefix /%d' % length)
    return length


def _route(route, version):
    network = ipaddress.ip_network('%s/%d' % (
        route['network'], _prefix(route['netmask'], version)))
    gateway = ipaddress.ip_address(route['gateway'])
    destination = 'default' if network.prefixlen == 0 else str(network)
    return destination, str(gateway)


def _keys(meta_data):
    """Public keys from `public_keys` (name: key) and `keys` (Nova)."""
    found = []
    public = meta_data.get('public_keys')
    if isinstance(public, dict):
        found.extend(public.values())
    for item in meta_data.get('keys') or []:
        if isinstance(item, dict) and item.get('type', 'ssh') == 'ssh':
            found.append(item.get('data'))
    keys = []
    for key in found:
        if not isinstance(key, str):
            continue
        key = key.strip()
        if not _KEY.match(key):
            raise errors.MetadataError(
                config_drive.META_DATA, 'public_keys',
                'not one OpenSSH public key line: %r' % key[:40])
        if key not in keys:
            keys.append(key)
    return keys


class Manager:
    """Applies a Plan; commands run through `run` (a fake in tests)."""

    def __init__(self, run=subprocess.run, sethostname=socket.sethostname,
                 networkd_dir=NETWORKD_DIR, getpwnam=pwd.getpwnam,
                 chown=os.chown):
        self.run = run
        self.sethostname = sethostname
        self.networkd_dir = networkd_dir
        self.getpwnam = getpwnam
        self.chown = chown

    def apply(self, planned):
        if planned.hostname:
            self.sethostname(planned.hostname)
        self._link(planned)
        for address in planned.addresses:
            self._command(['ip', 'address', 'replace', address.cidr,
                           'dev', address.interface])
            for destination, via in address.routes:
                self._command(['ip', 'route', 'replace', destination,
                               'via', via, 'dev', address.interface])
        if planned.dhcp:
            self._networkd(planned)
        if planned.keys:
            self._authorize(planned.login_user, planned.keys)

    def _link(self, planned):
        argv = ['ip', 'link', 'set', 'dev', planned.interface]
        if planned.mtu:
            argv += ['mtu', str(planned.mtu)]
        self._command(argv + ['up'])

    def _networkd(self, planned):
        """A network file for the management NIC alone, then networkd."""
        os.makedirs(self.networkd_dir, exist_ok=True)
        text = ('# epa-chain runtime (--manage-guest): the management NIC '
                'only.\n[Match]\nMACAddress=%s\n\n[Network]\nDHCP=%s\n'
                % (planned.mac, 'yes' if len(planned.dhcp) == 2
                   else planned.dhcp[0]))
        if planned.mtu:
            text += '\n[Link]\nMTUBytes=%d\n' % planned.mtu
        path = os.path.join(self.networkd_dir, NETWORKD_FILE)
        with open(path, 'w') as stream:
            stream.write(text)
        # Not waited for: networkd's start waits on udev's coldplug (about
        # 30 s under emulation); the control relay waits for the address.
        self._command(['systemctl', 'restart', '--no-block',
                       'systemd-networkd.service'])

    def _authorize(self, user, keys):
        try:
            entry = self.getpwnam(user)
        except KeyError:
            raise errors.SystemSetupError(
                '--login-user %s: no such user in this image (the '
                'epa-chain-guest-access element creates it)' % user)
        ssh_dir = os.path.join(entry.pw_dir, '.ssh')
        if os.path.islink(ssh_dir):
            raise errors.SystemSetupError(
                '%s is a symbolic link: refusing to write keys through it'
                % ssh_dir)
        os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
        path = os.path.join(ssh_dir, 'authorized_keys')
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_APPEND
        with os.fdopen(os.open(path, flags, 0o600), 'a+') as stream:
            stream.seek(0)
            present = {line.strip() for line in stream}
            for key in keys:
                if key not in present:
                    stream.write(key + '\n')
        for owned in (ssh_dir, path):
            self.chown(owned, entry.pw_uid, entry.pw_gid)
        os.chmod(ssh_dir, 0o700)
        os.chmod(path, 0o600)

    def _command(self, argv):
        try:
            done = self.run(argv, capture_output=True, text=True,
                            timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise errors.SystemSetupError('%s: %s' % (' '.join(argv), exc))
        if done.returncode:
            raise errors.SystemSetupError('%s exited %d: %s' % (
                ' '.join(argv), done.returncode,
                ' '.join((done.stderr or '').split())[:200]))
