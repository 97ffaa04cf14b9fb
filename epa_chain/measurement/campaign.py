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

"""A measurement campaign: every frame size x flow count, one document.

For each case the configured search finds the throughput of every loss
goal, then a latency trial runs at a fraction of the strictest goal's
throughput (the seeds measure latency at the zero-loss rate), then an
optional soak. A GeneratorError ends the case with its cause and no
figure; the campaign goes on with the next case.

    plan = Campaign(frame_sizes=[FrameSize(size=64)], flow_counts=[1])
    document = run(generator, plan, progress=print)
    write_json(document, 'results.json')
"""

import dataclasses
import functools
import os
import time
import typing

from epa_chain.measurement import consistency
from epa_chain.measurement import options
from epa_chain.measurement import readers
from epa_chain.measurement import results
from epa_chain.measurement import searches
from epa_chain.measurement.searches import common
from epa_chain.measurement import soak
from epa_chain.measurement import trial
from epa_chain import outputs

# With no minimum given: 0.1 % of the maximum load.
DEFAULT_MIN_LOAD_FRACTION = 0.001

_default = options.field_default


@dataclasses.dataclass(frozen=True)
class Campaign:
    """What to measure and how; see doc/source/measurement.rst.

    Defaults, bounds and help of every field: measurement/options.py. A
    refused value raises options.FieldError (a ValueError) naming the
    field; `dataclasses.replace` checks again. Frozen: a value is checked
    once, here, and nothing changes it after (__post_init__ stores the
    checked values itself).
    """

    frame_sizes: typing.Sequence = _default('frame_sizes')
    flow_counts: typing.Sequence[int] = _default('flow_counts')
    directions: typing.Tuple[str, ...] = _default('directions')
    method: str = _default('method')
    trial_duration_s: float = _default('trial_duration_s')
    loss_goals: typing.Dict[str, float] = _default('loss_goals')
    resolution: float = _default('resolution')
    repetitions: int = _default('repetitions')
    max_load_fps: typing.Optional[float] = _default('max_load_fps')
    min_load_fps: typing.Optional[float] = _default('min_load_fps')
    linear_steps: int = _default('linear_steps')
    latency_load_fraction: float = _default('latency_load_fraction')
    latency_duration_s: float = _default('latency_duration_s')
    soak_duration_s: float = _default('soak_duration_s')
    results_dir: typing.Optional[str] = _default('results_dir')
    # Additions to the agreed interface, all optional:
    #: VNFs in the chain, for seed 001's switching-operations figure
    chain_length: typing.Optional[int] = _default('chain_length')
    #: length of one soak interval (one trial, one partial save)
    soak_interval_s: float = _default('soak_interval_s')
    #: MLRsearch's first, short trials and its coarser targets
    mlr_initial_trial_duration_s: float = _default(
        'mlr_initial_trial_duration_s')
    mlr_preceding_targets: int = _default('mlr_preceding_targets')
    #: what the options below default to where None (options.PROFILES)
    search_profile: str = _default('search_profile')
    #: share of bad trial-seconds a lower bound may hold (0: RFC 2544-like)
    mlr_exceed_ratio: float = _default('mlr_exceed_ratio')
    #: full trials' seconds that make a load an MLRsearch bound
    mlr_duration_sum_trials: float = _default('mlr_duration_sum_trials')
    #: RFC 2544 runs a narrowly failed trial again up to this many times
    loss_verification_repeats: int = _default('loss_verification_repeats')
    #: "narrowly": fewer frames lost than this beyond the goal's allowance
    loss_verification_frames: int = _default('loss_verification_frames')
    #: or a loss ratio above the goal's by less than this
    loss_verification_ratio: float = _default('loss_verification_ratio')
    #: runs again of a trial the generator could not offer as asked
    invalid_trial_retries: int = _default('invalid_trial_retries')
    #: runs of the whole campaign (measurement/repeats.py; the callers')
    repeat: int = _default('repeat')

    def __post_init__(self):
        store = functools.partial(object.__setattr__, self)
        store('search_profile', options.check('search_profile',
                                              self.search_profile))
        # None: the profile's value. A replace() keeps the values the
        # first profile set; give them as None to take another's.
        for name, value in options.profile_values(
                self.search_profile, vars(self)).items():
            store(name, value)
        for field in dataclasses.fields(self):
            store(field.name, options.check(field.name,
                                            getattr(self, field.name)))
        both = None not in (self.max_load_fps, self.min_load_fps)
        if both and self.min_load_fps >= self.max_load_fps:
            raise options.FieldError(
                'min_load_fps', self.min_load_fps, 'must be below the '
                'highest load (%r)' % self.max_load_fps)
        if self.soak_duration_s > 0 and not self.results_dir:
            raise options.FieldError(
                'results_dir', self.results_dir, 'a soak writes partial '
                'results as it goes: give a directory')
        intervals = self.soak_duration_s / self.soak_interval_s
        if intervals > options.MAX_SOAK_INTERVALS:
            raise options.FieldError(
                'soak_interval_s', self.soak_interval_s, 'a soak of %g s '
                'in intervals this short makes %d intervals; at most %d '
                '(each one rewrites the results file): make it at least '
                '%g' % (self.soak_duration_s, intervals,
                        options.MAX_SOAK_INTERVALS,
                        self.soak_duration_s / options.MAX_SOAK_INTERVALS))

    def parameters(self):
        """The plan as it goes into the results file."""
        data = dataclasses.asdict(self)
        data['frame_sizes'] = [results.frame_size_dict(f)
                               for f in self.frame_sizes]
        data['directions'] = list(self.directions)
        data['flow_counts'] = list(self.flow_counts)
        data.pop('method')
        return data


class _Saver:
    """Rewrites the partial document in results_dir after each step.

    The path is checked before the first trial, and again at every save
    (results.write_json): a link or device planted there is refused.
    """

    OPTION = 'results_dir'

    def __init__(self, results_dir, document):
        self.document = document
        self.path = None
        if results_dir:
            stamp = time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())
            self.path = outputs.check_file(os.path.join(
                results_dir, 'epa-chain-%s-%s.json' % (document['method'],
                                                       stamp)), self.OPTION)

    def save(self):
        if self.path:
            results.write_json(self.document, self.path, self.OPTION)


def _case_label(frame_size, flows, directions):
    return readers.case_label(frame_size.label, flows, directions)


def _reference_goal(outcome):
    """The strictest goal that has a figure (NDR before PDR)."""
    with_figure = [g for g in outcome.goals if g.throughput_fps]
    if not with_figure:
        return None
    return min(with_figure, key=lambda g: g.loss_ratio)


def _run_case(generator, plan, frame_size, flows, progress, saver):
    """One case: search, then latency and soak at the reference goal."""
    return _Case(generator, plan, frame_size, flows, progress, saver).run()


def _load_range(line_rate_fps, plan):
    """(min, max) frames/s a case's search may offer."""
    max_load = line_rate_fps
    if plan.max_load_fps is not None:
        max_load = min(max_load, plan.max_load_fps)
    min_load = plan.min_load_fps or max_load * DEFAULT_MIN_LOAD_FRACTION
    if min_load >= max_load:
        # Line rate of a big frame can fall below a minimum meant for
        # small ones; the case records the floor actually used.
        min_load = max_load * DEFAULT_MIN_LOAD_FRACTION
    return min_load, max_load


class _Case:
    """One case's record in the results, saved after every phase."""

    def __init__(self, generator, plan, frame_size, flows, progress, saver):
        profile = trial.TrafficProfile(frame_size=frame_size, flows=flows,
                                       directions=plan.directions)
        self.plan, self.progress, self.saver = plan, progress, saver
        self.label = _case_label(frame_size, flows, plan.directions)
        self.recorder = common.TrialRecorder(
            generator, profile, self.label, progress,
            retries=plan.invalid_trial_retries)
        self.min_load, self.max_load = _load_range(
            self.recorder.line_rate_fps, plan)
        self.phase = 'search'
        self.record = {
            'frame_size': results.frame_size_dict(frame_size),
            'flows': flows, 'directions': list(plan.directions),
            'line_rate_fps': self.recorder.line_rate_fps,
            'max_load_fps': self.max_load, 'min_load_fps': self.min_load,
            'search': None, 'latency': None, 'soak': None,
            'trials': self.recorder.records, 'totals': None, 'error': None,
        }

    def checkpoint(self):
        recorder = self.recorder
        self.record['totals'] = {
            'trials': recorder.count,
            'trial_seconds': recorder.trial_seconds,
            'measured_seconds': recorder.measured_seconds,
            'invalid_trials': recorder.invalid}
        self.saver.save()

    def run(self):
        self.saver.document['cases'].append(self.record)
        try:
            reference = self._search()
            if reference is not None:
                self._at_reference(reference)
            elif self.progress:
                self.progress('%s: no goal has a throughput figure; latency '
                              'not measured' % self.label)
        except trial.GeneratorError as error:
            self.record['error'] = {'cause': error.cause,
                                    'detail': error.detail,
                                    'phase': self.phase}
            if self.progress:
                self.progress('%s: ERROR during %s: %s'
                              % (self.label, self.phase, error))
        consistency.record(self.record, self.progress)
        self.checkpoint()
        return self.record

    def _search(self):
        """The throughput search; its reference goal (or None)."""
        recorder = self.recorder
        outcome = searches.search(self.plan.method, recorder, self.plan,
                                  self.min_load, self.max_load)
        self.record['search'] = {
            'method': outcome.method,
            'goals': [goal.as_dict() for goal in outcome.goals],
            'details': outcome.details, 'trials': recorder.count,
            'trial_seconds': recorder.trial_seconds}
        _say(self.progress, self.label, outcome, recorder, self.record)
        self.checkpoint()
        return _reference_goal(outcome)

    def _at_reference(self, reference):
        """Latency, then soak, at a fraction of the reference throughput."""
        plan = self.plan
        load = reference.throughput_fps * plan.latency_load_fraction
        if plan.latency_duration_s > 0:
            self.phase = 'latency'
            self.record['latency'] = _latency_test(self.recorder, plan,
                                                   reference, load)
            self.checkpoint()
        if plan.soak_duration_s > 0:
            self.phase = 'soak'

            def save_soak(state):
                self.record['soak'] = state
                self.checkpoint()
            soak.run(self.recorder, load, plan.soak_duration_s,
                     plan.soak_interval_s, save_soak,
                     tags={'goal': reference.name})


def _latency_test(recorder, plan, reference, load):
    recorder.run(load, plan.latency_duration_s, 'latency',
                 tags={'goal': reference.name}, measure_latency=True)
    record = recorder.records[-1]
    return {
        'reference_goal': reference.name,
        'fraction': plan.latency_load_fraction,
        'load_fps': load, 'duration_s': plan.latency_duration_s,
        'trial': record['index'],
        'directions': {d['direction']: d['latency']
                       for d in record['directions']},
    }


def _say(progress, label, outcome, recorder, case):
    if not progress:
        return
    parts = []
    for goal in outcome.goals:
        if goal.throughput_fps is None:
            parts.append('%s below the minimum load' % goal.name)
        else:
            bound = readers.is_lower_bound(case, goal.as_dict())
            parts.append('%s %s%s fps/dir (%.2f %% line)%s' % (
                goal.name, readers.AT_LEAST if bound else '',
                format(int(goal.throughput_fps), ','),
                100.0 * goal.throughput_fps / recorder.line_rate_fps,
                ', the maximum load' if bound else ''))
    progress('%s: %s: %s; %d trials, %g trial-seconds' % (
        label, outcome.method, ', '.join(parts), recorder.count,
        recorder.trial_seconds))


def run(generator, plan, progress=None):
    """Run the campaign; returns the results document (a dict)."""
    started = time.monotonic()
    document = results.new_document(plan.method, plan.parameters(),
                                    generator.describe())
    saver = _Saver(plan.results_dir, document)
    for frame_size in plan.frame_sizes:
        for flows in plan.flow_counts:
            _run_case(generator, plan, frame_size, flows, progress, saver)
    totals = document['totals']
    for case in document['cases']:
        totals['trials'] += case['totals']['trials']
        totals['trial_seconds'] += case['totals']['trial_seconds']
        totals['measured_seconds'] += case['totals']['measured_seconds']
    totals['wall_seconds'] = time.monotonic() - started
    document['complete'] = True
    saver.save()
    return document


def write_json(document, path, option='results file'):
    """Write the document to `path` (atomically); returns the path.

    An existing `path` that is not a regular file is refused (`option`
    names it), never replaced.
    """
    return results.write_json(document, path, option)


def errors(document):
    """(case label, cause, detail) of every case that ended in an error."""
    found = []
    for case in document['cases']:
        if case['error']:
            flows = case['flows']
            found.append(('%s B, %d flow%s' % (case['frame_size']['label'],
                                               flows,
                                               '' if flows == 1 else 's'),
                          case['error']['cause'], case['error']['detail']))
    return found
