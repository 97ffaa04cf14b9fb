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

"""The NFV rules Heat does not check, over the realised chain topology.

Each rule yields Findings that name the file, the resource and the property
to change. Rule IDs are stable: tests and users can grep for them.

  EPA-SPEC     extra spec keys and values, by Nova's validators
  EPA-NUMA     extra specs consistent, by Nova's NUMA constraints
  EPA-PAGES    vhost-user guests need hw:mem_page_size (huge pages)
  EPA-CORES    a pinned node has a vCPU for the master and each worker core
  VLAN-NET     chain segments are provider VLAN networks with a physnet
               and a VLAN ID in 1..4094
  VLAN-UNIQUE  no two segments on one (physnet, VLAN) unless declared
  PORT-DATA    data ports: port security off, no security groups
  PORT-MGMT    other ports: a security group
  NODE-CONFIG  servers boot with a config drive and a valid node config
  MAC-CHAIN    each direction is one complete chain of next hops
  MGMT-CIDR    management_allowed_cidr is a CIDR (error) that does not
               admit the whole internet (a warning)
  PLACEMENT    server-group policies some number of hosts can satisfy;
               what naming a host needs (placement_rules.py)
"""

import ipaddress
import math

from epa_chain.chain import topology as topology_mod
from epa_chain.hot import realise
from epa_chain.validation import findings
from epa_chain.validation import nova_rules
from epa_chain.validation import placement_rules

SHARED_SEGMENT_KEY = 'shared_segment'
MAX_VNFS = 3
MANAGEMENT_CIDR = 'management_allowed_cidr'
# A shorter prefix spans more than any one organisation's allocation
# (IANA's /8s for IPv4, a regional registry's /12s..16s for IPv6): it
# admits a good part of the internet, whatever the operator meant.
NARROWEST_WIDE_PREFIX = {4: 8, 6: 16}


def at(resource, rule, message, fix, prop=''):
    """A finding addressed to a realised resource."""
    return findings.Finding(rule=rule, message=message, fix=fix,
                            file=resource.template, resource=resource.dotted,
                            property=prop)


def check(topology, realisation):
    for rule in (parameter_rules, flavor_rules, network_rules, port_rules,
                 node_rules, mac_chain_rules, management_rules,
                 placement_rules.check):
        yield from rule(topology, realisation)


# ---- flavors ----------------------------------------------------------------

def flavor_rules(topology, realisation):
    users = {}
    for node in topology.nodes:
        if isinstance(node.flavor, str):
            yield findings.Finding(
                rule='EPA-SPEC', severity=findings.SKIPPED,
                file=node.server.template, resource=node.name,
                property='flavor',
                message='flavor %r exists outside the stack: its extra specs '
                        'can only be checked against a cloud' % node.flavor)
        elif node.flavor is not None:
            users.setdefault(node.flavor.resource_id, []).append(node)
    for flavor in topology.flavors.values():
        yield from _flavor(flavor, users.get(flavor.resource_id, []))


def _flavor(flavor, nodes):
    props = flavor.properties
    specs = props.get('extra_specs') or {}
    vcpus, ram = props.get('vcpus'), props.get('ram')
    bad_keys = False
    for key, message in nova_rules.invalid_extra_specs(specs):
        bad_keys = True
        yield at(flavor, 'EPA-SPEC', 'extra spec %s: %s' % (key, message),
                 'use a key and value from Nova\'s extra spec reference '
                 '(hw:cpu_policy, hw:mem_page_size, hw:numa_nodes, ...)',
                 'extra_specs')
    if bad_keys:
        return
    complaint, page_kib = nova_rules.numa_constraints(vcpus, ram, specs)
    if complaint:
        yield at(flavor, 'EPA-NUMA', 'Nova refuses these extra specs: %s'
                 % complaint, _numa_fix(complaint, vcpus, ram), 'extra_specs')
        return
    if nodes:
        page = str(specs.get('hw:mem_page_size', '')).lower()
        if page in ('', 'small', 'any'):
            yield at(flavor, 'EPA-PAGES',
                     'hw:mem_page_size is %s but %s use vhost-user ports, '
                     'which need guest RAM on huge pages'
                     % (page or 'not set', _names(nodes)),
                     'set extra_specs hw:mem_page_size: large (or 2MB, 1GB)',
                     'extra_specs')
        numa_nodes = int(specs.get('hw:numa_nodes', 1))
        if page_kib and (ram * 1024 // numa_nodes) % page_kib:
            yield at(flavor, 'EPA-PAGES',
                     'RAM per NUMA node (%d MiB / %d) is not a whole number '
                     'of %d KiB pages' % (ram, numa_nodes, page_kib),
                     'make ram a multiple of %d MiB' % (
                         page_kib * numa_nodes // 1024 or 1), 'ram')
    if str(specs.get('hw:cpu_policy', 'shared')) == 'dedicated':
        for node in nodes:
            if node.config and vcpus < node.config.cores_needed:
                yield at(flavor, 'EPA-CORES',
                         '%s needs %d pinned vCPUs (a master core and %d '
                         'worker cores for %s) but the flavor has %d'
                         % (node.name, node.config.cores_needed,
                            node.config.cores_needed - 1,
                            node.config.engine, vcpus),
                         'raise vcpus to %d or lower forwarding_cores'
                         % node.config.cores_needed, 'vcpus')


def _numa_fix(complaint, vcpus, ram):
    """Advice for the constraint Nova's message is about."""
    text = complaint.lower()
    if 'numa' in text and 'evenly' in text:
        return ('give hw:numa_nodes a divisor of both vcpus (%s) and ram '
                '(%s), or assign hw:numa_cpus.N / hw:numa_mem.N explicitly'
                % (vcpus, ram))
    if 'mixed' in text:
        return 'with hw:cpu_policy: mixed, set hw:cpu_dedicated_mask'
    if 'thread' in text or 'emulator' in text or 'dedicated' in text:
        return ('set hw:cpu_policy: dedicated, or drop '
                'hw:cpu_thread_policy and hw:emulator_threads_policy')
    return 'change the extra specs Nova names above'


def _names(nodes):
    return ', '.join(n.name for n in nodes)


# ---- networks ---------------------------------------------------------------

def network_rules(topology, realisation):
    segments = _chain_networks(topology)
    pairs = {}
    for network in segments:
        if network.existing:
            continue
        res = network.resource
        is_vlan = (res.type == 'OS::Neutron::ProviderNet' and
                   network.network_type == 'vlan')
        if not is_vlan:
            yield at(res, 'VLAN-NET',
                     'chain segment %s is a %s network, not a provider VLAN '
                     'network' % (network.label,
                                  network.network_type or res.type),
                     'make it OS::Neutron::ProviderNet with network_type: '
                     'vlan, physical_network and segmentation_id',
                     'network_type')
            continue
        if not network.physical_network:
            yield at(res, 'VLAN-NET', 'VLAN network without a physical '
                     'network', 'set physical_network to a physnet mapped to '
                     'an OVS-DPDK bridge (e.g. physnet1)', 'physical_network')
        vlan = network.vlan
        if not isinstance(vlan, int) or not 1 <= vlan <= 4094:
            yield at(res, 'VLAN-NET', 'segmentation_id %r is not a VLAN ID'
                     % (vlan,), _vlan_fix(res), 'segmentation_id')
            continue
        pairs.setdefault((network.physical_network, vlan), []).append(network)
    for (physnet, vlan), networks in sorted(pairs.items()):
        if len(networks) < 2 or all(_declared_shared(n) for n in networks):
            continue
        first = networks[0]
        for other in networks[1:]:
            yield at(other.resource, 'VLAN-UNIQUE',
                     'segments %s and %s are both VLAN %d on %s'
                     % (first.label, other.label, vlan, physnet),
                     'give each segment its own segmentation_id, or declare '
                     'the sharing with resource metadata {epa_chain: '
                     '{%s: true}} on every network that shares'
                     % SHARED_SEGMENT_KEY, 'segmentation_id')


def _vlan_fix(network):
    """Where a segment's VLAN comes from: chain K's moves by the stride."""
    index = topology_mod.chain_index(network.dotted)
    if index:
        return ('keep netN_vlan + %d x chain_vlan_stride within 1..4094: '
                'a lower netN_vlan, chain_vlan_stride or chain_count'
                % index)
    return 'set segmentation_id to 1..4094'


def _chain_networks(topology):
    seen = {}
    for node in topology.nodes:
        for port in node.data_ports:
            seen.setdefault(port.network.key, port.network)
    return list(seen.values())


def _declared_shared(network):
    meta = (network.resource.metadata or {}).get('epa_chain') or {}
    return meta.get(SHARED_SEGMENT_KEY) is True


# ---- ports ------------------------------------------------------------------

def port_rules(topology, realisation):
    for node in topology.nodes:
        if not node.config:
            continue
        for port in node.data_ports:
            res = port.resource
            if port.properties.get('port_security_enabled') is not False:
                yield at(res, 'PORT-DATA',
                         'data port of %s has port security %s: Neutron '
                         'drops frames whose source MAC is not the port\'s '
                         'own, which forwarded traffic is'
                         % (node.name, 'on' if port.given(
                             'port_security_enabled') else 'left at the '
                            'network default'),
                         'set port_security_enabled: false',
                         'port_security_enabled')
            groups = port.properties.get('security_groups')
            if not port.given('security_groups') or groups:
                yield at(res, 'PORT-DATA',
                         'data port of %s has %s' % (node.name, (
                             'security groups %s' % groups) if groups else
                             'no security_groups property, so Neutron '
                             'attaches the default group'),
                         'set security_groups: [] (an empty list)',
                         'security_groups')
        for port in node.other_ports:
            if not port.properties.get('security_groups'):
                yield at(port.resource, 'PORT-MGMT',
                         'management port of %s has no security group'
                         % node.name,
                         'attach a group admitting only SSH and the '
                         'generator\'s control port from your CIDR',
                         'security_groups')
    yield from _macs_fixed_twice(topology)


def _macs_fixed_twice(topology):
    """A MAC fixed on two ports: a next hop would name either.

    Neutron refuses it only on one network; chains side by side put the
    same MAC on two segments, and every next hop that names it becomes
    ambiguous. Neutron's own MACs are unique.
    """
    fixed = {}
    for port in topology.ports.values():
        mac = realise.fixed_mac(port.properties)
        if mac:
            fixed.setdefault(mac.lower(), []).append(port)
    for mac, ports in sorted(fixed.items()):
        for other in ports[1:]:
            yield at(other.resource, 'MAC-UNIQUE',
                     'MAC %s is fixed on %s and on %s' % (
                         mac, ports[0].resource.dotted,
                         other.resource.dotted),
                     'fix each MAC on one port only (vnf_port_macs fixes '
                     'chain 0\'s: leave the others to Neutron)',
                     'mac_address')


# ---- nodes ------------------------------------------------------------------

def node_rules(topology, realisation):
    for node in topology.nodes:
        res = node.server
        if node.config_error:
            yield at(res, 'NODE-CONFIG', 'user_data is not a valid epa_chain '
                     'node config: %s' % node.config_error,
                     'write user_data as lib/chain_server.yaml does (a '
                     '#cloud-config document with an epa_chain key)',
                     'user_data')
            continue
        if res.properties.get('config_drive') is not True:
            yield at(res, 'NODE-CONFIG', 'no config drive: the VNF runtime '
                     'reads its configuration from it', 'set config_drive: '
                     'true', 'config_drive')
        if res.properties.get('user_data_format') != 'RAW':
            yield at(res, 'NODE-CONFIG', 'user_data_format is %s: Heat '
                     'would wrap the node config in its own agent\'s format'
                     % res.properties.get('user_data_format'),
                     'set user_data_format: RAW', 'user_data_format')
        for name, data_port in sorted(node.config.ports.items()):
            if node.port_for(name) is None:
                yield at(res, 'NODE-CONFIG',
                         'config names %s port MAC %s but no port with that '
                         'MAC is attached to the server'
                         % (name, data_port.mac),
                         'pass the attached port\'s mac_address attribute',
                         'user_data')


# ---- the MAC chain ----------------------------------------------------------

def mac_chain_rules(topology, realisation):
    """Each chain of the stack, walked by its MACs.

    Next hops are looked up in the whole stack: one into another chain
    is reported as a hop onto another segment.
    """
    for chain in topology.chains():
        yield from _chain_macs(chain, topology, realisation)


def _chain_macs(chain, topology, realisation):
    nodes = [n for n in chain if n.config]
    if not nodes:
        return
    vnfs = [n for n in nodes if n.config.role == 'vnf']
    if not 1 <= len(vnfs) <= MAX_VNFS:
        yield at(nodes[0].server, 'MAC-CHAIN', 'the chain has %d VNFs'
                 % len(vnfs), 'use 1 to %d VNFs' % MAX_VNFS)
    for direction in ('forward', 'reverse'):
        senders = [n for n in nodes if n.config.flow(direction)]
        if not senders:
            continue
        for node in nodes:
            if node not in senders:
                yield at(node.server, 'MAC-CHAIN',
                         '%s has no %s flow while %s do'
                         % (node.name, direction, _names(senders)),
                         'make every node of a bidirectional chain forward '
                         'both directions', 'user_data')
        yield from _walk(direction, senders, topology, realisation)


def _walk(direction, senders, topology, realisation):
    """Follow next hops from the chain's entry; report every broken link."""
    hops = {}
    broken = False
    for node in senders:
        problem = _link(node, direction, topology, realisation)
        if isinstance(problem, findings.Finding):
            broken = True
            yield problem
        else:
            hops[node.name] = problem
    if broken:
        return
    targeted = {target.name for target in hops.values() if target}
    generators = [n for n in senders if n.config.role == 'generator']
    entries = generators or [n for n in senders if n.name not in targeted]
    if len(entries) != 1:
        yield at(senders[0].server, 'MAC-CHAIN',
                 'the %s direction has %d entry points (%s), not one'
                 % (direction, len(entries), _names(entries)),
                 'chain every VNF to the next so that frames enter once')
        return
    visited, node = [], entries[0]
    while node is not None and node.name not in [v.name for v in visited]:
        visited.append(node)
        node = hops[node.name]
        if node is not None and node.config.role == 'generator':
            visited.append(node)
            break
    missing = [n for n in senders if n.name not in {v.name for v in visited}]
    if missing:
        yield at(missing[0].server, 'MAC-CHAIN',
                 '%s is not on the %s chain %s'
                 % (_names(missing), direction,
                    ' -> '.join(v.name for v in visited)),
                 'point the previous node\'s next hop at its receiving port')


def _link(node, direction, topology, realisation):
    """The node a flow sends to (None: outside the stack) or a Finding."""
    flow = node.config.flow(direction)
    tx_port = node.port_for(flow.tx_port)
    if tx_port is None:
        return at(node.server, 'MAC-CHAIN', '%s has no %s port attached'
                  % (node.name, flow.tx_port), 'attach the data port')
    prop_file, prop_res, prop = _blame(node, flow.next_hop_mac, realisation)

    def broken(message, fix):
        return findings.Finding(rule='MAC-CHAIN', message=message, fix=fix,
                                file=prop_file, resource=prop_res,
                                property=prop)

    peers = [p for p in topology.ports.values()
             if p.network.key == tx_port.network.key and p is not tx_port]
    peer_names = ', '.join('%s (%s)' % (p.resource.dotted, p.mac)
                           for p in peers) or (
        'none in the stack, so the endpoint outside it (a tester MAC)')
    if flow.next_hop_mac == tx_port.mac:
        return broken('%s sends %s traffic to its own %s port %s'
                      % (node.name, direction, flow.tx_port, tx_port.mac),
                      'use the MAC of the port at the other end of %s: %s'
                      % (tx_port.network.label, peer_names))
    target_port = topology.port_by_mac(flow.next_hop_mac)
    if target_port is None:
        if direction == 'forward' and node.config.role == 'generator':
            return broken('the generator sends to %s, which no port of the '
                          'stack has' % flow.next_hop_mac,
                          'use the first VNF\'s left port MAC')
        return None  # an external endpoint (a tester) on the segment
    if target_port.network.key != tx_port.network.key:
        return broken(
            '%s sends %s traffic out of its %s port on %s, but next hop %s '
            'is %s on %s: frames would never reach it'
            % (node.name, direction, flow.tx_port, tx_port.network.label,
               flow.next_hop_mac, target_port.resource.dotted,
               target_port.network.label),
            'use the MAC of the port at the other end of %s: %s'
            % (tx_port.network.label, peer_names))
    target = topology.node_of(target_port)
    target_flow = target.config.flow(direction) if (
        target and target.config) else None
    if target is None or target_flow is None or (
            target.port_for(target_flow.rx_port) is not target_port):
        return broken('%s sends %s traffic to %s (%s), which does not '
                      'receive the %s direction on that port'
                      % (node.name, direction, target_port.resource.dotted,
                         flow.next_hop_mac, direction),
                      'use the MAC of the port that receives %s traffic on '
                      '%s: %s' % (direction, tx_port.network.label,
                                  peer_names))
    return target


def _blame(node, mac, realisation):
    """Where the MAC was written: the nearest template property holding it."""
    path = node.server.path
    for depth in range(len(path) - 1, 0, -1):
        parent = realisation.get(path[:depth])
        for key, value in sorted((parent.properties or {}).items()):
            if value == mac:
                return parent.template, parent.dotted, key
    return node.server.template, node.name, 'user_data'


# ---- parameter values -------------------------------------------------------

def parameter_rules(topology, realisation):
    """A number parameter holds a finite number, not a boolean.

    Heat takes true for 1 and 'nan' or 1e999 for numbers that pass every
    range constraint (NaN compares false with everything).
    """
    for name, value in sorted(realisation.parameters.items()):
        if str(realisation.parameter_types.get(name)).lower() != 'number':
            continue
        if isinstance(value, bool) or not (
                isinstance(value, (int, float)) and math.isfinite(value)):
            yield findings.Finding(
                rule='PARAM-VALUE', message='%r is not a finite number'
                % (value,), fix='give a number (the template declares %s '
                'a number)' % name, file=realisation.template,
                parameter=name)


# ---- management access ------------------------------------------------------

def management_rules(topology, realisation):
    """SSH and PROX's unauthenticated control port: not for the internet."""
    if MANAGEMENT_CIDR not in realisation.parameters:
        return
    value = realisation.parameters[MANAGEMENT_CIDR]

    def finding(message, fix, severity):
        return findings.Finding(rule='MGMT-CIDR', message=message, fix=fix,
                                file=realisation.template,
                                parameter=MANAGEMENT_CIDR, severity=severity)

    try:
        network = ipaddress.ip_network(str(value).strip(), strict=False)
    except ValueError:
        yield finding('%r is not a CIDR' % (value,),
                      'give an address range such as 192.0.2.0/24',
                      findings.ERROR)
        return
    if network.prefixlen < NARROWEST_WIDE_PREFIX[network.version]:
        yield finding(
            '%s admits %s to SSH and to the generator\'s control port, '
            'which has no authentication' % (
                value, 'the whole internet' if network.prefixlen == 0 else
                'a good part of the internet (%d addresses)'
                % network.num_addresses),
            'give the range the operators and test tools connect from, '
            'e.g. 192.0.2.0/24 (parameters: in an environment, or '
            '--parameter)', findings.WARNING)
