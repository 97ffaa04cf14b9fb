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

"""Chains measured together, read back: per chain, and beside neighbours.

Pure functions of results documents (measurement/together.py wrote each
chain's counters into directions[].chains): the NFVbench way of
reporting N chains, the aggregate and every chain at the aggregate's
throughput, and the noisy-neighbour comparison of one chain alone and
beside busy neighbours.
"""

from epa_chain.measurement import latency
from epa_chain.measurement import readers

#: two loads within this relative distance are the same trial's
SAME_LOAD = 1e-6


def trial_at(case, goal):
    """The search trial that set a goal's throughput, or None.

    The longest trial at exactly that load whose loss met the goal (the
    search's final one there); else the highest such load below it.
    """
    fps = (goal or {}).get('throughput_fps')
    if not fps:
        return None
    passed = [t for t in case.get('trials', [])
              if t['phase'] == 'search' and
              t['loss_ratio'] <= goal['loss_ratio'] and
              t['intended_fps'] <= fps * (1 + SAME_LOAD)]
    return max(passed, key=lambda t: (t['intended_fps'], t['duration_s']),
               default=None)


def chain_figures(trial):
    """{chain: (role, offered, achieved per direction, loss ratio)}."""
    figures = {}
    for direction in trial['directions']:
        for part in direction.get('chains') or ():
            role, tx, rx, offered, achieved = figures.get(
                part['chain'], (part['role'], 0, 0, 0.0, 0.0))
            figures[part['chain']] = (
                role, tx + part['tx_frames'], rx + part['rx_frames'],
                offered + part['offered_fps'],
                achieved + part['achieved_fps'])
    count = len(trial['directions'])
    return {chain: (role, offered / count, achieved / count,
                    max(0.0, (tx - rx) / tx) if tx else None)
            for chain, (role, tx, rx, offered, achieved)
            in sorted(figures.items())}


def chain_latency(case):
    """{chain: mean one-way delay (ns)} of the case's latency trial."""
    test = case.get('latency')
    if not test:
        return {}
    trial = next((t for t in case['trials']
                  if t['index'] == test['trial']), None)
    found = {}
    for direction in (trial or {}).get('directions', ()):
        for part in direction.get('chains') or ():
            found.setdefault(part['chain'], []).append(part['latency'])
    return {chain: (latency.combine(summaries) or {}).get('avg_ns')
            for chain, summaries in found.items()}


def per_chain_table(document):
    """(title, headers, rows, footer), or None for a one-chain document."""
    rows = []
    for case in document['cases']:
        for name in readers.goal_names(document):
            rows += _case_rows(case, name)
    if not rows:
        return None
    headers = ['Packet Size', 'Goal', 'Chain', 'Role', 'Offered (fps/dir)',
               'Achieved (fps/dir)', 'Loss (%)', 'Latency avg (us)']
    footer = ('Each chain at the trial that set the aggregate\'s '
              'throughput (all: the measured chains summed, the figure the '
              'search found); latency from the latency test trial.')
    return ('Chains measured together, per chain', headers, rows, footer)


def _case_rows(case, name):
    goal = readers.goal_of(case, name)
    trial = trial_at(case, goal) if goal else None
    figures = chain_figures(trial) if trial else {}
    if not figures:
        return []
    label = readers.frame_size_of(case).label
    delays = chain_latency(case)
    rows = [[label, name, 'all', 'measured',
             readers.count(trial['intended_fps']),
             readers.count(sum(d['achieved_fps']
                               for d in trial['directions']) /
                           len(trial['directions'])),
             '%.4f' % (100.0 * trial['loss_ratio']), '']]
    for chain, (role, offered, achieved, loss) in figures.items():
        rows.append([label, name, str(chain), role, readers.count(offered),
                     readers.count(achieved),
                     '-' if loss is None else '%.4f' % (100.0 * loss),
                     '-' if delays.get(chain) is None else
                     readers.microseconds(delays[chain])])
    return rows


def latency_avg_ns(case):
    """Mean one-way delay of a case's latency test, all directions."""
    test = (case or {}).get('latency')
    if not test:
        return None
    return (latency.combine(test['directions'].values()) or {}).get(
        'avg_ns')


def noisy_section(alone, document, fraction, background, same_load=None):
    """testbed.noisy_neighbour: chain 0 alone against beside neighbours.

    same_load: {(frame size label, flows): chain 0's latency summary
    beside the neighbours at its alone run's latency load, or an error
    in words} (local/runner.py same_load_latency).
    """
    reference = alone[0]
    same_load = same_load or {}
    rows = []
    for case in document['cases']:
        label = readers.frame_size_of(case).label
        before = next((c for c in reference['cases']
                       if readers.frame_size_of(c).label == label and
                       c['flows'] == case['flows']), None)
        beside = same_load.get((label, case['flows']))
        for name in readers.goal_names(document):
            rows.append(_noisy_row(label, name, before, case, beside))
    return {
        'measured_chain': 0, 'background_fraction': fraction,
        'alone': [{'chain': chain,
                   'lossless_fps': _lossless(doc),
                   'trials': doc['totals']['trials'],
                   'trial_seconds': doc['totals']['trial_seconds'],
                   'errors': _errors(doc)}
                  for chain, doc in enumerate(alone)],
        'background_fps': {str(chain): dict(loads)
                           for chain, loads in background.items()},
        'rows': rows}


def _errors(document):
    """The cases of a run alone that ended in an error, in words."""
    from epa_chain.measurement import campaign

    return ['%s: %s: %s' % item for item in campaign.errors(document)]


def _lossless(document):
    goals = document['parameters']['loss_goals']
    strictest = min(goals, key=goals.get)
    return {readers.frame_size_of(case).label: (
        readers.goal_of(case, strictest) or {}).get('throughput_fps')
        for case in document['cases']}


def _noisy_row(label, name, before, after, beside=None):
    """One frame size and goal; no ratio of a figure that is a bound.

    The latency ratio is at one load: the alone run's latency test
    against `beside`, chain 0's latency at that load with neighbours.
    """
    alone_goal = readers.goal_of(before, name) if before else None
    with_goal = readers.goal_of(after, name)
    alone_fps = (alone_goal or {}).get('throughput_fps')
    with_fps = (with_goal or {}).get('throughput_fps')
    bound = ((before and readers.is_lower_bound(before, alone_goal)) or
             readers.is_lower_bound(after, with_goal))
    alone_delay = latency_avg_ns(before)
    same_load = beside.get('avg_ns') if isinstance(beside, dict) else None
    return {'frame_size': label, 'goal': name, 'alone_fps': alone_fps,
            'with_fps': with_fps, 'at_least': bool(bound),
            'ratio': with_fps / alone_fps if alone_fps and with_fps
            is not None and not bound else None,
            'alone_latency_avg_ns': alone_delay,
            'with_latency_avg_ns': latency_avg_ns(after),
            'latency_load_fps': ((before or {}).get('latency') or {}).get(
                'load_fps'),
            'with_latency_same_load_avg_ns': same_load,
            'same_load_error': beside if isinstance(beside, str) else None,
            'latency_ratio': same_load / alone_delay
            if alone_delay and same_load is not None else None}


def noisy_table(document):
    """(title, headers, rows, footer) of testbed.noisy_neighbour, or None."""
    section = (document.get('testbed') or {}).get('noisy_neighbour')
    if not section:
        return None
    rows = [[row['frame_size'], row['goal'], _fps(row['alone_fps']),
             _fps(row['with_fps']),
             'bound' if row['at_least'] else _ratio(row['ratio']),
             _fps(row.get('latency_load_fps')),
             _us(row['alone_latency_avg_ns']),
             _us(row.get('with_latency_same_load_avg_ns')),
             _ratio(row['latency_ratio'])]
            for row in section['rows']]
    headers = ['Packet Size', 'Goal', 'Alone (fps/dir)',
               'With neighbours (fps/dir)', 'Ratio', 'Latency load (fps)',
               'Latency alone (us)', 'Latency with (us)', 'Latency ratio']
    footer = ('Chain %d searched alone, then while every other chain '
              'carried %g %% of its own lossless rate alone (%s); both '
              'latencies at the alone run\'s latency test load.' % (
                  section['measured_chain'],
                  100.0 * section['background_fraction'], '; '.join(
                      'chain %s: %s' % (chain, ', '.join(
                          '%s fps at %s B' % (readers.count(fps), label)
                          for label, fps in loads.items()) or 'idle')
                      for chain, loads in sorted(
                          section['background_fps'].items()))))
    errors = sorted({row['same_load_error'] for row in section['rows']
                     if row.get('same_load_error')})
    if errors:
        footer += '\nLatency with neighbours: %s.' % '; '.join(errors)
    if any(row['at_least'] for row in section['rows']):
        footer += ('\nbound: a search reached its maximum load (the '
                   'generator\'s, below line rate) with the goal still met: '
                   'that figure is only "at least", so no ratio.')
    return ('Noisy neighbours: chain %d alone and beside busy neighbours'
            % section['measured_chain'], headers, rows, footer)


def _fps(value):
    return '-' if value is None else readers.count(value)


def _ratio(value):
    return '-' if value is None else '%.3f' % value


def _us(value):
    return '-' if value is None else readers.microseconds(value)
