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

"""The configuration a chain node reads from its config drive.

The Heat templates write it as user_data (a #cloud-config document with an
`epa_chain` key); the VNF runtime in the images parses it with this module,
and validation parses the user_data Heat would deliver with the same code,
so that the two cannot drift apart.

Schema version 1::

    role: vnf | generator
    name: server name
    engine: prox | testpmd          (generator: prox)
    forwarding_cores: int >= 1
    control_port: int|null          (the generator's; a parked VNF's)
    tasks_at_ready: parked|running  (VNFs: parked waits, engine
                                     initialised, until its tasks are
                                     started over the control socket;
                                     absent: running. The generator is
                                     always parked.)
    latency_bucket_shift: int|null  (generator only: PROX's histogram
                                     buckets are 2**N TSC cycles; null or
                                     absent: the generator's default)
    ports: {left: {mac, network, vlan, tagged}, right: {...}}
                                    (tagged, generator only: the port is
                                     a trunk port and its frames carry
                                     `vlan` as an 802.1Q tag, as an
                                     external tester's on a provider
                                     bridge; both ports or neither)
    flows: [{direction: forward|reverse, rx_port: left|right,
             tx_port: left|right, next_hop_mac: MAC}, ...]
"""

import dataclasses
import re
import typing

from epa_chain.chain import directions as chain_directions
from epa_chain import safe_yaml

SCHEMA_VERSION = 1
ROLES = ('vnf', 'generator')
ENGINES = ('prox', 'testpmd')
PORT_NAMES = ('left', 'right')
PARKED, RUNNING = 'parked', 'running'
TASK_STATES = (PARKED, RUNNING)
MAC_RE = re.compile(r'^[0-9a-f]{2}(:[0-9a-f]{2}){5}$')
# PROX's `latency bucket size` (log2 TSC cycles): it raises anything below
# 11; 30 is about 0.4 s a bucket at 2.6 GHz.
MIN_LATENCY_BUCKET_SHIFT = 11
MAX_LATENCY_BUCKET_SHIFT = 30


class NodeConfigError(ValueError):
    """The node configuration is missing or malformed."""

    def __init__(self, field, message):
        super().__init__('%s: %s' % (field, message) if field else message)
        self.field = field
        self.message = message


@dataclasses.dataclass(frozen=True)
class DataPort:
    name: str
    mac: str
    network: typing.Optional[str]
    vlan: typing.Optional[int]
    #: frames on this port carry `vlan` as an 802.1Q tag (a trunk port)
    tagged: bool = False


@dataclasses.dataclass(frozen=True)
class Flow:
    direction: str
    rx_port: str
    tx_port: str
    next_hop_mac: str


@dataclasses.dataclass(frozen=True)
class NodeConfig:
    role: str
    name: str
    engine: str
    forwarding_cores: int
    ports: typing.Dict[str, DataPort]
    flows: typing.Tuple[Flow, ...]
    control_port: typing.Optional[int] = None
    latency_bucket_shift: typing.Optional[int] = None
    tasks_at_ready: str = RUNNING

    @property
    def parked(self):
        """Its tasks wait until started over the control socket."""
        return self.role == 'generator' or self.tasks_at_ready == PARKED

    def flow(self, direction):
        for flow in self.flows:
            if flow.direction == direction:
                return flow
        return None

    def port_by_mac(self, mac):
        for port in self.ports.values():
            if port.mac == mac:
                return port
        return None

    @property
    def cores_needed(self):
        """Cores the engine needs: a master core plus the workers."""
        if self.role == 'generator':
            # A master and one worker running every gen and lat task
            # (gen_config's compact layout): the least that works.
            return 2
        return 1 + self.forwarding_cores

    @property
    def cores_wanted(self):
        """Cores the engine uses best; more than cores_needed is optional.

        The generator: a master, a gen core per direction and a latency
        core (gen_config's standard layout); fewer CPUs get a layout that
        shares cores, at lower rates.
        """
        if self.role == 'generator':
            return 1 + len(self.flows) + 1
        return self.cores_needed


def parse_user_data(user_data):
    """Parse the user_data the templates write; NodeConfigError if bad."""
    if not isinstance(user_data, str) or not user_data.strip():
        raise NodeConfigError('user_data', 'empty')
    try:
        # The package's one loader: no alias bomb, no endless nesting.
        document = safe_yaml.parse(user_data, 'user_data')
    except safe_yaml.InputError as exc:
        raise NodeConfigError('user_data', exc.message)
    if not isinstance(document, dict) or 'epa_chain' not in document:
        raise NodeConfigError('user_data', 'no epa_chain key')
    return from_dict(document['epa_chain'])


def from_dict(data):
    if not isinstance(data, dict):
        raise NodeConfigError('epa_chain', 'must be a map')
    version = data.get('schema_version')
    if version != SCHEMA_VERSION:
        raise NodeConfigError('schema_version', 'is %r, this code reads %d'
                              % (version, SCHEMA_VERSION))
    role = _choice(data, 'role', ROLES)
    engine = _choice(data, 'engine', ENGINES)
    if role == 'generator' and engine != 'prox':
        raise NodeConfigError('engine', 'the generator runs prox only')
    name = data.get('name')
    if not isinstance(name, str) or not name:
        raise NodeConfigError('name', 'missing')
    cores = data.get('forwarding_cores')
    if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
        raise NodeConfigError('forwarding_cores',
                              'must be a whole number >= 1, not %r' % cores)
    ports = _ports(data.get('ports'))
    if role != 'generator' and any(p.tagged for p in ports.values()):
        raise NodeConfigError('ports', 'tagged is for the generator role '
                              'only: a VNF\'s port gets its frames '
                              'untagged from Neutron')
    flows = _flows(data.get('flows'), ports)
    tasks = data.get('tasks_at_ready', RUNNING)
    if tasks not in TASK_STATES or (role == 'generator' and
                                    tasks != PARKED and
                                    'tasks_at_ready' in data):
        raise NodeConfigError('tasks_at_ready', 'must be %s, not %r' % (
            PARKED if role == 'generator' else ' or '.join(TASK_STATES),
            tasks))
    if tasks == PARKED and engine != 'prox':
        raise NodeConfigError('tasks_at_ready', '%s forwards from its '
                              'start: only PROX parks its tasks' % engine)
    control_port = data.get('control_port')
    controlled = role == 'generator' or tasks == PARKED
    if controlled and not (isinstance(control_port, int) and
                           not isinstance(control_port, bool) and
                           0 < control_port < 65536):
        raise NodeConfigError('control_port',
                              'the %s needs a TCP port, not %r' % (
                                  'generator' if role == 'generator'
                                  else 'parked VNF', control_port))
    shift = data.get('latency_bucket_shift')
    if shift is not None and not (
            isinstance(shift, int) and not isinstance(shift, bool) and
            MIN_LATENCY_BUCKET_SHIFT <= shift <= MAX_LATENCY_BUCKET_SHIFT):
        raise NodeConfigError('latency_bucket_shift',
                              'must be %d..%d (log2 TSC cycles per latency '
                              'bucket) or null, not %r'
                              % (MIN_LATENCY_BUCKET_SHIFT,
                                 MAX_LATENCY_BUCKET_SHIFT, shift))
    return NodeConfig(role=role, name=name, engine=engine,
                      forwarding_cores=cores, ports=ports, flows=flows,
                      control_port=control_port if controlled else None,
                      latency_bucket_shift=shift,
                      tasks_at_ready=PARKED if controlled else RUNNING)


def _choice(data, key, allowed):
    value = data.get(key)
    if value not in allowed:
        raise NodeConfigError(key, 'must be one of %s, not %r'
                              % (', '.join(allowed), value))
    return value


def _ports(data):
    if not isinstance(data, dict) or set(data) != set(PORT_NAMES):
        raise NodeConfigError('ports', 'must map exactly left and right')
    ports = {}
    for name in PORT_NAMES:
        port = data[name] or {}
        mac = port.get('mac')
        if not isinstance(mac, str) or not MAC_RE.match(mac):
            raise NodeConfigError('ports.%s.mac' % name,
                                  'not a lower-case MAC address: %r' % mac)
        tagged = port.get('tagged', False)
        vlan = port.get('vlan')
        if not isinstance(tagged, bool):
            raise NodeConfigError('ports.%s.tagged' % name,
                                  'must be true or false, not %r' % tagged)
        if tagged and not (isinstance(vlan, int) and
                           not isinstance(vlan, bool) and
                           1 <= vlan <= 4094):
            raise NodeConfigError('ports.%s.vlan' % name,
                                  'a tagged port needs its VLAN ID, 1..4094, '
                                  'not %r' % (vlan,))
        ports[name] = DataPort(name, mac, port.get('network'), vlan, tagged)
    if ports['left'].mac == ports['right'].mac:
        raise NodeConfigError('ports', 'left and right have the same MAC')
    if ports['left'].tagged != ports['right'].tagged:
        # PROX's marks sit at one offset in every frame of the generator.
        raise NodeConfigError('ports', 'tag both ports or neither: the '
                              'latency marks sit at one offset in both '
                              'directions')
    return ports


def _flows(data, ports):
    if not isinstance(data, list) or not data:
        raise NodeConfigError('flows', 'must list at least one flow')
    flows = []
    for index, item in enumerate(data):
        field = 'flows[%d]' % index
        if not isinstance(item, dict):
            raise NodeConfigError(field, 'must be a map')
        direction = item.get('direction')
        if direction not in chain_directions.DIRECTIONS:
            raise NodeConfigError(field + '.direction',
                                  'must be forward or reverse')
        rx, tx = item.get('rx_port'), item.get('tx_port')
        if rx not in ports or tx not in ports or rx == tx:
            raise NodeConfigError(field, 'rx_port and tx_port must be left '
                                  'and right, one each')
        mac = item.get('next_hop_mac')
        if not isinstance(mac, str) or not MAC_RE.match(mac):
            raise NodeConfigError(field + '.next_hop_mac',
                                  'not a lower-case MAC address: %r' % mac)
        flows.append(Flow(direction, rx, tx, mac))
    directions = [f.direction for f in flows]
    if len(set(directions)) != len(directions):
        raise NodeConfigError('flows', 'a direction appears twice')
    if 'forward' not in directions:
        raise NodeConfigError('flows', 'no forward flow')
    return tuple(flows)
