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

"""PROX configuration of the generator role, and where its tasks run.

`render(node_config, port_devargs, cores)` writes the .cfg the VNF runtime
starts PROX with inside the generator image; `GeneratorLayout` says which
core/task sends and which measures each direction, for the controller
(epa_chain.prox.generator) that drives PROX over its control socket.

Layout for cores [m, g1, (g2,) l]:

- core m: PROX master;
- core g1: gen task 0 for the forward direction (out of the left port);
- core g2: gen task 0 for the reverse direction (out of the right port),
  only when the node has a reverse flow; PROX runs one gen task per core
  (a second one aborts PROX at start: its flow table is named after the
  core);
- core l: lat task 0 receives the forward direction on the right port,
  lat task 1 the reverse direction on the left port. Both always exist:
  every port needs a receive queue, and latency needs the gen and lat
  tasks in one PROX instance (one TSC).

With `shared_lat_core=True` the lat tasks run on the last gen core instead
(tasks 1 and 2 after its gen task 0), so cores [m, g1, (g2)] suffice: the
recorded capture's layout, for hosts with few CPUs. PROX runs the tasks of
one core in turn in one loop, so they share that core's time.

With `compact=True` every task runs on one worker: cores [m, w], gen
tasks 0 (forward) and 1 (reverse, if any) then the two lat tasks on w.
Two gen tasks on one core need a PROX built by epa_chain.prox.build (its
source edit names each gen flow table after core and task). The cost: one
CPU's loop serves both directions and both receivers, so the highest rate
per direction is well below a core's, and a lat task waits for the gen
tasks' turns, which adds to the latency measured. For hop checks at low
rates, not line-rate numbers. `choose_layout` picks the layout for a
number of CPUs: standard, else shared_lat_core, else compact.

Frames: Ethernet / IPv4 198.18.0.1 -> 198.19.0.1 (RFC 2544 benchmarking
addresses; reversed for the reverse direction) / UDP 1024 -> 2048, with
PROX's timestamp at byte 42, accuracy at 46, packet id at 50 and a
signature at 56, the positions of the recorded capture and of samplevnf's
rapid. That needs 60 bytes, the 64-byte minimum frame without its FCS.

A generator whose ports are tagged (node config `tagged`: an external
tester on a provider bridge's trunk port, where seed 000's Ixia was)
sends every frame with its port's VLAN as an 802.1Q tag and expects it
back tagged: the headers and marks move 4 bytes on, so its smallest frame
is 68 bytes (seed 000's Ixia: 70 for VLAN traffic, its signature being 6
bytes). The layout records the tag (`tag_bytes`), so that the controller
moves its flow fields and refuses smaller frames.

The layout also travels inside the configuration, as the PROX variable
`$epa_chain_layout`: the controller asks PROX for it (`echo
$epa_chain_layout`) and so knows the cores, tasks and histogram bucket
width without being told.

PROX's TCP listener (`-t`) binds 8474 on every address and cannot be
moved; the runtime starts PROX with its UNIX socket (`-u`) instead and
relays the management address and control port to it
(epa_chain.vnf_runtime.control_relay).

Only the standard library, chain/ and prox/ here: this runs in the image.
"""

import dataclasses
import re
import typing

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import node_config as node_config_module
from epa_chain.prox import client as prox_client
from epa_chain.prox import traffic

PORT_NAMES = node_config_module.PORT_NAMES
DEFAULT_ACCURACY_LIMIT_NS = 1000000
DEFAULT_MTU = 1500
DEFAULT_NO_HUGE_MB = 256
# PROX raises any smaller `latency bucket size` to 11.
MIN_LATENCY_BUCKET_SHIFT = node_config_module.MIN_LATENCY_BUCKET_SHIFT
MAX_LATENCY_BUCKET_SHIFT = node_config_module.MAX_LATENCY_BUCKET_SHIFT
ETHERNET_OVERHEAD = 18  # header and FCS: frame size = MTU + 18
SIGNATURE = 0x98765432
LAT_POS, ACCURACY_POS, PACKET_ID_POS, SIGNATURE_POS = 42, 46, 50, 56
# With `accuracy pos`, a gen task writes frame N's transmit accuracy into
# frame N + 8192 and the lat task times frame N only once that one has
# arrived (handle_lat.h ACCURACY_WINDOW): the last 8192 frames of a trial
# are never timed.
ACCURACY_WINDOW_FRAMES = 8192
TEMPLATE_SIZE = 60
VLAN_TAG_BYTES = 4          # TPID 0x8100 and the tag control information
FCS_BYTES = 4
ADDRESSES = {'forward': ('198.18.0.1', '198.19.0.1'),
             'reverse': ('198.19.0.1', '198.18.0.1')}
LAYOUT_VARIABLE = '$epa_chain_layout'
LAYOUT_FORMAT = 'epa-chain-layout-1'
# choose_layout()'s names, most CPUs first
STANDARD, SHARED_LAT_CORE, COMPACT = 'standard', 'shared-lat-core', 'compact'
LAYOUTS = (STANDARD, SHARED_LAT_CORE, COMPACT)

_PCI = re.compile(r'^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}):'
                  r'([0-9a-fA-F]{2})\.([0-7])(?:,.*)?$')
_VDEV = re.compile(r'^(?:net|eth)_[A-Za-z0-9_]+(?:,.*)?$')
_SAFE = re.compile(r'^[^\s;$\\]+$')


class GenConfigError(ValueError):
    """An argument of render() cannot make a working configuration."""

    def __init__(self, field, message):
        super().__init__('%s: %s' % (field, message))
        self.field = field
        self.message = message


@dataclasses.dataclass(frozen=True)
class TaskRef:
    core: int
    task: int

    def __str__(self):
        return 'core %d task %d' % (self.core, self.task)


@dataclasses.dataclass(frozen=True)
class DirectionLayout:
    """Who sends and who measures one direction.

    Ports are PROX (DPDK) port ids. `latency_index` is the lat task's index
    in PROX's `stats latency(N).*` paths: lat tasks ordered by core, then
    task.
    """

    direction: str
    gen: TaskRef
    lat: TaskRef
    tx_port: int
    rx_port: int
    latency_index: int


@dataclasses.dataclass(frozen=True)
class GeneratorLayout:
    directions: typing.Tuple[DirectionLayout, ...]
    master_core: int
    # No `latency bucket size` line: PROX's own default applies.
    latency_bucket_shift: int = (
        prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT)
    accuracy_limit_ns: int = DEFAULT_ACCURACY_LIMIT_NS
    max_frame_bytes: int = DEFAULT_MTU + ETHERNET_OVERHEAD
    #: 802.1Q bytes before the EtherType of every frame (0 or 4)
    tag_bytes: int = 0

    def __post_init__(self):
        if self.tag_bytes not in (0, VLAN_TAG_BYTES):
            raise ValueError('tag_bytes must be 0 or %d, not %r'
                             % (VLAN_TAG_BYTES, self.tag_bytes))
        names = [d.direction for d in self.directions]
        if not names or len(set(names)) != len(names) or (
                set(names) - set(chain_directions.DIRECTIONS)):
            raise ValueError('layout directions must be distinct, from %s, '
                             'not %s' % (chain_directions.DIRECTIONS, names))
        gens = [d.gen for d in self.directions]
        if len(set(gens)) != len(gens):
            raise ValueError('two directions share a gen task')

    @property
    def smallest_frame_bytes(self):
        """The smallest frame that holds the headers and PROX's marks."""
        return TEMPLATE_SIZE + self.tag_bytes + FCS_BYTES

    @property
    def direction_names(self):
        return tuple(d.direction for d in self.directions)

    def direction(self, name):
        for layout in self.directions:
            if layout.direction == name:
                return layout
        raise ValueError('this PROX generator has no %s gen task (it has %s)'
                         % (name, ', '.join(self.direction_names)))

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_text(self):
        """One word for a PROX variable (no spaces, no ';', no '$').

        'epa-chain-layout-1,m0,b12,a1000000,x1518,forward:1.0:3.0:0:1:0,...'
        with direction:gen core.task:lat core.task:tx port:rx port:
        latency index; a tagged generator adds v4 after x.
        """
        parts = [LAYOUT_FORMAT, 'm%d' % self.master_core,
                 'b%d' % self.latency_bucket_shift,
                 'a%d' % self.accuracy_limit_ns, 'x%d' % self.max_frame_bytes]
        if self.tag_bytes:
            parts.append('v%d' % self.tag_bytes)
        for d in self.directions:
            parts.append('%s:%d.%d:%d.%d:%d:%d:%d' % (
                d.direction, d.gen.core, d.gen.task, d.lat.core, d.lat.task,
                d.tx_port, d.rx_port, d.latency_index))
        return ','.join(parts)

    @classmethod
    def from_text(cls, text):
        """The layout to_text() wrote; ValueError if `text` is not one."""
        parts = text.strip().split(',')
        if parts[0] != LAYOUT_FORMAT:
            raise ValueError('not an %s layout: %r' % (LAYOUT_FORMAT, text))
        try:
            keyed = [p for p in parts[1:] if ':' not in p]
            values = {p[0]: int(p[1:]) for p in keyed}
            directions = []
            for part in parts[1 + len(keyed):]:
                name, gen, lat, tx, rx, index = part.split(':')
                directions.append(DirectionLayout(
                    direction=name, gen=TaskRef(*map(int, gen.split('.'))),
                    lat=TaskRef(*map(int, lat.split('.'))), tx_port=int(tx),
                    rx_port=int(rx), latency_index=int(index)))
            return cls(directions=tuple(directions), master_core=values['m'],
                       latency_bucket_shift=values['b'],
                       accuracy_limit_ns=values['a'],
                       max_frame_bytes=values['x'],
                       tag_bytes=values.get('v', 0))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError('bad %s layout %r: %s'
                             % (LAYOUT_FORMAT, text, exc))

    @classmethod
    def from_dict(cls, data):
        try:
            directions = tuple(
                DirectionLayout(direction=d['direction'],
                                gen=TaskRef(**d['gen']),
                                lat=TaskRef(**d['lat']),
                                tx_port=int(d['tx_port']),
                                rx_port=int(d['rx_port']),
                                latency_index=int(d['latency_index']))
                for d in data['directions'])
            builtin = prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT
            return cls(directions=directions,
                       master_core=int(data['master_core']),
                       latency_bucket_shift=int(
                           data.get('latency_bucket_shift', builtin)),
                       accuracy_limit_ns=int(
                           data.get('accuracy_limit_ns',
                                    DEFAULT_ACCURACY_LIMIT_NS)),
                       max_frame_bytes=int(
                           data.get('max_frame_bytes',
                                    DEFAULT_MTU + ETHERNET_OVERHEAD)),
                       tag_bytes=int(data.get('tag_bytes', 0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError('not a generator layout (%s): %r'
                             % (exc, data))

    @classmethod
    def standard(cls, cores, directions=chain_directions.DIRECTIONS,
                 left_port=0, right_port=1, shared_lat_core=False,
                 compact=False, **options):
        """The layout render() writes for `cores` and `directions`."""
        cores = list(cores)
        directions = [d for d in chain_directions.DIRECTIONS
                      if d in directions]
        needed = cores_needed(len(directions), shared_lat_core, compact)
        if len(cores) < needed:
            raise ValueError('%d directions need %d cores (master, %s), '
                             'got %r'
                             % (len(directions), needed,
                                'one worker' if compact else
                                'one gen per direction' + (
                                    '' if shared_lat_core else ', latency'),
                                cores))
        if compact:
            # gen tasks 0..n-1 then the lat tasks, all on the worker
            lat_core, first_lat_task = cores[1], len(directions)
        elif shared_lat_core:
            # after the last gen core's gen task 0
            lat_core, first_lat_task = cores[len(directions)], 1
        else:
            lat_core, first_lat_task = cores[1 + len(directions)], 0
        ports = {'forward': (left_port, right_port, 0),
                 'reverse': (right_port, left_port, 1)}
        layouts = []
        for index, direction in enumerate(directions):
            tx_port, rx_port, receiver = ports[direction]
            # PROX numbers lat tasks by core, then task: the forward
            # receiver comes first either way.
            gen = (TaskRef(cores[1], index) if compact
                   else TaskRef(cores[1 + index], 0))
            layouts.append(DirectionLayout(
                direction=direction, gen=gen,
                lat=TaskRef(lat_core, first_lat_task + receiver),
                tx_port=tx_port, rx_port=rx_port, latency_index=receiver))
        return cls(directions=tuple(layouts), master_core=cores[0],
                   **options)

    @classmethod
    def recorded_capture(cls):
        """The layout of the recorded capture's gen.cfg.

        Gen task 0 and lat task 1 on core 1, forward only, PROX's default
        latency buckets.
        """
        return cls(directions=(DirectionLayout(
            direction='forward', gen=TaskRef(1, 0), lat=TaskRef(1, 1),
            tx_port=0, rx_port=1, latency_index=0),),
            master_core=0, latency_bucket_shift=(
                prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT),
            accuracy_limit_ns=1000000, max_frame_bytes=1518)


def cores_needed(directions, shared_lat_core=False, compact=False):
    """CPUs a generator layout takes.

    A master, one gen core per direction and, unless the lat tasks share
    the last gen core, one latency core; compact: a master and one worker.
    """
    if compact:
        return 2
    return 1 + directions + (0 if shared_lat_core else 1)


def choose_layout(directions, cpus):
    """The layout for `cpus` CPUs: STANDARD, SHARED_LAT_CORE or COMPACT.

    The first that fits: each takes fewer CPUs and measures less well.
    GenConfigError if even COMPACT does not fit.
    """
    for name in LAYOUTS:
        if cpus >= cores_needed(directions, **layout_options(name)):
            return name
    raise GenConfigError('cores', 'the generator needs at least %d CPUs (a '
                         'master and one worker), got %d: give the '
                         'generator flavor more vCPUs'
                         % (cores_needed(directions, compact=True), cpus))


def layout_options(name):
    """render()'s keyword arguments for a choose_layout() name."""
    if name not in LAYOUTS:
        raise GenConfigError('layout', 'must be one of %s, not %r'
                             % (', '.join(LAYOUTS), name))
    return {'shared_lat_core': name == SHARED_LAT_CORE,
            'compact': name == COMPACT}


def describe_layout(name, layout):
    """One line for a console: which layout and what it costs."""
    worker = layout.directions[0].gen.core
    if name == COMPACT:
        return ('generator layout compact: gen and lat tasks share CPU %d; '
                'rates are limited and latency includes the tasks\' turns'
                % worker)
    if name == SHARED_LAT_CORE:
        lat = layout.directions[0].lat.core
        return ('generator layout shared-lat-core: the lat tasks share '
                'CPU %d with a gen task; its direction\'s rate is limited'
                % lat)
    return ('generator layout standard: gen tasks on CPU %s, lat tasks on '
            'CPU %d' % (','.join(str(d.gen.core) for d in layout.directions),
                        layout.directions[0].lat.core))


def dpdk_port_ids(port_devargs):
    """DPDK port ids of the left and right ports, and the EAL arguments.

    DPDK numbers PCI devices in bus order (sorted addresses), then virtual
    devices in command-line order; PROX's [port N] means DPDK port N.
    """
    if not isinstance(port_devargs, dict) or set(port_devargs) != set(
            PORT_NAMES):
        raise GenConfigError('port_devargs', 'must map exactly left and '
                             'right to a PCI address or a DPDK vdev')
    pci, vdev = [], []
    for name in PORT_NAMES:
        value = port_devargs[name]
        field = 'port_devargs[%s]' % name
        if not isinstance(value, str) or not _SAFE.match(value):
            raise GenConfigError(field, 'give a PCI address like '
                                 '0000:00:05.0 or a vdev like '
                                 'net_af_packet0,iface=eth1 (no spaces), '
                                 'not %r' % (value,))
        match = _PCI.match(value)
        if match:
            domain, bus, device, function = match.groups()
            key = (int(domain or '0', 16), int(bus, 16), int(device, 16),
                   int(function, 16))
            pci.append((key, name, value))
        elif _VDEV.match(value):
            vdev.append((name, value))
        else:
            raise GenConfigError(field, 'not a PCI address (0000:00:05.0) '
                                 'or a vdev (net_<driver><n>,...): %r'
                                 % (value,))
    if len(pci) == 2 and pci[0][0] == pci[1][0]:
        raise GenConfigError('port_devargs', 'left and right are the same '
                             'PCI device')
    if len(vdev) == 2 and vdev[0][1].split(',')[0] == (
            vdev[1][1].split(',')[0]):
        raise GenConfigError('port_devargs', 'left and right vdevs need '
                             'different names (net_af_packet0, ...1)')
    pci.sort()
    order = [name for _key, name, _value in pci] + [n for n, _v in vdev]
    eal = ['-a %s' % value for _key, _name, value in pci]
    eal += ['--vdev=%s' % value for _name, value in vdev]
    return {name: order.index(name) for name in PORT_NAMES}, eal, bool(pci)


def vdev_ports(port_devargs):
    """Names of the ports given as DPDK vdevs rather than PCI addresses."""
    dpdk_port_ids(port_devargs)
    return [name for name in PORT_NAMES
            if not _PCI.match(port_devargs[name])]


def layout_for(config, port_devargs, cores, shared_lat_core=False,
               compact=False, latency_bucket_shift=None, **options):
    """The GeneratorLayout render() uses for these arguments.

    `latency_bucket_shift` None: the node config's, else PROX's built-in
    (render writes no `latency bucket size` line then).
    """
    _check_node(config)
    port_ids, _eal, _has_pci = dpdk_port_ids(port_devargs)
    directions = [f.direction for f in config.flows]
    cores = _check_cores(cores, cores_needed(len(directions),
                                             shared_lat_core, compact),
                         shared_lat_core, compact)
    shift = _bucket_line_shift(config, latency_bucket_shift)
    return GeneratorLayout.standard(
        cores, directions, left_port=port_ids['left'],
        right_port=port_ids['right'], shared_lat_core=shared_lat_core,
        compact=compact, latency_bucket_shift=(
            prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT if shift is None
            else shift), tag_bytes=tag_bytes(config), **options)


def tag_bytes(config):
    """802.1Q bytes in the frames of the generator `config` (0 or 4)."""
    return VLAN_TAG_BYTES if config.ports['left'].tagged else 0


def render(config, port_devargs, cores, latency_bucket_shift=None,
           accuracy_limit_ns=DEFAULT_ACCURACY_LIMIT_NS, mtu=None,
           file_prefix='epa-chain-gen', mempool_size='16K',
           shared_lat_core=False, huge_pages=True, memory_mb=None,
           compact=False, eal_extra=()):
    """A complete PROX .cfg for the generator role of `config`.

    latency_bucket_shift: histogram buckets are 2**shift TSC cycles wide
    (12 at 2.6 GHz: 1.58 us, 127 buckets up to 200 us, then one overflow
    bucket); None: the node config's (the stack's parameter
    generator_latency_bucket_shift), and when it carries none no line,
    so that PROX's built-in applies. accuracy_limit_ns: samples whose
    timestamps PROX could not place within this error are dropped from
    the latency statistics; PROX's default of 5 us drops nearly all of
    them in a VM. shared_lat_core: the lat tasks run on the last gen core
    (one CPU fewer, see the module docstring). compact: every task on one
    worker (cores [master, worker]; needs a PROX from
    epa_chain.prox.build). huge_pages=False: DPDK's --no-huge, for test
    beds without huge pages (af_packet ports), with memory_mb (default
    256) of ordinary memory; memory_mb alone caps the huge page memory
    (EAL -m). eal_extra: EAL words after the devices (virtio-user ports
    need --in-memory --single-file-segments).
    """
    _check_node(config)
    _check_flags(huge_pages=huge_pages, shared_lat_core=shared_lat_core,
                 compact=compact)
    _check_sizes(latency_bucket_shift, accuracy_limit_ns, mtu, memory_mb)
    _check_words(file_prefix=file_prefix, mempool_size=mempool_size,
                 **{'eal_extra[%d]' % i: word
                    for i, word in enumerate(eal_extra)})
    port_ids, eal, has_pci = dpdk_port_ids(port_devargs)
    eal = list(eal) + list(eal_extra)
    shift = _bucket_line_shift(config, latency_bucket_shift)
    layout = layout_for(
        config, port_devargs, cores, shared_lat_core=shared_lat_core,
        compact=compact, latency_bucket_shift=shift,
        accuracy_limit_ns=accuracy_limit_ns,
        max_frame_bytes=(mtu or DEFAULT_MTU) + ETHERNET_OVERHEAD)
    out = _header(config, layout)
    out += _eal_section(eal, has_pci, huge_pages, memory_mb, file_prefix)
    out += _port_sections(port_ids, vdev_ports(port_devargs), mtu)
    out += ['', '[defaults]', 'mempool size=%s' % mempool_size,
            '', '[global]', 'name=epa-chain-generator',
            '', '[core %d]' % layout.master_core, 'mode=master']
    lat_lines = ['accuracy limit nsec=%d' % accuracy_limit_ns]
    if shift is not None:
        lat_lines.append('latency bucket size=%d' % shift)
    out += _core_sections(config, layout, cores, lat_lines)
    return '\n'.join(out) + '\n'


# ---- render(): its checks ---------------------------------------------------

def _bucket_line_shift(config, latency_bucket_shift):
    """The `latency bucket size` to write: given, the node's, or None."""
    if latency_bucket_shift is not None:
        return latency_bucket_shift
    return config.latency_bucket_shift


def _check_flags(**flags):
    for field, value in flags.items():
        if not isinstance(value, bool):
            raise GenConfigError(field, 'must be True or False, not %r'
                                 % (value,))


def _check_sizes(latency_bucket_shift, accuracy_limit_ns, mtu, memory_mb):
    if memory_mb is not None and not (isinstance(memory_mb, int) and
                                      not isinstance(memory_mb, bool) and
                                      64 <= memory_mb <= 1048576):
        raise GenConfigError('memory_mb', 'must be a whole number of MiB '
                             '>= 64, not %r' % (memory_mb,))
    if latency_bucket_shift is not None and not (
            isinstance(latency_bucket_shift, int) and
            MIN_LATENCY_BUCKET_SHIFT <= latency_bucket_shift <=
            MAX_LATENCY_BUCKET_SHIFT):
        raise GenConfigError('latency_bucket_shift', 'must be %d..%d, not '
                             '%r' % (MIN_LATENCY_BUCKET_SHIFT,
                                     MAX_LATENCY_BUCKET_SHIFT,
                                     latency_bucket_shift))
    if not isinstance(accuracy_limit_ns, int) or accuracy_limit_ns < 1:
        raise GenConfigError('accuracy_limit_ns', 'must be a whole number '
                             'of nanoseconds >= 1')
    if mtu is not None and not (isinstance(mtu, int) and
                                68 <= mtu <= 9600):
        raise GenConfigError('mtu', 'must be 68..9600, not %r' % (mtu,))


def _check_words(**words):
    for field, value in words.items():
        if not isinstance(value, str) or not _SAFE.match(value):
            raise GenConfigError(field, 'must be one word, not %r'
                                 % (value,))


# ---- render(): its sections -------------------------------------------------

def _header(config, layout):
    return [
        '; PROX generator for %s, rendered by epa_chain.prox.gen_config.'
        % config.name,
        '; Driven over the control socket by epa_chain.prox.generator,',
        '; which reads the layout below with "echo %s".' % LAYOUT_VARIABLE,
        '',
        '[variables]',
        '%s=%s' % (LAYOUT_VARIABLE, layout.to_text()),
    ]


def _eal_section(eal, has_pci, huge_pages, memory_mb, file_prefix):
    out = ['', '[eal options]', '-n=4', 'no-output=no']
    if not has_pci:
        out.append('no-pci=yes')
    if not huge_pages:
        out.append('no-huge=yes')
    if memory_mb is not None or not huge_pages:
        out.append('-m=%d' % (memory_mb or DEFAULT_NO_HUGE_MB))
    out.append('eal=--file-prefix=%s %s' % (file_prefix, ' '.join(eal)))
    return out


def _port_sections(port_ids, vdevs, mtu):
    port_name = {port_ids['left']: 'left', port_ids['right']: 'right'}
    out = []
    for port_id in sorted(port_name):
        name = port_name[port_id]
        out += ['', '[port %d]' % port_id, 'name=%s' % name,
                'mac=hardware']
        if name in vdevs:
            # af_packet (and other vdevs) have no link state interrupt:
            # PROX aborts in rte_eth_dev_configure() if it asks for one.
            out.append('lsc=no')
        if mtu is not None:
            out.append('mtu size=%d' % mtu)
    return out


def _marks(shift=0):
    """PROX's mark positions, `shift` bytes on (an 802.1Q tag)."""
    return ['lat pos=%d' % (LAT_POS + shift),
            'accuracy pos=%d' % (ACCURACY_POS + shift),
            'packet id pos=%d' % (PACKET_ID_POS + shift),
            'signature=0x%08x' % SIGNATURE,
            'signature pos=%d' % (SIGNATURE_POS + shift)]


def _core_sections(config, layout, cores, lat_lines):
    """One [core N] section per core, its tasks in task order.

    PROX reads a core's tasks from one section. `lat_lines` are the lat
    tasks' settings (accuracy limit, bucket size).
    """
    sections = {}
    shift = layout.tag_bytes
    for direction in layout.directions:
        flow = config.flow(direction.direction)
        port = config.ports[flow.tx_port]
        # name= after task= names the task, as in the recorded capture.
        sections.setdefault(direction.gen.core, []).append(
            (direction.gen.task, [
                'task=%d' % direction.gen.task,
                'name=gen-%s' % direction.direction,
                'mode=gen',
                'tx port=%s' % flow.tx_port,
                '; 10 Mbit/s until the controller sets a speed',
                'bps=1250000',
                'pkt inline=%s' % _template(
                    flow.next_hop_mac, port.mac,
                    *ADDRESSES[direction.direction],
                    vlan=port.vlan if port.tagged else None),
                'pkt size=%d' % (TEMPLATE_SIZE + shift)] + _marks(shift)))
    # Every node has a forward flow; the reverse receiver follows it.
    lat = layout.direction('forward').lat
    receivers = (('forward', 'right'), ('reverse', 'left'))
    for offset, (direction, port) in enumerate(receivers):
        task = lat.task + offset
        sections.setdefault(lat.core, []).append((task, [
            'task=%d' % task, 'name=lat-%s' % direction, 'mode=lat',
            'rx port=%s' % port] + lat_lines + _marks(shift)))
    out = []
    for core in sorted(sections, key=list(cores).index):
        out += ['', '[core %d]' % core]
        for _task, lines in sorted(sections[core], key=lambda t: t[0]):
            out += lines
    return out


def layout_from_config(text):
    """The GeneratorLayout recorded in a .cfg written by render()."""
    prefix = LAYOUT_VARIABLE + '='
    for line in text.splitlines():
        if line.startswith(prefix):
            return GeneratorLayout.from_text(line[len(prefix):])
    raise ValueError('no %s variable: not a configuration written by '
                     'epa_chain.prox.gen_config.render' % LAYOUT_VARIABLE)


def _check_node(config):
    if not isinstance(config, node_config_module.NodeConfig):
        raise GenConfigError('node_config', 'must be a NodeConfig, not %r'
                             % type(config).__name__)
    if config.role != 'generator':
        raise GenConfigError('node_config.role', 'is %r: only the generator '
                             'role runs the PROX generator' % config.role)


def _check_cores(cores, needed, shared_lat_core=False, compact=False):
    cores = list(cores) if isinstance(cores, (list, tuple)) else cores
    if not isinstance(cores, list) or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0
            for c in cores):
        raise GenConfigError('cores', 'must be a list of CPU ids, not %r'
                             % (cores,))
    if len(set(cores)) != len(cores):
        raise GenConfigError('cores', 'CPU ids repeat in %r' % (cores,))
    if len(cores) < needed and compact:
        raise GenConfigError('cores', '%d CPUs needed (master and one '
                             'worker), got %r: give the generator flavor '
                             'more vCPUs' % (needed, cores))
    if len(cores) < needed:
        raise GenConfigError('cores', '%d CPUs needed (master, one gen core '
                             'per direction%s), got %r: give the generator '
                             'flavor more vCPUs%s'
                             % (needed, '' if shared_lat_core else
                                ', one latency core', cores,
                                ' or run every task on one worker '
                                '(compact=True)' if shared_lat_core else
                                ' or share the last gen core with the '
                                'latency tasks (shared_lat_core=True)'))
    return cores


def frame_template(dst_mac, src_mac, src_ip, dst_ip, vlan=None):
    """The gen task's `pkt inline` bytes (see _template)."""
    return _template(dst_mac, src_mac, src_ip, dst_ip, vlan=vlan)


def _template(dst_mac, src_mac, src_ip, dst_ip, vlan=None):
    """Ethernet, IPv4 and UDP headers of a 60-byte PROX frame.

    With `vlan`, an 802.1Q tag (priority 0) after the source MAC: 64
    bytes. PROX fills the checksums and zero-pads to `pkt size`.
    """
    ip_length = TEMPLATE_SIZE - 14
    udp_length = ip_length - 20
    data = []
    data += [int(b, 16) for b in dst_mac.split(':')]
    data += [int(b, 16) for b in src_mac.split(':')]
    if vlan is not None:
        data += [0x81, 0x00, (vlan >> 8) & 0x0f, vlan & 0xff]
    data += [0x08, 0x00]
    data += [0x45, 0x00, ip_length >> 8, ip_length & 0xff, 0x00, 0x01,
             0x00, 0x00, 64, 17, 0x00, 0x00]
    data += [int(b) for b in src_ip.split('.')]
    data += [int(b) for b in dst_ip.split('.')]
    source, destination = (traffic.UDP_SOURCE_PORT,
                           traffic.UDP_DESTINATION_PORT)
    data += [source >> 8, source & 0xff, destination >> 8, destination & 0xff,
             udp_length >> 8, udp_length & 0xff, 0x00, 0x00]
    return ' '.join('%02x' % b for b in data)
