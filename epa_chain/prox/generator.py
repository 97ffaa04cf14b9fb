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

"""PROX as a `Generator`: one trial over PROX's control socket.

A trial, on the layout of epa_chain.prox.gen_config:

1. `stop all` - also clears the lat tasks' loss, order and duplicate
   tracking, which PROX only resets when a lat task stops;
2. PROX's counter refresh period (`update interval`: 1 s, a quarter of
   shorter trials), frame size (pkt_size plus the IP/UDP length fix, or
   imix), flows (random fields or ranges), speed 0 on each gen task in
   use;
3. `reset stats`, then the lat tasks start, then each gen task (sending
   nothing), then each gen task's speed is set: sending starts at once.
   After a trial that lost frames (and before the first one) the lat
   tasks start first and receive until two refreshes in a row bring no
   frame: the chain's rings were full, and a guest the host did not
   schedule for a while (TCG, a busy host) delivers what it held after
   that trial's drain had settled (live: 256 frames, one vhost ring, 5 s
   into the next trial, which read as more received than sent). Such
   frames are counted by nobody, `reset stats` again, and the trial's
   notes say how many;
   A running PROX core reads `start` and `stop` only at its next message
   check (every 3e9 TSC cycles, ~1.15 s), a gen task applies a new speed
   at its next loop: so speed, not start and stop, opens and closes the
   sending window;
4. every poll (a third of the refresh period, at most `poll_interval_s`)
   the task counters (`dp core stats`) and, when latency is measured,
   each lat task's last-interval histogram (`lat all stats`): PROX keeps
   only the last interval's histogram, so the trial's histogram is the
   sum of every interval seen once (intervals are told apart by their
   content: a poll inside the same interval sees the same snapshot). At
   the first refresh after every lat task has received frames the
   latency totals are reset (`reset lat stats`): that refresh brought the
   samples a lat task kept from the previous trial;
5. after `duration_s` each gen task's speed goes to 0; the lat tasks keep
   receiving until two counter refreshes in a row show no change (the
   frames in flight have arrived), then the final counters are read. A
   latency trial sends gen_config.ACCURACY_WINDOW_FRAMES frames longer:
   PROX times a frame only once the frame that many after it has
   arrived, so without them a trial of fewer frames would time none, and
   with them every frame of the asked duration is timed.

Offered rate: the gen task's counter between two refreshes taken while it
was sending (TSC time from PROX); trials too short for two refreshes fall
back to the host's clock between the replies to the two speed commands,
and say so in the notes. Trials whose rate misses, whose counters go
backwards or do not settle, or where nothing was sent or forwarded, raise
GeneratorError (see measurement.guards).
"""

import dataclasses
import json
import math
import time

from epa_chain.chain import directions as chain_directions
from epa_chain.measurement import guards
from epa_chain.measurement import trial
from epa_chain.prox import client as prox_client
from epa_chain.prox import gen_config
from epa_chain.prox import traffic

PROX_CONTROL_FAILED = 'the PROX control connection failed'
LAYOUT_MISMATCH = 'PROX does not run the tasks this generator drives'
UNSUPPORTED_TRIAL = 'PROX cannot generate this trial'
NOTHING_SENT = 'the generator sent nothing'
NOT_SETTLED = 'counters did not settle after the generator stopped'
RATE_OVERSHOOT = 'the generator sent faster than asked'
DEFAULT_LINK_BPS = 10e9
# How far the offered rate may miss the asked one (relative) before a
# trial is an error: a dedicated generator paces within 1 %.
RATE_TOLERANCE = 0.01
#: PROX's own counter refresh period, and the shortest one chosen for
#: short trials, which get about REFRESHES_PER_TRIAL refreshes.
DEFAULT_UPDATE_INTERVAL_MS = 1000
MIN_AUTO_UPDATE_INTERVAL_MS = 100
REFRESHES_PER_TRIAL = 4
#: Counting granularity of an offered rate: the gen task sends in bursts,
#: and each end of the counting window may fall on either side of one.
#: Negligible at line rate; at hundreds of frames/s over a second it is
#: percents (under QEMU/TCG, 506 frames/s were counted for 500 asked over
#: 0.76 s).
WINDOW_SLACK_FRAMES = 8


def rate_tolerance_for(load_fps, window_s, rate_tolerance):
    """Relative tolerance of one direction's offered rate.

    The configured tolerance, widened by WINDOW_SLACK_FRAMES over the
    window the rate was counted in.
    """
    if load_fps <= 0 or not window_s or window_s <= 0:
        return rate_tolerance
    return rate_tolerance + WINDOW_SLACK_FRAMES / (load_fps * window_s)


@dataclasses.dataclass
class _Snapshot:
    gen: prox_client.TaskStats
    lat: prox_client.TaskStats
    running: bool


@dataclasses.dataclass
class _Direction:
    """What one direction of a running trial has seen so far."""

    layout: gen_config.DirectionLayout
    snapshots: list = dataclasses.field(default_factory=list)
    commanded: float = 0.0
    started: float = 0.0
    stopped_at: float = 0.0
    stopped: bool = False
    baseline: object = None
    last_interval: object = None
    buckets: list = None
    intervals: int = 0
    out_of_order: int = 0
    duplicates: int = 0
    hz: int = 0

    def clear_latency(self):
        self.buckets = [0] * prox_client.LATENCY_BUCKETS
        self.intervals = self.out_of_order = self.duplicates = 0


class ProxGenerator(trial.Generator):
    """Drive a PROX generator (gen_config's layout) at host:port.

    layout: a gen_config.GeneratorLayout, its to_dict(), the path of the
    .cfg render() wrote or of a JSON file holding to_dict(), or None to
    ask PROX (a configuration from gen_config.render carries its layout)
    and else to look for the standard layout on cores 0-3 (bidirectional)
    or 0-2 (forward only), with gen_config's latency bucket width.
    flow_mode: 'exact' or 'power-of-two' (see traffic.plan_flows).
    update_interval_ms: make PROX refresh its counters this often in
    every trial. By default each trial sets it: PROX's 1 s, or for trials
    shorter than 4 s a quarter of the trial (at least 100 ms), so that
    the offered rate comes from PROX's own clock. The poll period follows
    it (a third of it) so that every interval's histogram is seen.
    """

    name = 'prox'

    def __init__(self, host, port=prox_client.DEFAULT_PORT, layout=None,
                 link_bps=DEFAULT_LINK_BPS, rate_tolerance=RATE_TOLERANCE,
                 flow_mode='exact', poll_interval_s=0.25,
                 drain_timeout_s=6.0,
                 connect_timeout_s=prox_client.CONNECT_TIMEOUT_S,
                 reply_timeout_s=5.0, start_timeout_s=15.0,
                 stop_timeout_s=35.0, update_interval_ms=None,
                 sleep=time.sleep, clock=time.monotonic):
        if flow_mode not in traffic.FLOW_MODES:
            raise ValueError('flow_mode must be one of %s, not %r'
                             % (', '.join(traffic.FLOW_MODES), flow_mode))
        if not float(link_bps) > 0:
            raise ValueError('link_bps must be > 0')
        if not 0 <= float(rate_tolerance) < 1:
            raise ValueError('rate_tolerance must be in [0, 1)')
        layout = _layout(layout)
        self.host = host
        self.port = int(port)
        self.layout = layout
        self._link_bps = float(link_bps)
        self.rate_tolerance = float(rate_tolerance)
        self.flow_mode = flow_mode
        self.poll_interval_s = float(poll_interval_s)
        self.update_interval_ms = None
        if update_interval_ms is not None:
            self.update_interval_ms = int(update_interval_ms)
            if self.update_interval_ms < 10:
                raise ValueError('update_interval_ms must be >= 10')
        self._poll_s = self.poll_interval_s
        self.drain_timeout_s = float(drain_timeout_s)
        self._sleep = sleep
        self._clock = clock
        self.client = prox_client.ProxClient(
            host, self.port, connect_timeout=connect_timeout_s,
            reply_timeout=reply_timeout_s, start_timeout=start_timeout_s,
            stop_timeout=stop_timeout_s)
        self._verified = False
        self._imix_tasks = set()
        self._stale_latency = False
        # whether the chain may still hold frames of an earlier trial:
        # unknown before the first one, then after every lossy or failed
        self._chain_may_hold_frames = True

    @property
    def link_bps(self):
        return self._link_bps

    @property
    def smallest_frame_bytes(self):
        """The smallest frame this PROX sends (68 on tagged ports)."""
        self.connect()
        return self.layout.smallest_frame_bytes

    def describe(self):
        """What PROX runs, for result files.

        Connects first (campaigns describe the generator before the first
        trial), so that the PROX and DPDK versions and the layout read
        from PROX are recorded; a PROX out of reach is recorded too, and
        the trials then fail with the reason.
        """
        description = super().describe()
        try:
            self.connect()
        except trial.GeneratorError as exc:
            description['connect_error'] = str(exc)
        version = self.client.prox_version
        description.update({
            'endpoint': self.client.endpoint,
            'prox_version': version.prox if version else None,
            'dpdk_version': version.dpdk if version else None,
            'layout': self.layout.to_dict() if self.layout else None,
            'flow_mode': self.flow_mode,
            'rate_tolerance': self.rate_tolerance,
            'update_interval_ms': self.update_interval_ms,
        })
        return description

    def close(self):
        if self.client.connected:
            try:
                self.client.stop()
            except prox_client.ProxError:
                pass
        self.client.close()

    # ---- connection and layout ------------------------------------------

    def connect(self):
        """Connect and check that PROX runs the layout's tasks."""
        try:
            self.client.connect()
            if not self._verified:
                if self.layout is None:
                    self.layout = self._discover_layout()
                else:
                    problem = self._layout_problem(self.layout)
                    if problem:
                        raise trial.GeneratorError(LAYOUT_MISMATCH, problem)
                self._verified = True
        except prox_client.ProxError as exc:
            raise trial.GeneratorError(PROX_CONTROL_FAILED, str(exc))
        return self.client.prox_version

    def _discover_layout(self):
        """The layout PROX's configuration carries, else a standard one."""
        try:
            text = self.client.echo(gen_config.LAYOUT_VARIABLE)
        except prox_client.ProxNoReplyError:
            text = None  # not rendered by gen_config (or an old PROX)
        if text is not None:
            try:
                layout = gen_config.GeneratorLayout.from_text(text)
            except ValueError as exc:
                raise trial.GeneratorError(LAYOUT_MISMATCH, str(exc))
            problem = self._layout_problem(layout)
            if problem:
                raise trial.GeneratorError(LAYOUT_MISMATCH, problem)
            return layout
        problems = []
        for directions in (chain_directions.DIRECTIONS, ('forward',)):
            cores = list(range(2 + len(directions)))
            candidate = gen_config.GeneratorLayout.standard(cores,
                                                            directions)
            problem = self._layout_problem(candidate)
            if not problem:
                return candidate
            problems.append('%s on cores %s: %s'
                            % ('+'.join(directions), cores, problem))
        raise trial.GeneratorError(
            LAYOUT_MISMATCH, 'no standard layout fits (%s); give the '
            'layout the runtime rendered (gen_config.layout_from_config)'
            % '; '.join(problems))

    def _layout_problem(self, layout):
        """Why PROX does not run `layout`'s tasks, or None."""
        for direction in layout.directions:
            try:
                self.client.dp_core_stats(direction.gen.core,
                                          [direction.gen.task])
                self.client.lat_stats(direction.lat.core,
                                      [direction.lat.task])
            except (prox_client.ProxCommandError,
                    prox_client.ProxNoReplyError) as exc:
                return '%s: %s' % (direction.direction, exc.message)
            try:
                self.client.lat_stats(direction.gen.core,
                                      [direction.gen.task])
            except prox_client.ProxCommandError:
                continue
            return ('%s: %s is a lat task, not a gen task'
                    % (direction.direction, direction.gen))
        return None

    # ---- one trial ------------------------------------------------------

    def run_trial(self, spec):
        self.connect()
        directions, plan, frame = self._prepare(spec)
        may_hold_frames = True
        try:
            result = self._run(spec, directions, plan, frame)
            may_hold_frames = any(
                d.rx_frames < d.tx_frames for d in result.directions)
            return result
        except prox_client.ProxTimeoutError as exc:
            # PROX, or the guest it runs in, did not run for seconds.
            # `stop` first reads the late replies (the client's drain
            # timeout); closing before they came could kill PROX (SIGPIPE).
            try:
                self.client.stop()
            except prox_client.ProxError:
                # Still silent: the next trial connects afresh.
                self.client.drop()
            raise trial.GeneratorError(guards.GENERATOR_STALLED, str(exc))
        except prox_client.ProxError as exc:
            self._quiet()
            raise trial.GeneratorError(PROX_CONTROL_FAILED, str(exc))
        except trial.GeneratorError:
            self._quiet()
            raise
        except ValueError as exc:
            self._quiet()
            raise trial.GeneratorError(UNSUPPORTED_TRIAL, str(exc))
        finally:
            self._chain_may_hold_frames = may_hold_frames

    def _prepare(self, spec):
        layout = self.layout
        try:
            directions = [_Direction(layout.direction(name))
                          for name in spec.profile.directions]
            plan = traffic.plan_flows(spec.profile.flows, self.flow_mode)
        except ValueError as exc:
            raise trial.GeneratorError(UNSUPPORTED_TRIAL, str(exc))
        frame = spec.profile.frame_size
        largest = max(size for size, _weight in frame.mix)
        smallest = min(size for size, _weight in frame.mix)
        if smallest < layout.smallest_frame_bytes:
            raise trial.GeneratorError(
                UNSUPPORTED_TRIAL, '%d-byte frames cannot hold this '
                'generator\'s headers%s and marks: its smallest frame is %d '
                'bytes; choose frame sizes from %d' % (
                    smallest, ' (with the 802.1Q tag of its trunk ports)'
                    if layout.tag_bytes else '',
                    layout.smallest_frame_bytes,
                    layout.smallest_frame_bytes))
        if largest > layout.max_frame_bytes:
            raise trial.GeneratorError(
                UNSUPPORTED_TRIAL, '%d-byte frames exceed the generator '
                'ports\' %d bytes; render the generator with a larger mtu'
                % (largest, layout.max_frame_bytes))
        percent = prox_client.speed_percent(spec.load_fps, frame.mean_bytes)
        if not 0 < percent <= prox_client.MAX_SPEED_PERCENT:
            raise trial.GeneratorError(
                UNSUPPORTED_TRIAL, '%.0f fps of %s-byte frames is PROX '
                'speed %.4g %%; PROX takes 0..%d %% (100 Gbit/s)'
                % (spec.load_fps, frame.label, percent,
                   prox_client.MAX_SPEED_PERCENT))
        if spec.duration_s <= 0:
            raise trial.GeneratorError(UNSUPPORTED_TRIAL,
                                       'trial duration must be > 0 s')
        return directions, plan, frame

    def _quiet(self):
        """Leave PROX stopped after a failed trial, if it still answers."""
        try:
            self.client.stop()
        except prox_client.ProxError:
            pass

    def refresh_interval_ms(self, spec):
        """PROX's counter refresh period for the trial `spec`."""
        if self.update_interval_ms is not None:
            return self.update_interval_ms
        quarter = spec.duration_s * 1000.0 / REFRESHES_PER_TRIAL
        return int(min(DEFAULT_UPDATE_INTERVAL_MS,
                       max(MIN_AUTO_UPDATE_INTERVAL_MS, quarter)))

    def _run(self, spec, directions, plan, frame):
        c = self.client
        c.stop()
        # Always set: PROX keeps what an earlier controller chose.
        interval = self.refresh_interval_ms(spec)
        c.update_interval(interval)
        # see every refresh interval's histogram at least once
        self._poll_s = min(self.poll_interval_s, interval / 3000.0)
        for d in directions:
            self._configure_frames(d.layout.gen, frame)
            # The gen tasks start silent: a running core obeys `start` and
            # `stop` only at its next message check (every ~1.15 s), but
            # a gen task applies a new speed at its next loop.
            c.speed(d.layout.gen.core, d.layout.gen.task, 0)
        traffic.apply_flows(
            c, [(d.layout.gen.core, d.layout.gen.task) for d in directions],
            plan, shift=self.layout.tag_bytes)
        c.reset_stats()
        lat_tasks = []
        for d in directions:
            if d.layout.lat not in lat_tasks:
                lat_tasks.append(d.layout.lat)
        late = None
        if self._chain_may_hold_frames:
            for task in lat_tasks:
                c.start([task.core], task.task)
            late = self._receive_late_frames(directions)
            if any(late):
                c.reset_stats()
        if spec.measure_latency:
            for d in directions:
                d.baseline = self._histogram(d).identity()
                d.clear_latency()
        self._stale_latency = spec.measure_latency
        watch = guards.CounterWatch('PROX')
        if late is None:
            for task in lat_tasks:
                c.start([task.core], task.task)
        for d in directions:
            c.start([d.layout.gen.core], d.layout.gen.task)
        started_at = time.time()
        for d in directions:
            # PROX cannot send at this rate before it was asked to
            d.commanded = self._clock()
            c.rate_fps(d.layout.gen.core, d.layout.gen.task, spec.load_fps,
                       frame.mean_bytes)
            # PROX has run the command once its barrier reply is here
            d.started = self._clock()
        self._send_for(spec, directions, watch)
        self._drain(spec, directions, watch)
        return self._result(spec, directions, plan, frame, started_at,
                            late)

    def _receive_late_frames(self, directions):
        """Frames of earlier trials each direction's lat task received.

        The lat tasks run, the gen tasks do not: receive until two
        counter refreshes in a row show no new frame, at most
        drain_timeout_s.
        """
        def read():
            stats = self._task_stats(d.layout.lat for d in directions)
            return [stats[(d.layout.lat.core, d.layout.lat.task)]
                    for d in directions]

        settled = self._until_settled(
            read, lambda before, now: now.last_tsc > before.last_tsc,
            lambda before, now: now.rx == before.rx,
            lambda current: 'frames of an earlier trial still arrived '
            '%.1f s before this one (%s); a loop in the chain, or PROX not '
            'refreshing its counters (start it with -o cli)' % (
                self.drain_timeout_s, '; '.join(
                    '%s rx %d' % (d.layout.direction, stats.rx)
                    for d, stats in zip(directions, current))))
        return [stats.rx for stats in settled]

    def _configure_frames(self, gen, frame):
        c, key = self.client, (gen.core, gen.task)
        limit = self.layout.max_frame_bytes
        if frame.imix is not None:
            c.imix(gen.core, gen.task, traffic.imix_sequence(frame.imix),
                   max_frame_bytes=limit)
            self._imix_tasks.add(key)
            return
        if key in self._imix_tasks:
            # A single-size imix replaces the IMIX templates when the task
            # next runs; pkt_size alone would be overridden by it.
            c.imix(gen.core, gen.task, [frame.size], max_frame_bytes=limit)
            self._imix_tasks.discard(key)
        c.frame_size(gen.core, gen.task, frame.size, max_frame_bytes=limit)

    @staticmethod
    def sending_s(spec):
        """How long the gen tasks send in the trial `spec`."""
        if not spec.measure_latency:
            return spec.duration_s
        return spec.duration_s + (gen_config.ACCURACY_WINDOW_FRAMES /
                                  float(spec.load_fps))

    def _send_for(self, spec, directions, watch):
        self._start_pacing(spec, directions)
        running = list(directions)
        sending_s = self.sending_s(spec)
        while running:
            now = self._clock()
            for d in list(running):
                if now >= d.started + sending_s:
                    # speed 0 stops the sending at once; the task itself
                    # runs on until the next trial's `stop all`
                    self.client.speed(d.layout.gen.core, d.layout.gen.task,
                                      0)
                    d.stopped_at = self._clock()
                    d.stopped = True
                    running.remove(d)
            if not running:
                break
            self._poll(spec, directions, watch, running=True)
            self._pace(spec, running)
            due = min(d.started + sending_s for d in running)
            pause = min(self._poll_s, due - self._clock())
            if pause > 0:
                self._sleep(pause)

    def _start_pacing(self, spec, directions):
        """Hook: a trial's sending window opens (PROX paces itself)."""

    def _pace(self, spec, running):
        """Hook: after each counter poll while `running` directions send."""

    def _drain(self, spec, directions, watch):
        self._until_settled(
            lambda: self._poll(spec, directions, watch, running=False),
            _refreshed, _unchanged,
            lambda current: '%.1f s after the gen tasks stopped: %s; '
            'frames still arriving (a loop in the chain?) or PROX not '
            'refreshing its counters (start it with -o cli)' % (
                self.drain_timeout_s, '; '.join(
                    '%s tx %d rx %d' % (d.layout.direction, s.gen.tx,
                                        s.lat.rx_dp)
                    for d, s in zip(directions, current))))

    def _until_settled(self, read, refreshed, unchanged, problem):
        """Read until two refreshes in a row show no change; the last read.

        `read()` gives one snapshot per direction, `refreshed` and
        `unchanged` compare two of a direction; past drain_timeout_s the
        trial fails NOT_SETTLED with `problem(last read)`.
        """
        deadline = self._clock() + self.drain_timeout_s
        previous = None
        while True:
            current = read()
            pairs = list(zip(previous or (), current))
            if previous is not None and all(
                    refreshed(*pair) and unchanged(*pair) for pair in pairs):
                return current
            if previous is None or all(refreshed(*pair) for pair in pairs):
                previous = current
            if self._clock() >= deadline:
                raise trial.GeneratorError(NOT_SETTLED, problem(current))
            self._sleep(self._poll_s)

    def _task_stats(self, refs):
        """{(core, task): TaskStats} of the task refs, one command a core."""
        wanted = {}
        for ref in refs:
            tasks = wanted.setdefault(ref.core, [])
            if ref.task not in tasks:
                tasks.append(ref.task)
        stats = {}
        for core, tasks in wanted.items():
            stats.update(self.client.dp_core_stats(core, tasks))
        return stats

    def _poll(self, spec, directions, watch, running):
        """Read every direction's counters (one command per core)."""
        stats = self._task_stats(ref for d in directions
                                 for ref in (d.layout.gen, d.layout.lat))
        snapshots = []
        for d in directions:
            gen = stats[(d.layout.gen.core, d.layout.gen.task)]
            lat = stats[(d.layout.lat.core, d.layout.lat.task)]
            name = d.layout.direction
            for label, ref, value in (
                    ('gen %s tx' % d.layout.gen, gen, gen.tx),
                    ('lat %s rx' % d.layout.lat, lat, lat.rx),
                    ('lat %s rx_non_dp' % d.layout.lat, lat, lat.rx_non_dp),
                    ('gen %s last_tsc' % d.layout.gen, gen, gen.last_tsc),
                    ('lat %s last_tsc' % d.layout.lat, lat, lat.last_tsc)):
                watch.update('%s %s' % (name, label), value)
            snapshot = _Snapshot(gen, lat, running and not d.stopped)
            d.snapshots.append(snapshot)
            d.hz = gen.hz
            snapshots.append(snapshot)
            if spec.measure_latency:
                self._collect_latency(d)
        if self._stale_latency and all(s.lat.rx for s in snapshots):
            self._drop_stale_latency(directions)
        return snapshots

    def _drop_stale_latency(self, directions):
        """Forget the latency samples PROX kept from before this trial.

        A lat task hands its samples over (double buffer) only when it
        receives frames after a counter refresh asked for them: the
        samples since the last refresh of the previous trial wait in it
        and reach the totals at the first refresh after frames arrive
        again - this one, as every lat task has received frames. Samples
        of this trial reach the totals from the next refresh on.
        """
        self.client.reset_latency_stats()
        self._stale_latency = False
        for d in directions:
            d.clear_latency()

    def _histogram(self, d):
        lat = d.layout.lat
        return self.client.lat_all_stats(lat.core, lat.task,
                                         self.layout.latency_bucket_shift)

    def _collect_latency(self, d):
        histogram = self._histogram(d)
        identity = histogram.identity()
        if identity in (d.baseline, d.last_interval):
            return
        d.last_interval = identity
        d.intervals += 1
        for index, count in enumerate(histogram.buckets):
            d.buckets[index] += count
        d.out_of_order += histogram.stats.mis_ordered
        d.duplicates += histogram.stats.duplicate
        d.hz = histogram.stats.hz

    # ---- results ----------------------------------------------------------

    def _result(self, spec, directions, plan, frame, started_at, late):
        notes = self._trial_notes(spec, plan, frame)
        if late and any(late):
            notes.append(
                'frames of an earlier trial arrived before this one (%s); '
                'received by the lat tasks before the counters were reset, '
                'not counted' % ', '.join(
                    '%s %d' % (d.layout.direction, count)
                    for d, count in zip(directions, late)))
        results, durations, tolerances = [], [], []
        for d in directions:
            result, duration, tolerance = self._direction_result(spec, d,
                                                                 notes)
            results.append(result)
            durations.append(duration)
            tolerances.append(tolerance)
        result = trial.TrialResult(spec=spec, directions=results,
                                   started_at=started_at,
                                   duration_s=max(durations), notes=notes)
        guards.check_trial(result, max(tolerances))
        return result

    def _trial_notes(self, spec, plan, frame):
        """What the trial ran on and how, for its result's notes."""
        notes = ['PROX %s (DPDK %s) at %s' % (
            self.client.prox_version.prox, self.client.prox_version.dpdk,
            self.client.endpoint), plan.description]
        if frame.imix is not None:
            notes.append('IMIX cycle: %s' % ','.join(
                map(str, traffic.imix_sequence(frame.imix))))
        if spec.measure_latency:
            notes.append(
                'latency: sent %.3g s longer than the %g s asked (%d '
                'frames): PROX times a frame once the frame %d after it '
                'has arrived (its accuracy window)' % (
                    self.sending_s(spec) - spec.duration_s, spec.duration_s,
                    gen_config.ACCURACY_WINDOW_FRAMES,
                    gen_config.ACCURACY_WINDOW_FRAMES))
        return notes

    def _direction_result(self, spec, d, notes):
        """One direction's outcome from its final counters.

        (DirectionResult, seconds sending, rate tolerance); adds to `notes`.
        """
        final = d.snapshots[-1]
        tx, rx = final.gen.tx_dp, final.lat.rx_dp
        name = d.layout.direction
        if tx <= 0:
            raise trial.GeneratorError(
                NOTHING_SENT, '%s: gen %s sent no frame; is its port up '
                '(port_stats) and its speed > 0?' % (name, d.layout.gen))
        offered, method, window_s = self._offered_fps(d, tx)
        if offered <= 0:
            raise trial.GeneratorError(
                guards.RATE_SHORTFALL, '%s: gen %s sent nothing between two '
                'counter refreshes (%s)' % (name, d.layout.gen, method))
        notes.append('%s: offered rate from %s' % (name, method))
        tolerance = rate_tolerance_for(spec.load_fps, window_s,
                                       self.rate_tolerance)
        if tolerance > self.rate_tolerance * 1.01:
            notes.append('%s: rate tolerance %.2g %% (%.2g %% and %d frames '
                         'of counting granularity over %.2f s)'
                         % (name, tolerance * 100, self.rate_tolerance * 100,
                            WINDOW_SLACK_FRAMES, window_s))
        if offered > spec.load_fps * (1.0 + tolerance):
            offered, tolerance = self._whole_trial_rate(
                spec, d, tx, name, (offered, method), notes)
        latency = None
        if spec.measure_latency:
            latency, note = self._latency(d)
            notes.append('%s: %s' % (name, note))
        return trial.DirectionResult(
            direction=name, intended_fps=spec.load_fps, offered_fps=offered,
            achieved_fps=offered * rx / tx, tx_frames=tx, rx_frames=rx,
            latency=latency), tx / offered, tolerance

    def _whole_trial_rate(self, spec, d, final_tx, name, window, notes):
        """(offered fps, tolerance) when a counting window overshot.

        A generator that lost the CPU catches up on its rate limiter's
        backlog in a burst (seen under QEMU/TCG: 1,141 frames/s counted
        over 0.76 s for 1,000 asked), which a short window can hold; the
        whole sending period cannot. That period is timed between the
        replies to the speed commands; a loaded guest can answer the
        first late, so the error is judged on the longest period the gen
        task could have sent in, from the moment it was asked to
        (seen: 428 fps between the replies for 365 asked, 1.29 s).
        Wrong speed units overshoot over both: RATE_OVERSHOOT.
        """
        seconds = d.stopped_at - d.started
        longest = d.stopped_at - d.commanded
        whole = final_tx / seconds if seconds > 0 else float('inf')
        least = final_tx / longest if longest > 0 else float('inf')
        tolerance = rate_tolerance_for(spec.load_fps, longest,
                                       self.rate_tolerance)
        if least > spec.load_fps * (1.0 + tolerance):
            raise trial.GeneratorError(
                RATE_OVERSHOOT, '%s: offered %.0f fps of %.0f intended (%s; '
                '%.0f over the whole %.2f s by the host clock, at least '
                '%.0f over the %.2f s since it was asked to send); PROX '
                'speed units or counters disagree with this client'
                % (name, window[0], spec.load_fps, window[1], whole,
                   seconds, least, longest))
        notes.append('%s: %.0f fps over %s was a catch-up burst; offered '
                     'rate from the host clock over the whole %.2f s sent'
                     % (name, window[0], window[1], seconds))
        if whole > spec.load_fps * (1.0 + tolerance):
            notes.append('%s: %.0f fps between the replies, %.0f over the '
                         '%.2f s since the gen task was asked to send: '
                         'PROX answered up to %.2f s late, so the asked '
                         'rate is within what the counters show'
                         % (name, whole, least, longest, longest - seconds))
            return max(least, min(whole, spec.load_fps)), tolerance
        return whole, tolerance

    def _offered_fps(self, d, final_tx):
        """(frames/s while sending, how it was timed, the window in s).

        From two counter refreshes inside the sending period, else from
        the host clock.
        """
        points = []
        for snapshot in d.snapshots:
            gen = snapshot.gen
            if not snapshot.running or not 0 < gen.tx < final_tx:
                continue
            if points and points[-1][0] == gen.last_tsc:
                continue
            points.append((gen.last_tsc, gen.tx, gen.hz))
        if len(points) >= 2:
            (tsc_a, tx_a, hz), (tsc_b, tx_b) = points[0], points[-1][:2]
            seconds = (tsc_b - tsc_a) / hz
            return ((tx_b - tx_a) / seconds,
                    '%d counter refreshes over %.2f s'
                    % (len(points), seconds), seconds)
        seconds = d.stopped_at - d.started
        if seconds <= 0:
            raise trial.GeneratorError(UNSUPPORTED_TRIAL,
                                       'the trial was too short to time')
        return (final_tx / seconds,
                'the host clock over %.3f s, between the replies to the '
                'speed commands that opened and closed the window (trial '
                'too short for two counter refreshes)' % seconds, seconds)

    def _latency(self, d):
        index = d.layout.latency_index
        paths = ['latency(%d).tot.%s' % (index, name)
                 for name in ('min', 'max', 'avg', 'used', 'total')]
        low, high, avg, used, total = self.client.stats(paths,
                                                        allow_no_value=True)
        if not used:
            return None, ('no latency: none of the %s frames the lat task '
                          'saw was timed within the accuracy limit (%d ns)'
                          % (total or 0, self.layout.accuracy_limit_ns))
        width = prox_client.bucket_width_ns(self.layout.latency_bucket_shift,
                                            d.hz)
        max_ns = high * 1000.0
        histogram = []
        for index, count in enumerate(d.buckets):
            if not count:
                continue
            lower, upper = index * width, (index + 1) * width
            if index == prox_client.LATENCY_BUCKETS - 1:
                # The overflow bucket: every delay beyond the histogram.
                upper = math.inf
            histogram.append((lower, upper, count))
        in_histogram = sum(d.buckets)
        record = trial.LatencyRecord(
            min_ns=low * 1000.0, avg_ns=avg * 1000.0, max_ns=max_ns,
            histogram=histogram, out_of_order=d.out_of_order,
            duplicates=d.duplicates)
        note = ('latency: %d of %d timed frames within the %d ns accuracy '
                'limit; histogram of %d intervals holds %d of them '
                '(%.2f %%), buckets %.1f ns wide' % (
                    used, total or used, self.layout.accuracy_limit_ns,
                    d.intervals, in_histogram, 100.0 * in_histogram / used,
                    width))
        return record, note


def _layout(layout):
    if layout is None or isinstance(layout, gen_config.GeneratorLayout):
        return layout
    if isinstance(layout, dict):
        return gen_config.GeneratorLayout.from_dict(layout)
    if isinstance(layout, str):
        try:
            with open(layout) as stream:
                text = stream.read()
        except OSError as exc:
            raise ValueError('layout file %s: %s' % (layout, exc))
        if gen_config.LAYOUT_VARIABLE + '=' in text:
            return gen_config.layout_from_config(text)
        try:
            return gen_config.GeneratorLayout.from_dict(json.loads(text))
        except ValueError as exc:
            raise ValueError('layout file %s: neither a configuration '
                             'rendered by gen_config nor a layout in JSON '
                             '(%s)' % (layout, exc))
    raise ValueError('layout must be a GeneratorLayout, its dict or a file '
                     'path, not %r' % type(layout).__name__)


def _refreshed(before, after):
    return (after.gen.last_tsc > before.gen.last_tsc and
            after.lat.last_tsc > before.lat.last_tsc)


def _unchanged(before, after):
    return (after.gen.tx == before.gen.tx and
            after.lat.rx == before.lat.rx)
