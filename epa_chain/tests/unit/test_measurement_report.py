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

"""Seed-layout tables carry the right arithmetic; plots are PNG files."""

import math
import os
import re
import shutil
import tempfile

import testtools

from epa_chain.generators import model
from epa_chain.measurement import campaign
from epa_chain.measurement import latency
from epa_chain.measurement import plots
from epa_chain.measurement import report
from epa_chain.measurement import results
from epa_chain.measurement import trial
from epa_chain.measurement import verdicts

PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


def measure(directions=('forward', 'reverse'), chain_length=3, **options):
    sut = model.ModelGenerator(ndr_fps=2.5e6, link_bps=10e9)
    plan = campaign.Campaign(frame_sizes=['64', '1518'], flow_counts=[1],
                             directions=directions, method='rfc2544',
                             trial_duration_s=30, latency_duration_s=30,
                             chain_length=chain_length, **options)
    return campaign.run(sut, plan)


def table_rows(text, title_part):
    """Cells of the data rows of the first table whose title matches."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if title_part in line)
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if line.startswith('|'):
            rows.append([cell.strip() for cell in line.strip('|').split('|')])
    return rows[0], rows[1:]


def number(cell):
    return float(cell.replace(',', ''))


class TestThroughputTable(testtools.TestCase):

    def check(self, document, directions):
        text = report.render_tables(document)
        word = 'Bidirectional' if directions == 2 else 'Unidirectional'
        headers, rows = table_rows(
            text, '%s throughput with 0 frame loss (NDR), 1 flow' % word)
        self.assertEqual(['Packet Size', 'Mbps', 'Packets/sec',
                          '% Line Rate', 'Average Latency (us)',
                          'Minimum Latency (us)', 'Maximum Latency (us)'],
                         headers)
        link_mbps = document['generator']['link_bps'] / 1e6
        for row, case in zip(rows, document['cases']):
            size = case['frame_size']['mean_bytes']
            goal = case['search']['goals'][0]
            packets = goal['throughput_fps'] * directions
            self.assertEqual(case['frame_size']['label'], row[0])
            self.assertEqual(round(packets), number(row[2]))
            # Seed 000 section 3.6.1: (size + 20) * 8 * fps / 1e6.
            mbps = (size + 20) * 8 * packets / 1e6
            self.assertEqual(round(mbps), number(row[1]))
            self.assertAlmostEqual(mbps * 100 / (directions * link_mbps),
                                   number(row[3]), delta=0.05)
            combined = latency.combine(
                case['latency']['directions'].values())
            for cell, key in zip(row[4:], ('avg_ns', 'min_ns', 'max_ns')):
                self.assertAlmostEqual(combined[key] / 1000, number(cell),
                                       delta=0.05)
        return text, rows

    def test_bidirectional_adds_both_directions(self):
        text, rows = self.check(measure(), 2)
        # 1518 B reaches line rate: 2 x 10 Gbps.
        self.assertEqual(['1518', '20,000'], rows[1][:2])
        self.assertEqual('100.0', rows[1][3])
        self.assertIn('Details: rfc2544 search', text)

    def test_unidirectional(self):
        self.check(measure(directions=('forward',)), 1)

    def test_a_search_ending_below_line_rate_prints_a_bound(self):
        # The campaign's ceiling (1e6 frames/s) is below the system's NDR
        # (2.5e6) and the line rate: the goals hold there, so the
        # throughput is "at least" the ceiling, nothing more.
        document = measure(max_load_fps=1e6)
        text = report.render_tables(document)
        _, rows = table_rows(text, 'throughput with 0 frame loss (NDR)')
        self.assertEqual('>= 2,000,000', rows[0][2])
        self.assertTrue(rows[0][1].startswith('>= '), rows[0])
        self.assertTrue(rows[0][3].startswith('>= '), rows[0])
        self.assertIn('>= : the search reached its maximum load, below line '
                      'rate, with the goal still met: the throughput is at '
                      'least this (1,000,000 frames/s per direction)', text)
        _, rows = table_rows(text, 'switching performance')
        self.assertEqual('>= 2,000,000', rows[0][-2])
        # Line rate is the link's figure, not a bound (1518 B above).
        self.assertNotIn('>= ', report.render_tables(measure()))

    def test_pdr_table_and_trials(self):
        document = measure()
        text = report.render_tables(document)
        self.assertIn('with <= 0.5 % frame loss (PDR)', text)
        headers, rows = table_rows(text, 'Trials')
        self.assertEqual(['Packet Size', 'Flows', 'Trials', 'Trial-seconds',
                          'Status'], headers)
        self.assertEqual(str(document['totals']['trials']), rows[-1][2])


class TestSwitchingTable(testtools.TestCase):

    def test_throughput_times_switching_operations(self):
        document = measure(chain_length=2)
        text = report.render_tables(document)
        headers, rows = table_rows(text, 'switching performance')
        self.assertIn('Switching operations', headers)
        for row, case in zip(rows, document['cases']):
            packets = case['search']['goals'][0]['throughput_fps'] * 2
            self.assertEqual('3', row[headers.index('Switching operations')])
            self.assertEqual(
                round(packets),
                number(row[headers.index('Throughput (packets/sec)')]))
            self.assertAlmostEqual(
                packets * 3,
                number(row[headers.index('Switching (packets/sec)')]),
                delta=2)

    def test_no_table_without_chain_length(self):
        document = measure(chain_length=None)
        document['generator'].pop('chain_length')
        self.assertNotIn('switching performance',
                         report.render_tables(document))


class TestOtherTables(testtools.TestCase):

    def test_latency_distribution_and_errors(self):
        document = measure()
        text = report.render_tables(document)
        headers, rows = table_rows(text, 'Latency distribution')
        self.assertIn('PDV P99.9 (us)', headers)
        self.assertEqual(4, len(rows))  # 2 sizes x 2 directions
        self.assertIn('RFC 5481', text)
        document['cases'][0]['error'] = {'cause': 'counters went backwards',
                                         'detail': 'x', 'phase': 'search'}
        text = report.render_tables(document)
        self.assertRegex(text, r'\| 64 +\| ERROR: counters went backwards')

    def test_a_percentile_beyond_the_histogram_shows_its_bounds(self):
        document = measure(directions=('forward',))
        record = trial.LatencyRecord(
            min_ns=95000.0, avg_ns=1.8e6, max_ns=23.7e6,
            histogram=[(0.0, 100000.0, 995), (200000.0, math.inf, 5)])
        case = document['cases'][0]
        case['latency']['directions']['forward'] = latency.summarize(
            [record])
        text = report.render_tables(document)
        headers, rows = table_rows(text, 'Latency distribution')
        row = rows[0]
        # P50 within the histogram: one figure. P99.9 beyond it: bounds,
        # and its PDV from the same bounds less the minimum.
        self.assertEqual('100.0', row[headers.index('P50 (us)')])
        self.assertEqual('200.0..23,700.0', row[headers.index('P99.9 (us)')])
        self.assertEqual('105.0..23,605.0',
                         row[headers.index('PDV P99.9 (us)')])
        self.assertIn('a..b: the percentile lies beyond the generator\'s '
                      'histogram', text)
        self.assertNotIn('a..b:', report.render_tables(measure()))

    def test_histogram_only_latency_says_what_is_missing(self):
        sut = model.ModelGenerator(latency_mode='histogram')
        plan = campaign.Campaign(frame_sizes=['64'], method='rfc2544',
                                 trial_duration_s=5, latency_duration_s=5)
        text = report.render_tables(campaign.run(sut, plan))
        self.assertIn('ipdv unavailable: needs per-frame sequence numbers',
                      text)

    def test_linear_sweep_table(self):
        sut = model.ModelGenerator(ndr_fps=2e6)
        plan = campaign.Campaign(frame_sizes=['64'], method='linear',
                                 linear_steps=20, latency_duration_s=0)
        text = report.render_tables(campaign.run(sut, plan))
        headers, rows = table_rows(text, 'Linear loss sweep')
        self.assertEqual(2, len(rows))
        step = 100.0 / 20
        self.assertEqual('%g-%g %%' % (step, 10 * step), rows[0][0])
        self.assertTrue(re.match(r'\d+\.\d{4}', rows[1][-1]))


class TestFindingTables(testtools.TestCase):
    """The audit and KPI tables are the one findings grid (findings.py)."""

    def test_an_audit_recorded_before_the_one_shape_still_reports(self):
        document = measure(directions=('forward',))
        document['cloud'] = {'epa_audit': {
            'schema': 'epa-chain/audit/1', 'stack': 's',
            'host_checked': [], 'valid': False, 'findings': [{
                'server': 'vnf1', 'aspect': 'pages', 'asked': 'large',
                'given': '4 KiB', 'severity': 'invalidates',
                'message': 'asked large pages, got small'}]}}
        text = report.render_tables(document)
        self.assertIn('EPA audit: INVALID - 1 finding(s)', text)
        headers, rows = table_rows(text, 'EPA: asked vs given')
        self.assertEqual(['SERVER', 'ASPECT', 'ASKED', 'GIVEN', 'SEVERITY',
                          'WHAT / FIX'], headers)
        self.assertEqual(['vnf1', 'pages', 'large', '4 KiB', 'INVALIDATES',
                          'asked large pages, got small'], rows[0])

    def test_kpi_verdicts_keep_their_words_and_the_note(self):
        judged = [verdicts.Verdict('loss', '64B', 'n/a', '<= 0.01',
                                   verdicts.UNKNOWN, 'no latency trial')]
        text = report.render_table(verdicts.table(judged, 'kpi.yaml'))
        headers, rows = table_rows(text, 'KPI verdicts')
        self.assertEqual(['loss', '64B', 'n/a', '<= 0.01', 'UNKNOWN',
                          'no latency trial'], rows[0])
        self.assertIn('0 of 1 KPI checks met; FAIL', text)

    def test_a_kpi_record_is_the_one_findings_shape_and_v1_still_reads(
            self):
        judged = [verdicts.Verdict('NDR min_fps', '64B', '1,000', '>= 2,000',
                                   verdicts.MISSED, 'below the floor')]
        document = measure(directions=('forward',))
        document['kpi'] = verdicts.record(judged, 'kpi.yaml')
        results.validate(document)
        self.assertEqual(('epa-chain/results/2#kpi', 'epa-chain/findings/1',
                          'kpi.yaml', {'fails': 1, 'warns': 0,
                                       'unanswered': 0, 'passes': 0}),
                         tuple(document['kpi'][key] for key in (
                             'schema', 'findings_schema', 'kpi_file',
                             'counts')))
        self.assertEqual((judged, 'kpi.yaml'),
                         verdicts.from_record(document['kpi']))
        # A document written before the one shape: its own schema, read.
        old = dict(document, schema='epa-chain/results/1', kpi={
            'source': 'old-kpi.yaml', 'passed': False, 'verdicts': [
                dict(kpi='NDR min_fps', case='64B', measured='1,000',
                     limit='>= 2,000', verdict='MISSED',
                     note='below the floor')]})
        results.validate(old)
        self.assertEqual((judged, 'old-kpi.yaml'),
                         verdicts.from_record(old['kpi']))
        text = report.render_tables(old)
        headers, rows = table_rows(text, 'KPI verdicts (old-kpi.yaml')
        self.assertEqual(['NDR min_fps', '64B', '1,000', '>= 2,000',
                          'MISSED', 'below the floor'], rows[0])


class TestPlots(testtools.TestCase):

    def test_an_open_ended_bucket_is_drawn_as_its_range(self):
        pyplot = plots.pyplot_module()
        record = trial.LatencyRecord(
            min_ns=95000.0, avg_ns=1.8e6, max_ns=23.7e6,
            histogram=[(0.0, 100000.0, 820), (12.8e6, math.inf, 180)])
        summary = latency.summarize([record])
        figure, (histogram_axis, cdf_axis) = pyplot.subplots(1, 2)
        self.addCleanup(pyplot.close, figure)
        plots._draw_direction(histogram_axis, cdf_axis, 'forward', summary)
        # One bar over 12.8..23.7 ms holding the 180 frames, not a bar of
        # them at the maximum.
        (bar,) = [p for p in histogram_axis.patches if p.get_hatch()]
        self.assertAlmostEqual(12800.0, bar.get_x())
        self.assertAlmostEqual(23700.0 - 12800.0, bar.get_width())
        self.assertEqual(180, bar.get_height())
        self.assertLessEqual(max(p.get_x() + p.get_width() for p in
                                 histogram_axis.patches if not
                                 p.get_hatch()), 12800.0)
        # The CDF line ends where knowledge ends (82 %); the rest is a
        # shaded region up to 1 over the bucket's range.
        (line,) = cdf_axis.get_lines()
        self.assertLessEqual(max(line.get_xdata()), 12800.0)
        self.assertAlmostEqual(0.82, max(line.get_ydata()))
        self.assertEqual(1, len(cdf_axis.collections))

    def test_pngs(self):
        out = tempfile.mkdtemp(prefix='epa-plots-')
        self.addCleanup(shutil.rmtree, out)
        document = measure()
        document['cases'] = document['cases'][:1]
        paths = plots.render(document, out)
        self.assertEqual(['latency-64-1flows.png', 'throughput.png'],
                         sorted(os.path.basename(p) for p in paths))
        for path in paths:
            with open(path, 'rb') as stream:
                self.assertEqual(PNG_MAGIC, stream.read(8))
            self.assertGreater(os.path.getsize(path), 10000)
