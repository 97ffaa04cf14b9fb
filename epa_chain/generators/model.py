# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and
# limitations under the License.

"""A simulated system under test behind a perfect generator.

For dry runs and tests: the searches, reports and guards run unchanged
against a loss curve whose answer is known. Nothing is sent and nothing
sleeps: a virtual clock advances by each trial's intended duration, so a
search made of 60 s trials finishes in milliseconds and still reports 60 s
trials.

Loss curve per direction, in frames/s (the SUT is packet-rate bound, so
the curve does not depend on the frame size; big frames hit line rate
first):

- up to `ndr_fps`: no loss;
- from `ndr_fps` to `knee_fps`: loss rises linearly to `knee_loss` (the
  small, persistent loss EANTC saw on vSwitches, seed 002);
- above `knee_fps`: the SUT forwards at most knee_fps * (1 - knee_loss).

`flow_penalty` lowers both points by that fraction per decade of flows.
Noise (seeded, so runs repeat): `jitter` moves the curve by a relative
Gaussian amount per trial and direction; `spurious_rate` is the rate (per
trial second, scaled by (load / ndr)^2) of transient losses of about 10
frames per million, which makes loss non-monotonic in load as EANTC
observed. Faults for the guards: `max_tx_fps` (the generator cannot send
faster), `stop_forwarding_after` (trials after which nothing comes back),
`counter_reset_at` (trial at which a receive counter resets).
"""

import math
import random
import time

from epa_chain.generators import options
from epa_chain.measurement import guards
from epa_chain.measurement import trial

HISTOGRAM_BUCKETS = 128  # as PROX's `lat all stats`
TRANSIENT_LOSS_RATIO = 1e-5  # EANTC: "10 packets out of a 1 million"


def _option(name, value):
    # Bounds: generators/options.py, shared with the command line.
    return options.check('model', name, value)


class ModelGenerator(trial.Generator):
    """The simulated SUT; see the module docstring for the options."""

    name = 'model'

    def __init__(self, link_bps=10e9, ndr_fps=4.0e6, knee_fps=None,
                 knee_loss=0.01, flow_penalty=0.0, jitter=0.0,
                 spurious_rate=0.0, seed=1, base_latency_ns=20000.0,
                 queue_latency_ns=2000.0, max_queue_ns=1e6,
                 latency_samples=2000, latency_mode='samples',
                 reorder=0.0, duplicate=0.0, max_tx_fps=None,
                 stop_forwarding_after=None, counter_reset_at=None,
                 chain_length=1, rate_tolerance=0.01, epoch=None):
        self._link_bps = _option('link_bps', link_bps)
        self.ndr_fps = _option('ndr_fps', ndr_fps)
        self.knee_fps = _option('knee_fps', knee_fps)
        if self.knee_fps is None:
            self.knee_fps = 1.2 * self.ndr_fps
        elif self.knee_fps < self.ndr_fps:
            raise options.OptionError('model', 'knee_fps', knee_fps,
                                      'must be at least ndr_fps (%r)'
                                      % self.ndr_fps)
        self.knee_loss = _option('knee_loss', knee_loss)
        if self.knee_fps == self.ndr_fps and self.knee_loss > 0:
            raise options.OptionError('model', 'knee_fps', self.knee_fps,
                                      'must be above ndr_fps when '
                                      'knee_loss > 0')
        self.flow_penalty = _option('flow_penalty', flow_penalty)
        self.jitter = _option('jitter', jitter)
        self.spurious_rate = _option('spurious_rate', spurious_rate)
        self.seed = _option('seed', seed)
        self.base_latency_ns = _option('base_latency_ns', base_latency_ns)
        self.queue_latency_ns = _option('queue_latency_ns',
                                        queue_latency_ns)
        self.max_queue_ns = _option('max_queue_ns', max_queue_ns)
        self.latency_samples = _option('latency_samples', latency_samples)
        self.latency_mode = _option('latency_mode', latency_mode)
        self.reorder = _option('reorder', reorder)
        self.duplicate = _option('duplicate', duplicate)
        self.max_tx_fps = _option('max_tx_fps', max_tx_fps)
        self.stop_forwarding_after = _option('stop_forwarding_after',
                                             stop_forwarding_after)
        self.counter_reset_at = _option('counter_reset_at', counter_reset_at)
        self.chain_length = _option('chain_length', chain_length)
        self.rate_tolerance = _option('rate_tolerance', rate_tolerance)
        epoch = _option('epoch', epoch)
        self.epoch = time.time() if epoch is None else float(epoch)
        self._noise = random.Random(self.seed)
        self._latency_rng = random.Random(self.seed + 1)
        self._counters = guards.CounterWatch('model')
        self._rx_totals = {}
        #: trials run and their intended seconds, on the virtual clock
        self.trials_run = 0
        self.virtual_seconds = 0.0

    @property
    def link_bps(self):
        return self._link_bps

    def describe(self):
        described = super().describe()
        described.update({
            'virtual_clock': True,
            'ndr_fps': self.ndr_fps, 'knee_fps': self.knee_fps,
            'knee_loss': self.knee_loss, 'flow_penalty': self.flow_penalty,
            'jitter': self.jitter, 'spurious_rate': self.spurious_rate,
            'seed': self.seed, 'latency_mode': self.latency_mode,
            'chain_length': self.chain_length,
        })
        return described

    # The known answer -------------------------------------------------

    def _scale(self, flows):
        return max(0.05, 1.0 - self.flow_penalty * math.log10(flows))

    def loss_ratio_at(self, load_fps, flows=1):
        """Loss ratio of the noiseless curve at `load_fps` per direction."""
        scale = self._scale(flows)
        ndr, knee = self.ndr_fps * scale, self.knee_fps * scale
        if load_fps <= ndr:
            return 0.0
        if load_fps <= knee:
            return self.knee_loss * (load_fps - ndr) / (knee - ndr)
        return 1.0 - knee * (1.0 - self.knee_loss) / load_fps

    def threshold_fps(self, loss_ratio, flows=1):
        """Highest load whose noiseless loss ratio is <= `loss_ratio`."""
        scale = self._scale(flows)
        ndr, knee = self.ndr_fps * scale, self.knee_fps * scale
        if loss_ratio <= 0.0:
            return ndr
        if loss_ratio <= self.knee_loss:
            return ndr + (knee - ndr) * loss_ratio / self.knee_loss
        return knee * (1.0 - self.knee_loss) / (1.0 - loss_ratio)

    def true_throughput_fps(self, frame_size, loss_ratio, flows=1):
        """The answer a perfect search finds: the threshold or line rate."""
        return min(self.threshold_fps(loss_ratio, flows),
                   frame_size.line_rate_fps(self.link_bps))

    # Trials ------------------------------------------------------------

    def run_trial(self, spec):
        index = self.trials_run
        self.trials_run += 1
        started = self.epoch + self.virtual_seconds
        self.virtual_seconds += spec.duration_s
        profile = spec.profile
        line_fps = profile.frame_size.line_rate_fps(self.link_bps)
        stopped = (self.stop_forwarding_after is not None and
                   index >= self.stop_forwarding_after)
        results = []
        for direction in profile.directions:
            offered = min(spec.load_fps, line_fps,
                          self.max_tx_fps or float('inf'))
            tx_frames = int(round(offered * spec.duration_s))
            loss = self._trial_loss(offered, profile.flows, spec.duration_s)
            rx_frames = 0 if stopped else tx_frames - int(
                math.ceil(tx_frames * loss))
            rx_frames = self._read_rx_counter(direction, rx_frames, index)
            latency = None
            if spec.measure_latency and rx_frames > 0:
                latency = self._latency(offered, profile.flows, loss)
            duration = spec.duration_s or 1.0
            results.append(trial.DirectionResult(
                direction=direction, intended_fps=spec.load_fps,
                offered_fps=tx_frames / duration if spec.duration_s
                else offered,
                achieved_fps=rx_frames / duration, tx_frames=tx_frames,
                rx_frames=rx_frames, latency=latency))
        return trial.TrialResult(spec=spec, directions=results,
                                 started_at=started,
                                 duration_s=spec.duration_s,
                                 notes=['model trial %d' % index])

    def _trial_loss(self, load_fps, flows, duration_s):
        effective = load_fps
        if self.jitter:
            effective = load_fps / max(
                0.05, 1.0 + self.jitter * self._noise.gauss(0.0, 1.0))
        loss = self.loss_ratio_at(effective, flows)
        if self.spurious_rate:
            ndr = self.ndr_fps * self._scale(flows)
            rate = self.spurious_rate * (load_fps / ndr) ** 2
            if self._noise.random() < 1.0 - math.exp(-rate * duration_s):
                loss += TRANSIENT_LOSS_RATIO * self._noise.uniform(0.1, 2.0)
        return min(1.0, loss)

    def _read_rx_counter(self, direction, rx_frames, index):
        # The receive port counter is cumulative, as on a real NIC; a
        # reset mid-trial makes the difference of two reads negative.
        key = '%s rx' % direction
        total = self._rx_totals.get(key, 0)
        self._counters.update(key, total)
        total += rx_frames
        if self.counter_reset_at is not None and index == \
                self.counter_reset_at:
            total = rx_frames // 2
        self._rx_totals[key] = total
        return self._counters.update(key, total)

    # Latency -----------------------------------------------------------

    def _queue_mean_ns(self, load_fps, flows):
        utilisation = load_fps / (self.knee_fps * self._scale(flows))
        if utilisation >= 0.98:
            return self.max_queue_ns
        return min(self.max_queue_ns, self.queue_latency_ns *
                   utilisation / (1.0 - utilisation))

    def _latency(self, load_fps, flows, loss):
        if self.latency_mode == 'off' or not self.latency_samples:
            return None
        rng = self._latency_rng
        queue_mean = self._queue_mean_ns(load_fps, flows)
        arrivals = []
        for seq in range(self.latency_samples):
            if loss and rng.random() < loss:
                continue
            delay = (self.base_latency_ns +
                     (rng.expovariate(1.0 / queue_mean) if queue_mean
                      else 0.0) +
                     abs(rng.gauss(0.0, 0.01 * self.base_latency_ns)))
            arrivals.append((seq, delay))
            if self.duplicate and rng.random() < self.duplicate:
                arrivals.append((seq, delay + 100.0))
        if self.reorder:
            for position in range(len(arrivals) - 1):
                if rng.random() < self.reorder:
                    arrivals[position], arrivals[position + 1] = (
                        arrivals[position + 1], arrivals[position])
        if not arrivals:
            return None
        if self.latency_mode == 'histogram':
            return self._binned(arrivals)
        delays = [delay for _seq, delay in arrivals]
        return trial.LatencyRecord(
            min_ns=min(delays), avg_ns=sum(delays) / len(delays),
            max_ns=max(delays), samples=arrivals)

    def _binned(self, arrivals):
        # PROX bins by a power-of-two bucket width; it counts reordering
        # and duplicates itself and has no per-frame record.
        delays = [delay for _seq, delay in arrivals]
        width = 1
        while width * HISTOGRAM_BUCKETS <= max(delays):
            width *= 2
        counts = [0] * HISTOGRAM_BUCKETS
        for delay in delays:
            counts[min(HISTOGRAM_BUCKETS - 1, int(delay // width))] += 1
        seen, highest, out_of_order, duplicates = set(), -1, 0, 0
        for seq, _delay in arrivals:
            if seq in seen:
                duplicates += 1
                continue
            seen.add(seq)
            if seq < highest:
                out_of_order += 1
            highest = max(highest, seq)
        return trial.LatencyRecord(
            min_ns=min(delays), avg_ns=sum(delays) / len(delays),
            max_ns=max(delays),
            histogram=[(i * width, (i + 1) * width, count)
                       for i, count in enumerate(counts)],
            out_of_order=out_of_order, duplicates=duplicates)
