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

"""Offline validation: Heat's own checks, then the NFV rules Heat lacks.

Owns the one resolve-and-check every path goes through before anything
is created (the local bed, the cloud benchmark, `epa-chain validate` and
`epa-chain prove`), the rules it applies and how their findings read.

check          check_stack: resolve a stack with Heat offline, run the
               rules; a Checked stack or one StackRefused with findings.
findings       a finding (file, resource, property, fix) and a report.
heat_errors    Heat's validation errors addressed to file and property.
heat_releases  constructs that break an older Heat release.
nova_rules     Nova's own rules for flavor extra specs, run offline.
placement_rules  PLACEMENT: where the chain's servers may run.
rules          the NFV rules over the resolved chain's topology.
runner         `epa-chain validate`: check_stack per template and preset.
"""
