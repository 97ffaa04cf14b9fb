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

"""MLRsearch (FD.io CSIT, IETF BMWG draft) through the PyPI library.

One search finds every loss-ratio goal (NDR and PDR) at once: each trial
counts for every goal, and short trials first narrow the interval before
full-length trials confirm the bounds. We only implement the library's
AbstractMeasurer; the search itself is the library's.

With the plain search profile the final targets are RFC 2544's (equal
evidence, equal precision, a fair comparison): relative width = the
resolution, a bound is confirmed by one trial of full duration
(duration_sum = trial duration) and, with exceed ratio 0, any bad trial
makes an upper bound. The noise-robust profile is CSIT's NDR/PDR goals:
a duration sum of `mlr_duration_sum_trials` full trials of which a lower
bound may hold `mlr_exceed_ratio` bad seconds, so one transient loss
does not make an upper bound. What MLRsearch adds is allowed to be
cheaper: initial trials of `mlr_initial_trial_duration_s` and
`mlr_preceding_targets` coarser targets with shorter trials.
"""

from importlib import metadata
import logging

import MLRsearch

from epa_chain.measurement.searches import common

LOG = logging.getLogger(__name__)
# Wall-clock limit the library enforces; trials are what takes time, and
# a campaign must not fail for being slow, so allow a day.
SEARCH_DURATION_MAX_S = 24 * 3600.0


class _Measurer(MLRsearch.AbstractMeasurer):
    """The library's view of our generator: one trial per call."""

    def __init__(self, recorder):
        self.recorder = recorder

    def measure(self, intended_duration, intended_load):
        result = self.recorder.run(intended_load, intended_duration,
                                   'search', tags={'goal': 'all'})
        return MLRsearch.MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=result.tx_frames,
            forwarding_count=result.rx_frames,
            offered_duration=result.duration_s)


def goals_for(plan):
    """SearchGoal per loss goal, in the plan's order."""
    initial = min(plan.mlr_initial_trial_duration_s, plan.trial_duration_s)
    duration_sum = plan.trial_duration_s * plan.mlr_duration_sum_trials
    preceding = plan.mlr_preceding_targets
    if preceding < 1 and initial < duration_sum:
        # The library needs a preceding target to use shorter trials.
        preceding = 1
    return [MLRsearch.SearchGoal(
        loss_ratio=ratio,
        exceed_ratio=plan.mlr_exceed_ratio,
        relative_width=plan.resolution,
        initial_trial_duration=initial,
        final_trial_duration=plan.trial_duration_s,
        duration_sum=duration_sum,
        preceding_targets=preceding,
        expansion_coefficient=2,
        fail_fast=False,
    ) for ratio in plan.loss_goals.values()]


def search(recorder, plan, min_load, max_load):
    goals = goals_for(plan)
    config = MLRsearch.Config()
    config.goals = goals
    # The library checks min < max on each assignment: order them.
    if min_load < config.max_load:
        config.min_load = min_load
        config.max_load = max_load
    else:
        config.max_load = max_load
        config.min_load = min_load
    config.search_duration_max = SEARCH_DURATION_MAX_S
    config.warmup_duration = None
    found = MLRsearch.MultipleLossRatioSearch(config=config).search(
        measurer=_Measurer(recorder), debug=LOG.debug)
    outcomes = []
    for (name, ratio), goal in zip(plan.loss_goals.items(), goals):
        outcomes.append(_outcome(name, ratio, found[goal], max_load))
    return common.SearchOutcome(
        method='mlrsearch', goals=outcomes,
        details={'library': 'MLRsearch',
                 'library_version': _library_version(),
                 'goals': [_goal_parameters(goal) for goal in goals]})


def _outcome(name, ratio, goal_result, max_load):
    lower = goal_result.relevant_lower_bound
    upper = goal_result.relevant_upper_bound
    throughput = goal_result.conditional_throughput
    lower_fps = float(lower) if lower else None
    upper_fps = float(upper) if upper else None
    status = common.bound_status(lower_fps, upper_fps)
    return common.GoalOutcome(
        name=name, loss_ratio=ratio, lower_fps=lower_fps,
        upper_fps=upper_fps,
        throughput_fps=float(throughput) if throughput else None,
        status=status,
        details={'conditional_throughput': 'relevant lower bound x (1 - '
                                           'its pessimistic loss ratio)'})


def _goal_parameters(goal):
    return {'loss_ratio': goal.loss_ratio,
            'exceed_ratio': goal.exceed_ratio,
            'relative_width': goal.relative_width,
            'initial_trial_duration': goal.initial_trial_duration,
            'final_trial_duration': goal.final_trial_duration,
            'duration_sum': goal.duration_sum,
            'preceding_targets': goal.preceding_targets,
            'expansion_coefficient': goal.expansion_coefficient}


def _library_version():
    try:
        return metadata.version('MLRsearch')
    except metadata.PackageNotFoundError:
        return None
