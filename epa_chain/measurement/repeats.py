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

"""A campaign run N times (--repeat N), and the spread of its figures.

Not the searches' `repetitions` (N trials per step of best-of-n and
worst-of-n): here the whole campaign, every search, runs again. One
document keeps every repetition's cases, each tagged "repetition": k
(from 1), and a "spread" with one row per frame size, flow count,
directions and goal: each repetition's figure, their median (the lower
middle of an even count, so it is a measured figure with a repetition),
minimum and maximum, each with the repetition it came from (CSIT's
trending tables report the same).

    document = run(lambda: campaign.run(generator, plan, say), 3, say)
    title, headers, rows, footer = spread_table(document)
"""

from epa_chain.chain import directions as chain_directions
from epa_chain.measurement import readers

#: The goal's field a spread row is of (what the figure is).
FIGURE = 'throughput_fps'
_TOTALS = ('trials', 'trial_seconds', 'measured_seconds', 'wall_seconds')


def run(run_once, repeat, progress=None):
    """Call `run_once()` `repeat` times; one merged document.

    `run_once` returns a campaign's results document. With `repeat` 1
    its document is returned unchanged (no spread).
    """
    if repeat <= 1:
        return run_once()
    documents = []
    for k in range(1, repeat + 1):
        if progress:
            progress('repetition %d of %d' % (k, repeat))
        documents.append(run_once())
    return merge(documents)


def merge(documents):
    """The documents of each repetition as one, with its spread."""
    merged = dict(documents[0])
    merged['cases'] = [dict(case, repetition=k)
                       for k, document in enumerate(documents, 1)
                       for case in document['cases']]
    merged['totals'] = dict(documents[0]['totals'])
    for name in _TOTALS:
        if name in merged['totals']:
            merged['totals'][name] = sum(d['totals'].get(name) or 0
                                         for d in documents)
    merged['complete'] = all(d.get('complete') for d in documents)
    # The plan's goals too: a case that ended in an error has none, and
    # its row says n/a rather than vanish.
    goals = list((merged.get('parameters') or {}).get('loss_goals') or ())
    merged['spread'] = {'repeat': len(documents),
                        'rows': spread_rows(merged['cases'], len(documents),
                                            goals)}
    return merged


def _key(case, goal):
    return (case['frame_size']['label'], case['flows'],
            chain_directions.word(tuple(case['directions'])), goal)


def _figure(case, goal):
    if case.get('error'):
        return None
    found = readers.goal_of(case, goal)
    return None if found is None else found.get(FIGURE)


def _inconsistent(case, goal):
    """Whether the case's consistency record marks `goal`; None: no record.

    Documents written before the record existed have none: the row then
    says nothing (the schema's optional "inconsistent").
    """
    record = case.get('consistency')
    if not isinstance(record, dict):
        return None
    return goal in record.get('inconsistent_goals', ())


def spread_rows(cases, repeat, goals=()):
    """One spread row per (frame size, flows, directions, goal).

    The goals are `goals` and any other a case's search reports.
    """
    rows, order = {}, []
    goals = list(goals) + [name for name in readers.goal_names(
        {'cases': cases}) if name not in goals]
    for case in cases:
        for goal in goals:
            key = _key(case, goal)
            if key not in rows:
                rows[key] = {'values': [None] * repeat, 'flags': []}
                order.append(key)
            rows[key]['values'][case['repetition'] - 1] = _figure(case, goal)
            rows[key]['flags'].append(_inconsistent(case, goal))
    return [_row(key, rows[key]['values'], rows[key]['flags'])
            for key in order]


def _row(key, values, flags):
    frame_size, flows, directions, goal = key
    row = {'frame_size': frame_size, 'flows': flows,
           'directions': directions, 'goal': goal, 'figure': FIGURE,
           'values': values}
    row.update(statistics(values))
    if any(flag is not None for flag in flags):
        row['inconsistent'] = any(flags)
    return row


def statistics(values):
    """Median (lower middle), min and max, each with its repetition."""
    measured = sorted((value, k) for k, value in enumerate(values, 1)
                      if value is not None)
    if not measured:
        return {name: None for name in (
            'median', 'min', 'max', 'median_repetition', 'min_repetition',
            'max_repetition')}
    median = measured[(len(measured) - 1) // 2]
    low, high = measured[0], measured[-1]
    return {'median': median[0], 'min': low[0], 'max': high[0],
            'median_repetition': median[1], 'min_repetition': low[1],
            'max_repetition': high[1]}


def _figure_text(value, repetition, bound=False):
    if value is None:
        return 'n/a'
    text = (readers.AT_LEAST if bound else '') + readers.count(value)
    return text if repetition is None else '%s (rep %d)' % (text,
                                                            repetition)


def _bounds(document):
    """{(row key, repetition)} of the figures that are only "at least"."""
    return {(_key(case, goal['name']), case.get('repetition'))
            for case in document['cases']
            for goal in (case.get('search') or {}).get('goals', [])
            if readers.is_lower_bound(case, goal)}


def _cells(row, bounds):
    key = (row['frame_size'], row['flows'], row['directions'], row['goal'])
    return [_figure_text(row[name], row[name + '_repetition'],
                         (key, row[name + '_repetition']) in bounds)
            for name in ('median', 'min', 'max')]


def spread_table(document):
    """(title, headers, rows, footer) of the spread, as report's tables."""
    spread = document['spread']
    title = ('Throughput over %d repetitions (frames/s per direction, '
             'the goal\'s %s)' % (spread['repeat'], FIGURE))
    headers = ['Frame size (B)', 'Flows', 'Directions', 'Goal', 'Median',
               'Min', 'Max']
    rows, bounds = [], _bounds(document)
    for row in spread['rows']:
        mark = ' *' if row.get('inconsistent') else ''
        rows.append([row['frame_size'], str(row['flows']),
                     row['directions'], row['goal'] + mark] +
                    _cells(row, bounds))
    footer = ('%d repetitions of the whole campaign (--repeat; not the '
              'searches\' --repetitions). Median: the middle figure (the '
              'lower middle of an even count); Min and Max: the lowest '
              'and highest; (rep k): the repetition it came from; n/a: no '
              'repetition has a figure.' % spread['repeat'])
    if any(row.get('inconsistent') for row in spread['rows']):
        footer += ' *: a repetition of this row failed a consistency check.'
    if bounds:
        footer += ' ' + readers.BOUND_NOTE + '.'
    return title, headers, rows, footer
