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

"""`epa-chain local`: the shipped stack realised and measured on one host.

Owns the local test bed: what a Heat stack resolved offline becomes here
(provider VLAN networks as bridges of a private OVS-DPDK, ports as
vhost-user or veth ports, VNFs as runtime processes, the generator as
PROX or AF_PACKET traffic in a namespace of its own), bringing it up,
proving the chain, measuring it with the campaign the Tempest plugin
runs, and taking it down whatever became of the run.

- `lifecycle`: up, run, down and status: the one home the command calls.
- `plan`: a resolved stack -> what this host runs (pure).
- `bed`: bring a plan up, recording each step first; status.
- `proof`: learning, MAC rewriting, delivery, no flooding.
- `runner`: measure a proven bed, the end checks, the reports.
- `teardown`: down, by the record, inside the bed's directory only.
- `names`: --prefix and --state-root, checked before anything runs.
- `state`: the bed's record on disk.
- `host`: commands, packages, namespaces, processes of this host.
- `switch`: the private Open vSwitch (userspace datapath).
- `hugepages`: 2 MB pages and the bed's hugetlbfs mount.
- `config_drive`: a VNF's config drive as a directory.
- `private_tmp`: a /tmp of its own per PROX VNF.
- `prox_setup`: what the PROX generator runs: tasks, CPUs, .cfg (pure).
- `prox_generator`: drive and pace the bed's PROX generator.
- `prox_shim`: preload library for PROX binaries without per-task names.
- `throttle`: one VNF held to a share of one CPU (--throttle-vnf).
- `afpacket`: the AF_PACKET generator.
- `traffic/`: the AF_PACKET generator's senders and receivers.
- `generator`: deprecated name of `afpacket` (for a release).

The PROX binary itself is epa_chain.prox.binary's; the stack is resolved
and checked by epa_chain.validation.check, as everywhere.
"""
