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

"""Fit a scenario's waits and measurement into the test's timeout.

Tempest runs each test under fixtures.Timeout(OS_TEST_TIMEOUT x the
class's TIMEOUT_SCALING_FACTOR). A benchmark whose stack creation,
readiness wait, measurement and deletion cannot fit in it would be
killed halfway, possibly while deleting its stack: the budget refuses
such a configuration before anything is created, and stops measuring
while there is still time to delete the stack.
"""

import os
import time

from epa_chain.cloud import hop_check
from epa_chain.cloud import options as opts

TIMEOUT_VARIABLE = 'OS_TEST_TIMEOUT'


def test_timeout(environ=None, scaling_factor=1):
    """Seconds the test may run, read as Tempest's setUp reads it.

    None without a timeout (unset, 0 or not an integer: Tempest then sets
    none either).
    """
    environ = os.environ if environ is None else environ
    try:
        seconds = int(environ.get(TIMEOUT_VARIABLE, 0)) * scaling_factor
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def case_minimum_s(options):
    """The least one frame size x flow count can take.

    A search has at least one trial; then the latency test and its soak;
    all of it once per repetition of a repeated run.
    """
    plan = options.campaign
    return plan.repeat * (plan.trial_duration_s + plan.latency_duration_s +
                          plan.soak_duration_s)


def minimum_s(options, trial_directions):
    """The least a whole scenario can take, every wait at its maximum."""
    cases = _cases(options)
    return (options.stack_create_timeout + options.vnf_ready_timeout +
            hop_check.DURATION_S * len(trial_directions) *
            options.chain_count +
            cases * case_minimum_s(options) + options.stack_delete_timeout)


def _cases(options):
    """Frame sizes x flow counts of a scenario, per measured chain count."""
    return (len(options.campaign.frame_sizes) *
            len(options.campaign.flow_counts) *
            len(options.measured_chain_counts()))


class Budget:
    """The time left of a test timeout (None: unlimited)."""

    def __init__(self, total_s, description='', clock=time.monotonic):
        self.total_s = total_s
        self.description = description
        self.clock = clock
        self.start = clock()

    def remaining(self):
        if self.total_s is None:
            return None
        return self.total_s - (self.clock() - self.start)

    def check(self, options, trial_directions):
        """OptionError (on stack_create_timeout) when it cannot fit."""
        if self.total_s is None:
            return
        needed = minimum_s(options, trial_directions)
        if needed <= self.total_s:
            return
        cases = _cases(options)
        raise opts.OptionError(
            'stack_create_timeout', 'the scenario cannot fit in the test '
            'timeout of %d s%s: stack_create_timeout %d + vnf_ready_timeout '
            '%d + stack_delete_timeout %d + at least %d s of measurement '
            '(%d case(s) x (trial_duration + latency_duration + '
            'latency_soak_duration), and the hop check) = %d s; lower '
            'them, measure fewer frame_sizes/flow_counts, or raise %s or '
            '[%s] timeout_scaling_factor' % (
                self.total_s, self.description,
                options.stack_create_timeout, options.vnf_ready_timeout,
                options.stack_delete_timeout,
                needed - options.stack_create_timeout -
                options.vnf_ready_timeout - options.stack_delete_timeout,
                cases, needed, TIMEOUT_VARIABLE, opts.GROUP))

    def allows(self, seconds, reserve_s):
        """Whether `seconds` of work still leave `reserve_s` after it."""
        remaining = self.remaining()
        return remaining is None or remaining - seconds >= reserve_s
