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

"""Readers of a results document, shared by the tables and the plots.

A results document (schema epa-chain/results/2, measurement/results.py)
is plain JSON; these give back its frame sizes, goals and figures.
"""

from epa_chain.chain import directions as chain_directions
from epa_chain.measurement.searches import common as search_common
from epa_chain.measurement import trial

# Printed before a throughput that is a bound, with BOUND_NOTE under it.
AT_LEAST = '>= '
BOUND_NOTE = ('>= : the search reached its maximum load, below line rate, '
              'with the goal still met: the throughput is at least this')


# What a goal's throughput_fps is, by search method (issue 32): RFC 2544
# and the other load-stepping searches report the highest offered load
# that met the goal; MLRsearch a conditional throughput, the forwarding
# rate at the relevant lower bound (below the load interval).
OFFERED_LOAD = 'offered load'
CONDITIONAL_THROUGHPUT = 'conditional throughput'
_FIGURE_KINDS = {'mlrsearch': CONDITIONAL_THROUGHPUT}


def figure_kind(method):
    """What a search `method`'s figures are: offered load or conditional."""
    return _FIGURE_KINDS.get(method, OFFERED_LOAD)


def frame_size_of(case):
    mix = tuple(tuple(item) for item in case['frame_size']['mix'])
    if len(mix) == 1 and mix[0][1] == 1 and \
            not case['frame_size']['label'].startswith('IMIX'):
        return trial.FrameSize(size=mix[0][0])
    return trial.FrameSize(imix=mix)


def direction_word(directions):
    """'Unidirectional' or 'Bidirectional', for titles."""
    return chain_directions.word(directions).capitalize()


def throughput_figures(case, goal, link_bps):
    """(Mbps, packets/s, % line rate) of one goal of one case.

    Packets/s and Mbps count every direction, as the seed tables do.
    """
    frame_size = frame_size_of(case)
    directions = len(case['directions'])
    total_fps = goal['throughput_fps'] * directions
    mbps = frame_size.fps_to_mbps(total_fps)
    return mbps, total_fps, mbps * 100.0 / (directions * link_bps / 1e6)


def goal_names(document):
    names = []
    for case in document['cases']:
        for goal in (case['search'] or {}).get('goals', []):
            if goal['name'] not in names:
                names.append(goal['name'])
    return names


def case_label(frame_label, flows, directions):
    """'64 B, 1 flow, forward+reverse': how progress and verdicts name a case.

    `directions`: the case's directions, or the one a figure is of.
    """
    return '%s B, %d flow%s, %s' % (frame_label, flows,
                                    '' if flows == 1 else 's',
                                    '+'.join(directions))


def chain_count(document):
    """Chains measured together (each a port pair of the generator's)."""
    return len(document['generator'].get('chains') or ()) or 1


def count(value):
    """A count or rate as the tables print it: 1,234,567."""
    return format(int(round(value)), ',')


def microseconds(nanoseconds):
    """A delay in nanoseconds as the tables print it: 1,234.5 (us)."""
    if nanoseconds is None:
        return 'n/a'
    return format(nanoseconds / 1000.0, ',.1f')


def is_lower_bound(case, goal):
    """True when a goal's throughput is only "at least".

    The search ended at its maximum load with the goal still met, and that
    maximum is below line rate (a ceiling of the campaign's or the
    generator's): at line rate the figure is the link's, not a bound.
    """
    if not goal or goal.get('status') != search_common.STATUS_MAX_LOAD:
        return False
    ceiling, line_rate = case.get('max_load_fps'), case.get('line_rate_fps')
    return not (ceiling and line_rate) or ceiling < line_rate * (1 - 1e-9)


def goal_of(case, name):
    for goal in (case['search'] or {}).get('goals', []):
        if goal['name'] == name:
            return goal
    return None


def knee_trial(case):
    """The search trial whose loss the report splits by hop, or None.

    The lowest-load search trial whose loss was split (loss_by_hop) above
    the zero-loss throughput: where the chain starts to lose frames. A
    lossy trial below it (transient loss) is not the knee.
    """
    ndr = next((g.get('throughput_fps') for g in
                (case.get('search') or {}).get('goals', [])
                if g.get('loss_ratio') == 0), None) or 0.0
    split = [t for t in case.get('trials', [])
             if t['phase'] == 'search' and t['intended_fps'] > ndr and
             any(d.get('loss_by_hop') for d in t['directions'])]
    return min(split, key=lambda t: t['intended_fps'], default=None)


def knee_splits(document):
    """(case, knee trial, direction, its loss_by_hop) at each knee.

    The split directions of each case's knee_trial, in case order.
    """
    for case in document['cases']:
        knee = knee_trial(case)
        for found in (knee or {}).get('directions', []):
            if found.get('loss_by_hop'):
                yield case, knee, found, found['loss_by_hop']


def lost_by_owner(splits):
    """(frames lost, {owner: frames}) summed over loss_by_hop records."""
    lost, owners = 0, {}
    for split in splits:
        lost += split['lost_frames']
        for owner, frames in split['by_owner'].items():
            owners[owner] = owners.get(owner, 0) + frames
    return lost, owners
