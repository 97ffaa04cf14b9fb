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


"""Find the config drive and read what Nova and Heat wrote on it.

Nova writes openstack/latest/meta_data.json (the server), network_data.json
(its NICs by MAC, and their addresses) and user_data (here: the node
configuration from templates/lib/chain_server.yaml) on a small filesystem
labelled config-2 (the layout: chain/config_drive.py). The drive is
mounted read-only just long enough to read those three files; everything
is checked before anything is configured.
"""

import dataclasses
import json
import os
import subprocess
import tempfile
import time
import typing

from epa_chain.chain import config_drive as layout
from epa_chain.chain import node_config
from epa_chain.vnf_runtime import errors

# The layout both sides agree on; the names stay importable from here.
LABELS = layout.LABELS
META_DATA = layout.META_DATA
NETWORK_DATA = layout.NETWORK_DATA
USER_DATA = layout.USER_DATA
MAC_CHARS = frozenset('0123456789abcdef:')


@dataclasses.dataclass(frozen=True)
class Link:
    """A NIC as network_data.json describes it."""

    id: str
    mac: str
    type: typing.Optional[str]
    mtu: typing.Optional[int]
    vif_id: typing.Optional[str]


@dataclasses.dataclass(frozen=True)
class ConfigDrive:
    source: str
    meta_data: dict
    network_data: dict
    user_data: str

    @property
    def server_name(self):
        """The server's name from Nova, for messages before user_data."""
        name = self.meta_data.get('name')
        return name if isinstance(name, str) and name else None

    def node_config(self):
        """The node configuration in user_data; MetadataError if bad."""
        try:
            return node_config.parse_user_data(self.user_data)
        except node_config.NodeConfigError as exc:
            field = exc.field
            if field not in (None, 'user_data'):
                field = 'epa_chain.' + field
            elif field == 'user_data':
                field = None
            raise errors.MetadataError(USER_DATA, field, exc.message)

    def links(self):
        """The server's NICs; MetadataError if network_data is unusable."""
        items = self.network_data.get('links')
        if not isinstance(items, list) or not items:
            raise errors.MetadataError(NETWORK_DATA, 'links',
                                       'must be a non-empty list')
        links = []
        for index, item in enumerate(items):
            field = 'links[%d]' % index
            if not isinstance(item, dict):
                raise errors.MetadataError(NETWORK_DATA, field,
                                           'must be an object')
            mac = item.get('ethernet_mac_address')
            if not isinstance(mac, str) or len(mac) != 17 or not set(
                    mac.lower()) <= MAC_CHARS:
                raise errors.MetadataError(
                    NETWORK_DATA, field + '.ethernet_mac_address',
                    'not a MAC address: %r' % (mac,))
            mtu = item.get('mtu')
            links.append(Link(id=str(item.get('id', field)), mac=mac.lower(),
                              type=item.get('type'),
                              mtu=mtu if isinstance(mtu, int) else None,
                              vif_id=item.get('vif_id')))
        return links

    def static_addresses(self, link_id):
        """Fixed IP addresses Nova assigned to a link (none with DHCP)."""
        found = []
        for network in self.network_data.get('networks') or []:
            if not isinstance(network, dict):
                continue
            if (network.get('link') == link_id and
                    network.get('type') in ('ipv4', 'ipv6') and
                    isinstance(network.get('ip_address'), str)):
                found.append(network['ip_address'])
        return found


def read(directory):
    """Read a mounted (or copied) config drive; MetadataError if bad."""
    directory = os.path.normpath(directory)
    if not os.path.isdir(directory):
        raise errors.MetadataError(
            directory, None, 'no such directory (the config drive to read)')
    meta_data = _json_object(directory, META_DATA)
    uuid = meta_data.get('uuid')
    if not isinstance(uuid, str) or not uuid:
        raise errors.MetadataError(META_DATA, 'uuid',
                                   'missing: not a Nova config drive?')
    try:
        network_data = _json_object(directory, NETWORK_DATA)
        user_data = _read(directory, USER_DATA,
                          'the server was booted without user_data: create '
                          'it from templates/chain.yaml')
    except errors.MetadataError as exc:
        # Nova knows the server's name even if the rest is unusable.
        name = meta_data.get('name')
        exc.server_name = name if isinstance(name, str) and name else None
        raise
    return ConfigDrive(source=directory, meta_data=meta_data,
                       network_data=network_data, user_data=user_data)


def _read(directory, relative, missing_hint):
    path = os.path.join(directory, relative)
    try:
        with open(path, 'rb') as stream:
            data = stream.read()
    except FileNotFoundError:
        raise errors.MetadataError(relative, None, 'missing: ' + missing_hint)
    except OSError as exc:
        raise errors.MetadataError(relative, None,
                                   'cannot read: %s' % exc.strerror)
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        raise errors.MetadataError(relative, None, 'not UTF-8 text '
                                   '(compressed or binary user_data?)')


def _json_object(directory, relative):
    text = _read(directory, relative, 'boot the server with a config drive '
                 'from a Nova that writes the openstack/latest layout')
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise errors.MetadataError(relative, None, 'not JSON: %s' % exc)
    if not isinstance(value, dict):
        raise errors.MetadataError(relative, None, 'must be a JSON object')
    return value


class Locator:
    """Finds the config-2 filesystem and mounts it read-only for a read."""

    def __init__(self, dev_root='/dev', mounts='/proc/mounts',
                 run=subprocess.run, sleep=time.sleep, wait_s=30.0):
        self.dev_root = dev_root
        self.mounts = mounts
        self.run = run
        self.sleep = sleep
        self.wait_s = wait_s

    def read(self):
        device = self.find_device()
        mounted = self._mount_point(device)
        if mounted:
            return read(mounted)
        target = tempfile.mkdtemp(prefix='epa-chain-config-drive-')
        try:
            result = self.run(['mount', '-o', 'ro', device, target],
                              capture_output=True, text=True)
            if result.returncode:
                raise errors.MetadataError(
                    device, None, 'cannot mount the config drive: %s'
                    % (result.stderr.strip() or 'mount failed'))
            try:
                drive = read(target)
            finally:
                self.run(['umount', target], capture_output=True)
            return dataclasses.replace(drive, source=device)
        finally:
            os.rmdir(target)

    def find_device(self):
        # udev may still be creating the by-label links early at boot.
        deadline = self.wait_s
        while True:
            for label in LABELS:
                link = os.path.join(self.dev_root, 'disk', 'by-label', label)
                if os.path.exists(link):
                    return os.path.realpath(link)
                try:
                    result = self.run(['blkid', '-l', '-o', 'device', '-t',
                                       'LABEL=' + label],
                                      capture_output=True, text=True)
                except OSError:
                    continue        # no blkid: udev's links only
                if result.returncode == 0 and result.stdout.strip():
                    return result.stdout.strip()
            if deadline <= 0:
                raise errors.MetadataError(
                    'config drive', None, 'no filesystem labelled config-2: '
                    'boot the server with config_drive: true, or pass '
                    '--config-drive DIR')
            self.sleep(1.0)
            deadline -= 1.0

    def _mount_point(self, device):
        try:
            with open(self.mounts) as stream:
                for line in stream:
                    fields = line.split()
                    if len(fields) > 1 and fields[0] == device:
                        return fields[1].replace('\\040', ' ')
        except OSError:
            pass
        return None
