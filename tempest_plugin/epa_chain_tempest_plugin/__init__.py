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

"""epa-chain's Tempest plugin: options and data-plane benchmark scenarios.

Installed apart from epa-chain (pip install ./tempest_plugin), so that
Tempest and its test-only dependencies are not epa-chain's. Thin on
purpose: the scenarios drive epa_chain.cloud (the stack through
python-heatclient, readiness, the hop check, the campaigns), which runs
without Tempest too.

plugin     the entry point Tempest finds (tempest.test_plugins): hands
           Tempest's loader tests/scenario/ only.
config     registers epa_chain.cloud's [epa_chain] options and the
           plugin's own.
services/  the clients the scenarios reach the cloud with.
tests/     the scenarios Tempest runs and the plugin's unit tests.
"""
