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

"""Throughput searches by method name; each module has one `search`.

`search(recorder, plan, min_load, max_load) -> common.SearchOutcome`
with loads in frames/s per direction. MLRsearch is imported only when
asked for.

common      running and recording trials; what a search returns.
rfc2544     RFC 2544: one binary search per loss-ratio goal.
mlr         MLRsearch (FD.io CSIT, IETF BMWG) through its PyPI library.
best_worst  EANTC's Best-of-N and Worst-of-N (seed 002).
linear      EANTC's linear loss sweep (seed 002).
"""

import importlib

METHODS = {
    'rfc2544': 'epa_chain.measurement.searches.rfc2544',
    'mlrsearch': 'epa_chain.measurement.searches.mlr',
    'best-of-n': 'epa_chain.measurement.searches.best_worst',
    'worst-of-n': 'epa_chain.measurement.searches.best_worst',
    'linear': 'epa_chain.measurement.searches.linear',
}


def search(method, recorder, plan, min_load, max_load):
    module = importlib.import_module(METHODS[method])
    return module.search(recorder, plan, min_load, max_load)
