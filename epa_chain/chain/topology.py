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

"""The chain a realised stack describes: networks, ports, servers, flavors.

Built from a `Realisation` (hot/realise.py): every value here is what Heat
resolved, so rules see what the cloud and the VNFs would see.
"""

import dataclasses
import typing

from epa_chain.chain import node_config

NETWORK_TYPES = ('OS::Neutron::ProviderNet', 'OS::Neutron::Net')
PORT_TYPE = 'OS::Neutron::Port'
SERVER_TYPE = 'OS::Nova::Server'
FLAVOR_TYPE = 'OS::Nova::Flavor'


@dataclasses.dataclass
class Network:
    key: str            # resource ID, or the name of an existing network
    name: str
    resource: typing.Any = None     # RealisedResource; None when existing
    network_type: typing.Optional[str] = None
    physical_network: typing.Optional[str] = None
    vlan: typing.Optional[int] = None

    @property
    def existing(self):
        return self.resource is None

    @property
    def label(self):
        return self.name


@dataclasses.dataclass
class Port:
    resource: typing.Any
    mac: str
    network: Network

    @property
    def properties(self):
        return self.resource.properties

    def given(self, key):
        return key in self.resource.given


@dataclasses.dataclass
class Node:
    """A server of the chain and what its config drive tells it."""

    server: typing.Any
    ports: typing.List[Port]
    flavor: typing.Any             # RealisedResource, or the existing name
    config: typing.Optional[node_config.NodeConfig]
    config_error: typing.Optional[node_config.NodeConfigError]

    @property
    def name(self):
        return self.server.dotted

    def port_for(self, config_port_name):
        data_port = self.config.ports[config_port_name]
        for port in self.ports:
            if port.mac == data_port.mac:
                return port
        return None

    @property
    def data_ports(self):
        if not self.config:
            return []
        return [p for p in (self.port_for(n) for n in self.config.ports) if p]

    @property
    def other_ports(self):
        data = {id(p) for p in self.data_ports}
        return [p for p in self.ports if id(p) not in data]


@dataclasses.dataclass
class Topology:
    networks: typing.Dict[str, Network]
    ports: typing.Dict[str, Port]
    nodes: typing.List[Node]
    flavors: typing.Dict[str, typing.Any]

    def port_by_mac(self, mac):
        for port in self.ports.values():
            if port.mac == mac:
                return port
        return None

    def node_of(self, port):
        for node in self.nodes:
            if any(p is port for p in node.ports):
                return node
        return None

    def chains(self):
        """The nodes of each chain: those their data segments join.

        A stack may hold several chains side by side (chain.yaml's
        chain_count), each on segments of its own; two nodes are in one
        chain when a segment links them, directly or through other nodes.
        Chains in order of their first node, nodes in stack order; a node
        without data ports is a chain of its own.
        """
        parent = list(range(len(self.nodes)))

        def root(index):
            while parent[index] != index:
                index = parent[index]
            return index

        first_on = {}
        for index, node in enumerate(self.nodes):
            for port in node.data_ports:
                other = first_on.setdefault(port.network.key, index)
                parent[root(index)] = root(other)
        chains = {}
        for index, node in enumerate(self.nodes):
            chains.setdefault(root(index), []).append(node)
        return list(chains.values())


def chain_index(dotted):
    """K of a resource of chain.yaml's chain K ('chains.K....'), or None.

    chain.yaml's ResourceGroup names its members by index; a resource
    outside it (a flavor, the server group) is of no chain.
    """
    parts = dotted.split('.')
    if len(parts) > 2 and parts[0] == 'chains' and parts[1].isdigit():
        return int(parts[1])
    return None


def _vlan(value):
    # Heat's ProviderNet schema types segmentation_id as a string.
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def build(realisation):
    networks = {}
    for res in realisation.of_type(*NETWORK_TYPES):
        props = res.properties
        networks[res.resource_id] = Network(
            key=res.resource_id, name=props.get('name') or res.name,
            resource=res, network_type=props.get('network_type'),
            physical_network=props.get('physical_network'),
            vlan=_vlan(props.get('segmentation_id')))

    def network_for(key):
        if key not in networks:
            networks[key] = Network(key=key, name=key)
        return networks[key]

    ports = {}
    for res in realisation.of_type(PORT_TYPE):
        ports[res.resource_id] = Port(
            resource=res, mac=res.attributes.get('mac_address'),
            network=network_for(res.properties.get('network')))

    flavors = {r.resource_id: r for r in realisation.of_type(FLAVOR_TYPE)}
    nodes = []
    for res in realisation.of_type(SERVER_TYPE):
        nics = res.properties.get('networks') or []
        attached = [ports[n['port']] for n in nics if n.get('port') in ports]
        config, error = None, None
        try:
            config = node_config.parse_user_data(
                res.properties.get('user_data'))
        except node_config.NodeConfigError as exc:
            error = exc
        flavor = res.properties.get('flavor')
        nodes.append(Node(server=res, ports=attached,
                          flavor=flavors.get(flavor, flavor),
                          config=config, config_error=error))
    return Topology(networks, ports, nodes, flavors)
