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

"""What a realised chain stack is, with names and IDs normalised away.

Two templates are equivalent when the clouds they would build are: the
same flavors (vCPUs, RAM, disk, extra specs), the same segments (name,
VLAN type, physical network, VLAN ID, subnet), the same ports with the
same port security, and the same MAC chain. A translated template and a
HOT preset differ in resource names, in nesting and in the synthetic MACs
the realiser hands out; so every port is named by its role in the chain,
(node, side), and every MAC by the port that owns it (a MAC no port of the
stack owns, an external tester's, stays as it is).
"""

from epa_chain.chain import topology as topo
from epa_chain.hot import realise

EXTERNAL = 'external'


def graph(realisation, stack_name='epa-chain'):
    """The normalised resource graph of a realised chain stack."""
    chain = topo.build(realisation)
    prefix = stack_name + '-'
    names = _Names(chain, prefix)
    groups = {r.resource_id: r for r in realisation.of_type(
        'OS::Neutron::SecurityGroup')}
    subnets = [r for r in realisation.of_type('OS::Neutron::Subnet')]
    nodes, networks = {}, {}
    for node in chain.nodes:
        if node.config is None:
            continue
        for side in node.config.ports:
            network = node.port_for(side).network
            networks[network.name] = _network(network, subnets)
        nodes[names.node(node)] = _node(node, names, groups, prefix)
    return {'nodes': nodes, 'networks': networks,
            'outputs': _outputs(realisation.outputs, names, prefix)}


def _node(node, names, groups, prefix):
    """A chain node: its server, ports and node config, names normalised."""
    server = node.server.properties
    return {
        'role': node.config.role,
        'engine': node.config.engine,
        'forwarding_cores': node.config.forwarding_cores,
        'control_port': node.config.control_port,
        'tasks_at_ready': node.config.tasks_at_ready,
        'latency_bucket_shift': node.config.latency_bucket_shift,
        'name': _strip(server.get('name'), prefix),
        'image': server.get('image'),
        'config_drive': server.get('config_drive'),
        'user_data_format': server.get('user_data_format'),
        'nics': [names.port(p) for p in node.ports],
        'flavor': _flavor(node.flavor),
        'data_ports': _data_ports(node, prefix),
        'management_ports': _management_ports(node, groups, prefix),
        'config_ports': {
            side: {'mac': names.mac(p.mac), 'network': p.network,
                   'vlan': p.vlan}
            for side, p in sorted(node.config.ports.items())},
        'flows': {
            f.direction: {'rx_port': f.rx_port, 'tx_port': f.tx_port,
                          'next_hop': names.mac(f.next_hop_mac)}
            for f in node.config.flows},
    }


def _data_ports(node, prefix):
    data = {}
    for side in sorted(node.config.ports):
        port = node.port_for(side)
        data[side] = {
            'network': port.network.name,
            'port_security_enabled': port.properties.get(
                'port_security_enabled'),
            'security_groups': port.properties.get('security_groups'),
            'vnic_type': port.properties.get('binding:vnic_type'),
            'fixed_mac': realise.fixed_mac(port.properties),
            'name': _strip(port.properties.get('name'), prefix),
        }
    return data


def _management_ports(node, groups, prefix):
    return {
        _strip(port.properties.get('name'), prefix): {
            'network': port.network.name,
            'rules': sorted(
                _rule(rule)
                for group in port.properties.get('security_groups') or []
                for rule in _rules(groups, group)),
        } for port in node.other_ports}


class _Names:
    """Ports by role in the chain: (node, side), and MACs by their port."""

    def __init__(self, chain, prefix):
        self.prefix = prefix
        self.by_mac = {}
        self.by_port = {}
        for node in chain.nodes:
            if node.config is None:
                continue
            key = self.node(node)
            for side in node.config.ports:
                port = node.port_for(side)
                if port is not None:
                    self.by_mac[port.mac] = '%s.%s' % (key, side)
                    self.by_port[id(port)] = '%s.%s' % (key, side)
            for port in node.other_ports:
                self.by_port[id(port)] = '%s.management' % key

    def node(self, node):
        return _strip(node.config.name, self.prefix)

    def mac(self, mac):
        return self.by_mac.get(mac, '%s %s' % (EXTERNAL, mac))

    def port(self, port):
        return self.by_port.get(id(port), '?')


def _strip(name, prefix):
    if isinstance(name, str) and name.startswith(prefix):
        return name[len(prefix):]
    return name


def _flavor(flavor):
    if isinstance(flavor, str) or flavor is None:
        return {'existing': flavor}
    props = flavor.properties
    return {key: props.get(key) for key in
            ('vcpus', 'ram', 'disk', 'extra_specs', 'is_public')}


def _network(network, subnets):
    if network.existing:
        return {'existing': True}
    props = network.resource.properties
    subnet = [s.properties for s in subnets
              if s.properties.get('network') == network.key]
    return {
        'type': network.resource.type,
        'network_type': network.network_type,
        'physical_network': network.physical_network,
        'vlan': network.vlan,
        'shared': props.get('shared'),
        'port_security_enabled': props.get('port_security_enabled'),
        'subnets': sorted(
            (s.get('name'), s.get('cidr'), str(s.get('ip_version')),
             s.get('enable_dhcp'), s.get('gateway_ip')) for s in subnet),
    }


def _rules(groups, group_id):
    group = groups.get(group_id)
    return (group.properties.get('rules') or []) if group else []


def _rule(rule):
    keys = ('direction', 'ethertype', 'protocol', 'port_range_min',
            'port_range_max', 'remote_ip_prefix')
    return tuple((k, rule.get(k)) for k in keys)


def _outputs(outputs, names, prefix):
    """Chain 0's outputs under their own names, and every chain's."""
    normalised = _chain_outputs(outputs, names, prefix)
    normalised['chains'] = [
        dict(_chain_outputs(entry, names, prefix), index=entry.get('index'))
        for entry in outputs.get('chains') or ()]
    return normalised


def _chain_outputs(outputs, names, prefix):
    def hops(value):
        return [{'server': _strip(h.get('server'), prefix),
                 'role': h.get('role'),
                 'port': None if h.get('port') is None else 'in-stack',
                 'mac': names.mac(h.get('mac')),
                 'network': h.get('network'), 'vlan': h.get('vlan')}
                for h in value or []]

    endpoint = outputs.get('generator_control_endpoint')
    vnf_endpoints = outputs.get('vnf_control_endpoints') or {}
    return {
        'forward_chain': hops(outputs.get('forward_chain')),
        'reverse_chain': hops(outputs.get('reverse_chain')),
        'management_addresses': sorted(
            outputs.get('management_addresses') or {}),
        'generator_control_port': endpoint.get('port') if endpoint else None,
        'vnf_control_endpoints': sorted(
            (_strip(name, prefix), bool(value))
            for name, value in vnf_endpoints.items()),
    }
