#!/usr/bin/env python3
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

"""RFC 2544 binary search (NDR, then PDR) against one MLRsearch (both).

Same model of a system under test, same run, equal precision: both stop
when (upper - lower) / upper <= --resolution, and both confirm each bound
with a trial of the full --trial-duration (MLRsearch: final trial
duration = duration sum = trial duration, exceed ratio 0). MLRsearch may
start with short trials (--mlr-initial-trial) and coarser targets
(--mlr-preceding-targets). Prints trials and trial-seconds per frame
size, and the ratio MLRsearch / RFC 2544 (issue target: <= 0.4).

    python3 tools/compare_searches.py
    python3 tools/compare_searches.py --generator-option jitter=0.005 \\
        --generator-option spurious_rate=0.001

With --seeds N it runs each search instead on N noisy models (seeds
1..N) and once on the same model without noise, and prints per seed
whether the bounds bracket the true NDR and PDR (exactly, and within
the model's jitter) and the trial-seconds against the noise-free run:
how doc/source/measurement.rst measured --search-profile noise-robust.

    python3 tools/compare_searches.py --frame-sizes 64 --seeds 10 \\
        --search-profile noise-robust --generator-option jitter=0.001 \\
        --generator-option spurious_rate=0.002
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from epa_chain.commands import _arguments  # noqa: E402
from epa_chain import generators  # noqa: E402
from epa_chain.measurement import campaign  # noqa: E402
from epa_chain.measurement import options as campaign_options  # noqa: E402
from epa_chain import outputs  # noqa: E402

TARGET_RATIO = 0.4
# The seeds' comparison: every RFC 2544 frame size, both directions; the
# campaign table (measurement/options.py) owns every other default.
SEED_FRAME_SIZES = ','.join(str(size) for size in
                            campaign_options.RFC2544_FRAME_SIZES)
TABLE_DEFAULTS = ('flow_counts', 'trial_duration_s', 'resolution',
                  'loss_goals', 'mlr_initial_trial_duration_s',
                  'mlr_preceding_targets', 'search_profile')
METHODS = ('rfc2544', 'mlrsearch')


def _table_default(field):
    """The campaign table's default of `field`, as its flag writes it."""
    option = campaign_options.BY_FIELD[field]
    return option.show(option.default)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--frame-sizes', default=SEED_FRAME_SIZES)
    parser.add_argument('--direction', choices=('uni', 'bi'), default='bi')
    kinds = {'int': int, 'float': float}
    for field in TABLE_DEFAULTS:
        option = campaign_options.BY_FIELD[field]
        parser.add_argument(option.flag, type=kinds.get(option.kind, str),
                            default=_table_default(field))
    parser.add_argument('--generator-option', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='model generator option, e.g. jitter=0.005')
    parser.add_argument('--trial-overhead', type=float, default=0.0,
                        metavar='SECONDS',
                        help='also give the ratio with this fixed cost per '
                             'trial (setting rates, reading counters)')
    parser.add_argument('--seeds', type=int, metavar='N',
                        help='run each search on N seeds of the noisy '
                             'model and compare with its noise-free run')
    parser.add_argument('--json', metavar='OUT',
                        help='also write the comparison as JSON')
    return parser.parse_args(argv)


def _parse(field, text):
    return campaign_options.BY_FIELD[field].parse(text)


def _plan(args, method):
    return campaign.Campaign(
        frame_sizes=_parse('frame_sizes', args.frame_sizes),
        flow_counts=_parse('flow_counts', args.flows),
        directions=_parse('directions', args.direction), method=method,
        trial_duration_s=args.trial_duration,
        loss_goals=_parse('loss_goals', args.loss_goals),
        resolution=args.resolution, latency_duration_s=0,
        mlr_initial_trial_duration_s=args.mlr_initial_trial,
        mlr_preceding_targets=args.mlr_preceding_targets,
        search_profile=args.search_profile)


def _case_summary(generator, case):
    from epa_chain.measurement import readers
    frame_size = readers.frame_size_of(case)
    goals = {}
    for goal in case['search']['goals']:
        truth = generator.true_throughput_fps(frame_size, goal['loss_ratio'],
                                              case['flows'])
        goals[goal['name']] = {
            'lower_fps': goal['lower_fps'], 'upper_fps': goal['upper_fps'],
            'relative_width': goal['relative_width'], 'true_fps': truth,
            # A bound pair brackets the model's answer, within rounding;
            # and widened by the jitter, the curve's own spread.
            'brackets_truth': _brackets(goal, truth, 1e-9),
            'brackets_within_jitter': _brackets(
                goal, truth, generator.jitter + 1e-9)}
    return {'frame_size': frame_size.label, 'flows': case['flows'],
            'trials': case['totals']['trials'],
            'trial_seconds': case['totals']['trial_seconds'],
            'goals': goals}


def _brackets(goal, truth, slack):
    lower, upper = goal['lower_fps'], goal['upper_fps']
    return (lower is not None and lower * (1 - slack) <= truth and
            (upper is None or truth <= upper * (1 + slack)))


def _run(generator, args, method):
    """One method's campaign on `generator`: its case summaries."""
    document = campaign.run(generator, _plan(args, method))
    failures = campaign.errors(document)
    if failures:
        raise RuntimeError('%s: %s' % (method, failures))
    return [_case_summary(generator, c) for c in document['cases']]


def seed_table(args):
    """Each method on seeds 1..N of the noisy model and without noise."""
    options = _arguments.parse_generator_options(args.generator_option)
    quiet = dict(options, jitter=0.0, spurious_rate=0.0)
    table = {}
    for method in METHODS:
        baseline = _run(generators.create('model', **quiet), args, method)
        seeds = [_run(generators.create('model', **dict(options, seed=seed)),
                      args, method) for seed in range(1, args.seeds + 1)]
        table[method] = {
            'noise_free_trial_seconds': _seconds(baseline),
            'seeds': [{'seed': seed, 'trial_seconds': _seconds(cases),
                       'goals': {name: [c['goals'][name] for c in cases]
                                 for name in cases[0]['goals']}}
                      for seed, cases in enumerate(seeds, 1)]}
    return table


def _seconds(cases):
    return sum(case['trial_seconds'] for case in cases)


def compare(args):
    """Run both searches on one model; returns the comparison dict."""
    options = _arguments.parse_generator_options(args.generator_option)
    generator = generators.create('model', **options)
    runs = {method: _run(generator, args, method) for method in METHODS}
    totals = {method: {'trials': sum(c['trials'] for c in cases),
                       'trial_seconds': sum(c['trial_seconds']
                                            for c in cases)}
              for method, cases in runs.items()}
    ratio = (totals['mlrsearch']['trial_seconds'] /
             totals['rfc2544']['trial_seconds'])
    overhead = args.trial_overhead
    with_overhead = ((totals['mlrsearch']['trial_seconds'] +
                      overhead * totals['mlrsearch']['trials']) /
                     (totals['rfc2544']['trial_seconds'] +
                      overhead * totals['rfc2544']['trials']))
    return {'model': generator.describe(), 'runs': runs, 'totals': totals,
            'trial_seconds_ratio': ratio,
            'trial_overhead_s': overhead,
            'ratio_with_overhead': with_overhead,
            'trials_ratio': (totals['mlrsearch']['trials'] /
                             totals['rfc2544']['trials']),
            'target_ratio': TARGET_RATIO,
            'all_bracket_truth': all(
                goal['brackets_truth'] for cases in runs.values()
                for case in cases for goal in case['goals'].values())}


def render(comparison, args):
    lines = ['RFC 2544 (one binary search per goal) vs MLRsearch (all goals '
             'in one search)',
             'model: %s' % ', '.join('%s=%s' % item for item in sorted(
                 comparison['model'].items())),
             'precision: relative width <= %g, full trials %g s; MLRsearch '
             'initial trials %g s, %d preceding targets'
             % (args.resolution, args.trial_duration, args.mlr_initial_trial,
                args.mlr_preceding_targets), '',
             '%-15s | %-33s | %-33s |' % ('', 'RFC 2544', 'MLRsearch'),
             '%-8s %6s | %7s %9s %-15s | %7s %9s %-15s | %6s' % (
                 'frame', 'flows', 'trials', 'trial-s', 'widths %', 'trials',
                 'trial-s', 'widths %', 'ratio')]
    for rfc, mlr in zip(comparison['runs']['rfc2544'],
                        comparison['runs']['mlrsearch']):
        lines.append('%-8s %6d | %7d %9.1f %-15s | %7d %9.1f %-15s | %6.3f'
                     % (rfc['frame_size'], rfc['flows'], rfc['trials'],
                        rfc['trial_seconds'], _widths(rfc), mlr['trials'],
                        mlr['trial_seconds'], _widths(mlr),
                        mlr['trial_seconds'] / rfc['trial_seconds']))
    totals = comparison['totals']
    lines.append('%-15s | %7d %9.1f %-15s | %7d %9.1f %-15s | %6.3f' % (
        'all', totals['rfc2544']['trials'],
        totals['rfc2544']['trial_seconds'], '',
        totals['mlrsearch']['trials'], totals['mlrsearch']['trial_seconds'],
        '', comparison['trial_seconds_ratio']))
    verdict = ('met' if comparison['trial_seconds_ratio'] <=
               comparison['target_ratio'] else 'MISSED')
    lines += ['', 'MLRsearch / RFC 2544 trial-seconds: %.3f (target <= %g: '
              '%s); trials: %.3f' % (comparison['trial_seconds_ratio'],
                                     comparison['target_ratio'], verdict,
                                     comparison['trials_ratio']),
              'every bound pair brackets the model\'s true NDR/PDR: %s'
              % ('yes' if comparison['all_bracket_truth'] else
                 'no (a noisy model: single trials can miss the curve)'
                 if _noisy(comparison['model']) else 'NO')]
    if comparison['trial_overhead_s']:
        lines.append('counting %g s of overhead per trial: %.3f' % (
            comparison['trial_overhead_s'],
            comparison['ratio_with_overhead']))
    return '\n'.join(lines) + '\n'


def render_seeds(table, args):
    """The seed table: brackets (exact/within jitter) and cost."""
    lines = ['search profile %s; per seed: goal exact/within-jitter '
             'bracket (y/n), trial-seconds / noise-free run'
             % args.search_profile]
    for method, found in table.items():
        free = found['noise_free_trial_seconds']
        lines.append('%s (noise-free: %g trial-seconds)' % (method, free))
        for row in found['seeds']:
            marks = ' '.join('%s %s' % (name, ''.join(
                _mark(goal) for goal in goals))
                for name, goals in sorted(row['goals'].items()))
            lines.append('  seed %2d: %s  %7.1f s  %.2f x' % (
                row['seed'], marks, row['trial_seconds'],
                row['trial_seconds'] / free))
    return '\n'.join(lines) + '\n'


def _mark(goal):
    return '%s/%s' % ('y' if goal['brackets_truth'] else 'n',
                      'y' if goal['brackets_within_jitter'] else 'n')


def _noisy(described):
    return bool(described.get('jitter') or described.get('spurious_rate'))


def _widths(case):
    return '/'.join('%.4f' % (100 * g['relative_width'])
                    if g['relative_width'] is not None else 'max'
                    for g in case['goals'].values())


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.json:
            outputs.check_file(args.json, '--json')
        if args.seeds:
            comparison = seed_table(args)
            sys.stdout.write(render_seeds(comparison, args))
        else:
            comparison = compare(args)
            sys.stdout.write(render(comparison, args))
        if args.json:
            outputs.write_text(args.json, json.dumps(
                comparison, indent=1, sort_keys=True, allow_nan=False) +
                '\n', '--json')
    except (ValueError, RuntimeError) as error:
        print('compare_searches: %s' % error, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
