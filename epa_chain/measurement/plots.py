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

"""PNG plots: throughput against frame size, its spread, latencies.

The seed reports' figures (seed 000 Figures 5-3..5-13) plot throughput
in Mbps and % of line rate per frame size; the latency figure here is the
distribution the seeds ask for but could not draw, from the full delay
histogram kept in the results (HdrHistogram). A repeated run (--repeat)
plots the spread of its repetitions instead of one line per case.
"""

import os
import re

from epa_chain.measurement import latency
from epa_chain.measurement import readers
from epa_chain import outputs

OPTION = 'plots directory'


def pyplot_module():
    # Agg: no display, no GUI toolkit; set before pyplot is imported.
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    return pyplot


def _slug(text):
    return re.sub(r'[^A-Za-z0-9]+', '-', text).strip('-').lower()


def save(figure, path, option):
    """Write the PNG atomically; only a regular file (or none) is replaced.

    savefig(path) would write through a symbolic link or into a FIFO.
    """
    pyplot = pyplot_module()
    try:
        return outputs.write_with(path, lambda stream: figure.savefig(
            stream, format='png', dpi=100), option)
    finally:
        pyplot.close(figure)


def throughput_plot(document, path, option=OPTION):
    """Mbps and % line rate per frame size, one line per goal and flows."""
    pyplot = pyplot_module()
    figure, (mbps_axis, percent_axis) = pyplot.subplots(
        1, 2, figsize=(11, 4.5))
    link_bps = document['generator']['link_bps']
    labels = []
    for case in document['cases']:
        label = readers.frame_size_of(case).label
        if label not in labels:
            labels.append(label)
    positions = {label: i for i, label in enumerate(labels)}
    drawn, bounds = 0, 0
    for name in readers.goal_names(document):
        for flows in document['parameters']['flow_counts']:
            xs, mbps, percent, bound = [], [], [], []
            for case in document['cases']:
                goal = readers.goal_of(case, name)
                if case['flows'] != flows or case['error'] or not goal or \
                        goal['throughput_fps'] is None:
                    continue
                figures = readers.throughput_figures(case, goal, link_bps)
                xs.append(positions[readers.frame_size_of(case).label])
                mbps.append(figures[0])
                percent.append(figures[2])
                bound.append(readers.is_lower_bound(case, goal))
            if not xs:
                continue
            legend = '%s, %d flow%s' % (name, flows, '' if flows == 1
                                        else 's')
            for axis, ys in ((mbps_axis, mbps), (percent_axis, percent)):
                line, = axis.plot(xs, ys, marker='o', label=legend)
                # A bound is drawn as what it is: "at least", an arrow up.
                up = [(x, y) for x, y, b in zip(xs, ys, bound) if b]
                if up:
                    axis.plot(*zip(*up), linestyle='none', marker='^',
                              markersize=11, color=line.get_color())
            bounds += sum(bound)
            drawn += 1
    for axis, unit in ((mbps_axis, 'Mbps'), (percent_axis, '% line rate')):
        axis.set_xticks(range(len(labels)))
        axis.set_xticklabels(labels, rotation=30, ha='right')
        axis.set_xlabel('frame size (bytes)')
        axis.set_ylabel(unit)
        axis.grid(True, alpha=0.3)
        if drawn:
            axis.legend(fontsize='small')
    percent_axis.set_ylim(0, 105)
    figure.suptitle('%s throughput (%s)%s' % (
        readers.direction_word(document['parameters']['directions']),
        document['method'], '\n^ at least: the search reached its maximum '
        'load' if bounds else ''))
    figure.tight_layout()
    return save(figure, path, option)


def spread_plot(document, path, option=OPTION):
    """Each goal's median per frame size, error bars to min and max.

    The repetitions' own figures are drawn as dots over the bars (a
    strip), so a lone outlier shows as one.
    """
    pyplot = pyplot_module()
    figure, axis = pyplot.subplots(1, 1, figsize=(8, 4.5))
    spread = document['spread']
    labels = []
    for row in spread['rows']:
        if row['frame_size'] not in labels:
            labels.append(row['frame_size'])
    series = {}
    for row in spread['rows']:
        if row['median'] is not None:
            series.setdefault((row['goal'], row['flows'],
                               row['directions']), []).append(row)
    unit, scale = _fps_unit(max((row['max'] for row in spread['rows']
                                 if row['max'] is not None), default=0))
    for number, (key, rows) in enumerate(series.items()):
        _draw_spread(axis, key, rows, (labels, scale), number, len(series))
    axis.set_xticks(range(len(labels)))
    axis.set_xticklabels(labels, rotation=30, ha='right')
    # One frame size would otherwise spread the series over the axis.
    axis.set_xlim(-0.5, len(labels) - 0.5)
    axis.set_xlabel('frame size (bytes)')
    axis.set_ylabel('throughput per direction (%s)' % unit)
    axis.set_ylim(bottom=0)
    axis.grid(True, alpha=0.3)
    if series:
        axis.legend(fontsize='small')
    figure.suptitle('Throughput over %d repetitions (%s)\nmedian; bars '
                    'from min to max; dots: each repetition' % (
                        spread['repeat'], document['method']))
    figure.tight_layout()
    return save(figure, path, option)


def _fps_unit(highest):
    """('Mfps', 1e6), ('kfps', 1e3) or ('fps', 1) for figures up to it."""
    for unit, scale in (('Mfps', 1e6), ('kfps', 1e3)):
        if highest >= scale:
            return unit, scale
    return 'fps', 1.0


def _draw_spread(axis, key, rows, labels_scale, number, count):
    """One goal's series, shifted sideways so the series do not overlap."""
    goal, flows, directions = key
    labels, scale = labels_scale
    shift = (number - (count - 1) / 2.0) * 0.08
    xs = [labels.index(row['frame_size']) + shift for row in rows]
    median = [row['median'] / scale for row in rows]
    below = [(row['median'] - row['min']) / scale for row in rows]
    above = [(row['max'] - row['median']) / scale for row in rows]
    line = axis.errorbar(xs, median, yerr=[below, above], marker='o',
                         capsize=5, linestyle='-', label='%s, %d flow%s, %s'
                         % (goal, flows, '' if flows == 1 else 's',
                            directions))
    color = line[0].get_color()
    for x, row in zip(xs, rows):
        values = [v / scale for v in row['values'] if v is not None]
        axis.plot([x] * len(values), values, linestyle='none', marker='.',
                  color=color, alpha=0.6)


def latency_plot(case, path, option=OPTION):
    """Delay histogram and CDF of the latency test, per direction."""
    pyplot = pyplot_module()
    figure, (histogram_axis, cdf_axis) = pyplot.subplots(
        1, 2, figsize=(11, 4.5))
    test = case['latency']
    for direction, summary in sorted(test['directions'].items()):
        if not summary or not summary['hdr_delay_ns']:
            continue
        _draw_direction(histogram_axis, cdf_axis, direction, summary)
    histogram_axis.set_xlabel('one-way delay (us)')
    histogram_axis.set_ylabel('frames')
    histogram_axis.set_yscale('log')
    cdf_axis.set_xlabel('one-way delay (us)')
    cdf_axis.set_ylabel('fraction of frames')
    for axis in (histogram_axis, cdf_axis):
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize='small')
    figure.suptitle('Latency, %s B, %d flow%s, %s fps/dir (%s %% of %s)' % (
        readers.frame_size_of(case).label, case['flows'],
        '' if case['flows'] == 1 else 's',
        format(int(test['load_fps']), ','), '%g' % (100 * test['fraction']),
        test['reference_goal']))
    figure.tight_layout()
    return save(figure, path, option)


def _draw_direction(histogram_axis, cdf_axis, direction, summary):
    """One direction's delays; an open-ended bucket drawn as a range.

    The histogram holds the frames of the generator's open-ended bucket
    at the maximum delay, where most of them were not: they are drawn as
    a shaded bar over the range they lie in (above its lower edge, at
    most the maximum), and the CDF is left open across that range.
    """
    histogram = latency.decode_histogram(summary['hdr_delay_ns'])
    beyond = summary.get('beyond')
    lower_us = beyond['lower_ns'] / 1000.0 if beyond else None
    values, counts, hidden = [], [], 0
    for item in histogram.get_recorded_iterator():
        value = item.value_iterated_to / 1000.0
        if lower_us is not None and value > lower_us:
            hidden += item.count_at_value_iterated_to
            continue
        values.append(value)
        counts.append(item.count_at_value_iterated_to)
    total = float(sum(counts) + hidden)
    if values:
        patches = histogram_axis.hist(values, bins=60, weights=counts,
                                      alpha=0.6, label=direction)[2]
        color = patches[0].get_facecolor() if len(patches) else None
        running, cdf = 0, []
        for count in counts:
            running += count
            cdf.append(running / total)
        color = cdf_axis.plot(values, cdf, label=direction,
                              color=color)[0].get_color()
    else:
        color = None
    if hidden and total:
        max_us = summary['max_ns'] / 1000.0
        known = (total - hidden) / total
        label = '%s: %s frames between %s and %s us' % (
            direction, format(hidden, ','), format(lower_us, ',.0f'),
            format(max_us, ',.0f'))
        histogram_axis.bar(lower_us, hidden, width=max(max_us - lower_us,
                                                       1e-9),
                           align='edge', alpha=0.25, hatch='//',
                           color=color, label=label)
        cdf_axis.fill_between([lower_us, max_us], [known, known], [1, 1],
                              alpha=0.2, hatch='//', color=color,
                              label='%s: unknown above %s us' % (
                                  direction, format(lower_us, ',.0f')))


def render(document, out_dir, option=OPTION):
    """Every plot the document allows, as PNG files; returns the paths.

    `option` names `out_dir` in an outputs.OutputError.
    """
    # Every histogram decoded first: one that is not fails before any
    # plot is written.
    for case in document['cases']:
        for summary in (case['latency'] or {}).get('directions',
                                                   {}).values():
            if summary and summary['hdr_delay_ns']:
                latency.decode_histogram(summary['hdr_delay_ns'])
    outputs.make_directory(out_dir, option)
    paths = []
    if document.get('spread'):
        # Every repetition's cases: their spread, not one line per case.
        paths.append(spread_plot(
            document, os.path.join(out_dir, 'spread.png'), option))
    elif any(case['search'] for case in document['cases']):
        paths.append(throughput_plot(
            document, os.path.join(out_dir, 'throughput.png'), option))
    for case in document['cases']:
        test = case['latency']
        if not test or not any(s and s['hdr_delay_ns']
                               for s in test['directions'].values()):
            continue
        paths.append(latency_plot(case, os.path.join(
            out_dir, _latency_name(case)), option))
    if (document.get('testbed') or {}).get('noisy_neighbour'):
        paths.append(noisy_plot(document, os.path.join(
            out_dir, 'noisy-neighbours.png'), option))
    return paths


def noisy_plot(document, path, option=OPTION):
    """Throughput and mean latency alone and beside busy neighbours."""
    section = document['testbed']['noisy_neighbour']
    rows = [r for r in section['rows'] if r['goal'] == min(
        document['parameters']['loss_goals'],
        key=document['parameters']['loss_goals'].get)]
    pyplot = pyplot_module()
    figure, (rate_axis, delay_axis) = pyplot.subplots(1, 2, figsize=(11, 4.5))
    positions = range(len(rows))
    for axis, (alone, beside, unit, scale) in (
            (rate_axis, ('alone_fps', 'with_fps', 'fps per direction', 1.0)),
            (delay_axis, ('alone_latency_avg_ns',
                          'with_latency_same_load_avg_ns',
                          'mean latency (us)', 1e-3))):
        axis.bar([p - 0.2 for p in positions],
                 [(r[alone] or 0) * scale for r in rows], 0.4, label='alone')
        axis.bar([p + 0.2 for p in positions],
                 [(r.get(beside) or 0) * scale for r in rows], 0.4,
                 label='beside neighbours at %g %% of their rate'
                 % (100 * section['background_fraction']))
        axis.set_xticks(list(positions))
        axis.set_xticklabels(['%s B' % r['frame_size'] for r in rows])
        axis.set_ylabel(unit)
        axis.grid(True, axis='y', alpha=0.3)
    rate_axis.set_title('Chain %d lossless rate (ratio %s)' % (
        section['measured_chain'], ', '.join(
            '-' if r['ratio'] is None else '%.2f' % r['ratio']
            for r in rows)))
    delay_ratios = ', '.join(
        '-' if r['latency_ratio'] is None else '%.2f' % r['latency_ratio']
        for r in rows)
    delay_axis.set_title('Mean latency at the load alone (ratio %s)'
                         % delay_ratios)
    rate_axis.legend(fontsize='small', loc='lower center')
    return save(figure, path, option)


def _latency_name(case):
    # A repetition's own file: the repetitions would overwrite each other.
    return 'latency-%s-%dflows%s.png' % (
        _slug(readers.frame_size_of(case).label), case['flows'],
        '-rep%d' % case['repetition'] if 'repetition' in case else '')
