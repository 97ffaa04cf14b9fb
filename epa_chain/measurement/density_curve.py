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

"""The density curve: throughput against the number of chains measured.

Written by `epa-chain local run --chain-counts` (a run per N) and the
Tempest scenarios' density sweep (1 .. N of a stack's chains carrying
traffic). Per N and frame size: the aggregate lossless rate (what the
search found on the summed counters), the mean per chain (aggregate /
N), the slowest chain at the trial that set the aggregate, and the
per-chain rate as a ratio to the first N's. Pure functions of the
results documents, and the plot.
"""

import os

from epa_chain.measurement import chain_tables
from epa_chain.measurement import readers
from epa_chain.measurement import results


def curve(runs):
    """The density table (schema epa-chain/density/1).

    runs: (chain count, results document) pairs, first the reference.
    """
    rows = [_row(count, document, case) for count, document in runs
            for case in document['cases']]
    first = {}
    for row in rows:
        first.setdefault((row['frame_size'], row['flows']), row)
    for row in rows:
        base = first[row['frame_size'], row['flows']]
        # A lower bound (the search reached its highest load) is no rate
        # to divide: the ratio would be the cap's, not the chains'.
        row['ratio'] = (row['per_chain_fps'] / base['per_chain_fps']
                        if row['per_chain_fps'] and base['per_chain_fps'] and
                        not (row['at_least'] or base['at_least']) else None)
    return {'schema': results.DENSITY_SCHEMA_ID,
            'goal': _strictest(runs[0][1]),
            'reference_chain_count': runs[0][0],
            'rows': rows, 'runs': [document for _count, document in runs]}


def _strictest(document):
    goals = document['parameters']['loss_goals']
    return min(goals, key=goals.get)


def _row(count, document, case):
    goal = readers.goal_of(case, _strictest(document))
    total = (goal or {}).get('throughput_fps')
    trial = chain_tables.trial_at(case, goal) if goal else None
    chains = chain_tables.chain_figures(trial) if trial else {}
    if count == 1 and trial:
        chains = {0: ('measured', total, sum(
            d['achieved_fps'] for d in trial['directions']) /
            len(trial['directions']), trial['loss_ratio'])}
    return {'chain_count': count,
            'frame_size': readers.frame_size_of(case).label,
            'flows': case['flows'],
            'aggregate_fps': total,
            'at_least': bool(goal and readers.is_lower_bound(case, goal)),
            'per_chain_fps': total / count if total else None,
            'chains_achieved_fps': {str(k): achieved for k, (
                _role, _offered, achieved, _loss) in chains.items()},
            'slowest_chain_fps': min((f[2] for f in chains.values()),
                                     default=None)}


def render(table):
    """The curve as text: one line per N and frame size."""
    lines = ['Density: lossless rate (%s, fps per direction) by number of '
             'chains measured together; per chain as a ratio to %d '
             'chain%s' % (table['goal'], table['reference_chain_count'],
                          '' if table['reference_chain_count'] == 1
                          else 's'),
             '  '.join('%-18s' % h for h in (
                 'Chains', 'Frame (B)', 'Flows', 'Aggregate', 'Per chain',
                 'Slowest chain', 'Ratio'))]
    for row in table['rows']:
        bound = readers.AT_LEAST if row['at_least'] else ''
        lines.append('  '.join('%-18s' % c for c in (
            row['chain_count'], row['frame_size'], row['flows'],
            bound + _fps(row['aggregate_fps']),
            bound + _fps(row['per_chain_fps']),
            _fps(row['slowest_chain_fps']),
            '-' if row['ratio'] is None else '%.2f' % row['ratio'])))
    if any(row['at_least'] for row in table['rows']):
        lines.append('%s: the search reached its highest load with the goal '
                     'still met: only a lower bound, so no ratio (raise the '
                     'highest load to see where the chains stop)'
                     % readers.AT_LEAST.strip())
    return '\n'.join(lines) + '\n'


def _fps(value):
    return '-' if value is None else readers.count(value)


def plot(table, out_dir, option):
    """density.png: aggregate and per-chain rate against N, per size."""
    from epa_chain.measurement import plots

    pyplot = plots.pyplot_module()
    figure, axis = pyplot.subplots(figsize=(7, 4.5))
    for label in dict.fromkeys(r['frame_size'] for r in table['rows']):
        rows = [r for r in table['rows'] if r['frame_size'] == label and
                r['aggregate_fps']]
        counts = [r['chain_count'] for r in rows]
        axis.plot(counts, [r['aggregate_fps'] for r in rows], 'o-',
                  label='%s B aggregate' % label)
        axis.plot(counts, [r['per_chain_fps'] for r in rows], 's--',
                  label='%s B per chain' % label)
    axis.set_xlabel('chains measured together')
    axis.set_ylabel('lossless rate (%s), fps per direction' % table['goal'])
    axis.set_title('Service density')
    axis.xaxis.get_major_locator().set_params(integer=True)
    axis.legend(fontsize='small')
    axis.grid(True, alpha=0.3)
    return plots.save(figure, os.path.join(out_dir, 'density.png'), option)
