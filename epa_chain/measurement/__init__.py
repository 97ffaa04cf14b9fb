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

"""Trials, searches, latency statistics and results of a benchmark.

Owns what a measurement is, whatever generator runs it: the trial
contract, the campaign over frame sizes and flow counts, the searches,
the guards against untrustworthy trials, and the results document with
its tables and plots.

trial     one trial: the contract between searches and generators.
options   the campaign's options, declared once (CLI and Tempest).
campaign  every frame size x flow count of a plan, one document.
repeats   a campaign run N times (--repeat), its median, min and max.
searches  throughput searches by method name (searches/).
guards    checks that turn untrustworthy trials into errors.
latency   one-way delay statistics: RFC 2544, RFC 5481 PDV and IPDV.
soak      a long latency soak at one load, saved as it goes.
results   the results document: versioned JSON, validated.
readers   readers of a results document for the tables and plots.
consistency  whether a case's figures agree with its own trials.
report    text tables in the layout of the seed reports.
plots     PNG plots: throughput, latency distributions.
hop_loss  where a trial's frames were lost, hop by hop, per direction.
together  several chains' generators driven as one, each chain's kept.
chain_tables  per-chain and noisy-neighbour tables of such runs.
density_curve  throughput against the number of chains, table and plot.
kpi       a KPI file: the operator's limits a result is judged against.
verdicts  a results document judged against a KPI file and a baseline.
"""
