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

"""epa-chain: NFV service chains on OVS-DPDK clouds, deployed and measured.

The parts, lowest layer first: each imports only parts of its own layer
or of those listed before it (doc/source/architecture.rst draws them).

safe_yaml       the one YAML loader (sizes, aliases, depth, numbers).
outputs         every output path: checked first, written atomically.
findings        one finding model: scale, pass rule, JSON shape, table.
chain/          the chain as the VNFs see it; the host-image contracts.
hot/            Heat's engine offline: load, resolve, realise a stack.
measurement/    campaigns, searches, latency, results, reports, plots.
generators/     the traffic generators' registry, options and model.
prox/           PROX: build it, configure it, drive it.
tosca/          TOSCA service templates to HOT, repaired and checked.
validation/     the NFV rules and the one resolve-and-check.
vnf_runtime/    what runs inside the images (stdlib + PyYAML only).
cloud/          the chain on a real OpenStack (Tempest's scenarios, prove,
                preflight, audit, tester).
local/          the chain on this host (`epa-chain local`).
commands/       one module per `epa-chain` subcommand, thin leaves.
cli             the console script and its one error boundary.
tests/          unit, functional, cloud and image tests (no layer: they
                may import any part).
"""
