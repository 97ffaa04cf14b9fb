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

"""RFC 2544 throughput: one binary search per loss-ratio goal.

As the seeds and EANTC (seed 002) run it: the first trial is at the
maximum load; if it meets the goal the search is over. Otherwise the
interval [minimum, maximum] is halved until (upper - lower) / upper is at
most the resolution, every trial at full duration. Zero loss is the
RFC 2544 goal; a goal with a tolerance (EANTC's 4 ppm, a PDR) is searched
the same way, separately: a search per goal, nothing shared.

Loss verification (RFC 9004 and ETSI GS NFV-TST 009's "binary search with
loss verification"), off unless `loss_verification_repeats` M > 0: a
trial that misses its goal by little (fewer than
`loss_verification_frames` lost beyond the goal's allowance, or a loss
ratio above the goal's by less than `loss_verification_ratio`) runs again
at the same load, up to M times; the load passes when one of them meets
the goal, fails at the first clear miss or after M. A transient loss of a
noisy SUT then no longer halves the search into the wrong half. Each
repeat is a trial of the results, tagged `verification` (1..M).
"""

from epa_chain.measurement.searches import common


def binary_search(step, min_load, max_load, resolution):
    """Bisect with `step(load) -> bool` (True: the goal holds).

    Returns (lower, upper, status); lower is None when even the minimum
    load fails, upper is None when the maximum load passes.
    """
    if step(max_load):
        return max_load, None, common.STATUS_MAX_LOAD
    lower, upper = min_load, max_load
    lower_measured = False
    while upper - lower > resolution * upper:
        load = (lower + upper) / 2.0
        if step(load):
            lower, lower_measured = load, True
        else:
            upper = load
    if not lower_measured:
        # Every halving failed: the minimum itself was never tried.
        if not step(min_load):
            return None, min_load, common.STATUS_BELOW_MIN
    return lower, upper, common.STATUS_FOUND


def narrow_miss(result, loss_ratio, plan):
    """True when a trial missed `loss_ratio` by little (see above)."""
    excess_frames = (result.tx_frames - result.rx_frames -
                     loss_ratio * result.tx_frames)
    return (excess_frames < plan.loss_verification_frames or
            result.loss_ratio - loss_ratio < plan.loss_verification_ratio)


class VerifiedStep:
    """One load's verdict: a trial, and its repeats on a narrow miss."""

    def __init__(self, recorder, name, loss_ratio, plan):
        self.recorder, self.name = recorder, name
        self.loss_ratio, self.plan = loss_ratio, plan
        #: repeats run, and loads a repeat passed
        self.repeats = 0
        self.rescued = 0

    def __call__(self, load):
        tags = {'goal': self.name}
        for repeat in range(self.plan.loss_verification_repeats + 1):
            if repeat:
                tags = {'goal': self.name, 'verification': repeat}
                self.repeats += 1
            result = self.recorder.run(load, self.plan.trial_duration_s,
                                       'search', tags=tags)
            if common.meets(result, self.loss_ratio):
                self.rescued += bool(repeat)
                return True
            if not narrow_miss(result, self.loss_ratio, self.plan):
                return False
        return False


def search_goal(recorder, name, loss_ratio, plan, min_load, max_load,
                step_factory=None):
    """One binary search for one goal; returns a GoalOutcome."""
    start = recorder.count
    if step_factory is None:
        step = VerifiedStep(recorder, name, loss_ratio, plan)
    else:
        step = step_factory(name, loss_ratio)
    lower, upper, status = binary_search(step, min_load, max_load,
                                         plan.resolution)
    trials, seconds = recorder.since(start)
    details = {}
    if isinstance(step, VerifiedStep) and plan.loss_verification_repeats:
        details = {'verification_repeats': step.repeats,
                   'loads_passed_on_repeat': step.rescued}
    return common.GoalOutcome(
        name=name, loss_ratio=loss_ratio, lower_fps=lower, upper_fps=upper,
        throughput_fps=lower, status=status, trials=trials,
        trial_seconds=seconds, details=details)


def search(recorder, plan, min_load, max_load):
    goals = [search_goal(recorder, name, ratio, plan, min_load, max_load)
             for name, ratio in plan.loss_goals.items()]
    return common.SearchOutcome(method='rfc2544', goals=goals)
