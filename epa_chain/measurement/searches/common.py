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

"""What every search shares: running and recording trials, and outcomes.

Searches never call the generator directly: `TrialRecorder.run` checks
every result with the guards (an error stops the search, it never becomes
a figure), keeps the trial for the results file, counts trial-seconds and
prints one progress line.
"""

import dataclasses
import time
import typing

from epa_chain.measurement import guards
from epa_chain.measurement import results
from epa_chain.measurement import trial

STATUS_FOUND = 'found'          # both bounds measured
STATUS_MAX_LOAD = 'max_load'    # the goal holds at the maximum load
STATUS_BELOW_MIN = 'below_min'  # the goal fails even at the minimum load


def bound_status(lower_fps, upper_fps):
    """How a goal ended, from which of its bounds a search measured."""
    if lower_fps is None:
        return STATUS_BELOW_MIN
    if upper_fps is None:
        return STATUS_MAX_LOAD
    return STATUS_FOUND


@dataclasses.dataclass
class GoalOutcome:
    """Where one loss-ratio goal ended: its bounds and reported figure.

    Loads are frames/s per direction. `lower_fps` meets the goal,
    `upper_fps` misses it; `throughput_fps` is the figure reported (the
    lower bound, or MLRsearch's conditional throughput).
    """

    name: str
    loss_ratio: float
    lower_fps: typing.Optional[float]
    upper_fps: typing.Optional[float]
    throughput_fps: typing.Optional[float]
    status: str
    trials: typing.Optional[int] = None
    trial_seconds: typing.Optional[float] = None
    details: dict = dataclasses.field(default_factory=dict)

    @property
    def relative_width(self):
        """(upper - lower) / upper, the precision MLRsearch also uses."""
        if self.lower_fps is None or self.upper_fps is None:
            return None
        return (self.upper_fps - self.lower_fps) / self.upper_fps

    def as_dict(self):
        data = dataclasses.asdict(self)
        data['relative_width'] = self.relative_width
        return data


@dataclasses.dataclass
class SearchOutcome:
    method: str
    goals: typing.List[GoalOutcome]
    details: dict = dataclasses.field(default_factory=dict)


def meets(result, loss_ratio):
    """True when the trial's aggregate loss ratio satisfies the goal."""
    return result.loss_ratio <= loss_ratio


class TrialRecorder:
    """Runs the trials of one case (frame size, flows, directions)."""

    #: What makes a trial invalid rather than a measurement, and may
    #: pass on a second run: the generator fell short of the asked rate
    #: or stopped answering for a while, or frames of an earlier trial
    #: arrived during this one (a guest the host did not schedule
    #: delivered what it held late). A switch that floods keeps doing so,
    #: and its second run fails too.
    RETRIED_CAUSES = (guards.RATE_SHORTFALL, guards.GENERATOR_STALLED,
                      guards.COUNTERS_INCONSISTENT)

    def __init__(self, generator, profile, label, progress=None,
                 link_bps=None, retries=0):
        self.generator = generator
        self.retries = retries
        #: trials run again, as the generator's errors said
        self.invalid = []
        self.profile = profile
        self.label = label
        self.progress = progress
        self.line_rate_fps = profile.frame_size.line_rate_fps(
            link_bps or generator.link_bps)
        self.records = []
        self.trial_seconds = 0.0
        self.measured_seconds = 0.0

    @property
    def count(self):
        return len(self.records)

    def run(self, load_fps, duration_s, phase, tags=None,
            measure_latency=False):
        """Run one trial; raise GeneratorError if it cannot be trusted."""
        spec = trial.TrialSpec(profile=self.profile, load_fps=load_fps,
                               duration_s=float(duration_s),
                               measure_latency=measure_latency)
        attempts = 0
        while True:
            started_at = time.time()
            try:
                result = self.generator.run_trial(spec)
                guards.check_trial(result, self.generator.rate_tolerance)
                break
            except trial.GeneratorError as error:
                if (error.cause not in self.RETRIED_CAUSES or
                        attempts >= self.retries):
                    raise
                attempts += 1
                self._invalid(spec, phase, started_at, error, attempts)
        record = results.trial_record(len(self.records), phase, tags or {},
                                      result)
        self.records.append(record)
        self.trial_seconds += spec.duration_s
        self.measured_seconds += result.duration_s or 0.0
        self._report(record, tags or {})
        return result

    def _invalid(self, spec, phase, started_at, error, attempt):
        self.invalid.append({
            'before_trial': len(self.records), 'phase': phase,
            'intended_fps': spec.load_fps, 'duration_s': spec.duration_s,
            'started_at': started_at, 'cause': error.cause,
            'detail': error.detail})
        if self.progress:
            self.progress('%s: trial %d %s: invalid, %s; running it again '
                          '(%d of %d)' % (self.label, len(self.records) + 1,
                                          phase, error, attempt,
                                          self.retries))

    def since(self, start):
        """(trials, intended seconds) of the records from index `start`."""
        chosen = self.records[start:]
        return len(chosen), sum(r['duration_s'] for r in chosen)

    def _report(self, record, tags):
        if not self.progress:
            return
        tag_text = ' '.join('%s=%s' % item for item in sorted(tags.items()))
        measured = record.get('measured_duration_s')
        # A generator may send longer than asked (PROX's latency window).
        sent = (' (sent %.3g s)' % measured if measured and
                measured > record['duration_s'] * 1.2 else '')
        self.progress(
            '%s: trial %d %s%s: %s fps/dir (%.2f %% line) for %g s%s: '
            'loss %.6f %%' % (
                self.label, record['index'] + 1, record['phase'],
                ' ' + tag_text if tag_text else '',
                format(int(round(record['intended_fps'])), ','),
                100.0 * record['intended_fps'] / self.line_rate_fps,
                record['duration_s'], sent, 100.0 * record['loss_ratio']))
