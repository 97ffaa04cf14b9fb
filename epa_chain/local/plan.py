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

"""What a realised stack becomes on this host (pure: nothing is changed).

The cloud resource  ->  here
  OS::Neutron::ProviderNet (physnet P, VLAN V)
                    ->  netdev bridge br-P (one per physical network,
                        action NORMAL) and VLAN tag V on its access ports
  OS::Neutron::Port of a VNF
                    ->  dpdkvhostuserclient port, the VNF's virtio-user
                        device on the socket, with the MAC Heat resolved
  OS::Neutron::Port of the generator
                    ->  PROX generator: a dpdkvhostuserclient port, as a
                        VNF's; AF_PACKET generator: a veth pair, one end
                        on the bridge, the other in the generator's
                        network namespace with that MAC
  OS::Nova::Server (role vnf)
                    ->  the VNF runtime as a process, its config drive a
                        directory written from what Heat resolved
  OS::Nova::Server (role generator)
                    ->  PROX (gen and lat tasks, local/prox_setup.py and
                        prox_generator.py) or the AF_PACKET generator
                        (local/afpacket.py) in its namespace
  OS::Nova::Flavor  ->  huge pages for every VNF; dedicated CPUs when the
                        host has enough cores, otherwise shared and said so
  chain K of chain_count
                    ->  its VNFs numbered on from chain K-1's, its generator
                        in a namespace of its own (PREFIX-gen, PREFIX-gK),
                        its segments on its own VLANs of the shared bridges
"""

import dataclasses
import typing

from epa_chain.chain import node_config
from epa_chain import generators
from epa_chain.local import names

IFNAMSIZ = names.IFNAMSIZ
OVS_PAGES = 512         # dpdk-socket-mem=1024 in 2 MB pages
VNF_PAGES = 256         # the runtime's hugepages.VNF_MB (512 MB)
SPARE_PAGES = 32
HOUSEKEEPING_CPU = 0    # control plane, generator, engines' master lcores
PMD_CPU = 1             # the one OVS PMD thread (pmd-cpu-mask)
GENERATORS = generators.local_kinds()
PROX_GENERATOR_PAGES = 256   # EAL -m 512 (local/prox_setup.PROX_MB)


class PlanError(ValueError):
    """The stack asks for something this host cannot stand in for."""

    def __init__(self, field, message, fix):
        super().__init__('%s: %s; %s' % (field, message, fix))
        self.field = field
        self.message = message
        self.fix = fix


@dataclasses.dataclass(frozen=True)
class Bridge:
    name: str
    physical_network: str


@dataclasses.dataclass(frozen=True)
class SwitchPort:
    """One Neutron port as a port of an OVS bridge."""

    name: str               # OVS port (and interface) name
    bridge: str
    vlan: int
    mac: str
    owner: str              # server name
    role: str               # left | right
    network: str            # Neutron network name
    kind: str               # vhost | veth
    socket: typing.Optional[str] = None      # vhost-user socket (vhost)
    peer: typing.Optional[str] = None        # veth end in the namespace
    netns: typing.Optional[str] = None       # that namespace (veth)
    chain: int = 0          # chain_count's index K of its chain


@dataclasses.dataclass(frozen=True)
class Vnf:
    name: str
    config: node_config.NodeConfig
    user_data: str
    server_id: str
    ports: typing.Tuple[SwitchPort, ...]
    cpus: typing.Tuple[int, ...]
    pinned: bool
    chain: int = 0


@dataclasses.dataclass(frozen=True)
class Generator:
    name: str
    config: node_config.NodeConfig
    ports: typing.Tuple[SwitchPort, ...]
    netns: str = ''                  # its network namespace
    chain: int = 0
    kind: str = 'afpacket'           # prox | afpacket
    why: str = ''                    # why this kind
    # PROX: (master CPU, worker CPU, ...): lcore N is CPU N
    cpus: typing.Tuple[int, ...] = ()
    cpus_own: bool = False           # workers on CPUs nothing else uses

    def port(self, role):
        return next(p for p in self.ports if p.role == role)


@dataclasses.dataclass(frozen=True)
class Hop:
    """What OVS must see on one hop: in_port sends src -> dst to out_port."""

    direction: str
    in_port: str
    src: str
    dst: str
    out_port: str


@dataclasses.dataclass(frozen=True)
class LocalPlan:
    prefix: str
    bridges: typing.Tuple[Bridge, ...]
    ports: typing.Tuple[SwitchPort, ...]
    vnfs: typing.Tuple[Vnf, ...]
    generators: typing.Tuple[Generator, ...]   # one per chain, in order
    hugepages: int                   # 2 MB pages for OVS and the VNFs
    pmd_cpus: typing.Tuple[int, ...]
    flavors: typing.Tuple[str, ...]  # how each flavor was honoured
    notes: typing.Tuple[str, ...]

    @property
    def ovs_netns(self):
        return self.prefix + names.OVS_SUFFIX

    @property
    def generator(self):
        """Chain 0's generator: the only one of a one-chain bed."""
        return self.generators[0]

    @property
    def generator_netns(self):
        return self.generator.netns

    @property
    def chain_count(self):
        return len(self.generators)

    @property
    def vnfs_per_chain(self):
        return len(self.vnfs) // self.chain_count

    @property
    def directions(self):
        return tuple(f.direction for f in self.generator.config.flows)

    def for_chain(self, chain):
        """The plan of chain `chain` alone (the bridges stay shared)."""
        return dataclasses.replace(
            self, ports=tuple(p for p in self.ports if p.chain == chain),
            vnfs=tuple(v for v in self.vnfs if v.chain == chain),
            generators=(self.generators[chain],))

    def port_by_mac(self, mac):
        return next((p for p in self.ports if p.mac == mac), None)

    def hops(self):
        """Every hop of every direction of every chain, in chain order."""
        hops = []
        for generator in self.generators:
            hops += self._hops_from(generator)
        return hops

    def _hops_from(self, generator):
        hops = []
        for direction in self.directions:
            node, config, port_of = generator, generator.config, \
                generator.port
            seen = set()
            while node.name not in seen:
                seen.add(node.name)
                flow = config.flow(direction)
                if flow is None:
                    break
                tx = port_of(flow.tx_port)
                target = self.port_by_mac(flow.next_hop_mac)
                hops.append(Hop(direction, tx.name, tx.mac,
                                flow.next_hop_mac,
                                target.name if target else '?'))
                if target is None or target.owner == generator.name:
                    break
                node = next(v for v in self.vnfs if v.name == target.owner)
                config = node.config
                port_of = _port_lookup(node)
        return hops


def _port_lookup(vnf):
    def port_of(role):
        return next(p for p in vnf.ports if p.role == role)
    return port_of


def interface_name(*parts):
    """A name for OVS and the kernel: parts joined by '-', <= 15 chars."""
    name = '-'.join(parts)
    if len(name) <= IFNAMSIZ:
        return name
    return name[:IFNAMSIZ]


def build(topology, prefix, socket_dir, host_cpus, generator='afpacket',
          generator_why=''):
    """The LocalPlan for a chain topology; PlanError if it cannot be.

    generator: 'prox' (a PROX instance on vhost-user ports per chain) or
    'afpacket' (veth pairs into each chain's generator namespace).
    """
    if generator not in GENERATORS:
        raise PlanError('--generator', 'is %r' % (generator,),
                        'choose one of %s' % ', '.join(GENERATORS))
    notes = []
    bridges = _bridges(topology)
    chains = _chains(topology)
    vnf_nodes = [(k, n) for k, (_gen, vnfs) in enumerate(chains)
                 for n in vnfs]
    cpus, pinned = _cpu_sets([n for _k, n in vnf_nodes], host_cpus, notes)
    vnfs = tuple(_vnf(node, index, bridges, socket_dir, cpus[index - 1],
                      pinned, chain)
                 for index, (chain, node) in enumerate(vnf_nodes, 1))
    gens = tuple(_generator(
        gen_node, chain, prefix, bridges, socket_dir, generator,
        generator_why, host_cpus, cpus if pinned else [], notes)
        for chain, (gen_node, _vnfs) in enumerate(chains))
    flavors = _flavors(topology)
    pages = OVS_PAGES + VNF_PAGES * len(vnfs) + SPARE_PAGES
    if generator == 'prox':
        pages += PROX_GENERATOR_PAGES * len(gens)
    if len(gens) > 1:
        notes.append('%d chains side by side: each its own VNFs, VLANs and '
                     'generator (namespaces %s)' % (
                         len(gens), ', '.join(g.netns for g in gens)))
    notes.append('management network and its ports: not realised (nothing '
                 'here needs them; the generator is driven in-process)')
    return LocalPlan(prefix=prefix, bridges=tuple(bridges.values()),
                     ports=tuple(p for v in vnfs for p in v.ports) +
                     tuple(p for g in gens for p in g.ports), vnfs=vnfs,
                     generators=gens, hugepages=pages,
                     pmd_cpus=(PMD_CPU,), flavors=tuple(flavors),
                     notes=tuple(notes))


def _bridges(topology):
    """{physical network: Bridge} of the chain's data networks."""
    bridges = {}
    data_networks = {id(port.network): port.network
                     for node in topology.nodes for port in node.data_ports}
    for network in data_networks.values():
        if network.existing:
            raise PlanError(
                'use_existing_networks', 'network %r is an existing '
                'network; the local bed creates the chain segments itself'
                % network.name, 'leave use_existing_networks false')
        if network.network_type not in (None, 'vlan'):
            raise PlanError(
                '%s.network_type' % network.name, 'is %r'
                % network.network_type, 'the local bed realises VLAN '
                'provider networks only')
        physnet = network.physical_network or 'physnet1'
        if physnet not in bridges:
            bridges[physnet] = Bridge(interface_name('br', physnet), physnet)
    return bridges


def _chains(topology):
    """[(generator node, [VNF node, ...]), ...] of each chain, in order.

    PlanError if a chain has no generator, or the stack more chains
    than this host stands in for.
    """
    for node in topology.nodes:
        if node.config_error:
            raise PlanError('%s.user_data' % node.name,
                            str(node.config_error),
                            'fix the template that renders it')
    chains = []
    for nodes in topology.chains():
        configured = [n for n in nodes if n.config]
        if not configured:
            continue
        found = [n for n in configured if n.config.role == 'generator']
        if not found:
            raise PlanError('endpoints', 'the stack has no generator server',
                            'use endpoints=generator (the default): the '
                            'local bed needs a generator it can run')
        chains.append((found[0], [n for n in configured
                                  if n.config.role == 'vnf']))
    if len(chains) > names.MAX_CHAINS:
        raise PlanError('chain_count', 'is %d' % len(chains),
                        'the local bed stands in for at most %d chains '
                        '(namespaces PREFIX-g1..-g%d)'
                        % (names.MAX_CHAINS, names.MAX_CHAINS - 1))
    return chains


def _vnf(node, index, bridges, socket_dir, cpus, pinned, chain):
    """A VNF server: its ports vhost-user ports named vhu-vN-l/r."""
    short = 'v%d' % index
    ports = []
    for role in node_config.PORT_NAMES:
        name = interface_name('vhu', short, role[0])
        ports.append(_switch_port(
            node.port_for(role), bridges, name, node.config.name, role,
            'vhost', chain, socket='%s/%s.sock' % (socket_dir, name)))
    return Vnf(name=node.config.name, config=node.config,
               user_data=node.server.properties['user_data'],
               server_id=node.server.resource_id, ports=tuple(ports),
               cpus=cpus, pinned=pinned, chain=chain)


def _generator(node, chain, prefix, bridges, socket_dir, kind, why,
               host_cpus, vnf_sets, notes):
    """A chain's generator: PROX on vhost-user ports, or veth pairs.

    Chain 0's ports keep the one-chain names (vhu-g-l, gen-left); chain
    K's carry K (vhu-gK-l, gK-left).
    """
    netns = names.generator_netns(prefix, chain)
    ports = []
    for role in node_config.PORT_NAMES:
        port = node.port_for(role)
        if kind == 'prox':
            name = interface_name('vhu', 'g%s' % (chain or ''), role[0])
            ports.append(_switch_port(
                port, bridges, name, node.config.name, role, 'vhost', chain,
                socket='%s/%s.sock' % (socket_dir, name)))
        else:
            ports.append(_switch_port(
                port, bridges, interface_name(
                    'g%d' % chain if chain else 'gen', role),
                node.config.name, role, 'veth', chain, peer=role,
                netns=netns))
    cpus, own = (), False
    if kind == 'prox':
        cpus, own = _generator_cpus(host_cpus, vnf_sets,
                                    notes if not chain else [])
    if not chain:
        notes.append('generator: %s (%s)' % (
            'PROX, gen and lat tasks, on vhost-user ports'
            if kind == 'prox' else
            'AF_PACKET sender/receiver on veth pairs', why or 'asked'))
    return Generator(node.config.name, node.config, tuple(ports),
                     netns=netns, chain=chain, kind=kind, why=why, cpus=cpus,
                     cpus_own=own)


def _switch_port(port, bridges, name, owner, role, kind, chain, socket=None,
                 peer=None, netns=None):
    network = port.network
    if network.vlan is None:
        raise PlanError('%s.segmentation_id' % network.name, 'no VLAN',
                        'give the provider network a VLAN')
    return SwitchPort(
        name=name, bridge=bridges[network.physical_network or
                                  'physnet1'].name,
        vlan=int(network.vlan), mac=port.mac, owner=owner, role=role,
        network=network.name, kind=kind, socket=socket, peer=peer,
        netns=netns, chain=chain)


def _cpu_sets(vnf_nodes, host_cpus, notes):
    """Dedicated CPUs per VNF when the host has them; else shared."""
    host_cpus = sorted(host_cpus)
    if len(host_cpus) < 2:
        raise PlanError('host CPUs', 'found %d' % len(host_cpus),
                        'the local bed needs 2 CPUs: one for the OVS PMD '
                        'and the VNFs, one for the rest')
    free = [c for c in host_cpus if c not in (HOUSEKEEPING_CPU, PMD_CPU)]
    needed = sum(n.config.forwarding_cores for n in vnf_nodes)
    if needed and len(free) >= needed:
        sets = []
        for node in vnf_nodes:
            workers = free[:node.config.forwarding_cores]
            free = free[node.config.forwarding_cores:]
            sets.append(tuple([HOUSEKEEPING_CPU] + workers))
        notes.append('CPU pinning: each VNF\'s forwarding cores are its own '
                     '(%s); OVS PMD on CPU %d' % (
                         '; '.join('%s: %s' % (n.config.name, s[1:])
                                   for n, s in zip(vnf_nodes, sets)),
                         PMD_CPU))
        return sets, True
    shared = (HOUSEKEEPING_CPU, PMD_CPU)
    # Said, not warned: on a small host this is the plan, and the only
    # fix is a host with more CPUs.
    notes.append('CPU pinning not honoured: the VNFs\' %d forwarding '
                 'core%s would need %d CPUs; this host has %d, so every VNF '
                 'forwards on CPU %d with the OVS PMD, masters and the '
                 'generator on CPU %d' % (
                     needed, '' if needed == 1 else 's', needed + 2,
                     len(host_cpus), PMD_CPU, HOUSEKEEPING_CPU))
    return [shared for _ in vnf_nodes], False


def _generator_cpus(host_cpus, vnf_sets, notes):
    """(master, worker, ...) CPUs of the PROX generator, and if its own.

    Workers of its own when the host has CPUs left after the OVS PMD and
    the pinned VNFs: one per direction with two. Else one worker (every
    gen and lat task) on the housekeeping CPU, which otherwise runs only
    sleeping processes, and the master (asleep in epoll between counter
    refreshes) on the PMD's: CPU 1 already time-slices the PMD and the
    VNFs' forwarding, and a DPDK lcore cannot share the master's CPU.
    """
    host_cpus = sorted(host_cpus)
    taken = {HOUSEKEEPING_CPU, PMD_CPU}
    for cpus in vnf_sets:
        taken.update(cpus[1:])
    free = [c for c in host_cpus if c not in taken]
    if free:
        workers = free[:2]
        notes.append('PROX generator: CPU%s %s of its own (%s), master on '
                     'CPU %d' % ('s' if len(workers) > 1 else '',
                                 ','.join(map(str, workers)),
                                 'gen and lat of the left port, then of the '
                                 'right' if len(workers) > 1 else
                                 'all gen and lat tasks', HOUSEKEEPING_CPU))
        return tuple([HOUSEKEEPING_CPU] + workers), True
    notes.append('PROX generator: %d CPUs leave none of its own: all gen '
                 'and lat tasks on CPU %d (with the control plane), the '
                 'master on CPU %d (asleep between counter refreshes)'
                 % (len(host_cpus), HOUSEKEEPING_CPU, PMD_CPU))
    return (PMD_CPU, HOUSEKEEPING_CPU), False


def _flavors(topology):
    described = []
    for flavor in topology.flavors.values():
        props = flavor.properties
        specs = props.get('extra_specs') or {}
        page = specs.get('hw:mem_page_size')
        honoured = ['huge pages (2 MB%s)' % (
            ', asked %s' % page if page not in (None, 'large', '2MB',
                                                '2048') else '')]
        if specs.get('hw:cpu_policy') == 'dedicated':
            honoured.append('hw:cpu_policy=dedicated as pinning when there '
                            'are CPUs for it')
        described.append('%s: %s vCPUs, %s MiB: %s; RAM and disk not '
                         'reserved (processes take what they use)'
                         % (props.get('name') or flavor.dotted,
                            props.get('vcpus'), props.get('ram'),
                            ', '.join(honoured)))
    return described


def without_vnfs(plan):
    """OVS alone: the generator's two ports on one segment, no VNF.

    The baseline the chain lengths are compared with: the generator sends
    each direction straight to its own other port through one bridge.
    """
    if plan.chain_count > 1:
        raise PlanError('vnf_count', 'is 0 with %d chains'
                        % plan.chain_count, 'measure OVS alone with one '
                        'chain (chain_count 1)')
    left, right = plan.generator.port('left'), plan.generator.port('right')
    right = dataclasses.replace(right, bridge=left.bridge, vlan=left.vlan,
                                network=left.network)
    flows = tuple(dataclasses.replace(
        f, next_hop_mac=(right if f.tx_port == 'left' else left).mac)
        for f in plan.generator.config.flows)
    config = dataclasses.replace(plan.generator.config, flows=flows)
    generator = dataclasses.replace(plan.generator, config=config,
                                    ports=(left, right))
    used = {left.bridge}
    return dataclasses.replace(
        plan, bridges=tuple(b for b in plan.bridges if b.name in used),
        ports=(left, right), vnfs=(), generators=(generator,),
        hugepages=OVS_PAGES + SPARE_PAGES + (
            PROX_GENERATOR_PAGES if generator.kind == 'prox' else 0),
        notes=plan.notes + ('0 VNFs: OVS alone, both generator ports on %s '
                            'VLAN %d' % (left.network, left.vlan),))
