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

"""The config drive a chain node reads: its layout, both sides of it.

Nova writes it (a small filesystem labelled config-2) and the local bed
writes the same files into a directory; the VNF runtime in the images
reads them (vnf_runtime/config_drive.py). What both sides agree on:

openstack/latest/meta_data.json     the server: uuid, name, hostname, ...
openstack/latest/network_data.json  links (one per NIC, by MAC:
                                    ethernet_mac_address, id, type, mtu,
                                    vif_id), networks (their addresses)
openstack/latest/user_data          the node configuration Heat resolved
                                    (chain/node_config.py)
"""

import json
import os

LABELS = ('config-2', 'CONFIG-2')  # iso9660 and vfat spellings
META_DATA = 'openstack/latest/meta_data.json'
NETWORK_DATA = 'openstack/latest/network_data.json'
USER_DATA = 'openstack/latest/user_data'


def meta_data(server_id, name, availability_zone='nova'):
    """meta_data.json of a server as Nova writes it (the fields read)."""
    return {'uuid': server_id, 'name': name, 'hostname': name,
            'launch_index': 0, 'availability_zone': availability_zone}


def link(link_id, mac, link_type, vif_id, mtu=1500):
    """One NIC of network_data.json's links."""
    return {'id': link_id, 'type': link_type, 'vif_id': vif_id, 'mtu': mtu,
            'ethernet_mac_address': mac}


def network_data(links, networks=()):
    return {'links': list(links), 'networks': list(networks),
            'services': []}


def write(directory, meta, network, user_data):
    """Write the three files under `directory` as Nova lays them out."""
    for relative, content in (
            (META_DATA, json.dumps(meta, indent=1)),
            (NETWORK_DATA, json.dumps(network, indent=1)),
            (USER_DATA, user_data)):
        path = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as stream:
            stream.write(content)
    return directory
