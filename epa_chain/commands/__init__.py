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

"""Subcommands of the `epa-chain` console script: thin leaves.

Each module is one subcommand (cli.py loads every module not starting
with '_'): `add_arguments(parser)` declares its options, `run(args)`
turns their text into checked, typed values once and calls one function
of the package that owns the work, mapping its errors to one stderr line
and an exit status. No command imports another, and none writes onto
the parsed arguments.

- `validate`: templates and presets checked offline
  (epa_chain.validation).
- `translate`: TOSCA to HOT (epa_chain.tosca).
- `measure`: a campaign against a generator (epa_chain.measurement).
- `report`: a results file's tables and plots (epa_chain.measurement).
- `prove`: a created chain stack forwards, hop by hop (epa_chain.cloud).
- `tester`: seed 000's external tester on a compute host's provider
  bridges (epa_chain.cloud.tester).
- `local`: the stack on this host (epa_chain.local.lifecycle).
- `prox`: build PROX (epa_chain.prox.build).
- `preflight`: can a cloud host a stack, asked before it is created
  (epa_chain.cloud.preflight).
- `audit`: what each server of a created chain asked and got
  (epa_chain.cloud.epa_audit).
- `_arguments`: argument text shared by measure and local (not a
  command).
"""
