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

"""The service chain a parsed TOSCA template describes.

tosca-parser checks types and values; this module checks that the nodes
make a chain (every chain node has a left and a right data port, each
direction's next hop sits on the segment its sender transmits on) and
holds what the repairs put back into heat-translator's HOT. Values are
kept as HOT expressions: a TOSCA get_input becomes a get_param of the
parameter heat-translator made from the input, so the translated template
still takes the same inputs as parameters.
"""

import dataclasses
import typing

from epa_chain.chain import directions as chain_directions
from epa_chain import safe_yaml
from epa_chain.tosca import errors

CHAIN_NODE = 'epa_chain.nodes.ChainNode'
DATA_PORT = 'epa_chain.nodes.DataPort'
MANAGEMENT_PORT = 'epa_chain.nodes.ManagementPort'
PROVIDER_SEGMENT = 'epa_chain.nodes.ProviderSegment'
EXISTING_NETWORK = 'epa_chain.nodes.ExistingNetwork'
SECURITY_GROUP_RULE = 'tosca.policies.nfv.SecurityGroupRule'
RECEIVES_FROM = 'epa_chain.relationships.ReceivesFrom'
SIDES = ('left', 'right')
EXTRA_SPECS_FIELD = ('capabilities.virtual_compute.properties.'
                     'compute_requirements.nova_extra_specs')


@dataclasses.dataclass
class Subnet:
    cidr: typing.Any
    ip_version: int
    enable_dhcp: typing.Any = None
    gateway_ip: typing.Any = None
    gateway_given: bool = False


@dataclasses.dataclass
class Network:
    node: str
    name: typing.Any
    existing: bool
    network_type: typing.Any = None
    physical_network: typing.Any = None
    segmentation_id: typing.Any = None
    subnet: typing.Optional[Subnet] = None


@dataclasses.dataclass
class Port:
    node: str
    server: str
    network: str
    management: bool
    side: typing.Optional[str] = None
    mac_address: typing.Any = None
    receives_from: typing.Dict[str, str] = dataclasses.field(
        default_factory=dict)


@dataclasses.dataclass
class ChainNode:
    node: str
    name: typing.Any
    role: str
    engine: typing.Any
    forwarding_cores: typing.Any
    control_port: typing.Any
    direction: typing.Any
    image: typing.Any
    key_name: typing.Any
    extra_specs: typing.Dict[str, str]
    external_next_hop: typing.Dict[str, typing.Any]
    ports: typing.Dict[str, Port] = dataclasses.field(default_factory=dict)
    latency_bucket_shift: typing.Any = None
    management_ports: typing.List[Port] = dataclasses.field(
        default_factory=list)
    tasks_at_ready: typing.Any = None

    def rx_side(self, direction):
        """The side a direction arrives on.

        A VNF forwards left to right; the generator sends forward on its
        left and measures on its right.
        """
        forward_rx = 'right' if self.role == 'generator' else 'left'
        if direction == 'forward':
            return forward_rx
        return 'left' if forward_rx == 'right' else 'right'

    def tx_side(self, direction):
        return 'left' if self.rx_side(direction) == 'right' else 'right'


@dataclasses.dataclass
class AccessRule:
    policy: str
    direction: typing.Any
    ether_type: typing.Any
    protocol: typing.Any
    port_range_min: typing.Any
    port_range_max: typing.Any
    remote_ip_prefix: typing.Any
    targets: typing.List[str]


@dataclasses.dataclass
class Hop:
    """One port of a direction's path, in the stack or outside it."""

    port: typing.Optional[Port]
    side: str
    network: Network
    external_mac: typing.Any = None


@dataclasses.dataclass
class ChainModel:
    description: str
    values: typing.Dict[str, typing.Any]
    networks: typing.Dict[str, Network]
    ports: typing.Dict[str, Port]
    nodes: typing.Dict[str, ChainNode]
    rules: typing.List[AccessRule]

    def resolve(self, expr):
        """The value an expression has with the template's input values."""
        if isinstance(expr, dict) and list(expr) == ['get_param']:
            return self.values.get(expr['get_param'])
        if isinstance(expr, dict) and list(expr) == ['list_join']:
            sep, items = expr['list_join']
            return sep.join(str(self.resolve(i)) for i in items)
        return expr

    def next_hop(self, node, direction):
        """The port `node` sends `direction` to; None: outside the stack."""
        for port in self.ports.values():
            if port.receives_from.get(direction) == node.node:
                return port
        return None

    def entry(self, direction):
        """Where a direction enters the chain.

        The generator, or else the VNF a tester outside the stack feeds.
        """
        nodes = list(self.nodes.values())
        for node in nodes:
            if node.role == 'generator':
                return node
        fed = {p.server for p in self.ports.values()
               if p.receives_from.get(direction)}
        return next(n for n in nodes if n.node not in fed)

    def path(self, direction):
        """Every port a frame of `direction` visits, in order."""
        entry = self.entry(direction)
        hops = []
        if entry.role != 'generator':
            # A tester sends into the entry VNF; that VNF sends the other
            # direction back to the same tester port.
            rx = entry.ports[entry.rx_side(direction)]
            hops.append(Hop(None, rx.side, self.networks[rx.network],
                            entry.external_next_hop.get(_other(direction))))
            hops.append(self._hop(rx))
        node, seen = entry, set()
        while True:
            seen.add(node.node)
            tx = node.ports[node.tx_side(direction)]
            hops.append(self._hop(tx))
            target = self.next_hop(node, direction)
            if target is None:
                hops.append(Hop(None, tx.side, self.networks[tx.network],
                                node.external_next_hop.get(direction)))
                return hops
            hops.append(self._hop(target))
            receiver = self.nodes[target.server]
            if receiver.role == 'generator' or receiver.node in seen:
                return hops
            node = receiver

    def _hop(self, port):
        return Hop(port, port.side, self.networks[port.network])


def _other(direction):
    return 'reverse' if direction == 'forward' else 'forward'


# ---- reading the chain out of the parsed template ---------------------------

class Unsupported(ValueError):
    """A TOSCA function the chain's properties cannot carry into HOT."""


_TOSCA_FUNCTIONS = ('get_input', 'get_property', 'get_attribute',
                    'get_operation_output', 'concat', 'token',
                    'get_artifact')


def to_hot(value):
    """A TOSCA property value as a HOT expression (get_input: get_param)."""
    from toscaparser import functions

    if isinstance(value, functions.GetInput):
        args = value.args if isinstance(value.args, list) else [value.args]
        return {'get_param': args[0] if len(args) == 1 else list(args)}
    if isinstance(value, functions.Concat):
        return {'list_join': ['', [to_hot(a) for a in value.args]]}
    if isinstance(value, functions.Function):
        raise Unsupported(type(value).__name__)
    if isinstance(value, dict):
        if len(value) == 1 and list(value)[0] in _TOSCA_FUNCTIONS:
            name, args = next(iter(value.items()))
            if name == 'get_input':
                args = args if isinstance(args, list) else [args]
                return {'get_param': args[0] if len(args) == 1 else args}
            if name == 'concat':
                return {'list_join': ['', [to_hot(a) for a in args]]}
            raise Unsupported(name)
        return {k: to_hot(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_hot(v) for v in value]
    return value


def build(loaded):
    """The chain a loaded template describes; ToscaError if it is none."""
    builder = _Builder(loaded)
    model = builder.build()
    if builder.problems:
        raise errors.ToscaError(builder.problems)
    return model


def withheld_policies(tosca):
    """Policies heat-translator cannot translate (it aborts on them)."""
    return [p for p in tosca.topology_template.policies
            if p.is_derived_from(SECURITY_GROUP_RULE)]


def _targets(template, requirement):
    """The node names a requirement points at (as written if not names)."""
    found = []
    for item in template.requirements or []:
        for key, value in (item.items() if isinstance(item, dict) else ()):
            if key == requirement:
                target = value.get('node') if isinstance(value, dict) else (
                    value)
                found.append(target if isinstance(target, str) else
                             repr(target))
    return found


def _props(entity):
    return {name: prop.value for name, prop in
            (entity.get_properties() or {}).items()}


class _Builder:
    def __init__(self, loaded):
        self.loaded = loaded
        self.file = loaded.display_path
        self.problems = []
        self.model = ChainModel(
            description=loaded.tosca.description or '',
            values=dict(loaded.values), networks={}, ports={}, nodes={},
            rules=[])

    def problem(self, node, field, message, fix, kind='node'):
        self.problems.append(errors.ToscaProblem(
            self.file, message, node=node, field=field, fix=fix, kind=kind))

    def hot(self, value, node, field):
        try:
            return to_hot(value)
        except Unsupported as exc:
            self.problem(node, field, 'the TOSCA function %s cannot be '
                         'carried into the translated HOT' % exc,
                         'use a value or get_input')
            return None

    def build(self):
        kinds = {PROVIDER_SEGMENT: self._segment,
                 EXISTING_NETWORK: self._existing_network,
                 CHAIN_NODE: self._chain_node}
        ports = []
        for template in self.loaded.tosca.nodetemplates:
            if template.is_derived_from(DATA_PORT) or (
                    template.is_derived_from(MANAGEMENT_PORT)):
                ports.append(template)
                continue
            for type_name, read in kinds.items():
                if template.is_derived_from(type_name):
                    read(template)
                    break
            else:
                self.problem(
                    template.name, 'type', '%s is none of the chain\'s node '
                    'types' % template.type,
                    'use epa_chain.nodes.ChainNode, DataPort, ManagementPort,'
                    ' ProviderSegment or ExistingNetwork (tosca/definitions/'
                    'epa_chain_types.yaml)')
        for template in ports:
            self._port(template)
        for node in self.model.nodes.values():
            self._check_sides(node)
        if not self.problems:
            self._check_mac_chain()
        for policy in withheld_policies(self.loaded.tosca):
            self._rule(policy)
        return self.model

    # ---- networks -----------------------------------------------------------

    def _segment(self, template):
        name = template.name
        props = _props(template)
        l2, l3 = {}, None
        profile = props.get('vl_profile') or {}
        for entry in profile.get('virtual_link_protocol_data') or []:
            l2 = entry.get('l2_protocol_data') or l2
            l3 = entry.get('l3_protocol_data') or l3
        field = 'properties.vl_profile.virtual_link_protocol_data'
        network_type = self.hot(l2.get('network_type', 'vlan'), name,
                                field + '.l2_protocol_data.network_type')
        if self.model.resolve(network_type) != 'vlan':
            self.problem(name, field + '.l2_protocol_data.network_type',
                         'a chain segment is a provider VLAN network, not '
                         '%s' % self.model.resolve(network_type),
                         'set network_type: vlan')
        subnet = None
        if l3:
            subnet = Subnet(
                cidr=self.hot(l3.get('cidr'), name, field + '.cidr'),
                ip_version=6 if l3.get('ip_version') == 'ipv6' else 4,
                enable_dhcp=self.hot(l3.get('dhcp_enabled'), name,
                                     field + '.dhcp_enabled'),
                gateway_ip=self.hot(l3.get('gateway_ip'), name,
                                    field + '.gateway_ip'),
                gateway_given='gateway_ip' in l3)
        self.model.networks[name] = Network(
            node=name,
            name=self.hot(l2.get('name', name), name,
                          field + '.l2_protocol_data.name'),
            existing=False, network_type=network_type,
            physical_network=self.hot(props.get('physical_network'), name,
                                      'properties.physical_network'),
            segmentation_id=self.hot(props.get('segmentation_id'), name,
                                     'properties.segmentation_id'),
            subnet=subnet)

    def _existing_network(self, template):
        self.model.networks[template.name] = Network(
            node=template.name, existing=True,
            name=self.hot(_props(template).get('network'), template.name,
                          'properties.network'))

    # ---- chain nodes --------------------------------------------------------

    def _chain_node(self, template):
        name = template.name
        props = _props(template)

        def prop(key):
            return self.hot(props.get(key), name, 'properties.' + key)

        role = props.get('role')
        node = ChainNode(
            node=name, name=prop('name'), role=role, engine=prop('engine'),
            forwarding_cores=prop('forwarding_cores'),
            control_port=prop('control_port'), direction=prop('direction'),
            image=prop('image'), key_name=prop('key_name'),
            extra_specs=self._extra_specs(template),
            external_next_hop={},
            latency_bucket_shift=prop('latency_bucket_shift'),
            tasks_at_ready=prop('tasks_at_ready'))
        for direction in chain_directions.DIRECTIONS:
            mac = prop('%s_next_hop_mac' % direction)
            if mac not in (None, ''):
                node.external_next_hop[direction] = mac
        if not isinstance(role, str):
            self.problem(name, 'properties.role', 'the role must be written '
                         'in the template, not taken from an input',
                         'write role: vnf or role: generator')
        elif role == 'vnf' and node.forwarding_cores is None:
            self.problem(name, 'properties.forwarding_cores', 'a VNF needs '
                         'its number of forwarding cores',
                         'set forwarding_cores (vCPUs minus the master '
                         'core)')
        elif role == 'vnf' and node.tasks_at_ready not in (
                None, 'running') and node.control_port is None:
            self.problem(name, 'properties.control_port', 'a VNF whose '
                         'tasks may wait parked needs the TCP port of its '
                         'PROX control socket',
                         'set control_port (the generator\'s), or '
                         'tasks_at_ready: running')
        elif role == 'generator':
            if node.control_port is None:
                self.problem(name, 'properties.control_port', 'the generator '
                             'needs the TCP port of its PROX control socket',
                             'set control_port (the generator_control_port '
                             'input in the shipped templates)')
            if self.model.resolve(node.engine) != 'prox':
                self.problem(name, 'properties.engine', 'the generator runs '
                             'prox, not %s' % self.model.resolve(node.engine),
                             'set engine: prox')
        self.model.nodes[name] = node

    def _extra_specs(self, template):
        """Nova extra specs of a chain node's compute_requirements.

        nova_extra_specs' YAML text, and the other entries, each a value
        or a get_input (the service templates take chain.yaml's EPA
        parameters as inputs).
        """
        capability = template.get_capability('virtual_compute')
        requirements = {}
        if capability is not None:
            requirements = _props(capability).get(
                'compute_requirements') or {}
        if not isinstance(requirements, dict):
            self.problem(template.name, EXTRA_SPECS_FIELD.rsplit('.', 1)[0],
                         'compute_requirements is %r, not a map' % (
                             requirements,),
                         'write it as a map with nova_extra_specs')
            return {}
        specs = self._extra_specs_text(template,
                                       requirements.get('nova_extra_specs'))
        field = EXTRA_SPECS_FIELD.rsplit('.', 1)[0]
        for key, value in requirements.items():
            if key != 'nova_extra_specs':
                value = self.hot(value, template.name, '%s.%s' % (field, key))
                specs[str(key)] = value if isinstance(value, dict) else (
                    _spec_text(value))
        return specs

    def _extra_specs_text(self, template, text):
        if text is None:
            return {}
        if not isinstance(text, (str, dict)):
            self.problem(template.name, EXTRA_SPECS_FIELD, 'the extra specs '
                         'must be written in the template, not taken from '
                         'an input', 'write one "hw:key: value" per line, '
                         'or take a spec from an input as a '
                         'compute_requirements entry of its own')
            return {}
        try:
            specs = safe_yaml.parse(text, template.name) if isinstance(
                text, str) else text
        except safe_yaml.InputError as exc:
            specs = exc
        if not isinstance(specs, dict) or not all(
                isinstance(v, (str, int, float, bool))
                for v in specs.values()):
            self.problem(template.name, EXTRA_SPECS_FIELD,
                         'not a YAML map of Nova extra specs: %r' % (text,),
                         'write one "hw:key: value" per line, e.g. '
                         '"hw:cpu_policy: dedicated"')
            return {}
        # Nova's API takes extra spec values as strings.
        return {str(k): _spec_text(v) for k, v in specs.items()}

    # ---- connection points --------------------------------------------------

    def _port(self, template):
        name = template.name
        management = not template.is_derived_from(DATA_PORT)
        bound = _targets(template, 'virtual_binding')
        linked = _targets(template, 'virtual_link')
        server = bound[0] if bound else None
        network = linked[0] if linked else None
        if server not in self.model.nodes:
            self.problem(name, 'requirements.virtual_binding',
                         'the connection point is bound to %s, which is no '
                         'epa_chain.nodes.ChainNode' % (server or 'nothing'),
                         'bind it to a chain node: virtual_binding: vnf1')
            return
        if network not in self.model.networks:
            self.problem(name, 'requirements.virtual_link',
                         'the connection point links to %s, which is no '
                         'ProviderSegment or ExistingNetwork'
                         % (network or 'nothing'),
                         'link it to a segment: virtual_link: net0')
            return
        props = _props(template)
        port = Port(node=name, server=server, network=network,
                    management=management)
        owner = self.model.nodes[server]
        if management:
            owner.management_ports.append(port)
        else:
            port.side = props.get('side')
            mac = self.hot(props.get('mac_address'), name,
                           'properties.mac_address')
            port.mac_address = None if mac == '' else mac
            for direction in chain_directions.DIRECTIONS:
                senders = _targets(template, '%s_from' % direction)
                if senders:
                    port.receives_from[direction] = senders[0]
            if port.side in owner.ports:
                self.problem(name, 'properties.side', '%s already has a %s '
                             'data port, %s' % (server, port.side,
                                                owner.ports[port.side].node),
                             'give each chain node one left and one right '
                             'data port')
            else:
                owner.ports[port.side] = port
        self.model.ports[name] = port

    def _check_sides(self, node):
        for side in SIDES:
            if side not in node.ports:
                self.problem(node.node, 'requirements', '%s has no %s data '
                             'port' % (node.node, side),
                             'add an epa_chain.nodes.DataPort with side: %s '
                             'and virtual_binding: %s' % (side, node.node))

    # ---- the MAC chain ------------------------------------------------------

    def _check_mac_chain(self):
        targeted = {}     # (sender, direction) -> the port it sends to
        for port in self.model.ports.values():
            for direction, sender in sorted(port.receives_from.items()):
                self._check_hop(port, direction, sender, targeted)
        self._check_every_sender_has_a_hop(targeted)
        if not self.problems:
            self._check_entries()

    def _check_hop(self, port, direction, sender_name, targeted):
        """One `<direction>_from` requirement of a data port."""
        field = 'requirements.%s_from' % direction
        problem = self._hop_problem(port, direction, sender_name, targeted)
        if problem:
            self.problem(port.node, field, *problem)
            return
        sender = self.model.nodes[sender_name]
        targeted[(sender.node, direction)] = port.node
        if direction in sender.external_next_hop:
            self.problem(sender.node, 'properties.%s_next_hop_mac'
                         % direction, '%s sends %s frames both to '
                         '%s and to an external MAC'
                         % (sender.node, direction, port.node),
                         'drop %s_next_hop_mac or the %s_from '
                         'requirement of %s' % (direction, direction,
                                                port.node))

    def _hop_problem(self, port, direction, sender_name, targeted):
        """(message, fix) if the sender cannot be this port's hop."""
        nodes = self.model.nodes
        sender = nodes.get(sender_name)
        if sender is None:
            return ('%s is no chain node' % sender_name, 'name the chain '
                    'node that sends %s frames to this port' % direction)
        receiver = nodes[port.server]
        if port.side != receiver.rx_side(direction):
            return ('%s receives %s frames on its %s port, and %s is its %s '
                    'port' % (receiver.node, direction,
                              receiver.rx_side(direction), port.node,
                              port.side),
                    'move the requirement to %s'
                    % receiver.ports[receiver.rx_side(direction)].node)
        tx = sender.ports[sender.tx_side(direction)]
        if tx.network != port.network:
            return ('%s sends %s frames out of %s on %s, but %s is on %s: '
                    'the frames would never reach it' % (
                        sender.node, direction, tx.node, tx.network,
                        port.node, port.network),
                    'name the chain node whose %s port is on %s'
                    % (sender.tx_side(direction), port.network))
        if (sender.node, direction) in targeted:
            return ('%s already sends %s frames to %s' % (
                sender.node, direction, targeted[(sender.node, direction)]),
                'a node has one next hop per direction')
        return None

    def _check_every_sender_has_a_hop(self, targeted):
        for node in self.model.nodes.values():
            bidirectional = self.model.resolve(node.direction) != (
                'unidirectional')
            for direction in chain_directions.DIRECTIONS:
                if (node.node, direction) in targeted or (
                        direction in node.external_next_hop):
                    continue
                if direction == 'reverse' and not bidirectional:
                    continue
                tx = node.ports[node.tx_side(direction)]
                self.problem(
                    node.node, 'properties.%s_next_hop_mac' % direction,
                    '%s sends %s frames out of %s to nobody'
                    % (node.node, direction, tx.node),
                    'give the receiving data port on %s "%s_from: %s", or '
                    'set %s_next_hop_mac to the tester\'s MAC'
                    % (tx.network, direction, node.node, direction))

    def _check_entries(self):
        generators = [n for n in self.model.nodes.values()
                      if n.role == 'generator']
        if len(generators) > 1:
            self.problem(generators[1].node, 'properties.role', 'a chain has '
                         'one generator; %s is another'
                         % generators[1].node, 'make it role: vnf')
            return
        if generators:
            return
        for direction in chain_directions.DIRECTIONS:
            fed = {p.server for p in self.model.ports.values()
                   if p.receives_from.get(direction)}
            entries = [n.node for n in self.model.nodes.values()
                       if n.node not in fed]
            if len(entries) != 1 and (direction == 'forward' or fed):
                self.problem('', 'node_templates', 'the %s direction enters '
                             'the chain at %d nodes (%s), not one'
                             % (direction, len(entries), ', '.join(entries)),
                             'chain every VNF to the next with %s_from'
                             % direction, kind='template')

    # ---- management access --------------------------------------------------

    def _rule(self, policy):
        props = _props(policy)
        targets = list(policy.targets or [])
        for target in targets:
            port = self.model.ports.get(target)
            if port is None or not port.management:
                self.problem(policy.name, 'targets', '%s is no management '
                             'port: data ports carry no security group'
                             % target, 'target epa_chain.nodes.ManagementPort'
                             ' nodes only', kind='policy')
        self.model.rules.append(AccessRule(
            policy=policy.name,
            direction=self.hot(props.get('direction', 'ingress'),
                               policy.name, 'properties.direction'),
            ether_type=self.hot(props.get('ether_type', 'ipv4'), policy.name,
                                'properties.ether_type'),
            protocol=self.hot(props.get('protocol'), policy.name,
                              'properties.protocol'),
            port_range_min=self.hot(props.get('port_range_min'), policy.name,
                                    'properties.port_range_min'),
            port_range_max=self.hot(props.get('port_range_max'), policy.name,
                                    'properties.port_range_max'),
            remote_ip_prefix=self.hot(props.get('remote_ip_prefix'),
                                      policy.name,
                                      'properties.remote_ip_prefix'),
            targets=targets))


def _spec_text(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)
