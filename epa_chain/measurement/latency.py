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

"""One-way delay statistics: RFC 2544 min/avg/max, RFC 5481 PDV and IPDV.

Seed 000 (sections 2.6, 3.7, 3.8) asks for the distribution of delays,
not only min/avg/max, and for delay variation as RFC 5481 defines it:

- PDV of packet i = D(i) - D(min): the reference is the packet with the
  smallest delay in the sample. Its distribution is the delay
  distribution shifted by D(min), so its percentiles come from the same
  histogram.
- IPDV of packet i = D(i) - D(i-1), where i-1 is the previous packet in
  *sending* order (sequence numbers), so only pairs of consecutive
  sequence numbers that both arrived count. IPDV is signed; we report its
  min, max, mean and the percentiles of |IPDV|.

Percentiles come from a full HdrHistogram (1 ns to one hour, 3
significant digits), kept encoded in the results so distributions can be
re-binned later. Generators that only bin delays (PROX's 128 buckets) give
no sequence numbers: IPDV is then unavailable and percentiles are only as
fine as the buckets, which the summary says (`unavailable`,
`resolution_ns`). A percentile that falls in an open-ended bucket (PROX's
last one holds every delay beyond its histogram) is known only to lie
between that bucket's lower edge and the maximum delay: it is reported as
the maximum, and `percentiles_beyond_ns` gives the lower edge.
"""

import math

from hdrh.histogram import HdrHistogram

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)
LOWEST_NS = 1
HIGHEST_NS = 3600 * 10 ** 9  # a frame later than an hour is lost
SIGNIFICANT_DIGITS = 3
SOURCE_SAMPLES = 'samples'
SOURCE_HISTOGRAM = 'histogram'
SOURCE_SUMMARY = 'summary'


def _new_histogram():
    return HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)


def _clamp_ns(value):
    return min(HIGHEST_NS, max(LOWEST_NS, int(round(value))))


def percentile_key(percentile):
    """50.0 -> '50', 99.9 -> '99.9': JSON keys of the percentile maps."""
    return ('%f' % percentile).rstrip('0').rstrip('.')


class LatencyAccumulator:
    """Delay statistics of one direction over one trial or a whole soak.

    Each `LatencyRecord` added is one stream: sequence numbers are
    compared within a record, never across records.
    """

    def __init__(self):
        self._delays = _new_histogram()
        self._ipdv_abs = _new_histogram()
        self.count = 0
        self._sum_ns = 0.0
        self.min_ns = None
        self.max_ns = None
        self.ipdv_count = 0
        self._ipdv_sum = 0.0
        self.ipdv_min = None
        self.ipdv_max = None
        self.out_of_order = 0
        self.duplicates = 0
        self.sources = set()
        self.resolution_ns = None
        self.estimated = set()
        # Lowest lower edge of an open-ended bucket that held delays, and
        # how many frames such buckets held.
        self.beyond_ns = None
        self.beyond_count = 0

    def add(self, record):
        """Fold one LatencyRecord (samples, histogram or summary) in."""
        if record is None:
            return
        if record.samples:
            self._add_samples(record.samples)
            self.sources.add(SOURCE_SAMPLES)
        elif record.histogram:
            self._add_histogram(record)
            self.sources.add(SOURCE_HISTOGRAM)
        elif record.min_ns is not None:
            self._add_summary(record)
            self.sources.add(SOURCE_SUMMARY)
        else:
            return
        if not record.samples:
            # Without sequence numbers the generator's own counters are
            # all there is.
            self.out_of_order += record.out_of_order
            self.duplicates += record.duplicates

    def _extend_range(self, low, high):
        self.min_ns = low if self.min_ns is None else min(self.min_ns, low)
        self.max_ns = high if self.max_ns is None else max(self.max_ns,
                                                           high)

    def _add_samples(self, samples):
        delay_by_seq = {}
        highest_seq = None
        for seq, delay in samples:
            if seq in delay_by_seq:
                # A duplicate says nothing new about the delay of `seq`.
                self.duplicates += 1
                continue
            if highest_seq is not None and seq < highest_seq:
                self.out_of_order += 1
            else:
                highest_seq = seq
            delay_by_seq[seq] = delay
            self._delays.record_value(_clamp_ns(delay))
            self.count += 1
            self._sum_ns += delay
        if delay_by_seq:
            self._extend_range(min(delay_by_seq.values()),
                               max(delay_by_seq.values()))
        for seq, delay in delay_by_seq.items():
            previous = delay_by_seq.get(seq - 1)
            if previous is None:
                continue
            ipdv = delay - previous
            self.ipdv_count += 1
            self._ipdv_sum += ipdv
            self.ipdv_min = ipdv if self.ipdv_min is None else min(
                self.ipdv_min, ipdv)
            self.ipdv_max = ipdv if self.ipdv_max is None else max(
                self.ipdv_max, ipdv)
            if ipdv:
                self._ipdv_abs.record_value(_clamp_ns(abs(ipdv)))
            else:
                # hdr starts at 1 ns: a zero variation is below resolution.
                self._ipdv_abs.record_value(LOWEST_NS)

    def _add_histogram(self, record):
        total = 0
        midpoint_sum = 0.0
        for lower, upper, count in record.histogram:
            if count <= 0:
                continue
            if upper is None or math.isinf(upper):
                # Open-ended: only "above `lower`, at most the maximum".
                upper = record.max_ns if record.max_ns is not None else lower
                self.beyond_ns = (lower if self.beyond_ns is None
                                  else min(self.beyond_ns, lower))
                self.beyond_count += count
            # Upper bound, within what the generator saw: percentiles err
            # on the slow side by at most one bucket width.
            value = upper
            if record.max_ns is not None:
                value = min(value, record.max_ns)
            if record.min_ns is not None:
                value = max(value, record.min_ns)
            self._delays.record_value(_clamp_ns(value), count)
            total += count
            midpoint_sum += count * (lower + upper) / 2.0
            width = upper - lower
            if width > 0:
                self.resolution_ns = max(self.resolution_ns or 0, width)
        if not total:
            return
        self.count += total
        if record.avg_ns is not None:
            self._sum_ns += record.avg_ns * total
        else:
            self._sum_ns += midpoint_sum
            self.estimated.add('avg_ns')
        low = record.min_ns
        high = record.max_ns
        if low is None:
            low = min(lo for lo, _up, count in record.histogram if count > 0)
            self.estimated.add('min_ns')
        if high is None:
            high = self._delays.get_max_value()
            self.estimated.add('max_ns')
        self._extend_range(low, high)

    def _add_summary(self, record):
        # Only min/avg/max: no distribution. Weight the average by one.
        self._extend_range(record.min_ns, record.max_ns
                           if record.max_ns is not None else record.min_ns)
        if record.avg_ns is not None:
            self._sum_ns += record.avg_ns
            self.count += 1

    def unavailable(self):
        """Statistics these records cannot give, with the reason."""
        missing = {}
        if self.sources - {SOURCE_SAMPLES}:
            missing['ipdv'] = ('needs per-frame sequence numbers; the '
                               'generator only reported binned delays')
        if not self._delays.get_total_count():
            missing['percentiles'] = ('the generator reported only '
                                      'min/avg/max')
            missing['pdv'] = missing['percentiles']
        return missing

    def percentiles(self):
        if not self._delays.get_total_count():
            return None
        # HdrHistogram answers the top of a value's equivalent range (3
        # significant digits), which may pass the delay measured last.
        high = self.max_ns if self.max_ns is not None else math.inf
        return {percentile_key(p): min(
            self._delays.get_value_at_percentile(p), high)
            for p in PERCENTILES}

    def percentiles_beyond(self, percentiles):
        """{key: lower edge} of the percentiles in an open-ended bucket.

        Their value is the maximum delay, an upper bound; the histogram
        says only that they lie above the edge.
        """
        if self.beyond_ns is None or not percentiles:
            return {}
        return {key: float(self.beyond_ns)
                for key, value in percentiles.items()
                if value > self.beyond_ns}

    def summary(self):
        """A JSON-ready dict; see schemas/results-2.json `latency`."""
        if self.min_ns is None:
            return None
        avg = self._sum_ns / self.count if self.count else None
        percentiles = self.percentiles()
        missing = self.unavailable()
        summary = {
            'sources': sorted(self.sources),
            'count': self.count,
            'min_ns': float(self.min_ns),
            'avg_ns': avg,
            'max_ns': float(self.max_ns),
            'percentiles_ns': percentiles,
            'pdv_ns': None,
            'ipdv_ns': None,
            'out_of_order': self.out_of_order,
            'duplicates': self.duplicates,
            'resolution_ns': self.resolution_ns,
            'percentiles_beyond_ns': self.percentiles_beyond(percentiles),
            'beyond': None if self.beyond_ns is None else {
                'lower_ns': float(self.beyond_ns),
                'count': self.beyond_count},
            'estimated': sorted(self.estimated),
            'unavailable': missing,
            'hdr_delay_ns': None,
        }
        if percentiles is not None:
            summary['pdv_ns'] = {
                'reference': 'min',
                'mean': avg - self.min_ns if avg is not None else None,
                'max': float(self.max_ns - self.min_ns),
                'percentiles': {
                    key: max(0.0, value - self.min_ns)
                    for key, value in percentiles.items()},
            }
            summary['hdr_delay_ns'] = self._delays.encode().decode('ascii')
        if 'ipdv' not in missing and self.ipdv_count:
            summary['ipdv_ns'] = {
                'count': self.ipdv_count,
                'min': float(self.ipdv_min),
                'max': float(self.ipdv_max),
                'mean': self._ipdv_sum / self.ipdv_count,
                'abs_percentiles': {
                    percentile_key(p):
                        self._ipdv_abs.get_value_at_percentile(p)
                    for p in PERCENTILES},
            }
        return summary


def summarize(records):
    """Summary dict of one or more LatencyRecords, None if there are none."""
    accumulator = LatencyAccumulator()
    for record in records:
        accumulator.add(record)
    return accumulator.summary()


def decode_histogram(encoded):
    """An HdrHistogram back from a summary's `hdr_delay_ns`.

    ValueError when it is not one: the text comes from a results file.
    """
    try:
        return HdrHistogram.decode(encoded.encode('ascii'))
    except Exception as error:
        # hdrh raises its own exceptions, and binascii's, zlib's...
        raise ValueError('hdr_delay_ns is not an HdrHistogram in compressed '
                         'base64 (%s: %s)' % (type(error).__name__, error)
                         ) from None


def combine(summaries):
    """min/avg/max over directions, as the seed tables print one figure.

    The average is weighted by the number of frames each direction saw.
    """
    summaries = [s for s in summaries if s]
    if not summaries:
        return None
    counted = [s for s in summaries if s['avg_ns'] is not None and
               s['count']]
    total = sum(s['count'] for s in counted)
    return {
        'min_ns': min(s['min_ns'] for s in summaries),
        'max_ns': max(s['max_ns'] for s in summaries),
        'avg_ns': (sum(s['avg_ns'] * s['count'] for s in counted) / total
                   if total else None),
    }
