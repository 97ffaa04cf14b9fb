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

Only the standard library and PyYAML may be imported here and in every
module of this package: the images carry nothing else.
"""
