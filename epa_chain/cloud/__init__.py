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

"""The chain benchmark against a real OpenStack cloud, free of Tempest.

The stack through python-heatclient, readiness from the servers'
consoles, the hop check, the campaigns and their result files: what the
Tempest plugin (tempest_plugin/ at the top of the repository, package
epa_chain_tempest_plugin) drives from its scenarios, given a heatclient
handle, a compute reader and the [epa_chain] options. Nothing here
imports Tempest; epa_chain/local/ is the same chain on one host.
"""
