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

"""A VNF's config drive as a directory, written as Nova would write it.

The runtime reads the same three files it reads in a VM
(vnf_runtime/config_drive.py): meta_data.json (the server), the links of
network_data.json (one per NIC, by MAC; vhost-user, as Nova describes a
port on an OVS-DPDK host) and the user_data Heat resolved.
"""

import json
import os

from epa_chain.vnf_runtime import config_drive as reader


def write(directory, vnf):
    """Write `vnf`'s (plan.Vnf) config drive under `directory`."""
    meta_data = {'uuid': vnf.server_id, 'name': vnf.name,
                 'hostname': vnf.name, 'launch_index': 0,
                 'availability_zone': 'local'}
    network_data = {
        'links': [{'id': 'tap-%s' % port.name, 'type': 'vhostuser',
                   'vif_id': port.name, 'mtu': 1500,
                   'ethernet_mac_address': port.mac}
                  for port in vnf.ports],
        'networks': [], 'services': []}
    for relative, content in (
            (reader.META_DATA, json.dumps(meta_data, indent=1)),
            (reader.NETWORK_DATA, json.dumps(network_data, indent=1)),
            (reader.USER_DATA, vnf.user_data)):
        path = os.path.join(directory, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as stream:
            stream.write(content)
    return directory
