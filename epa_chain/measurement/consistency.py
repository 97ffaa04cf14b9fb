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

"""Whether a case's figures agree with its own trials (issue 32).

On a noisy system under test one search can contradict itself: a load
(or a lower one) meets a goal and a later trial, no longer, misses it,
a looser goal (PDR) ends below a stricter one (NDR), or the latency
trial, below the reference throughput, loses frames. Each is an Issue
naming its goals, trials and loads; the case's `consistency` record
(results-2.json) holds them, and the tables, the console line and the
KPI verdicts mark the goals they touch. A pure function of the case:
documents written before the record existed are checked on the fly
(of_case).
"""

import dataclasses
import typing

from epa_chain.measurement import readers

PASS_THEN_FAIL = 'pass_then_fail'
PDR_BELOW_NDR = 'looser_goal_below_stricter'
LOSSY_LATENCY = 'lossy_latency_trial'
KINDS = (PASS_THEN_FAIL, PDR_BELOW_NDR, LOSSY_LATENCY)
# Printed after an inconsistent figure, with NOTE under the table.
MARK = ' (!)'
NOTE = ('(!) : inconsistent: the search\'s own trials contradict this '
        'figure (noise on the system under test); see below and the '
        'results file\'s consistency record')


@dataclasses.dataclass(frozen=True)
class Issue:
    kind: str                        # one of KINDS
    goals: typing.Tuple[str, ...]    # the goals whose figures it touches
    trials: typing.Tuple[int, ...]   # indices into the case's trials
    loads_fps: typing.Tuple[float, ...]
    message: str

    def as_dict(self):
        return {'kind': self.kind, 'goals': list(self.goals),
                'trials': list(self.trials),
                'loads_fps': list(self.loads_fps), 'message': self.message}


def _fps(value):
    return '%s fps/dir' % format(int(round(value)), ',')


def _goals(case):
    return [g for g in (case.get('search') or {}).get('goals', [])]


def _passed_before(passed, load, duration):
    """The highest-load trial of `passed` at least as high and as long.

    A longer trial is the harder test (more frames, more time for a
    transient): a short trial that passed contradicts no longer one.
    """
    as_hard = [t for t in passed if t['duration_s'] >= duration and
               t['intended_fps'] * (1 + 1e-9) >= load]
    return max(as_hard, key=lambda t: t['intended_fps'], default=None)


def _pass_then_fail(case, goal):
    """A search trial missing `goal` after one as high and long met it."""
    passed = []
    for record in case.get('trials', []):
        if record['phase'] != 'search':
            continue
        if record['loss_ratio'] <= goal['loss_ratio']:
            passed.append(record)
            continue
        load = record['intended_fps']
        before = _passed_before(passed, load, record['duration_s'])
        if before is not None:
            return Issue(
                PASS_THEN_FAIL, (goal['name'],),
                (before['index'], record['index']),
                (before['intended_fps'], load),
                '%s: trial %d met it at %s, trial %d then lost %.4g %% at '
                '%s' % (goal['name'], before['index'],
                        _fps(before['intended_fps']), record['index'],
                        record['loss_ratio'] * 100, _fps(load)))
    return None


def _looser_below_stricter(goals):
    """Issues of a goal allowing more loss with a lower figure."""
    found = []
    figured = [g for g in goals if g.get('throughput_fps') is not None]
    for strict in figured:
        for loose in figured:
            if loose['loss_ratio'] > strict['loss_ratio'] and \
                    loose['throughput_fps'] < strict['throughput_fps']:
                found.append(Issue(
                    PDR_BELOW_NDR, (strict['name'], loose['name']), (),
                    (strict['throughput_fps'], loose['throughput_fps']),
                    '%s %s is below %s %s, a goal allowing less loss'
                    % (loose['name'], _fps(loose['throughput_fps']),
                       strict['name'], _fps(strict['throughput_fps']))))
    return found


def _lossy_latency(case, goals):
    test = case.get('latency')
    if not test or test['trial'] >= len(case.get('trials', [])):
        return None
    record = case['trials'][test['trial']]
    goal = next((g for g in goals if g['name'] == test['reference_goal']),
                None)
    if goal is None or record['loss_ratio'] <= goal['loss_ratio']:
        return None
    return Issue(LOSSY_LATENCY, (goal['name'],), (record['index'],),
                 (record['intended_fps'],),
                 'the latency trial %d at %s (%g %% of %s) lost %.4g %%, '
                 'more than %s allows' % (
                     record['index'], _fps(record['intended_fps']),
                     test['fraction'] * 100, goal['name'],
                     record['loss_ratio'] * 100, goal['name']))


def check(case):
    """(Issue, ...) of one case of a results document."""
    goals = _goals(case)
    found = [_pass_then_fail(case, goal) for goal in goals]
    found += _looser_below_stricter(goals)
    found.append(_lossy_latency(case, goals))
    return tuple(issue for issue in found if issue is not None)


def as_record(issues):
    """The case's `consistency` (schema results-2.json)."""
    return {'consistent': not issues,
            'inconsistent_goals': sorted({g for i in issues
                                          for g in i.goals}),
            'issues': [i.as_dict() for i in issues]}


def record(case, progress=None):
    """Check `case`, record it there; one progress line if inconsistent."""
    issues = check(case)
    case['consistency'] = as_record(issues)
    if issues and progress:
        progress('%s: INCONSISTENT%s: %s' % (
            case_name(case), MARK, '; '.join(i.message for i in issues)))
    return case['consistency']


def case_name(case):
    """'64 B, 1 flow, forward': the case as progress names it.

    A case of --repeat N says which repetition it came from.
    """
    label = readers.case_label(case['frame_size']['label'], case['flows'],
                               case['directions'])
    if case.get('repetition'):
        label += ' (repetition %d)' % case['repetition']
    return label


def of_case(case):
    """The case's consistency record, computed when it was not written."""
    return case.get('consistency') or as_record(check(case))


def inconsistent_goals(case):
    """Names of the goals whose figures the case marks inconsistent."""
    return set(of_case(case)['inconsistent_goals'])


def messages(case):
    return [issue['message'] for issue in of_case(case)['issues']]
