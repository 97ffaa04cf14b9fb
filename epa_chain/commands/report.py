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

"""Render a results file as the seed reports' tables, and PNG plots.

Tables (stdout): throughput per frame size with Mbps, packets/s, % line
rate and avg/min/max latency (seed 000 Tables 5-x), seed 001's switching
performance, RFC 5481 delay variation, linear sweeps, soaks and trial
counts. With --plots DIR, also throughput-vs-frame-size and latency
distribution PNGs. With --kpi FILE, a verdict per KPI and case
(measurement/kpi.py documents the file; --baseline RESULTS judges each
goal's throughput against an earlier run). Exit status: 0 done (and every
KPI met), 1 a KPI missed or not shown, 2 unreadable or invalid file.

  epa-chain report results.json
  epa-chain report results.json --plots plots/
  epa-chain report results.json --kpi kpi.yaml --baseline last.json
"""

import sys

from epa_chain import outputs

# What figures no measurement writes (a throughput of 1e308, a link of
# 5e-324 bit/s, an IMIX that is not one) raise while rendering; the
# schema cannot refuse all of them.
RENDER_ERRORS = (ArithmeticError, LookupError, TypeError, ValueError)


def add_arguments(parser):
    parser.add_argument('result', metavar='RESULT.json',
                        help='a file written by epa-chain measure --json')
    parser.add_argument('--plots', metavar='DIR',
                        help='write PNG plots into DIR')
    parser.add_argument('--kpi', metavar='FILE',
                        help='judge the results against the KPIs of FILE '
                             '(YAML; exit 1 on a miss)')
    parser.add_argument('--baseline', metavar='RESULTS.json',
                        help='an earlier results file for the KPI file\'s '
                             'max_regression_percent (needs --kpi)')


def _error(message):
    # One line, whatever a path or a field holds.
    print('epa-chain report: %s' % ' '.join(str(message).split()),
          file=sys.stderr)


def _cannot_render(path, error):
    return ('%s: cannot render its figures (%s: %s); the file follows the '
            'schema but holds values `epa-chain measure` never writes - '
            'regenerate it' % (path, type(error).__name__, error))


def run(args):
    from epa_chain.measurement import report
    from epa_chain.measurement import results

    from epa_chain.measurement import kpi
    from epa_chain.measurement import verdicts

    try:
        document = results.load(args.result)
        if args.plots is not None:
            outputs.check_directory(args.plots, '--plots')
        kpis = kpi.load(args.kpi) if args.kpi is not None else None
        baseline = _baseline(args, kpis, results)
    except ValueError as error:
        _error(error)
        return 2
    # Tables and plots first, printed after: an error leaves no half
    # report.
    paths = []
    judged = None
    try:
        tables = report.render_tables(document)
        if kpis is not None:
            judged = verdicts.judge(document, kpis, baseline)
            tables += '\n' + report.render_table(verdicts.table(
                judged, kpis.source, args.baseline)) + '\n'
        if args.plots is not None:
            from epa_chain.measurement import plots

            paths = plots.render(document, args.plots, '--plots')
    except outputs.OutputError as error:
        _error(error)
        return 2
    except RENDER_ERRORS as error:
        _error(_cannot_render(args.result, error))
        return 2
    sys.stdout.write(tables)
    for path in paths:
        print('plot: %s' % path)
    if judged is not None and not verdicts.passed(judged):
        return 1
    return 0


def _baseline(args, kpis, results):
    """The --baseline document, checked against what asks for it."""
    if args.baseline is None:
        return None
    if kpis is None or kpis.max_regression_percent is None:
        raise ValueError('--baseline %s: nothing compares with it: give '
                         '--kpi with a KPI file that sets '
                         'max_regression_percent' % args.baseline)
    return results.load(args.baseline)
