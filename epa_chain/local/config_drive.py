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

The runtime reads the same files it reads in a VM (the layout is
chain/config_drive.py): the server, one link per NIC (by MAC; vhost-user,
as Nova describes a port on an OVS-DPDK host) and the user_data Heat
resolved.
"""

from epa_chain.chain import config_drive as layout


def write(directory, vnf):
    """Write `vnf`'s (plan.Vnf) config drive under `directory`."""
    return layout.write(
        directory,
        layout.meta_data(vnf.server_id, vnf.name, availability_zone='local'),
        layout.network_data(
            layout.link('tap-%s' % port.name, port.mac, 'vhostuser',
                        port.name) for port in vnf.ports),
        vnf.user_data)
