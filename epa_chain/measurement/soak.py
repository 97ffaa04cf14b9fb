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

"""Long latency soak: hours at one load, results saved as it goes.

Seed 000 (section 3.1) asks for latency runs of at least an hour, better
24 h, because rare outliers are what breaks voice calls. Such a run is cut
into intervals (one trial each); after every interval the cumulative
statistics are updated and `save` is called, so a run that dies at hour
20 still leaves 20 hours of results and the worst delay seen.
"""

import math

from epa_chain.measurement import latency


def run(recorder, load_fps, duration_s, interval_s, save, tags=None):
    """Soak at `load_fps`; returns the `soak` dict of the results file.

    `save(soak)` is called with the dict after every interval.
    """
    intervals = max(1, int(math.ceil(duration_s / interval_s - 1e-9)))
    soak = {'load_fps': load_fps, 'duration_s': duration_s,
            'interval_s': interval_s, 'complete': False, 'intervals': [],
            'directions': {}}
    accumulators = {}
    remaining = duration_s
    for index in range(intervals):
        length = min(interval_s, remaining)
        remaining -= length
        interval_tags = dict(tags or {}, interval=index + 1)
        result = recorder.run(load_fps, length, 'soak', tags=interval_tags,
                              measure_latency=True)
        worst = None
        for direction in result.directions:
            accumulator = accumulators.setdefault(
                direction.direction, latency.LatencyAccumulator())
            accumulator.add(direction.latency)
            if direction.latency is not None and \
                    direction.latency.max_ns is not None:
                worst = max(worst or 0.0, direction.latency.max_ns)
        soak['intervals'].append({
            'index': index, 'trial': recorder.records[-1]['index'],
            'started_at': result.started_at, 'duration_s': length,
            'loss_ratio': result.loss_ratio, 'max_ns': worst})
        soak['directions'] = {name: acc.summary()
                              for name, acc in accumulators.items()}
        save(soak)
    soak['complete'] = True
    save(soak)
    return soak
