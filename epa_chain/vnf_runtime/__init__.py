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


"""The VNF runtime: a chain node wires itself from its config drive.

Run at boot inside the VNF and generator images (`python3 -m
epa_chain.vnf_runtime run`): it reads the node configuration the Heat
templates put on the config drive, finds the data NICs by MAC, renders the
engine's configuration (PROX l2fwd, DPDK testpmd, or the PROX generator),
reserves huge pages, binds the NICs to a DPDK driver, teaches the vSwitch
the ports' MACs, supervises the engine and reports readiness on the
console and in a status file. On a host (`epa-chain local`) the data
ports are virtio-user devices on vhost-user sockets instead of NICs
(`--virtio-user`, virtio_user.py) and the CPUs are given (`--cpus`).

Only the standard library, PyYAML and epa_chain's chain/ and prox/ (which
keep to those two) may be imported here and in every module of this
package: the images carry nothing else.

__main__         `python3 -m epa_chain.vnf_runtime run`: the entry point.
boot             the boot sequence: check everything, configure, run.
boot_timeline    where the guest's boot went, from its own clocks.
config_drive     finds the config drive and reads the node config.
guest            host name, management NIC and SSH keys (--manage-guest).
devices          which NIC is which data port: by MAC, never by order.
cpus             which guest CPUs the engine runs on.
hugepages        huge pages for the engine's packet buffers.
dpdk_binding     hands the data NICs to a DPDK driver, and back.
virtio_user      data ports as virtio-user devices (`epa-chain local`).
engine           the engine's command line, config file and readiness.
prox_l2fwd       PROX l2fwd configuration for a VNF.
testpmd          dpdk-testpmd arguments for a VNF.
switch_learning  teaches the vSwitch each data port's MAC.
management       the management address the control socket listens on.
control_relay    the generator's control socket on that address only.
supervisor       runs the engine as a supervised child.
readiness        the console line and the status file.
sysfs            reads and writes under a sysfs root (fake in tests).
errors           why the runtime stopped, in one line.
"""
