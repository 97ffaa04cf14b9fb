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

"""ProxGenerator.run_trial against a scripted PROX.

The scripted PROX answers with the recording's bytes (#n are entries of
fixtures/prox/prox-control-transcript.json) where the recording has them:
phase 1 (speed 0.2 %, 128-byte frames, no loss) and phase 2 (speed 10 %,
about 50 % loss and a generator that reached only half its rate). The
recording has one counter refresh per phase while the generator ran and
one after it stopped; `refresh()` makes the next refresh from it by
adding one update interval (2.6e9 TSC cycles) and the rate the recording's
port_stats showed for that phase (#36: 16892/s; #68, #72: 450354/s).
"""

import dataclasses
import json
import math
import os
import shutil
import tempfile
import time
import types

import testtools

from epa_chain.chain import wire
from epa_chain.measurement import guards
from epa_chain.measurement import latency as measurement_latency
from epa_chain.measurement import trial
from epa_chain.prox import client as prox_client
from epa_chain.prox import gen_config
from epa_chain.prox import generator as prox_generator
from epa_chain.tests.unit import prox_replay

REPLAY = prox_replay.Transcript()
HZ = 2600000000
LAYOUT = gen_config.GeneratorLayout.recorded_capture()
SILENT = ('stop', 'start', 'reset stats', 'pkt_size', 'set value', 'speed',
          'set random', 'set range', 'reset randoms all', 'reset ranges all',
          'imix', 'update interval', 'reset lat stats')
TOT_PATHS = ('stats latency(0).tot.min,latency(0).tot.max,'
             'latency(0).tot.avg,latency(0).tot.used,latency(0).tot.total')


def recorded(seq):
    return REPLAY.entry(seq)['reply']


def refresh(reply, tx_delta, rx_delta, intervals=1):
    """The dp core stats reply one refresh later."""
    gen, lat = reply.splitlines()
    gen, lat = gen.split(','), lat.split(',')
    ticks = intervals * HZ
    gen[1] = str(int(gen[1]) + tx_delta)
    lat[0] = str(int(lat[0]) + rx_delta)
    lat[4] = str(int(lat[4]) + rx_delta)
    gen[6] = str(int(gen[6]) + ticks)
    lat[6] = str(int(lat[6]) + ticks)
    return ','.join(gen) + '\n' + ','.join(lat) + '\n'


def with_counts(reply, tx, rx):
    gen, lat = reply.splitlines()
    gen, lat = gen.split(','), lat.split(',')
    gen[1], lat[0], lat[4] = str(tx), str(rx), str(rx)
    return ','.join(gen) + '\n' + ','.join(lat) + '\n'


# Phase 1: 0.2 % (16891.9 frames/s of 128 bytes), no loss.
PHASE1 = {
    'idle': recorded(7),
    'running': [recorded(40), refresh(recorded(40), 16892, 16892)],
    'stopped': [recorded(54), refresh(recorded(54), 0, 0)],
    'histogram': {'idle': recorded(9), 'running': recorded(42)},
    # latency(0).tot: min and max of #41 (since reset), avg of #41, every
    # bucket sample of #42 used, every received frame timed
    'tot': '4,852,4,%d,194906\n' % sum(
        int(line.rsplit(' ', 1)[1])
        for line in recorded(42).splitlines()[1:]),
}
# Phase 2: speed 10 % asked for 844595 frames/s; PROX sent 450354/s.
PHASE2 = {
    'idle': recorded(7),
    # #68 (port 0 tx, port 1 rx: the gen and lat tasks' only ports) and #72
    'running': [with_counts(recorded(72).replace('9794825075412',
                                                 '9792223885015'),
                            2544650, 1272336),
                recorded(72)],
    'stopped': [recorded(86), refresh(recorded(86), 0, 0)],
    'histogram': {'idle': recorded(9), 'running': recorded(74)},
    'tot': '3920,4980,4485,351,2582375\n',
}


class ScriptedProx:
    """A PROX whose counters follow a phase script as commands arrive."""

    def __init__(self, phase, layout_text=None, late=(0,)):
        self.phase = phase
        self.layout_text = layout_text
        # what the lat task received, poll by poll, while it ran before
        # the gen task: frames an earlier trial left in the chain
        self.late = late
        self.lat_started = False
        self.state = 'idle'
        self.served = {}
        self.commands = []
        # Until `reset lat stats`, the first interval with frames shows
        # what the lat task kept from before the trial (here the idle
        # histogram): PROX hands samples over only when frames arrive.
        self.stale_latency = True
        self.gen_started = False

    def _late_frames(self):
        """The lat task's counters, one refresh later at every poll."""
        index = self.served.get('late', 0)
        self.served['late'] = index + 1
        rx = self.late[min(index, len(self.late) - 1)]
        lat = recorded(7).splitlines()[1].split(',')
        lat[0] = lat[4] = str(rx)
        lat[6] = str(int(lat[6]) + (index + 1) * HZ)
        return ','.join(lat) + '\n'

    def _next(self, key, replies):
        index = self.served.get(key, 0)
        self.served[key] = index + 1
        return replies[min(index, len(replies) - 1)]

    def __call__(self, line):
        if line == 'version':
            return None  # the recorded version reply
        self.commands.append(line)
        self._track(line)
        if line == 'dp core stats 1 1' and self.lat_started:
            return prox_replay.Reply.lines(self._late_frames())
        if line.startswith(SILENT):
            return prox_replay.NO_REPLY
        return self._reply(line)

    def _track(self, line):
        """The tasks' state after a command that starts or stops one."""
        if line == 'stop all':
            self.state, self.served = 'idle', {}
            self.stale_latency = True
            self.gen_started = self.lat_started = False
        if line == 'start 1 1':
            self.lat_started = True
        if line == 'reset lat stats':
            self.stale_latency = False
        # The gen task starts silent; its speed opens and closes the
        # sending window (the recording used `stop 1 0`).
        if line == 'start 1 0':
            self.gen_started = True
        elif line.startswith('speed 1 0 ') and self.gen_started:
            if float(line.split()[-1]) > 0:
                self.state = 'running'
            elif self.state == 'running':
                self.state = 'stopped'

    def _reply(self, line):
        """The reply of the phase the tasks are in, or a recorded one."""
        if line == 'echo $epa_chain_layout':
            # the recorded gen.cfg has no such variable: PROX answers
            # nothing, like for any variable it does not know
            if self.layout_text is None:
                return prox_replay.NO_REPLY
            return prox_replay.Reply.lines(self.layout_text + '\n')
        if line == 'dp core stats 1 0,1':
            replies = self.phase[self.state]
            if self.state == 'idle':
                replies = [replies]
            return prox_replay.Reply.lines(self._next(self.state, replies))
        if line == 'lat all stats 1 1':
            histograms = self.phase['histogram']
            return prox_replay.Reply.lines(
                histograms['idle' if self.state == 'idle' or
                           self.stale_latency else 'running'])
        if line == TOT_PATHS:
            return prox_replay.Reply.lines(self.phase['tot'])
        return self._recorded(line)

    @staticmethod
    def _recorded(line):
        """The recording's reply to a stats query; None: the default."""
        # the layout check
        if line in ('dp core stats 1 0', 'dp core stats 1 1'):
            task = int(line[-1])
            return prox_replay.Reply.lines(
                recorded(7).splitlines()[task] + '\n')
        if line == 'lat stats 1 1':
            return prox_replay.Reply.lines(recorded(8))
        if line == 'lat stats 1 0':
            return prox_replay.Reply.lines(recorded(13))
        words = line.split()
        if line.startswith(('lat stats ', 'dp core stats ')) and (
                words[-2] != '1'):
            # like #14: the recorded generator has no such core
            return prox_replay.Reply.lines(''.join(
                'error: invalid core %s, task %s\n' % (words[-2], task)
                for task in words[-1].split(',')))
        return None


def spec(load_fps, frame=128, flows=16, duration=0.2, latency=True,
         directions=('forward',)):
    size = trial.FrameSize.parse(str(frame))
    return trial.TrialSpec(
        profile=trial.TrafficProfile(size, flows, tuple(directions)),
        load_fps=load_fps, duration_s=duration, measure_latency=latency)


class GeneratorTestCase(testtools.TestCase):

    def generator(self, responder, **options):
        server = prox_replay.ReplayServer(responder, REPLAY.version_reply)
        server.__enter__()
        self.addCleanup(server.__exit__, None, None, None)
        settings = {'layout': LAYOUT, 'poll_interval_s': 0.05,
                    'drain_timeout_s': 1.0, 'reply_timeout_s': 2.0}
        settings.update(options)
        generator = prox_generator.ProxGenerator('127.0.0.1', server.port,
                                                 **settings)
        self.addCleanup(generator.close)
        return generator, server


# The recording's `speed 1 0 0.2` and `speed 1 0 10` at 128-byte frames,
# as frames/s (PROX's 1 % is 12.5e6 bytes/s on the wire).
PHASE1_FPS = 0.2 * prox_client.SPEED_BYTES_PER_PERCENT / wire.wire_bytes(128)
PHASE2_FPS = 10 * prox_client.SPEED_BYTES_PER_PERCENT / wire.wire_bytes(128)


class TestRecordedPhases(GeneratorTestCase):

    def test_lossless_trial(self):
        prox = ScriptedProx(PHASE1)
        generator, server = self.generator(prox)
        result = generator.run_trial(spec(PHASE1_FPS))
        self.assertEqual([], server.unexpected)
        (forward,) = result.directions
        self.assertEqual(('forward', 194906, 194906),
                         (forward.direction, forward.tx_frames,
                          forward.rx_frames))
        self.assertEqual(0.0, result.loss_ratio)
        # the rate between two refreshes: 16892 frames in 2.6e9 cycles
        self.assertAlmostEqual(16892.0, forward.offered_fps, places=3)
        self.assertAlmostEqual(forward.offered_fps, forward.achieved_fps)
        self.assertAlmostEqual(194906 / 16892.0, result.duration_s)
        # the recording's phase 1 set-up, in the client's order
        configuration = [c for c in prox.commands
                         if c.startswith(('pkt_size', 'set value', 'speed'))]
        self.assertEqual(['pkt_size 1 0 124', 'set value 1 0 16 110 2',
                          'set value 1 0 38 90 2', 'speed 1 0 0',
                          'speed 1 0 0.2', 'speed 1 0 0'], configuration)
        self.assertEqual(['reset randoms all', 'reset ranges all',
                          'set random 1 0 34 00000100000000XX 2',
                          'set random 1 0 36 00001000000000XX 2'],
                         [c for c in prox.commands if 'random' in c or
                          'ranges' in c])
        # lat task first, then the gen task, silent until its speed is
        # set; live PROX obeys start/stop on a running core only every
        # ~1.15 s, a speed at once: speed 0 ends the sending
        order = [c for c in prox.commands
                 if c.startswith(('start', 'stop', 'speed'))]
        self.assertEqual(['stop all', 'speed 1 0 0', 'start 1 1',
                          'start 1 0', 'speed 1 0 0.2', 'speed 1 0 0'],
                         order)
        self.assertLess(prox.commands.index('reset stats'),
                        prox.commands.index('start 1 1'))
        self.assertIn('16 flows requested, 16 generated', '\n'.join(
            result.notes))

    def test_latency_from_the_recorded_histogram(self):
        generator, server = self.generator(ScriptedProx(PHASE1))
        latency = generator.run_trial(spec(PHASE1_FPS)).directions[0].latency
        self.assertEqual((4000.0, 4000.0, 852000.0),
                         (latency.min_ns, latency.avg_ns, latency.max_ns))
        width = 2 ** 11 * 1e9 / HZ
        histogram = {round(low / width): count
                     for low, high, count in latency.histogram}
        # #42 counted once, though every poll and the drain saw it again
        self.assertEqual(12932, histogram[5])
        self.assertEqual(3616, histogram[6])
        self.assertEqual(7, histogram[127])
        low, high, count = latency.histogram[-1]
        # The overflow bucket is open-ended: the summary bounds what fell
        # in it by its lower edge and the maximum.
        self.assertEqual((127 * width, math.inf), (low, high))
        self.assertEqual((0, 0), (latency.out_of_order, latency.duplicates))
        summary = measurement_latency.summarize([latency])
        self.assertEqual(852000.0, summary['percentiles_ns']['99.99'])
        self.assertEqual({'99.99': 127 * width},
                         summary['percentiles_beyond_ns'])
        self.assertLess(summary['percentiles_ns']['99.9'], 127 * width)

    def test_a_latency_trial_sends_the_accuracy_window_longer(self):
        # PROX times frame N once frame N + 8192 has arrived: a 0.2 s trial
        # at PHASE1_FPS would time none of its frames without the window.
        window_s = gen_config.ACCURACY_WINDOW_FRAMES / PHASE1_FPS
        self.assertGreater(window_s, 0.2)
        generator, server = self.generator(ScriptedProx(PHASE1))
        self.assertEqual(0.2, generator.sending_s(spec(PHASE1_FPS,
                                                       latency=False)))
        self.assertAlmostEqual(0.2 + window_s,
                               generator.sending_s(spec(PHASE1_FPS)))
        started = time.monotonic()
        result = generator.run_trial(spec(PHASE1_FPS))
        self.assertGreater(time.monotonic() - started, 0.2 + window_s)
        self.assertIn('latency: sent %.3g s longer than the 0.2 s asked '
                      '(8192 frames)' % window_s, ' '.join(result.notes))

    def test_latency_kept_from_before_the_trial_is_dropped(self):
        # Live PROX: a lat task hands its samples over only when frames
        # arrive after a refresh asked for them, so the tail of the
        # previous trial (here #74's 351 overflow samples of the 10 %
        # phase) reached the next trial's first interval and totals.
        phase = dict(PHASE1)
        phase['histogram'] = {'idle': recorded(42), 'running': recorded(42)}
        prox = ScriptedProx(phase)
        stale = recorded(74)
        original = prox.__call__

        def responder(line):
            if line == 'lat all stats 1 1' and prox.state != 'idle' and (
                    prox.stale_latency):
                prox.commands.append(line)
                return prox_replay.Reply.lines(stale)
            return original(line)
        generator, server = self.generator(responder)
        # the idle histogram is #42 too: a baseline identical to the
        # trial's interval would hide it, so make the baseline differ
        phase['histogram']['idle'] = recorded(9)
        latency = generator.run_trial(spec(PHASE1_FPS)).directions[0].latency
        width = 2 ** 11 * 1e9 / HZ
        histogram = {round(low / width): count
                     for low, high, count in latency.histogram}
        self.assertEqual(7, histogram[127])     # #42's, not #74's 351
        self.assertEqual(12932, histogram[5])
        commands = prox.commands
        reset = commands.index('reset lat stats')
        # after the gen task started and a refresh showed received frames
        self.assertLess(commands.index('start 1 0'), reset)
        self.assertIn('dp core stats 1 0,1', commands[:reset])
        self.assertEqual(1, commands.count('reset lat stats'))

    def test_generator_short_of_its_rate(self):
        generator, server = self.generator(ScriptedProx(PHASE2))
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE2_FPS))
        self.assertEqual(guards.RATE_SHORTFALL, error.cause)
        self.assertIn('offered 450354 fps of 844595 intended', error.detail)

    def test_stop_all_after_a_failed_trial(self):
        prox = ScriptedProx(PHASE2)
        generator, server = self.generator(prox)
        self.assertRaises(trial.GeneratorError, generator.run_trial,
                          spec(PHASE2_FPS))
        self.assertEqual('stop all', prox.commands[-1])


class StallingProx(ScriptedProx):
    """Answers the first counter poll of a running trial `delay_s` late."""

    def __init__(self, phase, delay_s):
        super().__init__(phase)
        self.delay_s = delay_s
        self.stalled_at = None  # index of the late command

    def __call__(self, line):
        reply = super().__call__(line)
        if (line == 'dp core stats 1 0,1' and self.state == 'running' and
                self.stalled_at is None):
            self.stalled_at = len(self.commands) - 1
            return prox_replay.Reply([(self.delay_s, data)
                                      for _delay, data in reply.pieces])
        return reply


class TestStalls(GeneratorTestCase):
    """PROX, or the guest it runs in, stops answering for a while."""

    def test_a_late_reply_makes_the_trial_invalid_not_the_connection(self):
        prox = StallingProx(PHASE1, delay_s=1.5)
        generator, server = self.generator(prox, reply_timeout_s=1.0)
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS))
        self.assertEqual(guards.GENERATOR_STALLED, error.cause)
        self.assertIn("'dp core stats 1 0,1': no complete reply within "
                      "1.0 s", error.detail)
        # the late reply was read, the tasks stopped on the same
        # connection, and the next trial runs on it
        self.assertEqual('stop all', prox.commands[prox.stalled_at + 1])
        result = generator.run_trial(spec(PHASE1_FPS))
        self.assertEqual(0.0, result.loss_ratio)
        self.assertEqual(1, server.connections)
        self.assertFalse(server.write_failed)

    def test_still_silent_after_the_drain_connects_afresh(self):
        prox = StallingProx(PHASE1, delay_s=2.0)
        generator, server = self.generator(prox, reply_timeout_s=1.0)
        generator.client.drain_timeout = 0.5
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS))
        self.assertEqual(guards.GENERATOR_STALLED, error.cause)
        self.assertFalse(generator.client.connected)
        result = generator.run_trial(spec(PHASE1_FPS))
        self.assertEqual(0.0, result.loss_ratio)
        self.assertEqual(2, server.connections)
        # the new connection first stopped what the stalled trial started
        self.assertEqual('stop all', prox.commands[prox.stalled_at + 1])


class TestFramesOfEarlierTrials(GeneratorTestCase):
    """A chain that lost frames may deliver some of them late."""

    @staticmethod
    def between(commands, first, last):
        start = commands.index(first)
        return commands[start:commands.index(last, start)]

    def test_late_frames_are_received_before_the_counters_reset(self):
        # live: 256 frames (one vhost ring) of a lossy 2,000 fps trial
        # reached the tester 5 s into the next one
        prox = ScriptedProx(PHASE1, late=(0, 256, 256))
        generator, server = self.generator(prox)
        result = generator.run_trial(spec(PHASE1_FPS, latency=False))
        (forward,) = result.directions
        self.assertEqual((194906, 194906),
                         (forward.tx_frames, forward.rx_frames))
        self.assertIn('frames of an earlier trial arrived before this one '
                      '(forward 256)', '\n'.join(result.notes))
        # lat task first, then the wait, a reset, and only then the gen
        before_gen = self.between(prox.commands, 'start 1 1', 'start 1 0')
        self.assertEqual(3, before_gen.count('dp core stats 1 1'))
        self.assertEqual('reset stats', before_gen[-1])
        self.assertEqual(1, prox.commands.count('start 1 1'))

    def test_a_quiet_chain_is_not_reset_twice(self):
        prox = ScriptedProx(PHASE1)
        generator, server = self.generator(prox)
        result = generator.run_trial(spec(PHASE1_FPS, latency=False))
        self.assertNotIn('earlier trial', '\n'.join(result.notes))
        self.assertEqual(1, prox.commands.count('reset stats'))

    def test_no_wait_after_a_lossless_trial(self):
        prox = ScriptedProx(PHASE1)
        generator, server = self.generator(prox)
        generator.run_trial(spec(PHASE1_FPS, latency=False))
        first = len(prox.commands)
        generator.run_trial(spec(PHASE1_FPS, latency=False))
        second = prox.commands[first:]
        self.assertNotIn('dp core stats 1 1', second)
        self.assertLess(second.index('reset stats'),
                        second.index('start 1 1'))

    def test_wait_after_a_failed_trial(self):
        prox = ScriptedProx(PHASE2)
        generator, server = self.generator(prox)
        self.assertRaises(trial.GeneratorError, generator.run_trial,
                          spec(PHASE2_FPS, latency=False))
        first = len(prox.commands)
        prox.phase = PHASE1
        generator.run_trial(spec(PHASE1_FPS, latency=False))
        self.assertIn('dp core stats 1 1', self.between(
            prox.commands[first:], 'start 1 1', 'start 1 0'))

    def test_frames_that_keep_arriving(self):
        prox = ScriptedProx(PHASE1, late=range(0, 100000, 100))
        generator, server = self.generator(prox, drain_timeout_s=0.3)
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS, latency=False))
        self.assertEqual(prox_generator.NOT_SETTLED, error.cause)
        self.assertIn('frames of an earlier trial still arrived',
                      error.detail)
        self.assertNotIn('start 1 0', prox.commands)


class TestGuards(GeneratorTestCase):

    def phase(self, **changes):
        phase = dict(PHASE1)
        phase.update(changes)
        return ScriptedProx(phase)

    def test_nothing_forwarded(self):
        zero = [with_counts(r, tx, 0) for r, tx in (
            (recorded(40), 110930), (refresh(recorded(40), 16892, 0),
                                     127822))]
        stopped = [with_counts(recorded(54), 194906, 0),
                   refresh(with_counts(recorded(54), 194906, 0), 0, 0)]
        generator, server = self.generator(self.phase(
            running=zero, stopped=stopped))
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS, latency=False))
        self.assertEqual(guards.STOPPED_FORWARDING, error.cause)

    def test_nothing_sent(self):
        stopped = [with_counts(recorded(54), 0, 0),
                   refresh(with_counts(recorded(54), 0, 0), 0, 0)]
        generator, server = self.generator(self.phase(
            running=[with_counts(recorded(40), 0, 0)], stopped=stopped))
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS, latency=False))
        self.assertEqual(prox_generator.NOTHING_SENT, error.cause)

    def test_counters_going_backwards(self):
        backwards = [recorded(40), with_counts(
            refresh(recorded(40), 0, 0), 100000, 100000)]
        generator, server = self.generator(self.phase(running=backwards))
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS, latency=False))
        self.assertEqual(guards.COUNTERS_BACKWARDS, error.cause)
        self.assertIn('110930 to 100000', error.detail)

    def test_generator_stalled_between_refreshes(self):
        stalled = [recorded(40), refresh(recorded(40), 0, 0)]
        generator, server = self.generator(self.phase(running=stalled))
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS, latency=False))
        self.assertEqual(guards.RATE_SHORTFALL, error.cause)
        self.assertIn('sent nothing between two counter refreshes',
                      error.detail)

    def test_counters_that_do_not_settle(self):
        growing = [refresh(recorded(54), 0, n * 10, n) for n in range(40)]
        generator, server = self.generator(self.phase(stopped=growing),
                                           drain_timeout_s=0.3)
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS, latency=False))
        self.assertEqual(prox_generator.NOT_SETTLED, error.cause)

    def test_more_received_than_sent(self):
        stopped = [with_counts(recorded(54), 194906, 200000),
                   refresh(with_counts(recorded(54), 194906, 200000), 0, 0)]
        generator, server = self.generator(self.phase(stopped=stopped))
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS, latency=False))
        self.assertEqual(guards.COUNTERS_INCONSISTENT, error.cause)

    def test_rate_above_the_intended_one(self):
        generator, server = self.generator(self.phase())
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS / 2, latency=False))
        self.assertEqual(prox_generator.RATE_OVERSHOOT, error.cause)

    def test_a_catch_up_burst_in_the_window_is_judged_on_the_whole_trial(
            self):
        # Seen under QEMU/TCG: 1,141 frames/s counted over 0.76 s for 1,000
        # asked, the trial's 5 s holding 5,000 frames: the generator lost
        # the CPU and caught up on its rate limiter's backlog.
        generator, _server = self.generator(self.phase(),
                                            rate_tolerance=0.1)
        sent = types.SimpleNamespace(commanded=10.0, started=10.0,
                                     stopped_at=15.0)
        notes = []
        window = (1141.0, '4 counter refreshes over 0.76 s')
        offered, tolerance = generator._whole_trial_rate(
            spec(1000.0), sent, 5000, 'reverse', window, notes)
        self.assertEqual(1000.0, offered)
        self.assertAlmostEqual(0.1 + 8 / 5000, tolerance)
        self.assertIn('reverse: 1141 fps over 4 counter refreshes over '
                      '0.76 s was a catch-up burst', notes[0])
        # Wrong speed units overshoot over the whole trial too.
        error = self.assertRaises(
            trial.GeneratorError, generator._whole_trial_rate,
            spec(1000.0), sent, 6000, 'reverse', window, [])
        self.assertEqual(prox_generator.RATE_OVERSHOOT, error.cause)
        self.assertIn('1200 over the whole 5.00 s', error.detail)

    def test_a_late_reply_to_the_speed_command_is_not_an_overshoot(self):
        # Seen in CI under QEMU/TCG, 4 guests on 2 cores: 552 frames sent
        # for 365 fps asked, 1.29 s between the replies to the speed
        # commands, 1.51 s since the first was sent.
        generator, _server = self.generator(self.phase())
        sent = types.SimpleNamespace(commanded=10.0, started=10.22,
                                     stopped_at=11.51)
        window = (445.0, '5 counter refreshes over 0.91 s')
        notes = []
        offered, _tolerance = generator._whole_trial_rate(
            spec(365.0), sent, 552, 'forward', window, notes)
        # the asked rate lies below what the longest window shows
        self.assertAlmostEqual(552 / 1.51, offered)
        self.assertIn('forward: 428 fps between the replies, 366 over the '
                      '1.51 s since the gen task was asked to send', notes[1])
        # Frames no window since the command can hold stay an error.
        error = self.assertRaises(
            trial.GeneratorError, generator._whole_trial_rate,
            spec(365.0), sent, 700, 'forward', window, [])
        self.assertEqual(prox_generator.RATE_OVERSHOOT, error.cause)
        self.assertIn('at least 464 over the 1.51 s', error.detail)

    def test_counting_granularity_widens_the_tolerance_at_low_rates(self):
        # Seen under QEMU/TCG: 506 frames/s counted for 500 asked over
        # 0.76 s is within 8 frames of counting; 530 is not.
        tolerance = prox_generator.rate_tolerance_for(500, 0.76, 0.01)
        self.assertGreater(500 * (1 + tolerance), 506)
        self.assertLess(500 * (1 + tolerance), 530)
        self.assertGreater(500 * (1 - tolerance), 470)
        # At line rate the window's frames drown the slack.
        self.assertAlmostEqual(
            0.01, prox_generator.rate_tolerance_for(14.88e6, 1.0, 0.01),
            places=5)
        self.assertEqual(0.01,
                         prox_generator.rate_tolerance_for(500, None, 0.01))

    def test_short_trial_times_with_the_host_clock(self):
        # one refresh while sending: no rate from PROX's counters
        generator, server = self.generator(self.phase(
            running=[recorded(40)]), rate_tolerance=0.5)
        result = generator.run_trial(spec(194906 / 0.3, latency=False,
                                          duration=0.3))
        self.assertIn('host clock', '\n'.join(result.notes))
        # between the replies to the speed commands that opened and closed
        # the window: at least the duration (a loaded machine adds to it)
        offered = result.directions[0].offered_fps
        self.assertLessEqual(offered, 194906 / 0.3)
        self.assertGreater(offered, 194906 / 0.3 * 0.5)


class TestTrialSetUp(GeneratorTestCase):

    def run_phase1(self, trial_spec, **options):
        prox = ScriptedProx(PHASE1)
        generator, server = self.generator(prox, **options)
        try:
            result = generator.run_trial(trial_spec)
        except trial.GeneratorError:
            result = None
        return prox, result

    def test_exact_flow_counts_use_a_range(self):
        prox, result = self.run_phase1(spec(PHASE1_FPS, flows=100,
                                            latency=False))
        self.assertIn('set range 1 0 34 1024 1123', prox.commands)
        self.assertFalse([c for c in prox.commands
                          if c.startswith('set random')])
        self.assertIn('100 flows requested, 100 generated',
                      '\n'.join(result.notes))

    def test_power_of_two_flow_mode_rounds_up(self):
        prox, result = self.run_phase1(spec(PHASE1_FPS, flows=1000,
                                            latency=False),
                                       flow_mode='power-of-two')
        randoms = [c for c in prox.commands if c.startswith('set random')]
        self.assertEqual(['set random 1 0 34 00000100000XXXXX 2',
                          'set random 1 0 36 00001000000XXXXX 2'], randoms)
        self.assertIn('1000 flows requested, 1024 generated',
                      '\n'.join(result.notes))

    def test_imix_then_fixed_size(self):
        prox = ScriptedProx(PHASE1)
        generator, server = self.generator(prox)
        imix = trial.TrialSpec(
            profile=trial.TrafficProfile(trial.FrameSize.parse('imix'), 1),
            load_fps=1000, duration_s=0.2)
        self.assertRaises(trial.GeneratorError, generator.run_trial, imix)
        self.assertIn('imix 1 0 60,566,60,60,566,60,1514,60,566,60,566,60',
                      prox.commands)
        mean = trial.FrameSize.parse('imix').mean_bytes
        # speed 0 while configuring, then the trial's speed
        speed = [c for c in prox.commands if c.startswith('speed')][1]
        self.assertAlmostEqual(prox_client.speed_percent(1000, mean),
                               float(speed.split()[-1]), places=6)
        prox.commands.clear()
        generator.run_trial(spec(PHASE1_FPS, latency=False))
        # a single-size imix replaces the pending IMIX templates
        self.assertEqual(['imix 1 0 124', 'pkt_size 1 0 124'],
                         [c for c in prox.commands
                          if c.startswith(('imix', 'pkt_size'))])

    def test_unsupported_trials(self):
        generator, server = self.generator(ScriptedProx(PHASE1))
        for bad in (spec(PHASE1_FPS, directions=('forward', 'reverse')),
                    spec(PHASE1_FPS, frame=1519),
                    spec(PHASE1_FPS, flows=100000),
                    spec(1e9, frame=1518)):
            error = self.assertRaises(trial.GeneratorError,
                                      generator.run_trial, bad)
            self.assertEqual(prox_generator.UNSUPPORTED_TRIAL, error.cause)

    def test_layout_mismatch(self):
        def swapped(line):
            # core 1 task 1 answers like a gen task
            if line == 'lat stats 1 1':
                return prox_replay.Reply.lines(recorded(13).replace(
                    'task 0', 'task 1'))
            return ScriptedProx(PHASE1)(line)
        generator, server = self.generator(swapped)
        error = self.assertRaises(trial.GeneratorError, generator.connect)
        self.assertEqual(prox_generator.LAYOUT_MISMATCH, error.cause)
        self.assertIn('not measuring latency', error.detail)

    def test_layout_from_prox_itself(self):
        layout = dataclasses.replace(LAYOUT, latency_bucket_shift=13)
        prox = ScriptedProx(PHASE1, layout_text=layout.to_text())
        generator, server = self.generator(prox, layout=None)
        generator.connect()
        self.assertEqual(layout, generator.layout)
        self.assertIn('echo $epa_chain_layout', prox.commands)

    def test_layout_from_prox_that_does_not_fit(self):
        wrong = dataclasses.replace(LAYOUT, directions=(dataclasses.replace(
            LAYOUT.directions[0], gen=gen_config.TaskRef(1, 1)),))
        for text, expected in ((wrong.to_text(), 'is a lat task'),
                               ('epa-chain-layout-1,m0', 'bad')):
            generator, server = self.generator(
                ScriptedProx(PHASE1, layout_text=text), layout=None)
            error = self.assertRaises(trial.GeneratorError,
                                      generator.connect)
            self.assertEqual(prox_generator.LAYOUT_MISMATCH, error.cause)
            self.assertIn(expected, error.detail)

    def test_no_standard_layout_on_the_recorded_capture(self):
        generator, server = self.generator(ScriptedProx(PHASE1), layout=None)
        error = self.assertRaises(trial.GeneratorError, generator.connect)
        self.assertEqual(prox_generator.LAYOUT_MISMATCH, error.cause)
        self.assertIn('gen_config.layout_from_config', error.detail)

    def test_describe(self):
        # Without connect(): campaigns describe the generator before the
        # first trial, and the live run recorded no versions that way.
        generator, server = self.generator(ScriptedProx(PHASE1))
        description = generator.describe()
        self.assertNotIn('connect_error', description)
        self.assertEqual('prox', description['name'])
        self.assertEqual('22.12', description['prox_version'])
        self.assertEqual(10e9, description['link_bps'])
        self.assertEqual(LAYOUT, gen_config.GeneratorLayout.from_dict(
            description['layout']))

    def test_layout_from_files(self):
        from epa_chain.tests.unit import test_prox_gen_config as configs
        node = configs.generator()
        text = gen_config.render(node, configs.PCI, [0, 2, 4, 6])
        expected = gen_config.layout_for(node, configs.PCI, [0, 2, 4, 6])
        directory = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, directory)
        rendered = os.path.join(directory, 'gen.cfg')
        as_json = os.path.join(directory, 'layout.json')
        with open(rendered, 'w') as stream:
            stream.write(text)
        with open(as_json, 'w') as stream:
            json.dump(expected.to_dict(), stream)
        for path in (rendered, as_json):
            generator = prox_generator.ProxGenerator('127.0.0.1',
                                                     layout=path)
            self.assertEqual(expected, generator.layout)
        recorded_cfg = os.path.join(prox_replay.FIXTURES, 'gen.cfg')
        error = self.assertRaises(ValueError, prox_generator.ProxGenerator,
                                  '127.0.0.1', layout=recorded_cfg)
        self.assertIn(recorded_cfg, str(error))
        self.assertRaises(ValueError, prox_generator.ProxGenerator,
                          '127.0.0.1', layout=os.path.join(directory, 'no'))

    def test_fixed_counter_refresh(self):
        prox = ScriptedProx(PHASE1)
        generator, server = self.generator(prox, update_interval_ms=300,
                                           poll_interval_s=1.0)
        generator.run_trial(spec(PHASE1_FPS))
        # set in the trial (PROX keeps what an earlier controller set),
        # and polled three times per refresh
        self.assertIn('update interval 300', prox.commands)
        self.assertLess(prox.commands.index('update interval 300'),
                        prox.commands.index('reset stats'))
        self.assertEqual(0.1, generator._poll_s)
        self.assertEqual(300, generator.describe()['update_interval_ms'])
        self.assertRaises(ValueError, prox_generator.ProxGenerator,
                          '127.0.0.1', update_interval_ms=5)

    def test_counter_refresh_follows_the_trial_duration(self):
        # Live PROX: a 2 s trial with PROX's 1 s refresh had one refresh
        # while sending, and the host clock's timing on a loaded machine
        # missed the rate tolerance. Short trials now refresh 4 times.
        generator = prox_generator.ProxGenerator('127.0.0.1', layout=LAYOUT)
        self.assertEqual(
            [100, 100, 250, 500, 1000, 1000],
            [generator.refresh_interval_ms(spec(1, duration=seconds))
             for seconds in (0.1, 0.4, 1.0, 2.0, 4.0, 60.0)])
        prox = ScriptedProx(PHASE1)
        generator, server = self.generator(prox)
        generator.run_trial(spec(PHASE1_FPS))
        self.assertIn('update interval 100', prox.commands)

    def test_prox_gone(self):
        generator = prox_generator.ProxGenerator('127.0.0.1', 1,
                                                 layout=LAYOUT,
                                                 connect_timeout_s=0.5)
        description = generator.describe()
        self.assertIsNone(description['prox_version'])
        self.assertIn('cannot reach PROX', description['connect_error'])
        error = self.assertRaises(trial.GeneratorError, generator.run_trial,
                                  spec(PHASE1_FPS))
        self.assertEqual(prox_generator.PROX_CONTROL_FAILED, error.cause)
        generator.close()
