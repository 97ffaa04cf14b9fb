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

"""A results document judged against a KPI file (kpi.py), and a baseline.

Every KPI gives one verdict per case it applies to (per direction for
delays): met, missed, or unknown when the results cannot show it either
way (a throughput that is only a lower bound below the floor, a
percentile known only as a range across the ceiling, a case that ended
in an error, a statistic the results do not hold). Only met passes: a
gate must not pass on what was not shown.
"""

import dataclasses

from epa_chain import findings
from epa_chain.measurement import consistency
from epa_chain.measurement import readers

MET, MISSED, UNKNOWN = 'met', 'MISSED', 'unknown'
# The KPI words on the one scale (epa_chain/findings.py): only met
# passes, and no verdict is no pass.
SOURCE = findings.Source(
    'kpi', 'epa-chain/results/2#kpi', ((MISSED, findings.FAILS),
                                       (UNKNOWN, findings.UNANSWERED),
                                       (MET, findings.PASSES)),
    'verdict', (('kpi', 'KPI'), ('case', 'CASE'), ('measured', 'MEASURED'),
                ('limit', 'LIMIT')), unanswered_passes=False)


@dataclasses.dataclass(frozen=True)
class Verdict:
    kpi: str
    case: str
    measured: str
    limit: str
    verdict: str
    note: str = ''

    def finding(self):
        """This verdict in the one model (epa_chain/findings.py)."""
        return findings.Finding(
            SOURCE, self.case, self.verdict, self.note, '',
            (('kpi', self.kpi), ('case', self.case),
             ('measured', self.measured), ('limit', self.limit)))


def judge(document, kpis, baseline=None):
    """[Verdict] of every KPI over every case it applies to."""
    verdicts = []
    for case in document['cases']:
        label = _case_label(case)
        size = readers.frame_size_of(case).label
        for floor in kpis.throughput:
            if floor.frame_size in (None, size):
                verdicts.append(_unless_inconsistent(
                    _throughput(document, case, label, floor), case,
                    floor.goal, kpis))
        for ceiling in kpis.latency:
            if ceiling.frame_size in (None, size):
                verdicts += _delays(case, label, ceiling, 'latency')
        for ceiling in kpis.pdv:
            if ceiling.frame_size in (None, size):
                verdicts += _delays(case, label, ceiling, 'pdv')
        if kpis.max_loss_ratio is not None:
            verdicts.append(_loss(case, label, kpis.max_loss_ratio))
        if kpis.max_regression_percent is not None and baseline is not None:
            verdicts += [_unless_inconsistent(
                verdict, case, verdict.kpi.split(' ')[0], kpis)
                for verdict in _regressions(case, label, baseline,
                                            kpis.max_regression_percent)]
    return verdicts


# Why a met verdict on a figure marked inconsistent is not met.
INCONSISTENT_NOTE = ('the figure is marked inconsistent (%s); write '
                     'allow_inconsistent: true in the KPI file to accept '
                     'it, or measure again (--search-profile noise-robust)')


def _unless_inconsistent(verdict, case, goal, kpis):
    """`verdict`, unknown instead of met when its goal's figure is marked.

    A figure its own trials contradict shows nothing either way (issue
    32); the KPI file's allow_inconsistent accepts it as it stands.
    """
    if verdict.verdict != MET or goal not in \
            consistency.inconsistent_goals(case):
        return verdict
    shown = verdict.measured + consistency.MARK
    if kpis.allow_inconsistent:
        return dataclasses.replace(verdict, measured=shown,
                                   note='inconsistent, allowed by the KPI '
                                   'file (allow_inconsistent)')
    return dataclasses.replace(
        verdict, measured=shown, verdict=UNKNOWN,
        note=INCONSISTENT_NOTE % '; '.join(consistency.messages(case)))


def passed(verdicts):
    return findings.passed(SOURCE, [v.finding() for v in verdicts])


def _case_label(case, direction=None):
    """The case as progress names it, or one direction of it."""
    return readers.case_label(readers.frame_size_of(case).label,
                              case['flows'],
                              [direction] if direction else case['directions'])


_count = readers.count
_us = readers.microseconds


def _throughput(document, case, label, floor):
    kpi = '%s %s' % (floor.goal, floor.unit)
    limit = '>= %s' % _count(floor.limit) if floor.unit != (
        'min_line_rate_percent') else '>= %g %%' % floor.limit
    goal = readers.goal_of(case, floor.goal)
    if case['error']:
        return Verdict(kpi, label, 'n/a', limit, UNKNOWN,
                       'the case ended in an error: %s'
                       % case['error']['cause'])
    if goal is None:
        return Verdict(kpi, label, 'n/a', limit, UNKNOWN,
                       'no %s goal in these results' % floor.goal)
    if goal['throughput_fps'] is None:
        return Verdict(kpi, label, 'below %s fps' % _count(
            case['min_load_fps']), limit, MISSED,
            'the goal failed at the minimum load')
    mbps, _, percent = readers.throughput_figures(
        case, goal, document['generator']['link_bps'])
    value = {'min_fps': goal['throughput_fps'],
             'min_bps': mbps * 1e6 / len(case['directions']),
             'min_line_rate_percent': percent}[floor.unit]
    bound = readers.is_lower_bound(case, goal)
    shown = (readers.AT_LEAST if bound else '') + (
        '%.2f %%' % value if floor.unit == 'min_line_rate_percent'
        else _count(value))
    if value >= floor.limit:
        return Verdict(kpi, label, shown, limit, MET)
    if bound:
        return Verdict(kpi, label, shown, limit, UNKNOWN,
                       'the search stopped at its maximum load, below the '
                       'floor: raise max_load_fps')
    return Verdict(kpi, label, shown, limit, MISSED)


def _delays(case, label, ceiling, kind):
    kpi = '%s %s (us)' % (kind, ceiling.statistic if ceiling.statistic in (
        'avg', 'max') else 'P' + ceiling.statistic)
    limit = '<= %s us' % format(ceiling.max_us, ',.10g')
    test = case['latency']
    if case['error'] or not test:
        return [Verdict(kpi, label, 'n/a', limit, UNKNOWN,
                        'no latency test in this case')]
    verdicts = []
    for direction, summary in sorted(test['directions'].items()):
        where = _case_label(case, direction)
        low, high, missing = _delay_range(summary, ceiling.statistic, kind)
        if missing:
            verdicts.append(Verdict(kpi, where, 'n/a', limit, UNKNOWN,
                                    missing))
            continue
        shown = _us(high) if low is None else '%s..%s' % (
            _us(low), _us(high))
        ceiling_ns = ceiling.max_us * 1e3
        if high <= ceiling_ns:
            verdicts.append(Verdict(kpi, where, shown, limit, MET))
        elif low is not None and low < ceiling_ns:
            verdicts.append(Verdict(kpi, where, shown, limit, UNKNOWN,
                                    'known only as a range across the '
                                    'ceiling (the generator\'s open-ended '
                                    'bucket)'))
        else:
            verdicts.append(Verdict(kpi, where, shown, limit, MISSED))
    return verdicts


def _delay_range(summary, statistic, kind):
    """(lower bound or None, value, why it is missing) in nanoseconds."""
    if not summary:
        return None, None, 'no delays measured in this direction'
    if statistic in ('avg', 'max'):
        value = summary['%s_ns' % statistic]
        return None, value, None if value is not None else (
            'the generator gave no %s' % statistic)
    beyond = (summary.get('percentiles_beyond_ns') or {}).get(statistic)
    if kind == 'pdv':
        pdv = summary.get('pdv_ns')
        value = (pdv or {}).get('percentiles', {}).get(statistic)
        offset = summary['min_ns']
    else:
        value = (summary.get('percentiles_ns') or {}).get(statistic)
        offset = 0.0
    if value is None:
        return None, None, 'the results hold no %s P%s' % (kind, statistic)
    return (None if beyond is None else max(0.0, beyond - offset)), value, \
        None


def _loss(case, label, ceiling):
    limit = '<= %g' % ceiling
    test = case['latency']
    if case['error'] or not test:
        return Verdict('loss (latency trial)', label, 'n/a', limit, UNKNOWN,
                       'no latency trial in this case')
    ratio = case['trials'][test['trial']]['loss_ratio']
    return Verdict('loss (latency trial)', label, '%g' % ratio, limit,
                   MET if ratio <= ceiling else MISSED)


def _regressions(case, label, baseline, allowed_percent):
    verdicts = []
    twin = _twin(baseline, case)
    for goal in (case['search'] or {}).get('goals', []):
        kpi = '%s vs baseline' % goal['name']
        limit = '>= %s %% of baseline' % format(100 - allowed_percent, 'g')
        before = readers.goal_of(twin, goal['name']) if twin else None
        if case['error'] or not before or not before['throughput_fps'] or \
                goal['throughput_fps'] is None:
            verdicts.append(Verdict(kpi, label, 'n/a', limit, UNKNOWN,
                                    'no figure to compare in both results'))
            continue
        ratio = goal['throughput_fps'] / before['throughput_fps']
        shown = '%.1f %% (%s of %s fps)' % (
            100 * ratio, _count(goal['throughput_fps']),
            _count(before['throughput_fps']))
        now_bound = readers.is_lower_bound(case, goal)
        then_bound = readers.is_lower_bound(twin, before)
        floor = 1 - allowed_percent / 100.0
        if ratio >= floor and not then_bound:
            verdict, note = MET, ''
        elif ratio < floor and not now_bound:
            verdict, note = MISSED, ''
        else:
            verdict, note = UNKNOWN, 'a figure is only a lower bound'
        verdicts.append(Verdict(kpi, label, shown, limit, verdict, note))
    return verdicts


def _twin(document, case):
    """The case of `document` with the same frame size, flows, directions."""
    key = (case['frame_size']['label'], case['flows'],
           tuple(case['directions']))
    for other in document['cases']:
        if (other['frame_size']['label'], other['flows'],
                tuple(other['directions'])) == key:
            return other
    return None


def record(verdicts, kpi_file):
    """The results document's `kpi`: the one findings shape.

    schemas/results-2.json; `kpi_file` is the KPI file judged by.
    """
    return findings.document(SOURCE, [v.finding() for v in verdicts],
                             kpi_file=kpi_file)


def from_record(recorded):
    """(Verdicts, KPI file) of a document's `kpi` (results 2 or 1)."""
    if 'findings' not in recorded:
        # results/1: {source: the KPI file, passed, verdicts: [...]}
        return ([Verdict(**v) for v in recorded['verdicts']],
                recorded['source'])
    return ([Verdict(f['kpi'], f['case'], f['measured'], f['limit'],
                     f['verdict'], f['message'])
             for f in recorded['findings']], recorded['kpi_file'])


def table(verdicts, source, baseline_path=None):
    """(title, headers, rows, footer) for report._table."""
    headers, rows = findings.grid(SOURCE, [v.finding() for v in verdicts])
    met = sum(v.verdict == MET for v in verdicts)
    footer = '%d of %d KPI checks met; %s' % (
        met, len(verdicts), 'PASS' if passed(verdicts) else 'FAIL')
    title = 'KPI verdicts (%s%s)' % (source, ', baseline %s' % (
        baseline_path) if baseline_path else '')
    return title, headers, rows, footer
