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

"""What the bed's PROX generator runs: its tasks, CPUs and .cfg (pure).

One PROX whose two ports are virtio-user devices on the vhost-user
sockets of OVS dpdkvhostuserclient ports, as the VNFs' are, with
gen_config's frames and timestamp positions (prox_generator.py drives it).

CPUs: DPDK's lcore N is CPU N (PROX passes EAL a core mask), the master
runs nothing else. The gen and lat tasks run on `workers`: one worker per
port when the host has CPUs to spare (gen and lat of that port), else all
four tasks on one worker. PROX names its gen flow tables after the core
only: a PROX built by epa_chain.prox.build has them named per task, any
other binary runs with the preload library of prox_shim (`needs_shim`).

A port that sends no direction (the right one of a unidirectional chain)
gets a gen task of switch-learning frames (source = destination = the
port), so that OVS learns its MAC.

The histogram's bucket width is the generator node's
`latency_bucket_shift`, as the stack resolved it (chain.yaml's parameter
`generator_latency_bucket_shift`); a config without one gets no `latency
bucket size` line, so PROX's built-in applies, as in the images.
"""

import dataclasses
import typing

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import learning_frame
from epa_chain.prox import client as prox_client
from epa_chain.prox import gen_config

# As the VNF runtime's virtio-user ports (vnf_runtime.virtio_user, which
# only the runtime imports): DPDK's PMD, AF_UNIX path bytes without NUL.
VIRTIO_USER_PMD = 'net_virtio_user'
SUN_PATH_MAX = 107
#: virtio's largest ring
QUEUE_SIZE = 1024
PROX_MB = 512               # EAL -m: 2 ports' mempools of 16K mbufs
ROLES = ('left', 'right')
#: the direction each port sends (when the chain has it) and receives
SENDS = {'left': 'forward', 'right': 'reverse'}
RECEIVES = {'left': 'reverse', 'right': 'forward'}


@dataclasses.dataclass(frozen=True)
class Task:
    core: int
    task: int
    name: str
    lines: typing.Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Setup:
    """What the PROX generator runs: its tasks, layout and CPUs."""

    master: int
    workers: typing.Tuple[int, ...]
    tasks: typing.Tuple[Task, ...]
    layout: gen_config.GeneratorLayout
    gen_tasks: typing.Tuple[typing.Tuple[int, int], ...]  # learning too
    ports: typing.Tuple[typing.Any, ...]                  # plan SwitchPorts

    @property
    def needs_shim(self):
        cores = [t.core for t in self.tasks if 'mode=gen' in t.lines]
        return len(cores) != len(set(cores))


@dataclasses.dataclass(frozen=True)
class _Gen:
    """A port's gen task: a direction's frames, or learning frames."""

    role: str
    direction: typing.Optional[str]     # None: learning frames only
    name: str
    inline: str                         # the frame, hex bytes


@dataclasses.dataclass(frozen=True)
class _Lat:
    role: str
    direction: str


def _marks():
    return ('lat pos=%d' % gen_config.LAT_POS,
            'accuracy pos=%d' % gen_config.ACCURACY_POS,
            'packet id pos=%d' % gen_config.PACKET_ID_POS,
            'signature=0x%08x' % gen_config.SIGNATURE,
            'signature pos=%d' % gen_config.SIGNATURE_POS)


def setup(plan_generator, cpus,
          accuracy_limit_ns=gen_config.DEFAULT_ACCURACY_LIMIT_NS):
    """The Setup for a plan's generator on cpus = (master, worker, ...).

    One worker: gen tasks then lat tasks on it. Two: the left port's gen
    and lat task on the first, the right port's on the second.
    """
    shift = plan_generator.config.latency_bucket_shift
    master, workers = cpus[0], tuple(cpus[1:])
    gens = [_gen(plan_generator, role) for role in ROLES]
    lats = [_Lat(role, RECEIVES[role]) for role in ROLES]
    tasks, gen_refs, lat_refs = _tasks(_placed(workers, gens, lats), shift,
                                       accuracy_limit_ns)
    layout = gen_config.GeneratorLayout(
        directions=_direction_layouts(gen_refs, lat_refs),
        master_core=master, latency_bucket_shift=bucket_shift(shift),
        accuracy_limit_ns=accuracy_limit_ns)
    learning = tuple((t.core, t.task) for t in tasks if 'mode=gen' in t.lines)
    return Setup(master=master, workers=workers, tasks=tasks, layout=layout,
                 gen_tasks=learning,
                 ports=tuple(plan_generator.port(role) for role in ROLES))


def bucket_shift(config_shift):
    """The histogram's bucket width PROX runs with (log2 TSC cycles)."""
    if config_shift is None:
        return prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT
    return config_shift


def _gen(plan_generator, role):
    """What `role`'s gen task sends: its direction, or learning frames."""
    port = plan_generator.port(role)
    direction = SENDS[role]
    flow = plan_generator.config.flow(direction)
    if flow is not None and flow.tx_port == role:
        src, dst = gen_config.ADDRESSES[direction]
        return _Gen(role, direction, 'gen-%s' % direction,
                    gen_config.frame_template(flow.next_hop_mac, port.mac,
                                              src, dst))
    # sends no direction, but OVS must learn its MAC
    return _Gen(role, None, 'learn-%s' % role, ' '.join(
        '%02x' % byte for byte in learning_frame.frame(port.mac, role)))


def _placed(workers, gens, lats):
    """[(core, _Gen or _Lat)] in the order PROX numbers each core's tasks."""
    if len(workers) >= 2:
        placed = []
        for index in range(len(ROLES)):
            placed += [(workers[index], gens[index]),
                       (workers[index], lats[index])]
        return placed
    return [(workers[0], item) for item in list(gens) + list(lats)]


def _tasks(placed, shift, accuracy_limit_ns):
    """(tasks, {direction: (gen TaskRef, port)}, {direction: (lat, port)})."""
    port_id = {role: index for index, role in enumerate(ROLES)}
    tasks, next_task, gen_refs, lat_refs = [], {}, {}, {}
    for core, item in placed:
        number = next_task.get(core, 0)
        next_task[core] = number + 1
        ref = (gen_config.TaskRef(core, number), port_id[item.role])
        if isinstance(item, _Gen):
            name, lines = item.name, _gen_lines(item)
            if item.direction:
                gen_refs[item.direction] = ref
        else:
            name = 'lat-%s' % item.direction
            lines = _lat_lines(item, shift, accuracy_limit_ns)
            lat_refs[item.direction] = ref
        tasks.append(Task(core, number, name, lines))
    return tuple(tasks), gen_refs, lat_refs


def _gen_lines(gen):
    return ('mode=gen', 'tx port=%s' % gen.role,
            '; 10 Mbit/s until the controller sets a speed',
            'bps=1250000', 'pkt inline=%s' % gen.inline,
            'pkt size=%d' % gen_config.TEMPLATE_SIZE) + _marks()


def _lat_lines(lat, shift, accuracy_limit_ns):
    bucket = () if shift is None else ('latency bucket size=%d' % shift,)
    return ('mode=lat', 'rx port=%s' % lat.role,
            'accuracy limit nsec=%d' % accuracy_limit_ns) + bucket + _marks()


def _direction_layouts(gen_refs, lat_refs):
    # PROX numbers lat tasks by core, then task
    order = sorted(lat_refs, key=lambda d: (lat_refs[d][0].core,
                                            lat_refs[d][0].task))
    directions = []
    for direction in chain_directions.DIRECTIONS:
        if direction not in gen_refs:
            continue
        (gen, tx), (lat, rx) = gen_refs[direction], lat_refs[direction]
        directions.append(gen_config.DirectionLayout(
            direction=direction, gen=gen, lat=lat, tx_port=tx, rx_port=rx,
            latency_index=order.index(direction)))
    return tuple(directions)


def render(the_setup, huge_dir, file_prefix, netns):
    """The PROX .cfg (gen_config's frames and marks, vhost-user ports)."""
    lines = [
        '; PROX generator of the local bed, rendered by',
        '; epa_chain.local.prox_setup; driven over TCP 8474 in network',
        '; namespace %s by epa_chain.prox.generator.' % netns,
        '', '[eal options]', '-n=4', 'no-output=no', 'no-pci=yes',
        '-m=%d' % PROX_MB, 'eal=%s' % ' '.join(
            _eal(the_setup, huge_dir, file_prefix))]
    for index, role in enumerate(ROLES):
        lines += ['', '[port %d]' % index, 'name=%s' % role, 'mac=hardware',
                  'lsc=no', 'rx desc=%d' % QUEUE_SIZE,
                  'tx desc=%d' % QUEUE_SIZE]
    lines += ['', '[defaults]', 'mempool size=16K',
              '', '[global]', 'name=epa-chain-generator',
              '', '[core %d]' % the_setup.master, 'mode=master']
    for core in the_setup.workers:
        tasks = [t for t in the_setup.tasks if t.core == core]
        if not tasks:
            continue
        lines += ['', '[core %d]' % core]
        for task in sorted(tasks, key=lambda t: t.task):
            lines += ['task=%d' % task.task, 'name=%s' % task.name]
            lines.extend(task.lines)
    return '\n'.join(lines) + '\n'


def _eal(the_setup, huge_dir, file_prefix):
    eal = ['--file-prefix=%s' % file_prefix, '--huge-dir=%s' % huge_dir,
           '--in-memory', '--single-file-segments']
    for index, port in enumerate(the_setup.ports):
        if not port.socket or ' ' in port.socket or len(
                port.socket) > SUN_PATH_MAX:
            raise ValueError(
                'vhost-user socket %r: PROX splits eal= at spaces and '
                'AF_UNIX paths take %d bytes; use a shorter --state-root '
                'without spaces' % (port.socket, SUN_PATH_MAX))
        eal.append('--vdev=%s%d,path=%s,server=1,mac=%s,queue_size=%d' % (
            VIRTIO_USER_PMD, index, port.socket, port.mac, QUEUE_SIZE))
    return eal
