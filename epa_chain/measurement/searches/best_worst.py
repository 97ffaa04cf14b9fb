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

"""EANTC's Best-of-N and Worst-of-N (seed 002).

The RFC 2544 binary search, but every step runs N trials at the same
load: Best-of-N takes the step as passed when any of the N trials meets
the goal (the highest throughput to expect when repeating the test),
Worst-of-N only when all of them do (the lowest). All N trials run, as in
EANTC's method, so the results file shows how often each step passed.
"""

from epa_chain.measurement.searches import common
from epa_chain.measurement.searches import rfc2544

POLICIES = {'best-of-n': any, 'worst-of-n': all}


def _step_factory(recorder, plan, decide):
    step_number = [0]

    def factory(name, loss_ratio):
        def step(load):
            step_number[0] += 1
            passed = []
            for repetition in range(plan.repetitions):
                result = recorder.run(
                    load, plan.trial_duration_s, 'search',
                    tags={'goal': name, 'step': step_number[0],
                          'repetition': repetition + 1})
                passed.append(common.meets(result, loss_ratio))
            return decide(passed)
        return step
    return factory


def search(recorder, plan, min_load, max_load):
    decide = POLICIES[plan.method]
    factory = _step_factory(recorder, plan, decide)
    goals = [rfc2544.search_goal(recorder, name, ratio, plan, min_load,
                                 max_load, step_factory=factory)
             for name, ratio in plan.loss_goals.items()]
    for goal in goals:
        goal.details['repetitions'] = plan.repetitions
    return common.SearchOutcome(
        method=plan.method, goals=goals,
        details={'repetitions': plan.repetitions,
                 'step_passes_if': 'any' if decide is any else 'all'})
