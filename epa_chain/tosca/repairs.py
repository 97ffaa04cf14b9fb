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

"""What heat-translator loses from a chain template, put back.

One function per loss. Each docstring's first line names the loss (as
heat-translator 3.5 behaves), the rest says how it is repaired. A repair
patches the resources heat-translator wrote, taking the lost values from
the chain model (model.py); it returns what it changed, so a repair with
nothing to do says so (an empty list) and a newer heat-translator that
stops losing something shows up as a repair that no longer changes
anything. Resources are only added where heat-translator has no
counterpart at all (security groups, outputs).
"""

import collections

from epa_chain.hot import shipped
from epa_chain.tosca import chains

HOT_VERSION = '2021-04-16'
CONFIG_TEMPLATE = '#cloud-config\nepa_chain: $config\n'
EXTERNAL_TESTER = 'external-tester'
FLAVOR_SUFFIX = '_flavor'
SUBNET_SUFFIX = '_subnet'
MANAGEMENT_GROUP = 'management_security_group'
# templates/chain.yaml's parameters that fit a flavor to its host, by the
# flavor property (per role) or extra spec they set.
SIZE_PARAMETERS = {'vcpus': '%s_vcpus', 'ram': '%s_ram'}
SPEC_PARAMETERS = {'hw:cpu_policy': 'cpu_policy',
                   'hw:cpu_thread_policy': 'cpu_thread_policy',
                   'hw:emulator_threads_policy': 'emulator_threads_policy',
                   'hw:mem_page_size': 'mem_page_size',
                   'hw:numa_nodes': 'numa_nodes'}
SIZING = frozenset([pattern % role for pattern in SIZE_PARAMETERS.values()
                    for role in ('vnf', 'generator')] +
                   list(SPEC_PARAMETERS.values()))
# Nova refuses these on unpinned guests.
PINNED_ONLY = ('hw:cpu_thread_policy', 'hw:emulator_threads_policy')

Repair = collections.namedtuple('Repair', 'name loss changes')


def apply(hot, chain):
    """Run every repair in order; return what each one changed."""
    done = []
    for repair in REPAIRS:
        changes = repair(hot, chain) or []
        loss = (repair.__doc__ or '').strip().splitlines()[0]
        done.append(Repair(repair.__name__, loss, changes))
    return done


# ---- the template as a whole ------------------------------------------------

def repair_template_version(hot, chain):
    """The HOT is heat_template_version 2013-05-23: no conditions, no if.

    The repaired template uses conditions (direction, key pair), `if` and
    list_concat, as templates/chain.yaml does: declare the same version.
    """
    if hot.get('heat_template_version') == HOT_VERSION:
        return []
    old = hot.get('heat_template_version')
    hot['heat_template_version'] = HOT_VERSION
    return ['heat_template_version %s -> %s' % (old, HOT_VERSION)]


def repair_parameter_defaults(hot, chain):
    """Empty, zero and false input defaults are dropped.

    heat-translator writes a default only when it is true in Python, so an
    input defaulting to '' (key_name) becomes a parameter Heat demands a
    value for. The defaults (or the inputs file's values, or chain.yaml's
    default for an optional input without one: loader.py) are restored.
    """
    changes = []
    for name, parameter in (hot.get('parameters') or {}).items():
        value = chain.values.get(name)
        if 'default' not in parameter and value is not None:
            parameter['default'] = value
            changes.append('parameters.%s.default: %r' % (name, value))
    return changes


def repair_nested_inputs(hot, chain):
    """get_input inside a structured property value is copied as is.

    heat-translator translates get_input only at the top of a property; one
    inside a data type (l3_protocol_data.cidr) reaches the HOT as a
    get_input Heat does not know. Every remaining get_input becomes the
    get_param of the parameter heat-translator made from the input.
    """
    changes = []

    def walk(value, where):
        if isinstance(value, dict):
            if list(value) == ['get_input']:
                changes.append(where)
                name = value['get_input']
                return {'get_param': name[0] if isinstance(name, list) and (
                    len(name) == 1) else name}
            return {k: walk(v, '%s.%s' % (where, k))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, '%s[%d]' % (where, i))
                    for i, v in enumerate(value)]
        return value

    for name, resource in _resources(hot).items():
        if 'properties' in resource:
            resource['properties'] = walk(resource['properties'], name)
    return changes


def repair_dependency_cycle(hot, chain):
    """Every relationship becomes depends_on, closing a cycle.

    heat-translator makes each TOSCA relationship it does not know a
    depends_on. A data port's forward_from/reverse_from names the node
    that sends to it, and that node's server needs its own ports: server
    -> port -> sending server -> its port -> server, which Heat refuses.
    The MAC chain is data flow, not creation order (Heat already orders
    servers after the ports whose MACs they read): those entries go.
    """
    changes = []
    for port in chain.ports.values():
        resource = _resources(hot).get(port.node) or {}
        senders = set(port.receives_from.values())
        depends = resource.get('depends_on') or []
        kept = [d for d in depends if d not in senders]
        if len(kept) != len(depends):
            changes.append('%s.depends_on: dropped %s' % (
                port.node, ', '.join(sorted(set(depends) - set(kept)))))
            if kept:
                resource['depends_on'] = kept
            else:
                resource.pop('depends_on', None)
    return changes


# ---- networks ---------------------------------------------------------------

def repair_provider_networks(hot, chain):
    """VLAN virtual links become plain OS::Neutron::Net, without a name.

    SOL001 virtual links are translated to tenant networks: the network
    type (vlan), the physical network and the VLAN ID are lost (SOL001's
    L2ProtocolData has no place for the last two; the chain's
    ProviderSegment type carries them). Each segment becomes the
    OS::Neutron::ProviderNet of templates/lib/provider_segment.yaml: named,
    vlan, its physical network and VLAN ID, not shared with other
    projects, port security on by default (the data ports turn it off).
    """
    changes = []
    for network in chain.networks.values():
        resource = _resources(hot).get(network.node)
        if network.existing or resource is None:
            continue
        wanted = {
            'name': network.name,
            'network_type': network.network_type,
            'physical_network': network.physical_network,
            'segmentation_id': network.segmentation_id,
            'shared': False,
            'port_security_enabled': True,
        }
        if resource.get('type') != 'OS::Neutron::ProviderNet':
            changes.append('%s: %s -> OS::Neutron::ProviderNet'
                           % (network.node, resource.get('type')))
            resource['type'] = 'OS::Neutron::ProviderNet'
        changes += _set_properties(resource, network.node, wanted)
    return changes


def repair_subnets(hot, chain):
    """Subnets lose dhcp_enabled, gateway_ip and their name.

    heat-translator reads only the first virtual_link_protocol_data entry
    (an l2 entry first loses the CIDR too) and ignores dhcp_enabled and
    gateway_ip, so each segment would get a DHCP server port and a
    gateway. The subnet is set from the l3_protocol_data entry wherever it
    is, as templates/lib/provider_segment.yaml has it.
    """
    changes = []
    for network in chain.networks.values():
        name = network.node + SUBNET_SUFFIX
        resource = _resources(hot).get(name)
        if network.existing or network.subnet is None or resource is None:
            continue
        subnet = network.subnet
        wanted = {
            'name': {'list_join': ['-', [network.name, 'subnet']]},
            'network': {'get_resource': network.node},
            'cidr': subnet.cidr,
            'ip_version': subnet.ip_version,
        }
        if subnet.enable_dhcp is not None:
            wanted['enable_dhcp'] = subnet.enable_dhcp
        if subnet.gateway_given:
            wanted['gateway_ip'] = subnet.gateway_ip
        changes += _set_properties(resource, name, wanted)
    return changes


def repair_existing_networks(hot, chain):
    """A link to an existing network creates a new, empty one.

    SOL001 describes the networks a VNF creates; heat-translator gives the
    management network (epa_chain.nodes.ExistingNetwork) an
    OS::Neutron::Net and a subnet without a CIDR. They are removed and the
    ports name the existing network instead.
    """
    changes = []
    resources = _resources(hot)
    for network in chain.networks.values():
        if not network.existing:
            continue
        for name in (network.node, network.node + SUBNET_SUFFIX):
            if resources.pop(name, None) is not None:
                changes.append('%s: removed' % name)
        for port in chain.ports.values():
            if port.network == network.node and port.node in resources:
                changes += _set_properties(resources[port.node], port.node,
                                           {'network': network.name})
    return changes


# ---- compute ----------------------------------------------------------------

def repair_flavors(hot, chain):
    """Flavor extra specs arrive as text or not at all; flavors are public.

    SOL001 types compute_requirements as a map of strings. heat-translator
    reads only its nova_extra_specs entry, a YAML text it copies as
    extra_specs, which Heat refuses (it wants a map), and its output
    writer turns it into broken YAML; the other entries (an extra spec
    each, a value or a get_input: the service templates' EPA inputs) it
    drops. The specs are put back as the map (values as strings, as Nova
    stores them; an input as its parameter). The flavor is made
    private like templates/lib/epa_flavor.yaml's: it exists for the
    stack's servers only.
    """
    changes = []
    for node in chain.nodes.values():
        name = node.node + FLAVOR_SUFFIX
        resource = _resources(hot).get(name)
        if resource is None:
            continue
        changes += _set_properties(resource, name, {
            'extra_specs': dict(node.extra_specs), 'is_public': False})
    return changes


def repair_host_sizing(hot, chain):
    """Flavor sizes and EPA keys are literals: no host environment applies.

    templates/chain.yaml takes a flavor's vCPUs and RAM (per role) and its
    EPA extra specs (SPEC_PARAMETERS) as parameters, so that one
    environment file fits every chain to a host
    (environments/small-host.yaml). The translated flavors take the same
    parameters, defined as chain.yaml defines them and defaulting to what
    the TOSCA template writes or, for a spec taken from the input of the
    parameter's name, to the input's value; as in lib/epa_flavor.yaml,
    the thread and emulator policies apply to pinned CPUs only. A value
    the flavors write differently stays written in each of them.
    """
    places, flavors = _sized_places(hot, chain)
    parameters = hot.setdefault('parameters', {})
    changes = []
    for parameter, where in sorted(places.items()):
        changes += _parameterise(parameters, parameter, where)
    # A chain without a generator (an external tester) still takes the
    # generator's sizes, unused, as chain.yaml does: the environment
    # files set them for every chain.
    for parameter in sorted(SIZING - set(places) - set(parameters)):
        parameters[parameter] = shipped.parameter_definition(parameter)
        changes.append('parameters.%s: unused, chain.yaml\'s definition'
                       % parameter)
    for properties in flavors:
        changes += _pinned_only(hot, properties)
    return changes


def _sized_places(hot, chain):
    """{parameter: [(holder, key)]} of the flavors' sizes and EPA keys.

    With the flavors' properties, in the chain's order.
    """
    places, flavors = collections.defaultdict(list), []
    for node in chain.nodes.values():
        properties = _resources(hot).get(node.node + FLAVOR_SUFFIX, {}).get(
            'properties')
        if not properties:
            continue
        flavors.append(properties)
        for key, pattern in SIZE_PARAMETERS.items():
            if key in properties:
                places[pattern % node.role].append((properties, key))
        specs = properties.get('extra_specs')
        for key, parameter in SPEC_PARAMETERS.items():
            if isinstance(specs, dict) and key in specs:
                places[parameter].append((specs, key))
    return places, flavors


def _parameterise(parameters, parameter, where):
    """`parameter` defined, defaulting to the one value every place holds.

    Each place then takes it (get_param). Places that take the input of
    that name (the service templates' EPA inputs) keep its default (the
    inputs file's value or chain.yaml's: loader.py) with chain.yaml's
    definition. Nothing when the places hold different values or the
    template defines the parameter otherwise.
    """
    written = {str(holder[key]) for holder, key in where}
    taken = str({'get_param': parameter})
    if written == {taken} and 'default' in parameters.get(parameter, {}):
        value = parameters[parameter]['default']
    elif len(written) != 1 or taken in written or parameter in parameters:
        return []
    else:
        value = where[0][0][where[0][1]]
    definition = shipped.parameter_definition(parameter)
    definition['default'] = (int(value) if definition.get('type') ==
                             'number' else str(value))
    parameters[parameter] = definition
    for holder, key in where:
        # Nova's extra spec values are strings; chain.yaml's
        # numa_nodes is a number.
        holder[key] = {'get_param': parameter} if key in (
            SIZE_PARAMETERS) or definition['type'] != 'number' else {
            'str_replace': {'template': '$n', 'params': {
                '$n': {'get_param': parameter}}}}
    return ['parameters.%s: default %r' % (parameter,
                                           definition['default'])]


def _pinned_only(hot, properties):
    """A flavor's thread and emulator policies applied when pinned only."""
    policy = {'get_param': 'cpu_policy'}
    specs = properties.get('extra_specs')
    if not isinstance(specs, dict) or specs.get('hw:cpu_policy') != policy:
        return []
    pinned = {key: specs.pop(key) for key in PINNED_ONLY if key in specs}
    if not pinned:
        return []
    condition = _condition(hot, 'pinned', {'equals': [policy, 'dedicated']})
    properties['extra_specs'] = {'map_merge': [
        specs, {'if': [condition, pinned, {}]}]}
    return ['extra_specs: %s when pinned' % ', '.join(sorted(pinned))]


def repair_servers(hot, chain):
    """Servers get no image, no key pair, and the VDU name as server name.

    heat-translator writes an image only from sw_image_data, and then a
    placeholder (#ADD_YOUR_IMAGE_HERE, which its YAML writer turns into a
    comment); a key pair only for tosca.nodes.Compute. The image is the
    chain node's `image`; the key pair is set when key_name is not empty
    (a condition, like lib/chain_server.yaml's has_key). The server is
    named <stack>-<name> as in templates/chain.yaml: a VDU name is the
    same in every stack, a server name should not be.
    """
    changes = []
    for node in chain.nodes.values():
        resource = _resources(hot).get(node.node)
        if resource is None:
            continue
        wanted = {'name': server_name(node), 'image': node.image}
        key = _optional(hot, node.key_name, 'has_%s')
        if key is not None:
            wanted['key_name'] = key
        else:
            (resource.get('properties') or {}).pop('key_name', None)
        changes += _set_properties(resource, node.node, wanted)
    return changes


def repair_config_drive(hot, chain):
    """Servers boot without a config drive, in Heat's user_data format.

    Nothing in SOL001 asks for a config drive, and heat-translator leaves
    user_data_format at Heat's default (HEAT_CFNTOOLS), which wraps
    user_data for Heat's agents. The VNF runtime reads its node config
    from the config drive as a plain #cloud-config document: config_drive
    true, user_data_format RAW.
    """
    changes = []
    for node in chain.nodes.values():
        resource = _resources(hot).get(node.node)
        if resource is not None:
            changes += _set_properties(resource, node.node, {
                'config_drive': True, 'user_data_format': 'RAW'})
    return changes


def repair_mac_chain(hot, chain):
    """No user_data: no VNF learns its ports or its next hop's MAC.

    The chain's wiring (each data port's forward_from / reverse_from, or a
    tester's MAC) has no counterpart in heat-translator. Each server gets
    the user_data of lib/chain_server.yaml: a #cloud-config document whose
    epa_chain key is the node config (epa_chain/chain/node_config.py):
    its data ports by MAC (get_attr of the ports), and per direction the
    receive port, the transmit port and the next hop's MAC, a get_attr of
    the port that receives from it. The reverse flow is there when the
    direction is bidirectional (a condition when it is an input).
    """
    changes = []
    for node in chain.nodes.values():
        resource = _resources(hot).get(node.node)
        if resource is None:
            continue
        config = {
            'schema_version': 1,
            'role': node.role,
            'name': server_name(node),
            'engine': node.engine if node.engine is not None else 'prox',
            'forwarding_cores': _forwarding_cores(hot, chain, node),
        }
        if node.role == 'generator':
            config['control_port'] = node.control_port
            if node.latency_bucket_shift is not None:
                config['latency_bucket_shift'] = node.latency_bucket_shift
        else:
            config.update(_vnf_tasks(hot, node))
        config['ports'] = {
            side: {
                'mac': {'get_attr': [port.node, 'mac_address']},
                'network': chain.networks[port.network].name,
                'vlan': chain.networks[port.network].segmentation_id,
            } for side, port in sorted(node.ports.items())}
        config['flows'] = _flows(hot, chain, node)
        user_data = {'str_replace': {'template': CONFIG_TEMPLATE,
                                     'params': {'$config': config}}}
        changes += _set_properties(resource, node.node,
                                   {'user_data': user_data})
    return changes


# ---- ports ------------------------------------------------------------------

def repair_data_ports(hot, chain):
    """Data ports keep port security, the default group, no MAC, no name.

    VduCp becomes an OS::Neutron::Port with its network and vNIC type
    only. Port security stays on, so Neutron drops every frame a VNF
    forwards (its source MAC is not the port's), and Neutron's default
    security group is attached. As in templates/lib/data_port.yaml: port
    security off, security_groups [] (empty, not left out), the fixed MAC
    (in value_specs) when the template gives one, and the name
    <server>-<side>.
    """
    changes = []
    for port in chain.ports.values():
        resource = _resources(hot).get(port.node)
        if port.management or resource is None:
            continue
        wanted = {
            'name': server_name(chain.nodes[port.server], port.side),
            'port_security_enabled': False,
            'security_groups': [],
        }
        value_specs = _fixed_mac(hot, port.mac_address)
        if value_specs is not None:
            wanted['value_specs'] = value_specs
        properties = resource.setdefault('properties', {})
        if value_specs is not None and 'mac_address' in properties:
            del properties['mac_address']
            changes.append('%s.mac_address' % port.node)
        changes += _set_properties(resource, port.node, wanted)
    return changes


def _fixed_mac(hot, mac):
    """value_specs fixing a port's MAC when it is given, or None.

    As templates/lib/data_port.yaml: not a mac_address property under an
    `if`, since a two-argument `if` crashes Heat 19 and a null MAC becomes
    '', which Neutron refuses; value_specs reach Neutron as they are.
    """
    param = _param(mac)
    if param is None:
        return None if mac in (None, '') else {'mac_address': mac}
    name = _condition(hot, 'has_%s' % param, {'not': {'equals': [mac, '']}})
    return {'if': [name, {'mac_address': mac}, {}]}


def repair_management_access(hot, chain):
    """SOL001 security group rules abort heat-translator.

    heat-translator has no translation for tosca.policies.nfv.
    SecurityGroupRule and raises UnsupportedTypeError on the whole
    template, so translate.py withholds these policies from it; without
    them the management ports would get Neutron's default group. Ports
    targeted by the same rules share one OS::Neutron::SecurityGroup with
    those rules (templates/chain.yaml's management_security_group); ports
    are named <server>-mgmt.
    """
    changes = []
    resources = _resources(hot)
    groups = collections.OrderedDict()
    for port in chain.ports.values():
        if not port.management or port.node not in resources:
            continue
        rules = tuple(r.policy for r in chain.rules if port.node in r.targets)
        if rules:
            groups.setdefault(rules, []).append(port)
    for index, (rules, ports) in enumerate(groups.items()):
        name = MANAGEMENT_GROUP if len(groups) == 1 else (
            '%s_%d' % (MANAGEMENT_GROUP, index + 1))
        by_name = {r.policy: r for r in chain.rules}
        group = {'type': 'OS::Neutron::SecurityGroup', 'properties': {
            'description': 'epa-chain management access (%s).'
                           % ', '.join(rules),
            'rules': [_rule(by_name[r]) for r in rules]}}
        if resources.get(name) != group:
            resources[name] = group
            changes.append('%s: added (%s)' % (name, ', '.join(rules)))
        for port in ports:
            changes += _set_properties(resources[port.node], port.node, {
                'security_groups': [{'get_resource': name}]})
    for port in chain.ports.values():
        if port.management and port.node in resources:
            changes += _set_properties(resources[port.node], port.node, {
                'name': server_name(chain.nodes[port.server], 'mgmt')})
    return changes


# ---- outputs ----------------------------------------------------------------

def repair_outputs(hot, chain):
    """Only TOSCA outputs are translated, and TOSCA cannot state the chain.

    templates/chain.yaml's outputs are hop lists and maps built from
    several resources. They are added when the template does not define
    them: forward_chain and reverse_chain (hop by hop: server, role, port,
    mac, network, vlan; a tester outside the stack as 'external-tester'),
    management_addresses, vnf_control_endpoints and
    generator_control_endpoint.
    """
    outputs = hot.setdefault('outputs', {})
    entry = chain.entry('forward')
    wanted = {
        'forward_chain': {
            'description': 'The forward direction hop by hop.',
            'value': [_hop(h, chain) for h in chain.path('forward')]},
        'reverse_chain': {
            'description': 'The reverse direction hop by hop; empty when '
                           'unidirectional.',
            'value': _if_bidirectional(
                hot, chain, entry,
                lambda: [_hop(h, chain) for h in chain.path('reverse')],
                [])},
        'management_addresses': {
            'description': 'Management address of every server, by chain '
                           'node.',
            'value': {n.node: _management_address(n)
                      for n in chain.nodes.values() if n.management_ports}},
        'vnf_control_endpoints': {
            'description': 'Where each VNF\'s PROX control socket listens, '
                           'by chain node; null for a VNF whose tasks run '
                           'at READY.',
            'value': {n.node: _vnf_control_endpoint(hot, n)
                      for n in chain.nodes.values()
                      if n.role == 'vnf' and n.management_ports}},
        'generator_control_endpoint': {
            'description': 'Where to reach the generator\'s PROX control '
                           'socket; null with an external tester.',
            'value': _control_endpoint(chain)},
    }
    changes = []
    for name, output in wanted.items():
        if name not in outputs:
            outputs[name] = output
            changes.append('outputs.%s: added' % name)
    return changes


# ---- chains side by side ----------------------------------------------------

def repair_chain_count(hot, chain):
    """chain_count becomes a parameter that changes nothing.

    TOSCA cannot repeat a topology: heat-translator writes chain_count as
    a parameter nothing reads, so the stack would hold one chain whatever
    it said. The chains are unrolled (epa_chain/tosca/chains.py), chain K
    on VLANs netN_vlan + K * chain_vlan_stride, and every chain's outputs
    are listed in `chains` as in templates/chain.yaml. chain_count leaves
    the parameters, fixed by the translation (Heat refuses it as a
    --parameter rather than ignore it), and chain_vlan_stride too when
    there is one chain.
    """
    count = chain.values.get('chain_count') or 1
    parameters = hot.setdefault('parameters', {})
    changes = []
    unused = ('chain_count',) if count > 1 else ('chain_count',
                                                 'chain_vlan_stride')
    for name in unused:
        if parameters.pop(name, None) is not None:
            changes.append('parameters.%s: removed (%d chain(s) unrolled)'
                           % (name, count))
    if count > 1 and 'chain_vlan_stride' not in parameters:
        default = shipped.parameter_default('chain_vlan_stride')
        parameters['chain_vlan_stride'] = {
            'type': 'number', 'default': default,
            'description': 'How many VLAN IDs chain K+1 is past chain K.'}
        changes.append('parameters.chain_vlan_stride: added (%s, '
                       'templates/chain.yaml\'s default)' % default)
    return changes + chains.unroll(hot, chain, count)


REPAIRS = (
    repair_template_version,
    repair_parameter_defaults,
    repair_nested_inputs,
    repair_dependency_cycle,
    repair_provider_networks,
    repair_subnets,
    repair_existing_networks,
    repair_flavors,
    repair_host_sizing,
    repair_servers,
    repair_config_drive,
    repair_mac_chain,
    repair_data_ports,
    repair_management_access,
    repair_outputs,
    repair_chain_count,
)


# ---- helpers ----------------------------------------------------------------

def server_name(node, *suffix):
    """<stack>-<name>[-<suffix>], as templates/chain.yaml names things."""
    parts = [{'get_param': 'OS::stack_name'}, node.name] + list(suffix)
    return {'list_join': ['-', parts]}


def _resources(hot):
    return hot.setdefault('resources', {})


def _set_properties(resource, name, wanted):
    properties = resource.setdefault('properties', {})
    changes = []
    for key, value in wanted.items():
        if properties.get(key, _MISSING) != value:
            changes.append('%s.%s' % (name, key))
            properties[key] = value
    return changes


_MISSING = object()


def _condition(hot, name, definition):
    conditions = hot.setdefault('conditions', {})
    conditions[name] = definition
    return name


def _param(expr):
    if isinstance(expr, dict) and list(expr) == ['get_param'] and (
            isinstance(expr['get_param'], str)):
        return expr['get_param']
    return None


def _optional(hot, expr, condition_pattern):
    """A value that is null when empty: None, itself, or an `if`.

    Three arguments, null the third: a false two-argument `if` crashes
    Heat 19 (Zed) at stack create.
    """
    param = _param(expr)
    if param is None:
        return None if expr in (None, '') else expr
    name = _condition(hot, condition_pattern % param,
                      {'not': {'equals': [expr, '']}})
    return {'if': [name, expr, None]}


def _bidirectional(hot, chain, node):
    """True, False, or the name of a condition on the direction input."""
    param = _param(node.direction)
    if param is None:
        return chain.resolve(node.direction) == 'bidirectional'
    name = 'bidirectional' if param == 'direction' else (
        '%s_bidirectional' % param)
    return _condition(hot, name,
                      {'equals': [node.direction, 'bidirectional']})


def _if_bidirectional(hot, chain, node, then, otherwise):
    condition = _bidirectional(hot, chain, node)
    if condition is True:
        return then()
    if condition is False:
        return otherwise
    return {'if': [condition, then(), otherwise]}


def _parked(hot, node):
    """True, False, or a condition: a PROX VNF whose tasks wait parked.

    As lib/chain_server.yaml's `controlled`: only PROX parks its tasks.
    """
    engine = node.engine if node.engine is not None else 'prox'
    tasks = node.tasks_at_ready
    if tasks is None:
        return False
    if _param(engine) is None and _param(tasks) is None:
        return engine == 'prox' and tasks == 'parked'
    return _condition(hot, '%s_parked' % node.node, {'and': [
        {'equals': [engine, 'prox']}, {'equals': [tasks, 'parked']}]})


def _vnf_tasks(hot, node):
    """A VNF's control_port and tasks_at_ready, as chain.yaml's."""
    parked = _parked(hot, node)
    if parked is True:
        return {'control_port': node.control_port, 'tasks_at_ready': 'parked'}
    if parked is False:
        return {'control_port': None, 'tasks_at_ready': 'running'}
    return {'control_port': {'if': [parked, node.control_port, None]},
            'tasks_at_ready': {'if': [parked, 'parked', 'running']}}


def _forwarding_cores(hot, chain, node):
    if node.forwarding_cores is not None:
        return node.forwarding_cores
    # The generator: one gen core per direction it sends.
    return _if_bidirectional(hot, chain, node, lambda: 2, 1)


def _next_hop_mac(chain, node, direction):
    port = chain.next_hop(node, direction)
    if port is not None:
        return {'get_attr': [port.node, 'mac_address']}
    return node.external_next_hop.get(direction, '')


def _flows(hot, chain, node):
    def flow(direction):
        return {'direction': direction,
                'rx_port': node.rx_side(direction),
                'tx_port': node.tx_side(direction),
                'next_hop_mac': _next_hop_mac(chain, node, direction)}

    forward = [flow('forward')]
    reverse = _if_bidirectional(hot, chain, node,
                                lambda: [flow('reverse')], [])
    if isinstance(reverse, list):
        return forward + reverse
    return {'list_concat': [forward, reverse]}


def _hop(hop, chain):
    if hop.port is None:
        return {'server': EXTERNAL_TESTER, 'role': hop.side, 'port': None,
                'mac': hop.external_mac if hop.external_mac is not None
                else '',
                'network': hop.network.name,
                'vlan': hop.network.segmentation_id}
    return {'server': server_name(chain.nodes[hop.port.server]),
            'role': hop.side,
            'port': {'get_resource': hop.port.node},
            'mac': {'get_attr': [hop.port.node, 'mac_address']},
            'network': hop.network.name,
            'vlan': hop.network.segmentation_id}


def _management_address(node):
    return {'get_attr': [node.management_ports[0].node, 'fixed_ips', 0,
                         'ip_address']}


def _vnf_control_endpoint(hot, node):
    parked = _parked(hot, node)
    endpoint = {'host': _management_address(node), 'port': node.control_port}
    if parked is True:
        return endpoint
    if parked is False:
        return None
    return {'if': [parked, endpoint, None]}


def _control_endpoint(chain):
    for node in chain.nodes.values():
        if node.role == 'generator' and node.management_ports:
            return {'host': _management_address(node),
                    'port': node.control_port}
    return None


def _rule(rule):
    ether = {'ipv4': 'IPv4', 'ipv6': 'IPv6'}
    body = {'direction': rule.direction,
            'ethertype': ether.get(rule.ether_type, rule.ether_type),
            'protocol': rule.protocol,
            'port_range_min': rule.port_range_min,
            'port_range_max': rule.port_range_max,
            'remote_ip_prefix': rule.remote_ip_prefix}
    return {k: v for k, v in body.items() if v is not None}
