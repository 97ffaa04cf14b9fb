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

"""Several chains measured together: one trial is every chain's at once.

Each chain keeps its own generator (a port pair of its own); a trial
starts all of them together, each in a thread, and waits for all. The
search sees the aggregate, the NFVbench way: the load asked is the total
per direction, split evenly over the measured chains, and what came back
is summed; every chain's own counters stay on the result
(DirectionResult.chains), so each chain's loss at every rate is recorded.

Noisy neighbours: chains in `background` are not searched but carry a
fixed load (frames/s per direction) during every trial, so the measured
chain's figures are those it reaches beside busy neighbours. A
background chain that cannot send its load fails the trial, as any
generator short of its rate does.
"""

import dataclasses
import threading

from epa_chain.measurement import guards
from epa_chain.measurement import trial

#: a thread that has not finished this long after its trial's duration
#: is a generator that stopped answering
JOIN_GRACE_S = 120.0
#: sequence numbers of chain K's latency samples start at K << SEQ_SHIFT
SEQ_SHIFT = 40


@dataclasses.dataclass(frozen=True)
class ChainResult:
    """One chain's part of a direction of a together trial."""

    chain: int
    role: str                       # measured | background
    result: trial.DirectionResult


class TogetherGenerator(trial.Generator):
    """Chains' generators driven as one; see the module docstring.

    members: one generator per chain, in chain order; measured: the
    chains the search loads (default all); background: {chain: {frame
    size label: fps per direction}} for the others (a size it has no
    load for: that chain idles).
    """

    name = 'chains-together'

    def __init__(self, members, measured=None, background=None):
        self.members = tuple(members)
        self.measured = tuple(range(len(self.members))
                              if measured is None else measured)
        self.background = dict(background or {})
        if not self.measured or set(self.measured) & set(self.background):
            raise ValueError('measured chains %s and background chains %s: '
                             'give at least one measured chain, none in '
                             'both' % (self.measured, sorted(self.background)))
        self.rate_tolerance = max(m.rate_tolerance for m in self.members)
        margins = [m.calibration_margin for m in self.members
                   if hasattr(m, 'calibration_margin')]
        if margins:     # else the runner's default, as for one of them
            self.calibration_margin = min(margins)

    @property
    def link_bps(self):
        return sum(self.members[k].link_bps for k in self.measured)

    def describe(self):
        described = super().describe()
        described.update({
            'chains': [m.describe() for m in self.members],
            'measured_chains': list(self.measured),
            # The loosest member's: a together trial is refused only
            # where one chain's own generator would refuse it.
            'rate_tolerance': self.rate_tolerance,
            'background_fps': {str(k): dict(loads) for k, loads
                               in sorted(self.background.items())},
            'load': 'total per direction over the measured chains, split '
                    'evenly; each chain\'s counters in directions[].chains',
        })
        return described

    def close(self):
        for member in self.members:
            member.close()

    def calibrate(self, frame_size):
        """Total rate the measured chains sustain, sending together."""
        found = _together({k: (lambda m=m: m.calibrate(frame_size))
                           for k, m in enumerate(self.members)},
                          JOIN_GRACE_S)
        # Every chain sends at once, as in the trials: what they share
        # (CPUs, the switch) is in the figure.
        return min(found[k] for k in self.measured) * len(self.measured)

    def run_trial(self, spec):
        share = dataclasses.replace(
            spec, load_fps=spec.load_fps / len(self.measured))
        calls = {k: (lambda m=self.members[k]: m.run_trial(share))
                 for k in self.measured}
        label = spec.profile.frame_size.label
        for chain, loads in self.background.items():
            if not loads.get(label):
                continue
            quiet = dataclasses.replace(spec, load_fps=loads[label],
                                        measure_latency=False)
            calls[chain] = (lambda m=self.members[chain], s=quiet:
                            m.run_trial(s))
        results = _together(calls, spec.duration_s + JOIN_GRACE_S)
        return self._merged(spec, results)

    def _merged(self, spec, results):
        directions = []
        for direction in spec.profile.directions:
            parts = [ChainResult(k, 'measured' if k in self.measured
                                 else 'background', _direction(r, direction))
                     for k, r in sorted(results.items())]
            directions.append(_sum(direction, parts))
        notes = ['chain %d: %s' % (k, note)
                 for k, r in sorted(results.items()) for note in r.notes]
        first = results[self.measured[0]]
        return trial.TrialResult(
            spec=spec, directions=directions, started_at=first.started_at,
            duration_s=max(r.duration_s for r in results.values()),
            notes=notes)


def _direction(result, name):
    return next(d for d in result.directions if d.direction == name)


def _sum(name, parts):
    """The measured chains' counters added up; every chain's kept."""
    measured = [p.result for p in parts if p.role == 'measured']
    return trial.DirectionResult(
        direction=name,
        intended_fps=sum(d.intended_fps for d in measured),
        offered_fps=sum(d.offered_fps for d in measured),
        achieved_fps=sum(d.achieved_fps for d in measured),
        tx_frames=sum(d.tx_frames for d in measured),
        rx_frames=sum(d.rx_frames for d in measured),
        latency=merged_latency([(p.chain, p.result.latency)
                                for p in parts if p.role == 'measured']),
        chains=list(parts))


def merged_latency(records):
    """One LatencyRecord of [(chain, record), ...]; None if none.

    Samples are pooled (each chain's sequence numbers moved apart),
    histograms pooled bucket by bucket; otherwise only min, the mean of
    the averages and max.
    """
    records = [(k, r) for k, r in records if r is not None]
    if len(records) < 2:
        return records[0][1] if records else None
    only = [r for _k, r in records]
    merged = trial.LatencyRecord(
        min_ns=_pick(min, only, 'min_ns'), max_ns=_pick(max, only, 'max_ns'),
        avg_ns=_mean([r.avg_ns for r in only]),
        out_of_order=sum(r.out_of_order for r in only),
        duplicates=sum(r.duplicates for r in only))
    if all(r.samples for r in only):
        merged.samples = [((k << SEQ_SHIFT) + seq, delay)
                          for k, r in records for seq, delay in r.samples]
        merged.avg_ns = _mean([d for _s, d in merged.samples])
    elif all(r.histogram for r in only):
        _pool_histograms(merged, only)
    return merged


def _pool_histograms(merged, records):
    """Every chain's buckets in one histogram, the mean weighted by count.

    Each PROX generator bins by its own guest's TSC, so two chains'
    bucket bounds differ by a little; the latency summary re-bins every
    bucket into its own histogram anyway (measurement/latency.py), so
    buckets that overlap are as good as equal ones.
    """
    merged.histogram = sorted(bucket for r in records
                              for bucket in r.histogram)
    counts = [sum(n for _lo, _hi, n in r.histogram) for r in records]
    if sum(counts) and all(r.avg_ns is not None for r in records):
        merged.avg_ns = sum(r.avg_ns * n for r, n in zip(records, counts)
                            ) / sum(counts)


def _pick(function, records, field):
    values = [getattr(r, field) for r in records
              if getattr(r, field) is not None]
    return function(values) if values else None


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _together(calls, timeout_s):
    """{key: call()} with every call started at once, each in a thread.

    The first GeneratorError (or other exception) of any call is raised,
    named by its chain, once all have ended.
    """
    start = threading.Barrier(len(calls))
    found, failed = {}, {}

    def run(key, call):
        try:
            start.wait(timeout=timeout_s)
            found[key] = call()
        except BaseException as exc:    # re-raised in the caller's thread
            failed[key] = exc

    threads = [threading.Thread(target=run, args=item, daemon=True,
                                name='chain-%s' % item[0])
               for item in sorted(calls.items())]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)
    hung = [t.name for t in threads if t.is_alive()]
    if hung:
        raise trial.GeneratorError(
            guards.GENERATOR_STALLED,
            '%s still running %.0f s after the trial was due to end'
            % (', '.join(hung), timeout_s))
    for key, exc in sorted(failed.items()):
        if isinstance(exc, trial.GeneratorError):
            raise trial.GeneratorError(exc.cause, 'chain %s: %s'
                                       % (key, exc.detail)) from exc
        raise exc
    return found
