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

"""Text tables in the layout of the seed reports (plots: plots.py).

Seed 000's Tables 5-2..5-14: one row per frame size with Mbps, packets/s,
% line rate and average/minimum/maximum latency, where (section 3.6.1)

    Mbps = (frame size + 20) * 8 * frames/s / 1,000,000
    % line rate = Mbps * 100 / (ports sending * port speed in Mbps)

and the figures of a bidirectional test add both directions. Seed 001's
Table 5-1 adds "switching performance": throughput x switching operations,
a chain of N VNFs switching N + 1 times per direction.
"""

from epa_chain import findings
from epa_chain.measurement import chain_tables
from epa_chain.measurement import consistency
from epa_chain.measurement import hop_loss
from epa_chain.measurement import latency
from epa_chain.measurement import readers
from epa_chain.measurement import repeats
from epa_chain.measurement import verdicts

LATENCY_PERCENTILES = ('50', '99', '99.9')


def _table(headers, rows, title=None, footer=None):
    """A pipe table as the seed reports print them, columns aligned."""
    cells = [list(map(str, headers))] + [list(map(str, r)) for r in rows]
    widths = [max(len(row[i]) for row in cells if i < len(row))
              for i in range(len(headers))]
    lines = []
    if title:
        lines.append(title)
    rule = '+' + '+'.join('-' * (w + 2) for w in widths) + '+'
    lines.append(rule)
    for number, row in enumerate(cells):
        padded = row + [''] * (len(headers) - len(row))
        lines.append('| ' + ' | '.join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(padded, widths))) + ' |')
        if number == 0:
            lines.append(rule.replace('-', '='))
    lines.append(rule)
    if footer:
        lines.append(footer)
    return '\n'.join(lines)


_count = readers.count
_us = readers.microseconds


def _percent(ratio):
    return ('%.4g' % (ratio * 100)).rstrip('.')


def _goal_phrase(name, loss_ratio):
    if loss_ratio == 0:
        return 'with 0 frame loss (%s)' % name
    return 'with <= %s %% frame loss (%s)' % (_percent(loss_ratio), name)


def _link_bps(document):
    return document['generator']['link_bps']


def throughput_row(case, goal, link_bps):
    """[label, Mbps, packets/s, % line rate] cells of one goal.

    A throughput that is only a lower bound prints as ">= x".
    """
    mbps, total_fps, line_percent = readers.throughput_figures(
        case, goal, link_bps)
    mark = readers.AT_LEAST if readers.is_lower_bound(case, goal) else ''
    return [readers.frame_size_of(case).label, mark + _count(mbps),
            mark + _count(total_fps), mark + '%.1f' % line_percent]


def _latency_cells(case):
    test = case['latency']
    if not test:
        return ['n/a', 'n/a', 'n/a']
    combined = latency.combine(test['directions'].values())
    if not combined:
        return ['n/a', 'n/a', 'n/a']
    return [_us(combined['avg_ns']), _us(combined['min_ns']),
            _us(combined['max_ns'])]


def throughput_tables(document):
    """One seed-style table per goal and flow count."""
    link_bps = _link_bps(document)
    params = document['parameters']
    tables = []
    reference = _reference_goal_name(document)
    for name in readers.goal_names(document):
        for flows in params['flow_counts']:
            cases = [c for c in document['cases'] if c['flows'] == flows]
            if not cases:
                continue
            with_latency = name == reference
            headers = ['Packet Size', 'Mbps', 'Packets/sec', '% Line Rate']
            if with_latency:
                headers += ['Average Latency (us)', 'Minimum Latency (us)',
                            'Maximum Latency (us)']
            rows, ratio, bound = [], None, False
            for case in cases:
                rows.append(_throughput_line(case, name, link_bps,
                                             with_latency, len(headers)))
                goal = readers.goal_of(case, name)
                if goal:
                    ratio = goal['loss_ratio']
                    bound |= not case['error'] and readers.is_lower_bound(
                        case, goal)
            title = '%s throughput %s, %d flow%s (%s)' % (
                readers.direction_word(params['directions']),
                _goal_phrase(name, ratio or 0.0), flows,
                '' if flows == 1 else 's',
                readers.figure_kind(document['method']))
            footer = _details(document, with_latency)
            if bound:
                footer += '\n' + _bound_note(cases)
            footer += _inconsistency_note(cases, name)
            tables.append((title, headers, rows, footer))
    return tables


def _inconsistency_note(cases, name):
    """The footnote of a table with a marked figure: what contradicts it."""
    marked = [case for case in cases if not case['error'] and
              name in consistency.inconsistent_goals(case)]
    if not marked:
        return ''
    return '\n' + consistency.NOTE + ''.join(
        '\n  %s: %s' % (consistency.case_name(case),
                        '; '.join(consistency.messages(case)))
        for case in marked)


def _inconsistent(case, goal):
    return consistency.MARK if goal['name'] in \
        consistency.inconsistent_goals(case) else ''


def _throughput_line(case, name, link_bps, with_latency, width):
    label = readers.frame_size_of(case).label
    if case['error']:
        return [label, 'ERROR: %s' % case['error']['cause']] + \
            [''] * (width - 2)
    goal = readers.goal_of(case, name)
    if goal is None or goal['throughput_fps'] is None:
        return [label, 'below the minimum load (%s fps/dir)'
                % _count(case['min_load_fps'])] + [''] * (width - 2)
    row = throughput_row(case, goal, link_bps)
    mark = _inconsistent(case, goal)
    row[1:] = [cell + mark for cell in row[1:]]
    if with_latency:
        row += _latency_cells(case)
    return row


def _bound_note(cases):
    """The footnote of a table with a '>= x' figure: which maximum."""
    loads = sorted({case['max_load_fps'] for case in cases
                    if case.get('max_load_fps')})
    if not loads:
        return readers.BOUND_NOTE
    return '%s (%s frames/s per direction)' % (
        readers.BOUND_NOTE, ', '.join(_count(load) for load in loads))


def _reference_goal_name(document):
    for case in document['cases']:
        if case['latency']:
            return case['latency']['reference_goal']
    goals = document['parameters']['loss_goals']
    return min(goals, key=goals.get) if goals else None


def _details(document, with_latency):
    params = document['parameters']
    method = document['method']
    parts = ['%s search (figures: %s)' % (method,
                                          readers.figure_kind(method)),
             'resolution %s %%' % _percent(params['resolution']),
             '%g s trials' % params['trial_duration_s']]
    if document['method'] in ('best-of-n', 'worst-of-n'):
        parts.append('N = %d' % params['repetitions'])
    if with_latency and params['latency_duration_s'] > 0:
        parts.append('latency: %g s at %s %% of this throughput' % (
            params['latency_duration_s'],
            _percent(params['latency_load_fraction'])))
    chains = readers.chain_count(document)
    parts.append('generator %s%s, %s Gbps per port' % (
        document['generator'].get('name'),
        ' (%d chains, a port pair each)' % chains if chains > 1 else '',
        '%g' % (_link_bps(document) / chains / 1e9)))
    return 'Details: ' + '; '.join(parts)


def _chain_length(document):
    length = document['parameters'].get('chain_length')
    if length is None:
        length = document['generator'].get('chain_length')
    return length


def switching_table(document):
    """Seed 001 Table 5-1: switching performance = pps x switching ops."""
    length = _chain_length(document)
    if length is None:
        return None
    name = _reference_goal_name(document)
    link_bps = _link_bps(document)
    params = document['parameters']
    directions = len(params['directions'])
    operations = length + 1
    cases = [c for c in document['cases'] if not c['error'] and
             (readers.goal_of(c, name) or {}).get('throughput_fps')]
    if not cases:
        return None
    headers = ['Packet Size', 'Flows per port (each direction)',
               'Total flows', 'Switching operations', 'Line-rate',
               'Throughput (packets/sec)', 'Switching (packets/sec)']
    rows, bound = [], []
    for case in cases:
        goal = readers.goal_of(case, name)
        total_fps = goal['throughput_fps'] * directions
        mark = readers.AT_LEAST if readers.is_lower_bound(case, goal) else ''
        if mark:
            bound.append(case)
        tail = _inconsistent(case, goal)
        rows.append([readers.frame_size_of(case).label, case['flows'],
                     case['flows'] * directions, operations,
                     '%g Gbps' % (directions * link_bps / 1e9),
                     mark + _count(total_fps) + tail,
                     mark + _count(total_fps * operations) + tail])
    title = ('Throughput and switching performance (seed 001 Table 5-1), '
             '%s %s, %d physical ports, chain of %d VNF%s'
             % (name, readers.figure_kind(document['method']),
                2 * readers.chain_count(document), length,
                '' if length == 1 else 's'))
    footer = ('Switching = throughput x switching operations; a chain of '
              'N VNFs switches N + 1 times per direction.')
    if bound:
        footer += '\n' + _bound_note(bound)
    footer += _inconsistency_note(cases, name)
    return title, headers, rows, footer


def latency_table(document):
    """Delay distribution and RFC 5481 variation, per case and direction."""
    rows = []
    for case in document['cases']:
        test = case['latency']
        if not test:
            continue
        for direction, summary in sorted(test['directions'].items()):
            rows.append(_latency_row(case, direction, summary))
    if not rows:
        return None
    headers = (['Packet Size', 'Flows', 'Direction', 'Frames'] +
               ['P%s (us)' % p for p in LATENCY_PERCENTILES] +
               ['PDV P99.9 (us)', 'IPDV min/max (us)', 'Out of order',
                'Duplicates'])
    notes = sorted({reason for case in document['cases']
                    if case['latency']
                    for summary in case['latency']['directions'].values()
                    if summary
                    for reason in summary['unavailable'].items()})
    footer = 'PDV = D(i) - D(min); IPDV = D(i) - D(i-1) in sending order ' \
             '(RFC 5481).'
    if any(set(summary.get('percentiles_beyond_ns') or ()) &
           set(LATENCY_PERCENTILES)
           for case in document['cases'] if case['latency']
           for summary in case['latency']['directions'].values()
           if summary):
        footer += ('\na%sb: the percentile lies beyond the generator\'s '
                   'histogram (its overflow bucket): only that it is above '
                   'a and at most the maximum delay b is known.'
                   % _BEYOND_MARK)
    for stat, reason in notes:
        footer += '\n%s unavailable: %s.' % (stat, reason)
    return ('Latency distribution at the latency test load', headers, rows,
            footer)


_BEYOND_MARK = '..'


def _bounded_us(value, beyond, offset=0.0):
    """A percentile; "a..b" when only its bounds are known (`beyond`)."""
    if value is None or beyond is None:
        return _us(value)
    return '%s%s%s' % (_us(max(0.0, beyond - offset)), _BEYOND_MARK,
                       _us(value))


def _latency_row(case, direction, summary):
    label = readers.frame_size_of(case).label
    if not summary:
        return [label, case['flows'], direction, 0] + ['n/a'] * 7
    percentiles = summary['percentiles_ns'] or {}
    beyond = summary.get('percentiles_beyond_ns') or {}
    pdv = summary['pdv_ns']
    ipdv = summary['ipdv_ns']
    return ([label, case['flows'], direction, _count(summary['count'])] +
            [_bounded_us(percentiles.get(p), beyond.get(p))
             for p in LATENCY_PERCENTILES] +
            [_bounded_us(pdv['percentiles'].get('99.9'), beyond.get('99.9'),
                         summary['min_ns']) if pdv else 'n/a',
             '%s / %s' % (_us(ipdv['min']), _us(ipdv['max'])) if ipdv
             else 'n/a',
             summary['out_of_order'], summary['duplicates']])


def sweep_tables(document):
    """Linear sweeps: loss ratio at each load step, ten steps a row."""
    tables = []
    for case in document['cases']:
        search = case['search']
        if not search or 'sweep' not in search['details']:
            continue
        sweep = search['details']['sweep']
        rows = []
        for start in range(0, len(sweep), 10):
            chunk = sweep[start:start + 10]
            rows.append(['%g-%g %%' % (chunk[0]['load_percent'],
                                       chunk[-1]['load_percent'])] +
                        ['%.4f' % (p['loss_ratio'] * 100) for p in chunk])
        width = max(len(r) for r in rows)
        rows = [r + [''] * (width - len(r)) for r in rows]
        headers = ['Load (% of max)'] + ['loss %'] * (width - 1)
        title = 'Linear loss sweep, %s B, %d flow%s' % (
            readers.frame_size_of(case).label, case['flows'],
            '' if case['flows'] == 1 else 's')
        tables.append((title, headers, rows, None))
    return tables


def soak_table(document):
    rows = []
    for case in document['cases']:
        soak = case['soak']
        if not soak:
            continue
        combined = latency.combine(soak['directions'].values())
        loss = [i['loss_ratio'] for i in soak['intervals']]
        rows.append([readers.frame_size_of(case).label, case['flows'],
                     '%g' % sum(i['duration_s'] for i in soak['intervals']),
                     len(soak['intervals']),
                     'yes' if soak['complete'] else 'NO',
                     '%.6f' % (max(loss) * 100 if loss else 0.0)] +
                    ([_us(combined['avg_ns']), _us(combined['min_ns']),
                      _us(combined['max_ns'])] if combined else
                     ['n/a'] * 3))
    if not rows:
        return None
    headers = ['Packet Size', 'Flows', 'Seconds', 'Intervals', 'Complete',
               'Worst loss %', 'Average Latency (us)',
               'Minimum Latency (us)', 'Maximum Latency (us)']
    return 'Latency soak', headers, rows, None


def hop_loss_table(document):
    """Where frames were lost at each case's knee (None: nothing split)."""
    rows, disagree = [], False
    for case, knee, found, split in readers.knee_splits(document):
        odd = hop_loss.counters_disagree(split)
        disagree |= odd
        for segment in split['segments']:
            if segment['lost']:
                rows.append([
                    readers.frame_size_of(case).label,
                    _count(knee['intended_fps']), found['direction'],
                    segment['owner'], segment['where'],
                    segment['port'] or '-'] + _hop_cells(
                        segment, split['lost_frames'], odd))
    if not rows:
        return None
    footer = _HOP_FOOTER + (_DISAGREE_NOTE if disagree else '')
    return ('Where frames were lost at the knee (lowest lossy load above '
            'the zero-loss throughput)',
            ['Packet Size', 'Load fps/dir', 'Direction', 'Owner', 'Where',
             'Port', 'Frames lost', 'Switch drops', '% of loss'], rows,
            footer)


_HOP_FOOTER = (
    'From the switch\'s per-port counters read around the trial; the '
    'segments of a direction sum to its lost frames. delivery: the '
    'switch\'s tx drops at the owner\'s port (its ring was full); '
    'inside: delivered to the owner, not sent on; switch: received, not '
    'forwarded; send/receive: between the generator and the switch.')
_DISAGREE = 'counters disagree'
_DISAGREE_NOTE = (
    '\n%s: more frames came out of a segment than went in (the '
    'generator\'s and the switch\'s counters do not match, e.g. frames '
    'outside the trial were counted): that direction\'s split is not '
    'arithmetic to trust, so no shares are printed.' % _DISAGREE)


def _hop_cells(segment, lost, disagree):
    """[Frames lost, Switch drops, % of loss] of one segment."""
    drops = _count(segment['counted_drops'])
    if segment['lost'] < 0:
        return [_DISAGREE, drops, 'n/a']
    if disagree or lost <= 0:
        return [_count(segment['lost']), drops, 'n/a']
    return [_count(segment['lost']), drops,
            '%.1f' % (100.0 * segment['lost'] / lost)]


def epa_audit_table(document):
    """"EPA: asked vs given" of a cloud run's audit (None: no audit)."""
    audit = (document.get('cloud') or {}).get('epa_audit')
    if not audit:
        return None
    headers, rows = findings.grid(findings.AUDIT, [
        findings.recorded(findings.AUDIT, f) for f in audit['findings']])
    return ('EPA: asked vs given', headers, rows,
            'From Nova\'s server topology, and libvirt and Open vSwitch for '
            '%d of the servers (read on their host); INVALIDATES: the '
            'measurement is not of what the flavor asked.'
            % len(audit['host_checked']))


def epa_audit_line(document):
    """One line above the tables: whether the audit invalidates the run."""
    audit = (document.get('cloud') or {}).get('epa_audit')
    if not audit:
        return None
    bad = [f for f in audit['findings'] if findings.recorded(
        findings.AUDIT, f).level == findings.FAILS]
    if not bad:
        return 'EPA audit: nothing invalidates this measurement'
    return ('EPA audit: INVALID - %d finding(s) invalidate this '
            'measurement: %s' % (len(bad), '; '.join(
                '%s %s asked %s, given %s' % (f['server'], f['aspect'],
                                              f['asked'], f['given'])
                for f in bad)))


def consistency_line(document):
    """One line above the tables when a case's trials contradict it."""
    marked = [case for case in document['cases']
              if consistency.inconsistent_goals(case)]
    if not marked:
        return None
    return ('Consistency: INCONSISTENT%s - %d case(s) contradict their own '
            'trials: %s' % (consistency.MARK, len(marked), '; '.join(
                '%s: %s' % (consistency.case_name(case),
                            '; '.join(consistency.messages(case)))
                for case in marked)))


def trials_table(document):
    rows = []
    for case in document['cases']:
        totals = case['totals'] or {}
        rows.append([readers.frame_size_of(case).label, case['flows'],
                     totals.get('trials', 0),
                     _count(totals.get('trial_seconds', 0.0)),
                     case['error']['cause'] if case['error'] else 'ok'])
    totals = document['totals']
    rows.append(['all', '', totals['trials'],
                 _count(totals['trial_seconds']), ''])
    return ('Trials', ['Packet Size', 'Flows', 'Trials', 'Trial-seconds',
                       'Status'], rows, None)


def render_tables(document):
    """All tables of a results document, as text."""
    params = document['parameters']
    header = ('epa-chain results (%s): method %s, generator %s, created %s%s'
              % (document['schema'], document['method'],
                 document['generator'].get('name'), document['created'],
                 '' if document['complete'] else ', INCOMPLETE (partial)'))
    blocks = [header, 'Loss goals: %s' % ', '.join(
        '%s <= %s %%' % (name, _percent(ratio))
        for name, ratio in params['loss_goals'].items())]
    for line in (epa_audit_line(document), consistency_line(document)):
        if line:
            blocks.append(line)
    tables = list(throughput_tables(document))
    for optional in (switching_table(document), latency_table(document),
                     hop_loss_table(document)):
        if optional:
            tables.append(optional)
    tables.extend(sweep_tables(document))
    for optional in (chain_tables.per_chain_table(document),
                     chain_tables.noisy_table(document)):
        if optional:
            tables.append(optional)
    soak = soak_table(document)
    if soak:
        tables.append(soak)
    if document.get('spread'):
        tables.append(repeats.spread_table(document))
    tables.append(trials_table(document))
    audit = epa_audit_table(document)
    if audit:
        tables.append(audit)
    if document.get('kpi'):
        # The verdicts the run was judged by ([epa_chain] kpi_file).
        tables.append(verdicts.table(*verdicts.from_record(
            document['kpi'])))
    for number, (title, headers, rows, footer) in enumerate(tables, 1):
        blocks.append(_table(headers, rows, 'Table %d: %s' % (number, title),
                             footer))
    return '\n\n'.join(blocks) + '\n'


def render_table(table):
    """One (title, headers, rows, footer) table as text, e.g. verdicts."""
    title, headers, rows, footer = table
    return _table(headers, rows, title, footer)
