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

"""Checks that turn untrustworthy trials into errors, never into figures.

A loss ratio is only a throughput result when the generator really
offered the load and its counters are sane. Every trial a search runs goes
through `check_trial`; generators reading cumulative hardware counters use
`CounterWatch` to notice counters that go backwards (a reset or a wrap
between two reads), which would otherwise read as negative loss.
"""

from epa_chain.measurement.trial import GeneratorError

RATE_SHORTFALL = 'the generator cannot reach the intended rate'
STOPPED_FORWARDING = 'the system under test stopped forwarding'
COUNTERS_BACKWARDS = 'counters went backwards'
COUNTERS_INCONSISTENT = 'counters are inconsistent'
NEGATIVE_DELAY = 'negative one-way delay'
# The generator's control did not answer in time: what ran it (a guest,
# a shared host) stopped running it for seconds, not a property of the
# system under test.
GENERATOR_STALLED = 'the generator stopped answering for a while'


def check_trial(result, rate_tolerance=0.01):
    """Raise GeneratorError when `result` cannot be used as a measurement."""
    for direction in result.directions:
        _check_counters(direction)
        _check_rate(direction, rate_tolerance)
        _check_forwarding(direction)
        _check_latency(direction)
    if result.duration_s is not None and result.duration_s < 0:
        raise GeneratorError(COUNTERS_BACKWARDS,
                             'trial duration %.3f s is negative'
                             % result.duration_s)


def _check_counters(direction):
    if direction.tx_frames < 0 or direction.rx_frames < 0:
        raise GeneratorError(
            COUNTERS_BACKWARDS,
            '%s: tx %d, rx %d frames in one trial; a counter was reset or '
            'wrapped between two reads' % (direction.direction,
                                           direction.tx_frames,
                                           direction.rx_frames))
    if direction.rx_frames > direction.tx_frames:
        raise GeneratorError(
            COUNTERS_INCONSISTENT,
            '%s: received %d frames but sent %d; frames from an earlier '
            'trial, flooding by a switch that has not learnt the MACs, or '
            'stale counters' % (direction.direction, direction.rx_frames,
                                direction.tx_frames))


def _check_rate(direction, rate_tolerance):
    floor = direction.intended_fps * (1.0 - rate_tolerance)
    if direction.offered_fps < floor:
        raise GeneratorError(
            RATE_SHORTFALL,
            '%s: offered %.0f fps of %.0f intended (tolerance %.2g %%); '
            'lower the maximum load or give the generator more cores'
            % (direction.direction, direction.offered_fps,
               direction.intended_fps, rate_tolerance * 100))


def _check_forwarding(direction):
    if direction.tx_frames > 0 and direction.rx_frames == 0:
        raise GeneratorError(
            STOPPED_FORWARDING,
            '%s: %d frames sent at %.0f fps, none came back; check that '
            'every VNF is running and that the MAC chain is complete'
            % (direction.direction, direction.tx_frames,
               direction.offered_fps))


def _check_latency(direction):
    record = direction.latency
    if record is None or not record.samples:
        return
    worst = min(delay for _seq, delay in record.samples)
    if worst < 0:
        raise GeneratorError(
            NEGATIVE_DELAY,
            '%s: a frame arrived %.0f ns before it was sent; the sender '
            'and receiver clocks are not the same clock'
            % (direction.direction, -worst))


class CounterWatch:
    """Remembers cumulative counters and refuses ones that go backwards."""

    def __init__(self, source='generator'):
        self.source = source
        self._last = {}

    def update(self, name, value):
        """Record `value` for counter `name`; return the increase."""
        previous = self._last.get(name)
        if previous is not None and value < previous:
            raise GeneratorError(
                COUNTERS_BACKWARDS,
                '%s counter %s went from %d to %d; the port was reset or '
                'the counter wrapped during the trial'
                % (self.source, name, previous, value))
        self._last[name] = value
        return value - (previous if previous is not None else value)

    def reset(self):
        """Forget every counter, e.g. after the generator reset them."""
        self._last.clear()
