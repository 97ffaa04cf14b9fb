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

"""The chain against a real OpenStack cloud, free of Tempest.

Owns what the Tempest scenarios and `epa-chain prove`, `preflight`,
`audit` and `tester` do to a cloud: the [epa_chain] options (declared
here, once), the stack through python-heatclient, readiness from the
servers' consoles, the hop check, the campaigns and their result files,
the questions asked before create and the audit after boot. The Tempest
plugin (tempest_plugin/, package epa_chain_tempest_plugin) drives it
with a heatclient handle, a compute reader and its CONF; nothing here
imports Tempest. epa_chain/local/ is the same chain on one host.

options         the [epa_chain] options, declared and read into typed
                values once (ChainOptions).
benchmark       one scenario: check, create, wait, hop check, measure.
stack           the scenario's stack: parameters, check_stack, Heat.
readiness       every node's READY line on its console.
hop_check       a low-rate trial per direction before measuring.
budget          the scenario inside the test's timeout.
results         where a scenario writes its results, tables and plots.
openstack_cli   `epa-chain prove`'s view of a stack, through the client.
sdk_compute     prove's readiness questions in process (openstacksdk).
ovs_hops        prove's per-hop Open vSwitch counters, on the host.
placement       where Nova put each server, and why it refused.
proof           the proof prove writes and measure --loss-by-hop reads.
tester          seed 000's external tester on a compute host's provider
                bridges (`epa-chain tester`).
vnf_tasks       the parked VNFs' PROX tasks: started for the traffic only.
workflow        the named steps the scenario, prove and measure share.
stack_needs     what a resolved stack asks of a cloud, read once.
cloud_answers   preflight's questions to the cloud, answers parsed once.
preflight       can this cloud host the stack? The checks and the gate,
                which fails closed.
density         how many chains of the stack's shape fit (N_max), and
                what limits them.
preflight_stack `epa-chain preflight`'s one call: check_stack, then the
                cloud's answers.
epa_audit       what each server's flavor asked vs what it got
                (`epa-chain audit`): reads a stack's servers.
audit_model     the audit's asked, Nova's given, findings, document.
audit_rules     asked against given: one server's audit findings.
host_readers    libvirt's domain XML and OVS's PMD text, parsed.
host_commands   the audit's virsh and ovs-appctl on the host, bounded.
"""
