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

"""EANTC's linear loss sweep (seed 002): 1 % to 100 % of the maximum load.

One trial per step, every step measured (no early stop): the point is the
shape of the loss curve, which on vSwitches is not monotonic. Each goal
still gets a figure: the last step meeting it before the first step that
misses it, so its resolution is one step. Steps that meet the goal again
after a miss are counted (`passes_after_first_miss`).
"""

from epa_chain.measurement.searches import common


def search(recorder, plan, min_load, max_load):
    sweep = []
    for step in range(1, plan.linear_steps + 1):
        load = max_load * step / plan.linear_steps
        result = recorder.run(load, plan.trial_duration_s, 'search',
                              tags={'step': step})
        sweep.append({'load_fps': load,
                      'load_percent': 100.0 * step / plan.linear_steps,
                      'loss_ratio': result.loss_ratio})
    goals = [_goal(name, ratio, sweep, recorder)
             for name, ratio in plan.loss_goals.items()]
    return common.SearchOutcome(method='linear', goals=goals,
                                details={'sweep': sweep,
                                         'steps': plan.linear_steps})


def _goal(name, loss_ratio, sweep, recorder):
    lower = upper = None
    for point in sweep:
        if point['loss_ratio'] <= loss_ratio:
            lower = point['load_fps']
        else:
            upper = point['load_fps']
            break
    later = sweep[sweep.index(point) + 1:] if upper is not None else []
    again = sum(1 for p in later if p['loss_ratio'] <= loss_ratio)
    status = common.bound_status(lower, upper)
    return common.GoalOutcome(
        name=name, loss_ratio=loss_ratio, lower_fps=lower, upper_fps=upper,
        throughput_fps=lower, status=status, trials=recorder.count,
        trial_seconds=recorder.trial_seconds,
        details={'passes_after_first_miss': again})
