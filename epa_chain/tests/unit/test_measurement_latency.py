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

"""Delay statistics: RFC 5481 PDV/IPDV, order checks, histogram sources."""

import math
import random

import testtools

from epa_chain.measurement import latency
from epa_chain.measurement import trial


def close(test, expected, actual, relative=0.002):
    # HdrHistogram with 3 significant digits: within 0.1 % (+ rounding).
    test.assertAlmostEqual(expected, actual,
                           delta=max(1.0, abs(expected) * relative))


class TestSamples(testtools.TestCase):

    def test_pdv_and_ipdv_follow_rfc5481(self):
        # Arrival order; seq 2 arrives after 3 (reordered), 2 twice.
        samples = [(0, 1000.0), (1, 1500.0), (3, 1200.0), (2, 1300.0),
                   (2, 1300.0), (5, 4000.0)]
        summary = latency.summarize([trial.LatencyRecord(samples=samples)])
        self.assertEqual(5, summary['count'])
        self.assertEqual(1, summary['duplicates'])
        self.assertEqual(1, summary['out_of_order'])
        self.assertEqual(1000.0, summary['min_ns'])
        self.assertEqual(4000.0, summary['max_ns'])
        self.assertEqual((1000 + 1500 + 1200 + 1300 + 4000) / 5.0,
                         summary['avg_ns'])
        # PDV: D(i) - D(min).
        self.assertEqual(3000.0, summary['pdv_ns']['max'])
        # IPDV over consecutive sequence numbers in *sending* order:
        # 1-0: +500, 2-1: -200, 3-2: -100; 5 has no predecessor (4 lost).
        ipdv = summary['ipdv_ns']
        self.assertEqual(3, ipdv['count'])
        self.assertEqual(-200.0, ipdv['min'])
        self.assertEqual(500.0, ipdv['max'])
        self.assertAlmostEqual(200.0 / 3, ipdv['mean'])
        self.assertEqual({}, summary['unavailable'])

    def test_percentiles_match_sorted_samples(self):
        rng = random.Random(5)
        delays = [20000 + rng.expovariate(1 / 3000.0) for _ in range(5000)]
        record = trial.LatencyRecord(samples=list(enumerate(delays)))
        summary = latency.summarize([record])
        ordered = sorted(delays)
        for key, fraction in (('50', 0.5), ('99', 0.99), ('99.9', 0.999)):
            expected = ordered[int(fraction * len(ordered)) - 1]
            close(self, expected, summary['percentiles_ns'][key])
            close(self, expected - min(delays),
                  summary['pdv_ns']['percentiles'][key], relative=0.02)
        # The full histogram is kept and decodes to the same counts.
        decoded = latency.decode_histogram(summary['hdr_delay_ns'])
        self.assertEqual(5000, decoded.get_total_count())

    def test_accumulates_streams_independently(self):
        first = trial.LatencyRecord(samples=[(0, 100.0), (1, 200.0)])
        second = trial.LatencyRecord(samples=[(0, 300.0), (1, 100.0)])
        accumulator = latency.LatencyAccumulator()
        accumulator.add(first)
        accumulator.add(second)
        summary = accumulator.summary()
        # seq 0 of the second record is no duplicate of the first's.
        self.assertEqual(0, summary['duplicates'])
        self.assertEqual(4, summary['count'])
        self.assertEqual(2, summary['ipdv_ns']['count'])
        self.assertEqual(-200.0, summary['ipdv_ns']['min'])


class TestHistogramSource(testtools.TestCase):

    def test_buckets_give_percentiles_but_no_ipdv(self):
        buckets = [(i * 1024.0, (i + 1) * 1024.0, count)
                   for i, count in enumerate([0, 0, 10, 80, 9, 1])]
        record = trial.LatencyRecord(min_ns=2100.0, avg_ns=3600.0,
                                     max_ns=6000.0, histogram=buckets,
                                     out_of_order=3, duplicates=2)
        summary = latency.summarize([record])
        self.assertEqual(['histogram'], summary['sources'])
        self.assertEqual(100, summary['count'])
        self.assertEqual(3600.0, summary['avg_ns'])
        self.assertEqual(3, summary['out_of_order'])
        self.assertEqual(2, summary['duplicates'])
        self.assertIsNone(summary['ipdv_ns'])
        self.assertIn('ipdv', summary['unavailable'])
        self.assertEqual(1024.0, summary['resolution_ns'])
        # The median falls in the 3072-4096 bucket, reported at its top.
        close(self, 4096.0, summary['percentiles_ns']['50'])
        # Clamped to the maximum the generator measured.
        close(self, 6000.0, summary['percentiles_ns']['99.9'])
        close(self, 4096.0 - 2100.0, summary['pdv_ns']['percentiles']['50'])
        # Every bucket is closed: every percentile is within one bucket.
        self.assertEqual({}, summary['percentiles_beyond_ns'])
        self.assertIsNone(summary['beyond'])

    def test_an_open_ended_bucket_gives_only_bounds(self):
        # As PROX under QEMU TCG: most delays beyond its 128 buckets.
        buckets = [(0.0, 1000.0, 40), (127000.0, math.inf, 60)]
        record = trial.LatencyRecord(min_ns=500.0, avg_ns=1.8e6,
                                     max_ns=23.7e6, histogram=buckets)
        summary = latency.summarize([record])
        # Reported at the maximum, an upper bound, with the lower edge.
        close(self, 23.7e6, summary['percentiles_ns']['50'])
        close(self, 23.7e6, summary['percentiles_ns']['99'])
        beyond = summary['percentiles_beyond_ns']
        self.assertEqual({'50', '90', '99', '99.9', '99.99'}, set(beyond))
        self.assertEqual({127000.0}, set(beyond.values()))
        # The plots draw these frames as a range, not at the maximum.
        self.assertEqual({'lower_ns': 127000.0, 'count': 60},
                         summary['beyond'])
        # Forty per cent fell in the closed bucket: not in the open one.
        record = trial.LatencyRecord(min_ns=500.0, avg_ns=1.8e6,
                                     max_ns=23.7e6, histogram=[
                                         (0.0, 1000.0, 60),
                                         (127000.0, math.inf, 40)])
        beyond = latency.summarize([record])['percentiles_beyond_ns']
        self.assertEqual({'90', '99', '99.9', '99.99'}, set(beyond))

    def test_min_avg_max_only(self):
        record = trial.LatencyRecord(min_ns=10.0, avg_ns=20.0, max_ns=90.0)
        summary = latency.summarize([record])
        self.assertIsNone(summary['percentiles_ns'])
        self.assertIsNone(summary['pdv_ns'])
        self.assertIn('percentiles', summary['unavailable'])
        self.assertEqual(20.0, summary['avg_ns'])

    def test_missing_average_is_estimated_and_said(self):
        record = trial.LatencyRecord(histogram=[(0.0, 100.0, 1),
                                                (100.0, 200.0, 1)])
        summary = latency.summarize([record])
        self.assertEqual(100.0, summary['avg_ns'])
        self.assertIn('avg_ns', summary['estimated'])


class TestCombine(testtools.TestCase):

    def test_weighted_average_and_extremes(self):
        combined = latency.combine([
            {'min_ns': 10.0, 'max_ns': 50.0, 'avg_ns': 20.0, 'count': 1},
            {'min_ns': 5.0, 'max_ns': 40.0, 'avg_ns': 30.0, 'count': 3},
            None])
        self.assertEqual(5.0, combined['min_ns'])
        self.assertEqual(50.0, combined['max_ns'])
        self.assertEqual(27.5, combined['avg_ns'])
        self.assertIsNone(latency.combine([None]))
