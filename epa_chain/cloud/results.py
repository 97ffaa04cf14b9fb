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

"""Where a scenario writes its results, and in what files.

One directory per run, <results_dir>/<UTC time>-<N>vnf-<direction>/,
holding per frame size and flow count a JSON document (the versioned
schema of epa_chain.measurement), its text tables, its plots (PNG, in
<stem>-plots/) and a .partial/
directory the campaign saves to as it goes, plus tables.txt with every
table of the run: a long run keeps what it measured when a later frame
size fails.
"""

import datetime
import os
import re

from epa_chain.chain import directions as chain_directions
from epa_chain.measurement import campaign
from epa_chain.measurement import plots
from epa_chain.measurement import report
from epa_chain import outputs

TABLES_FILE = 'tables.txt'
# How errors name the files (the scenarios' [epa_chain] results_dir).
OPTION = '[epa_chain] results_dir'


def run_directory(results_dir, chain_length, direction, now=None):
    """<results_dir>/<UTC time>-<N>vnf-<direction's word>/, made."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    name = '%s-%dvnf-%s' % (now.strftime('%Y%m%dT%H%M%SZ'), chain_length,
                            chain_directions.word(direction))
    path = os.path.join(results_dir, name)
    os.makedirs(path, exist_ok=True)
    return path


def file_stem(frame_size, flows):
    """'64B-1flows', 'imix-64x7-570x4-1518x1-100flows'."""
    if frame_size.imix is None:
        label = '%dB' % frame_size.size
    else:
        label = 'imix-' + '-'.join('%dx%d' % item
                                   for item in frame_size.imix)
    return re.sub(r'[^A-Za-z0-9_.-]', '_', '%s-%dflows' % (label, flows))


def partial_directory(run_directory_path, stem):
    """Where the campaign rewrites its partial document after each step.

    A run killed in the middle of an hours-long search keeps its trials
    (and a latency soak its intervals); one directory per frame size and
    flow count, so that they never mix.
    """
    path = os.path.join(run_directory_path, stem + '.partial')
    os.makedirs(path, exist_ok=True)
    return path


def plot_directory(directory, stem):
    return os.path.join(directory, stem + '-plots')


def write(directory, stem, document):
    """Write the JSON document, its tables and its plots.

    Plots are PNG files in <stem>-plots/. Returns every path, the JSON
    first.
    """
    json_path = os.path.join(directory, stem + '.json')
    campaign.write_json(document, json_path)
    tables = report.render_tables(document)
    tables_path = os.path.join(directory, stem + '.txt')
    outputs.write_text(tables_path, tables, OPTION)
    # The run's tables, case after case: rewritten whole, never appended
    # through whatever the path has become.
    every_case = os.path.join(directory, TABLES_FILE)
    before = ''
    if os.path.isfile(every_case) and not os.path.islink(every_case):
        with open(every_case) as f:
            before = f.read()
    outputs.write_text(every_case, before + '== %s ==\n%s\n' % (
        stem, tables.rstrip('\n')), OPTION)
    # Last: the JSON and the tables are kept even if a plot fails.
    plot_paths = plots.render(document, plot_directory(directory, stem))
    return [json_path, tables_path] + plot_paths


def write_density(directory, runs):
    """The density sweep's curve: density.json, density.txt, density.png.

    runs: (chains measured together, case document) pairs. Returns the
    paths, the JSON first.
    """
    from epa_chain.measurement import density_curve
    from epa_chain.measurement import results as results_doc

    table = density_curve.curve(runs)
    json_path = os.path.join(directory, 'density.json')
    results_doc.write_json(table, json_path, OPTION)
    text_path = os.path.join(directory, 'density.txt')
    outputs.write_text(text_path, density_curve.render(table), OPTION)
    return [json_path, text_path, density_curve.plot(table, directory,
                                                     OPTION)]
