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

"""The PROX generator on the local bed: drive and pace the bed's PROX.

What PROX runs (tasks, CPUs, its .cfg) is prox_setup.py; the binary is
epa_chain.prox.binary's. Here: the controller, epa_chain.prox.generator.
ProxGenerator, the Tempest plugin's, over a client inside the generator's
network namespace; the PROX process; the pace steered on a CPU the gen
task does not own; learning traffic and calibration. Latency is PROX's
own: the gen task writes its TSC into each frame, the lat task compares
it with its own on arrival.

On 2 CPUs the worker is CPU 0 (the control plane's, otherwise asleep) and
the master CPU 1 (the OVS PMD and the VNFs' forwarding busy-poll there;
PROX's master sleeps in epoll between counter refreshes): one
busy-polling thread per CPU more, not two on one, so the gen tasks keep
their pace.

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
import warnings

from epa_chain.local import prox_setup
from epa_chain.local.traffic import netns as netns_lib
from epa_chain.measurement import trial
from epa_chain.prox import binary as prox_binary
from epa_chain.prox import build
from epa_chain.prox import client as prox_client
from epa_chain.prox import gen_config
from epa_chain.prox import generator as prox_generator
from epa_chain.prox import traffic

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
START_TIMEOUT_S = 60.0
LEARN_FPS = 1000
LEARN_S = 0.2
LEARN_DRAIN_S = 1.0     # frames of the burst still in the chain
CALIBRATION_S = 1.0
#: the TSC rate the results' caveat gives bucket widths at
NOMINAL_TSC_HZ = 2.6e9

# Names that moved to prox_setup.py and epa_chain.prox.binary (issue 20),
# kept for a release: {old name: (module, new name)}.
_MOVED = {
    'find_binary': (prox_binary, 'find'),
    'built_with_hash_names': (prox_binary, 'built_with_hash_names'),
    'ProxBinaryError': (prox_binary, 'ProxBinaryError'),
    'BINARY_ENV': (build, 'BINARY_VARIABLE'),
    'SOURCE_ENV': (build, 'SOURCE_VARIABLE'),
    'setup': (prox_setup, 'setup'),
    'render': (prox_setup, 'render'),
    'Setup': (prox_setup, 'Setup'),
    'Task': (prox_setup, 'Task'),
    'ROLES': (prox_setup, 'ROLES'),
    'PROX_MB': (prox_setup, 'PROX_MB'),
    'QUEUE_SIZE': (prox_setup, 'QUEUE_SIZE'),
    'SUN_PATH_MAX': (prox_setup, 'SUN_PATH_MAX'),
    'VIRTIO_USER_PMD': (prox_setup, 'VIRTIO_USER_PMD'),
}


def __getattr__(name):
    try:
        module, new = _MOVED[name]
    except KeyError:
        raise AttributeError('module %r has no attribute %r'
                             % (__name__, name)) from None
    warnings.warn('epa_chain.local.prox_generator.%s is %s.%s now' % (
        name, module.__name__, new), DeprecationWarning, stacklevel=2)
    return getattr(module, new)


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
            stream.write(prox_setup.render(self.setup, huge_dir, file_prefix,
                                           self.netns))
        argv = [binary, '-f', path, '-o', 'cli', '-t', '-e', '-l',
                'prox.log']
        env = self._environment(binary, directory)
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
        self._wait_answer(directory, timeout_s)
        self.connect()

    def _environment(self, binary, directory):
        """PROX's environment: ours, with the shim preloaded if needed."""
        env = dict(os.environ)
        self.preload = self.setup.needs_shim and not (
            prox_binary.built_with_hash_names(binary))
        if self.preload:
            from epa_chain.local import prox_shim
            try:
                env['LD_PRELOAD'] = prox_shim.build(directory)
            except prox_shim.ShimError as exc:
                raise trial.GeneratorError(
                    prox_generator.PROX_CONTROL_FAILED, str(exc))
        return env

    def _wait_answer(self, directory, timeout_s):
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
                return
            except prox_client.ProxError:
                if time.monotonic() > deadline:
                    raise trial.GeneratorError(
                        prox_generator.PROX_CONTROL_FAILED,
                        'the PROX generator does not answer on TCP 8474 in '
                        '%s after %d s (see %s)' % (self.netns, timeout_s,
                                                    directory))
                time.sleep(0.5)

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
        caveats += _shared_cpu_caveats(
            workers, prox_setup.bucket_shift(
                plan_generator.config.latency_bucket_shift))
    return {'kind': 'prox', 'why': plan_generator.why,
            'cpus': {'master': master, 'gen_lat': list(workers)},
            'cpus_own': plan_generator.cpus_own, 'caveats': caveats}


def _shared_cpu_caveats(workers, shift):
    # the histogram's range, to two significant digits
    span_us = float('%.2g' % (prox_client.LATENCY_BUCKETS * 2 ** shift /
                              NOMINAL_TSC_HZ * 1e6))
    return [
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
        'PROX\'s histogram has %d buckets of 2^%d TSC cycles (about '
        '%d us at %.1f GHz): delays beyond it land in the last bucket, '
        'so percentiles read from the histogram above that are its '
        'upper bound, the maximum' % (
            prox_client.LATENCY_BUCKETS, shift, span_us,
            NOMINAL_TSC_HZ / 1e9)]
