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
import math
import os
import time
import typing

from epa_chain.measurement import results
from epa_chain.measurement import searches
from epa_chain.measurement.searches import common
from epa_chain.measurement import soak
from epa_chain.measurement import trial

METHODS = tuple(searches.METHODS)
DEFAULT_LOSS_GOALS = {'NDR': 0.0, 'PDR': 0.005}
# With no minimum given: 0.1 % of the maximum load.
DEFAULT_MIN_LOAD_FRACTION = 0.001


def _fail(field, value, fix):
    raise ValueError('Campaign.%s=%r: %s' % (field, value, fix))


@dataclasses.dataclass
class Campaign:
    """What to measure and how; see doc/source/measurement.rst."""

    frame_sizes: typing.Sequence = (trial.FrameSize(size=64),)
    flow_counts: typing.Sequence[int] = (1,)
    directions: typing.Tuple[str, ...] = ('forward',)
    method: str = 'mlrsearch'
    trial_duration_s: float = 60.0
    loss_goals: typing.Dict[str, float] = dataclasses.field(
        default_factory=lambda: dict(DEFAULT_LOSS_GOALS))
    resolution: float = 0.005
    repetitions: int = 3
    max_load_fps: typing.Optional[float] = None
    min_load_fps: typing.Optional[float] = None
    linear_steps: int = 100
    latency_load_fraction: float = 0.9
    latency_duration_s: float = 60.0
    soak_duration_s: float = 0.0
    results_dir: typing.Optional[str] = None
    # Additions to the agreed interface, all optional:
    #: VNFs in the chain, for seed 001's switching-operations figure
    chain_length: typing.Optional[int] = None
    #: length of one soak interval (one trial, one partial save)
    soak_interval_s: float = 60.0
    #: MLRsearch's first, short trials and its coarser targets
    mlr_initial_trial_duration_s: float = 1.0
    mlr_preceding_targets: int = 2
    #: share of bad trial-seconds a lower bound may hold (0: RFC 2544-like)
    mlr_exceed_ratio: float = 0.0

    def __post_init__(self):
        self.frame_sizes = self._frame_sizes(self.frame_sizes)
        self._check_flows()
        self._check_directions()
        if self.method not in METHODS:
            _fail('method', self.method, 'choose one of %s'
                  % ', '.join(METHODS))
        self._positive('trial_duration_s')
        self._check_goals()
        if not 0.0 < self.resolution < 1.0:
            _fail('resolution', self.resolution, 'give a relative width '
                  'between 0 and 1, e.g. 0.005 for 0.5 %')
        self._integer('repetitions', 1)
        self._integer('linear_steps', 1)
        for name in ('max_load_fps', 'min_load_fps'):
            if getattr(self, name) is not None:
                self._positive(name)
        both = None not in (self.max_load_fps, self.min_load_fps)
        if both and self.min_load_fps >= self.max_load_fps:
            _fail('min_load_fps', self.min_load_fps,
                  'must be below max_load_fps (%r)' % self.max_load_fps)
        if not 0.0 < self.latency_load_fraction <= 1.0:
            _fail('latency_load_fraction', self.latency_load_fraction,
                  'give a fraction of the throughput in (0, 1]')
        for name in ('latency_duration_s', 'soak_duration_s'):
            if getattr(self, name) < 0:
                _fail(name, getattr(self, name), 'give 0 to disable it or '
                      'a duration in seconds')
        self._positive('soak_interval_s')
        if self.soak_duration_s > 0 and not self.results_dir:
            _fail('results_dir', self.results_dir, 'a soak writes partial '
                  'results as it goes: give a directory')
        if self.chain_length is not None:
            self._integer('chain_length', 0)
        self._positive('mlr_initial_trial_duration_s')
        self._integer('mlr_preceding_targets', 0)
        if not 0.0 <= self.mlr_exceed_ratio < 1.0:
            _fail('mlr_exceed_ratio', self.mlr_exceed_ratio,
                  'give a ratio in [0, 1)')

    @staticmethod
    def _frame_sizes(values):
        if isinstance(values, (str, int, trial.FrameSize)):
            values = [values]
        sizes = []
        for value in values or ():
            if isinstance(value, trial.FrameSize):
                sizes.append(value)
                continue
            try:
                sizes.append(trial.FrameSize.parse(value))
            except ValueError as error:
                _fail('frame_sizes', value, 'give sizes 64..9018 bytes, '
                      '"imix" or "64:7,570:4,1518:1" (%s)' % error)
        if not sizes:
            _fail('frame_sizes', values, 'give at least one frame size')
        return sizes

    def _check_flows(self):
        flows = list(self.flow_counts or ())
        whole = all(isinstance(f, int) and not isinstance(f, bool) and
                    f >= 1 for f in flows)
        if not flows or not whole:
            _fail('flow_counts', self.flow_counts,
                  'give a list of whole numbers >= 1, e.g. [1, 1000]')
        self.flow_counts = flows

    def _check_directions(self):
        directions = tuple(self.directions or ())
        if (not directions or set(directions) - set(trial.DIRECTIONS) or
                len(set(directions)) != len(directions)):
            _fail('directions', self.directions,
                  "give ('forward',) or ('forward', 'reverse')")
        self.directions = directions

    def _check_goals(self):
        goals = self.loss_goals
        if not isinstance(goals, dict) or not goals:
            _fail('loss_goals', goals, "give a dict name -> loss ratio, "
                  "e.g. {'NDR': 0.0, 'PDR': 0.005}")
        for name, ratio in goals.items():
            if not isinstance(ratio, (int, float)) or not 0 <= ratio < 1:
                _fail('loss_goals', goals, 'loss ratio of %s must be in '
                      '[0, 1), e.g. 0.005 for 0.5 %%' % name)
        if len(set(goals.values())) != len(goals):
            _fail('loss_goals', goals, 'two goals have the same loss ratio')
        self.loss_goals = {name: float(ratio)
                           for name, ratio in goals.items()}

    def _positive(self, name):
        value = getattr(self, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not value > 0 or math.isinf(value):
            _fail(name, value, 'give a positive number')

    def _integer(self, name, low):
        value = getattr(self, name)
        if isinstance(value, bool) or not isinstance(value, int) or \
                value < low:
            _fail(name, value, 'give a whole number >= %d' % low)

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
    """Rewrites the partial document in results_dir after each step."""

    def __init__(self, results_dir, document):
        self.document = document
        self.path = None
        if results_dir:
            stamp = time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())
            self.path = os.path.join(
                results_dir, 'epa-chain-%s-%s.json' % (document['method'],
                                                       stamp))

    def save(self):
        if self.path:
            results.write_json(self.document, self.path)


def _case_label(frame_size, flows, directions):
    return '%s B, %d flow%s, %s' % (
        frame_size.label, flows, '' if flows == 1 else 's',
        '+'.join(directions))


def _reference_goal(outcome):
    """The strictest goal that has a figure (NDR before PDR)."""
    with_figure = [g for g in outcome.goals if g.throughput_fps]
    if not with_figure:
        return None
    return min(with_figure, key=lambda g: g.loss_ratio)


def _run_case(generator, plan, frame_size, flows, progress, saver):
    profile = trial.TrafficProfile(frame_size=frame_size, flows=flows,
                                   directions=plan.directions)
    label = _case_label(frame_size, flows, plan.directions)
    recorder = common.TrialRecorder(generator, profile, label, progress)
    max_load = recorder.line_rate_fps
    if plan.max_load_fps is not None:
        max_load = min(max_load, plan.max_load_fps)
    min_load = plan.min_load_fps or max_load * DEFAULT_MIN_LOAD_FRACTION
    if min_load >= max_load:
        # Line rate of a big frame can fall below a minimum meant for
        # small ones; the case records the floor actually used.
        min_load = max_load * DEFAULT_MIN_LOAD_FRACTION
    case = {
        'frame_size': results.frame_size_dict(frame_size), 'flows': flows,
        'directions': list(plan.directions),
        'line_rate_fps': recorder.line_rate_fps, 'max_load_fps': max_load,
        'min_load_fps': min_load, 'search': None, 'latency': None,
        'soak': None, 'trials': recorder.records, 'totals': None,
        'error': None,
    }

    def checkpoint():
        case['totals'] = {'trials': recorder.count,
                          'trial_seconds': recorder.trial_seconds,
                          'measured_seconds': recorder.measured_seconds}
        saver.save()

    saver.document['cases'].append(case)
    phase = 'search'
    try:
        outcome = searches.search(plan.method, recorder, plan, min_load,
                                  max_load)
        case['search'] = {
            'method': outcome.method,
            'goals': [goal.as_dict() for goal in outcome.goals],
            'details': outcome.details, 'trials': recorder.count,
            'trial_seconds': recorder.trial_seconds}
        _say(progress, label, outcome, recorder)
        checkpoint()
        reference = _reference_goal(outcome)
        if reference is not None:
            load = reference.throughput_fps * plan.latency_load_fraction
            if plan.latency_duration_s > 0:
                phase = 'latency'
                case['latency'] = _latency_test(recorder, plan, reference,
                                                load)
                checkpoint()
            if plan.soak_duration_s > 0:
                phase = 'soak'

                def save_soak(state):
                    case['soak'] = state
                    checkpoint()
                soak.run(recorder, load, plan.soak_duration_s,
                         plan.soak_interval_s, save_soak,
                         tags={'goal': reference.name})
        elif progress:
            progress('%s: no goal has a throughput figure; latency not '
                     'measured' % label)
    except trial.GeneratorError as error:
        case['error'] = {'cause': error.cause, 'detail': error.detail,
                         'phase': phase}
        if progress:
            progress('%s: ERROR during %s: %s' % (label, phase, error))
    checkpoint()
    return case


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


def _say(progress, label, outcome, recorder):
    if not progress:
        return
    parts = []
    for goal in outcome.goals:
        if goal.throughput_fps is None:
            parts.append('%s below the minimum load' % goal.name)
        else:
            parts.append('%s %s fps/dir (%.2f %% line)' % (
                goal.name, format(int(goal.throughput_fps), ','),
                100.0 * goal.throughput_fps / recorder.line_rate_fps))
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


def write_json(document, path):
    """Write the document to `path` (atomically); returns the path."""
    return results.write_json(document, path)


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
