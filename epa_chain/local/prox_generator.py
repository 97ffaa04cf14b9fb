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

"""The PROX generator on the local bed: one PROX on vhost-user ports.

The generator's ports are virtio-user devices on the vhost-user sockets of
OVS dpdkvhostuserclient ports, as the VNFs' are; the controller is
epa_chain.prox.generator.ProxGenerator, the Tempest plugin's, with
gen_config's frames and timestamp positions. Latency is PROX's own: the
gen task writes its TSC into each frame, the lat task compares it with its
own on arrival.

CPUs: DPDK's lcore N is CPU N (PROX passes EAL a core mask), the master
runs nothing else. Here the gen and lat tasks run on `workers`: one worker
per direction when the host has CPUs to spare (gen and lat of that
direction), else all four tasks on one worker. PROX names its gen flow
tables after the core only: a PROX built by epa_chain.prox.build has them
named per task, any other binary runs with the preload library of
prox_shim. On 2 CPUs the worker is CPU 0 (the control plane's, otherwise
asleep) and the master CPU 1 (the OVS PMD and the VNFs' forwarding
busy-poll there; PROX's master sleeps in epoll between counter
refreshes): one busy-polling thread per CPU more, not two
on one, so the gen tasks keep their pace.

A port that sends no direction (the right one of a unidirectional chain)
gets a gen task of switch-learning frames (source = destination = the
port), so that OVS learns its MAC.

PROX listens on its TCP port (-t, 8474 on every address) inside the
generator's network namespace: the UNIX socket (-u) is always
/tmp/prox.sock, which PROX VNFs use (each in a /tmp of its own, see
private_tmp). Core starts are batched (`NetnsProxClient.start`): a running
PROX core obeys `start` only at its next message check (~1.15 s), and all
tasks share a core here.
"""

import dataclasses
import os
import subprocess
import time
import typing

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import learning_frame
from epa_chain.local.traffic import netns as netns_lib
from epa_chain.measurement import trial
from epa_chain.prox import client as prox_client
from epa_chain.prox import gen_config
from epa_chain.prox import generator as prox_generator
from epa_chain.prox import traffic

# As the VNF runtime's virtio-user ports (vnf_runtime.virtio_user, which
# only the runtime imports): DPDK's PMD, AF_UNIX path bytes without NUL.
VIRTIO_USER_PMD = 'net_virtio_user'
SUN_PATH_MAX = 107
#: virtio's largest ring
QUEUE_SIZE = 1024
#: offered vs intended, either way. The AF_PACKET generator holds 2 %
#: with an exact frame schedule; a steered PROX on a CPU it does not own
#: (and a master that refreshes the counters on the PMD's busy CPU) is
#: timed from counter refreshes only.
RATE_TOLERANCE = 0.02
SHARED_RATE_TOLERANCE = 0.05
STEER_INTERVAL_MS = 50      # PROX's counter refresh: the steering's clock
MAX_BOOST = 4.0
MIN_ASKED = 0.5
STEER_GAIN = 3.0
#: below this many frames per refresh PROX's bucket (a burst of 64
#: frames of backlog) absorbs a lost time slice: no steering
STEER_MIN_FRAMES = 100
PROX_MB = 512               # EAL -m: 2 ports' mempools of 16K mbufs
START_TIMEOUT_S = 60.0
LEARN_FPS = 1000
LEARN_S = 0.2
LEARN_DRAIN_S = 1.0     # frames of the burst still in the chain
CALIBRATION_S = 1.0
ROLES = ('left', 'right')
BINARY_ENV = 'EPA_CHAIN_PROX_BINARY'
SOURCE_ENV = 'EPA_CHAIN_PROX_SOURCE'


class ProxBinaryError(ValueError):
    """No usable PROX binary from the options given."""


def find_binary(binary=None, source=None, progress=None, environ=None):
    """(path or None, how it was found): option, then environment.

    A source (tarball, git URL or directory) is built and cached by
    epa_chain.prox.build. None when neither is given.
    """
    environ = os.environ if environ is None else environ
    for value, label in ((binary, '--prox-binary'),
                         (environ.get(BINARY_ENV), BINARY_ENV)):
        if value:
            if not (os.path.isfile(value) and os.access(value, os.X_OK)):
                raise ProxBinaryError(
                    '%s %s: not an executable file; give the path of a '
                    'PROX binary, or a source with --prox-source'
                    % (label, value))
            return os.path.abspath(value), '%s %s' % (label, value)
    for value, label in ((source, '--prox-source'),
                         (environ.get(SOURCE_ENV), SOURCE_ENV)):
        if value:
            try:
                from epa_chain.prox import build
            except ImportError as exc:
                raise ProxBinaryError(
                    '%s: this epa-chain has no PROX build module (%s); give '
                    'a binary with --prox-binary' % (label, exc))
            try:
                path = build.build(value, progress=progress, option=label)
            except build.InputError as exc:
                raise ProxBinaryError(str(exc))     # names label already
            except build.BuildError as exc:
                raise ProxBinaryError('%s %s: %s' % (label, value, exc))
            return path, '%s %s (built and cached)' % (label, value)
    return None, 'no --prox-binary, --prox-source, %s or %s' % (
        BINARY_ENV, SOURCE_ENV)


def built_with_hash_names(binary):
    """Whether PROX names its gen flow tables per task (no preload).

    True for a build of epa_chain.prox.build with that source edit.
    """
    try:
        from epa_chain.prox import build
    except ImportError:
        return False
    return build.has_patch(binary, build.GEN_HASH_NAMES)


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


def _marks():
    return ('lat pos=%d' % gen_config.LAT_POS,
            'accuracy pos=%d' % gen_config.ACCURACY_POS,
            'packet id pos=%d' % gen_config.PACKET_ID_POS,
            'signature=0x%08x' % gen_config.SIGNATURE,
            'signature pos=%d' % gen_config.SIGNATURE_POS)


def setup(plan_generator, cpus,
          latency_bucket_shift=gen_config.DEFAULT_LATENCY_BUCKET_SHIFT,
          accuracy_limit_ns=gen_config.DEFAULT_ACCURACY_LIMIT_NS):
    """The Setup for a plan's generator on cpus = (master, worker, ...).

    One worker: gen tasks then lat tasks on it. Two: the left port's gen
    and lat task on the first, the right port's on the second.
    """
    config = plan_generator.config
    master, workers = cpus[0], tuple(cpus[1:])
    ports = tuple(plan_generator.port(role) for role in ROLES)
    port_id = {role: index for index, role in enumerate(ROLES)}
    gens, lats = [], []
    for role in ROLES:
        port = plan_generator.port(role)
        direction = 'forward' if role == 'left' else 'reverse'
        flow = config.flow(direction)
        if flow is not None and flow.tx_port == role:
            src, dst = gen_config.ADDRESSES[direction]
            gens.append((role, direction, 'gen-%s' % direction,
                         gen_config.frame_template(flow.next_hop_mac,
                                                   port.mac, src, dst)))
        else:
            # sends no direction, but OVS must learn its MAC
            gens.append((role, None, 'learn-%s' % role,
                         ' '.join('%02x' % byte for byte in
                                  learning_frame.frame(port.mac, role))))
        receives = 'reverse' if role == 'left' else 'forward'
        lats.append((role, receives))
    placed = []         # (core, role, kind, ...)
    if len(workers) >= 2:
        for index, role in enumerate(ROLES):
            placed.append((workers[index], 'gen', gens[index]))
            placed.append((workers[index], 'lat', lats[index]))
    else:
        placed = [(workers[0], 'gen', g) for g in gens] + [
            (workers[0], 'lat', lat) for lat in lats]
    tasks, next_task, gen_refs, lat_refs = [], {}, {}, {}
    learning = []
    for core, kind, item in placed:
        number = next_task.get(core, 0)
        next_task[core] = number + 1
        if kind == 'gen':
            role, direction, name, inline = item
            lines = ('mode=gen', 'tx port=%s' % role,
                     '; 10 Mbit/s until the controller sets a speed',
                     'bps=1250000', 'pkt inline=%s' % inline,
                     'pkt size=%d' % gen_config.TEMPLATE_SIZE) + _marks()
            learning.append((core, number))
            if direction:
                gen_refs[direction] = (gen_config.TaskRef(core, number),
                                       port_id[role])
        else:
            role, direction = item
            name = 'lat-%s' % direction
            lines = ('mode=lat', 'rx port=%s' % role,
                     'accuracy limit nsec=%d' % accuracy_limit_ns,
                     'latency bucket size=%d' % latency_bucket_shift
                     ) + _marks()
            lat_refs[direction] = (gen_config.TaskRef(core, number),
                                   port_id[role])
        tasks.append(Task(core, number, name, lines))
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
    layout = gen_config.GeneratorLayout(
        directions=tuple(directions), master_core=master,
        latency_bucket_shift=latency_bucket_shift,
        accuracy_limit_ns=accuracy_limit_ns)
    return Setup(master=master, workers=workers, tasks=tuple(tasks),
                 layout=layout, gen_tasks=tuple(learning), ports=ports)


def render(the_setup, huge_dir, file_prefix, netns):
    """The PROX .cfg (gen_config's frames and marks, vhost-user ports)."""
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
    lines = [
        '; PROX generator of the local bed, rendered by',
        '; epa_chain.local.prox_generator; driven over TCP 8474 in network',
        '; namespace %s by epa_chain.prox.generator.' % netns,
        '', '[eal options]', '-n=4', 'no-output=no', 'no-pci=yes',
        '-m=%d' % PROX_MB, 'eal=%s' % ' '.join(eal)]
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


class NetnsProxClient(prox_client.ProxClient):
    """A ProxClient on TCP inside `netns`, starting whole cores at once.

    PROX obeys `start` on a core that already runs only at the core's next
    message check (~1.15 s); with gen and lat tasks on one core,
    ProxGenerator's task-by-task starts would each wait for it. So a start
    starts the whole core (its gen tasks are at speed 0 by then) and later
    starts of tasks of a running core are no-ops until a stop.
    """

    def __init__(self, netns, *args, gen_tasks=(), **kwargs):
        super().__init__('127.0.0.1', *args, **kwargs)
        self.netns = netns
        self.gen_tasks = set(gen_tasks)
        self._running = set()

    @property
    def endpoint(self):
        return '%s:%d in netns %s' % (self.host, self.port, self.netns)

    def connect(self):
        # The socket stays in the namespace it was created in.
        return netns_lib.run_in(self.netns, super().connect)

    def start(self, cores=None, task=None):
        if cores is None:
            super().start()
            return
        todo = [core for core in cores if core not in self._running]
        if todo:
            super().start(todo)
            self._running.update(todo)

    def dp_core_stats(self, core, tasks):
        """A gen task's tx counts the frames the switch's ring refused too.

        PROX frees a frame it cannot put on the vhost-user ring (the OVS
        PMD has not read the queue: tx_pkt.c counts it in tx_fail). On a
        wire that frame would have reached the switch and been dropped
        there, so it is offered and lost, not a generator shortfall.
        """
        found = super().dp_core_stats(core, tasks)
        for key, stats in found.items():
            if key in self.gen_tasks and stats.tx_fail:
                found[key] = dataclasses.replace(
                    stats, tx=stats.tx + stats.tx_fail)
        return found

    def stop(self, cores=None, task=None):
        super().stop(cores, task)
        if cores is None:
            self._running.clear()
        elif task is None:
            self._running.difference_update(cores)


class LocalProxGenerator(prox_generator.ProxGenerator):
    """ProxGenerator over the bed's PROX (Setup), in namespace `netns`."""

    name = 'prox'
    #: PROX's counters give the calibrated rate exactly; the margin is for
    #: the CPU it shares with the control plane on small hosts.
    calibration_margin = 0.6

    def __init__(self, the_setup, netns, cpu_notes=(), **options):
        self.setup = the_setup
        self.netns = netns
        options.setdefault('rate_tolerance', SHARED_RATE_TOLERANCE if len(
            the_setup.workers) < 2 else RATE_TOLERANCE)
        super().__init__('127.0.0.1', layout=the_setup.layout, **options)
        self.client = NetnsProxClient(netns, prox_client.DEFAULT_PORT,
                                      gen_tasks=the_setup.gen_tasks)
        self.cpu_notes = tuple(cpu_notes)
        self.last_calibration = None
        self.preload = False
        self._process = None
        self._directory = None

    def describe(self):
        described = super().describe()
        described.update({
            'netns': self.netns,
            'master_cpu': self.setup.master,
            'worker_cpus': list(self.setup.workers),
            'tasks': ['core %d task %d %s' % (t.core, t.task, t.name)
                      for t in self.setup.tasks],
            'hash_name_preload': self.preload,
            'cpu_notes': list(self.cpu_notes),
        })
        if self.last_calibration:
            described['calibration'] = dict(self.last_calibration)
        return described

    # ---- the process ----------------------------------------------------

    def start(self, binary, directory, huge_dir, file_prefix, record,
              progress, timeout_s=START_TIMEOUT_S):
        """Start PROX in the namespace; wait until it answers.

        record(name, pid, argv): the bed's state, before waiting.
        """
        os.makedirs(directory, exist_ok=True)
        self._directory = directory
        path = os.path.join(directory, 'prox.cfg')
        with open(path, 'w') as stream:
            stream.write(render(self.setup, huge_dir, file_prefix,
                                self.netns))
        env = dict(os.environ)
        self.preload = self.setup.needs_shim and not built_with_hash_names(
            binary)
        if self.preload:
            from epa_chain.local import prox_shim
            try:
                env['LD_PRELOAD'] = prox_shim.build(directory)
            except prox_shim.ShimError as exc:
                raise trial.GeneratorError(
                    prox_generator.PROX_CONTROL_FAILED, str(exc))
        argv = [binary, '-f', path, '-o', 'cli', '-t', '-e', '-l',
                'prox.log']
        with open(os.path.join(directory, 'console.log'), 'ab') as log:
            self._process = subprocess.Popen(
                ['ip', 'netns', 'exec', self.netns] + argv, cwd=directory,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                start_new_session=True)
        record('generator', self._process.pid, argv)
        progress('started the PROX generator (master CPU %d, gen and lat '
                 'tasks on CPU %s%s) in %s' % (
                     self.setup.master,
                     ','.join(map(str, self.setup.workers)),
                     '; two gen tasks on one core: unique hash names by '
                     'preload' if self.preload else '',
                     self.netns))
        deadline = time.monotonic() + timeout_s
        while True:
            if self._process.poll() is not None:
                raise trial.GeneratorError(
                    prox_generator.PROX_CONTROL_FAILED,
                    'the PROX generator exited with %s before answering '
                    '(see %s/console.log and prox.log)' % (
                        self._process.returncode, directory))
            try:
                self.client.connect()
                break
            except prox_client.ProxError:
                if time.monotonic() > deadline:
                    raise trial.GeneratorError(
                        prox_generator.PROX_CONTROL_FAILED,
                        'the PROX generator does not answer on TCP 8474 in '
                        '%s after %d s (see %s)' % (self.netns, timeout_s,
                                                    directory))
                time.sleep(0.5)
        self.connect()

    def close(self):
        super().close()
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass    # unkillable (D state): down names what it leaves

    # ---- pacing on a CPU the gen task does not own ----------------------

    def refresh_interval_ms(self, spec):
        """Counters every STEER_INTERVAL_MS when the pace is steered.

        Slower trials keep ProxGenerator's interval: a 50 ms refresh holds
        too few of their frames to time them to 2 %.
        """
        if self.update_interval_ms is not None or not _steered(spec):
            return super().refresh_interval_ms(spec)
        return STEER_INTERVAL_MS

    def _start_pacing(self, spec, directions):
        """The pace steered by the counters (ProxGenerator's sending window).

        A PROX gen task paces with a token bucket that forgets what it could
        not send (handle_gen.c: "we can't keep up so just assume that we
        can"): whenever the kernel gives its CPU to another thread for
        longer than a burst lasts, that time is lost and the task sends
        less than asked. So at every counter refresh the speed asked for
        is what the rest of the window needs, given the fraction of the
        asked rate the task has just managed: the rate offered over the
        window (measured as ProxGenerator always does, from PROX's
        counters between refreshes) is the rate intended; frames go out in
        bursts when the task is back on its CPU.
        """
        # every trial starts from "keeps up": what a congested trial
        # measured would make the next one overshoot
        self._steering = {d.layout.direction: Steering(spec.load_fps)
                          for d in directions} if _steered(spec) else {}

    def _pace(self, spec, running):
        mean_bytes = spec.profile.frame_size.mean_bytes
        for d in running:
            steer = self._steering.get(d.layout.direction)
            if steer is None:
                continue
            asked = steer.next(d.snapshots, STEER_INTERVAL_MS / 1000.0)
            if asked is not None:
                self.client.rate_fps(d.layout.gen.core, d.layout.gen.task,
                                     min(asked, self._max_fps(mean_bytes)),
                                     mean_bytes)

    @staticmethod
    def _max_fps(mean_bytes):
        """The highest rate PROX's speed takes (a hair below, rounding)."""
        return 0.999 * prox_client.MAX_SPEED_PERCENT / (
            prox_client.speed_percent(1.0, mean_bytes))

    # ---- the bed's extras: learning traffic and calibration -----------

    def learn(self):
        """A short low-rate burst out of every port: OVS learns the MACs.

        The lat tasks run meanwhile: frames of the burst that cross the
        chain are read (and counted until the next trial's reset), not
        left in a receive ring for the next trial to count.
        """
        self.connect()
        c = self.client
        try:
            for core, task in self.setup.gen_tasks:
                c.speed(core, task, 0)
            c.start(list(self.setup.workers))
            for core, task in self.setup.gen_tasks:
                c.rate_fps(core, task, LEARN_FPS, 64)
            time.sleep(LEARN_S)
            for core, task in self.setup.gen_tasks:
                c.speed(core, task, 0)
            time.sleep(LEARN_DRAIN_S)
        except prox_client.ProxError as exc:
            raise trial.GeneratorError(prox_generator.PROX_CONTROL_FAILED,
                                       str(exc))

    def calibrate(self, frame_size, seconds=CALIBRATION_S):
        """Frames/s each direction's gen task sends unpaced; the least.

        PROX counts what it handed to the port: sent at full speed for
        `seconds`, the rate from two counter refreshes (PROX's TSC).
        """
        self.connect()
        if not isinstance(frame_size, trial.FrameSize):
            frame_size = trial.FrameSize.parse(frame_size)
        c = self.client
        gens = [d.gen for d in self.layout.directions]
        try:
            c.stop()
            c.update_interval(100)
            for gen in gens:
                self._configure_frames(gen, frame_size)
            for core, task in self.setup.gen_tasks:
                c.speed(core, task, 0)
            traffic.apply_flows(c, [(g.core, g.task) for g in gens],
                                traffic.plan_flows(1))
            c.reset_stats()
            c.start(list(self.setup.workers))
            for gen in gens:
                c.speed(gen.core, gen.task, prox_client.MAX_SPEED_PERCENT)
            time.sleep(0.3)
            first = self._gen_counters(gens)
            time.sleep(seconds)
            last = self._gen_counters(gens)
            for gen in gens:
                c.speed(gen.core, gen.task, 0)
        except prox_client.ProxError as exc:
            self._quiet()
            raise trial.GeneratorError(prox_generator.PROX_CONTROL_FAILED,
                                       str(exc))
        rates = {}
        for d in self.layout.directions:
            a, b = first[d.gen], last[d.gen]
            elapsed = (b.last_tsc - a.last_tsc) / float(b.hz or 1)
            if elapsed <= 0 or b.tx <= a.tx:
                raise trial.GeneratorError(
                    prox_generator.NOTHING_SENT, 'calibration: %s gen %s '
                    'sent nothing in %.1f s at full speed' % (
                        d.direction, d.gen, seconds))
            rates[d.direction] = (b.tx - a.tx) / elapsed
        fps = min(rates.values())
        self.last_calibration = {
            'frame_size': frame_size.label, 'seconds': seconds,
            'asked_speed_percent': prox_client.MAX_SPEED_PERCENT,
            'sent_fps': rates, 'fps': fps}
        return fps

    def _gen_counters(self, gens):
        found = {}
        for gen in gens:
            stats = self.client.dp_core_stats(gen.core, [gen.task])
            found[gen] = stats[(gen.core, gen.task)]
        return found


def _steered(spec):
    return spec.load_fps * STEER_INTERVAL_MS / 1000.0 >= STEER_MIN_FRAMES


class Steering:
    """The speed to ask a gen task for next, from its counter refreshes.

    Proportional to the window's running total: the rate intended plus
    STEER_GAIN times what the task is behind (or less what it is ahead)
    per refresh. A task that keeps losing a share s of its CPU settles
    behind by (1/s - 1) / STEER_GAIN refreshes' worth of frames, the lag
    that makes it ask that much more (1.7 % of a 1 s trial at s = 0.5);
    one that gets its CPU back catches up.
    """

    def __init__(self, fps):
        self.fps = fps
        self.asked = fps
        self._seen = None

    def next(self, snapshots, horizon_s):
        """The speed for the next `horizon_s`; None if no new refresh."""
        points = []
        for snapshot in snapshots:
            gen = snapshot.gen
            if not snapshot.running or gen.tx <= 0:
                continue
            if points and points[-1][0] == gen.last_tsc:
                continue
            points.append((gen.last_tsc, gen.tx, gen.hz or 1))
        if len(points) < 2 or points[-1][0] == self._seen:
            return None
        self._seen = points[-1][0]
        (tsc_0, tx_0, hz), (tsc_b, tx_b, _) = points[0], points[-1]
        # the window is ProxGenerator's: from the first refresh on
        behind = self.fps * (tsc_b - tsc_0) / float(hz) - (tx_b - tx_0)
        self.asked = min(self.fps * MAX_BOOST, max(
            self.fps * MIN_ASKED, self.fps + STEER_GAIN * behind / horizon_s))
        return self.asked


def section(plan_generator, accuracy_limit_ns=(
        gen_config.DEFAULT_ACCURACY_LIMIT_NS)):
    """The results' testbed.generator for the PROX generator."""
    master, workers = plan_generator.cpus[0], plan_generator.cpus[1:]
    caveats = [
        'latency from PROX\'s TSC stamps (gen task writes, lat task reads, '
        'one PROX); samples whose timing error exceeds the accuracy limit '
        '(%d ns) are left out of the latency figures, and each trial\'s '
        'notes say how many were used' % accuracy_limit_ns]
    if not plan_generator.cpus_own:
        caveats += [
            'one CPU (%s) runs all four gen and lat tasks in turn, in one '
            'loop: each direction gets a share of that core, so the '
            'sustained rate per direction is what that shared loop reaches '
            '(generator_capacity_fps, measured before the search; the '
            'highest load offered stays below it)'
            % ','.join(map(str, workers)),
            'that CPU also runs the control plane (this process, OVS '
            'handler threads), and the OVS PMD and the VNFs\' forwarding '
            'time-share the other CPU: a busy-polling thread off the CPU '
            'for a kernel time slice (milliseconds) leaves frames waiting '
            'in a virtio ring, so latency maximum and average include such '
            'waits, samples later than the accuracy limit are left out, '
            'and frames overflowing a ring count as lost',
            'two gen tasks on one core need unique DPDK hash table names: '
            'a PROX built by epa-chain prox build has them, any other '
            'binary runs with a preload library that adds them '
            '(epa_chain.local.prox_shim)',
            'PROX\'s histogram has 128 buckets of 2^%d TSC cycles (about '
            '200 us at 2.6 GHz): delays beyond it land in the last bucket, '
            'so percentiles read from the histogram above that are its '
            'upper bound, the maximum'
            % gen_config.DEFAULT_LATENCY_BUCKET_SHIFT]
    return {'kind': 'prox', 'why': plan_generator.why,
            'cpus': {'master': master, 'gen_lat': list(workers)},
            'cpus_own': plan_generator.cpus_own, 'caveats': caveats}
