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
distribution PNGs. Exit status: 0 done, 2 unreadable or invalid file.

  epa-chain report results.json
  epa-chain report results.json --plots plots/
"""

import sys


def add_arguments(parser):
    parser.add_argument('result', metavar='RESULT.json',
                        help='a file written by epa-chain measure --json')
    parser.add_argument('--plots', metavar='DIR',
                        help='write PNG plots into DIR')


def _plot_directory(path):
    """Create DIR of --plots; the one-line reason it cannot be, or None."""
    import os

    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        return ('--plots %s: cannot create the directory: %s; give a '
                'directory you can write' % (path, error.strerror or error))
    return None


def run(args):
    from epa_chain.measurement import report
    from epa_chain.measurement import results

    try:
        document = results.load(args.result)
    except results.ResultsError as error:
        print('epa-chain report: %s' % error, file=sys.stderr)
        return 2
    # Before any table: a bad --plots leaves no half-printed report.
    problem = args.plots and _plot_directory(args.plots)
    if problem:
        print('epa-chain report: %s' % problem, file=sys.stderr)
        return 2
    sys.stdout.write(report.render_tables(document))
    if args.plots:
        from epa_chain.measurement import plots

        for path in plots.render(document, args.plots):
            print('plot: %s' % path)
    return 0
