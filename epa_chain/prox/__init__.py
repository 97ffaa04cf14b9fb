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

"""PROX (opnfv samplevnf DPPD-PROX) as epa-chain's traffic generator.

Owns everything about PROX: talking to it, configuring its generator
role, the traffic it sends, the generator the campaigns drive, and the
binary itself (found, or built and cached).

client      PROX's TCP control protocol (port 8474), stdlib only.
gen_config  the generator role's PROX configuration and its core/task
            layout; the VNF runtime renders it inside the generator image.
traffic     flow counts as PROX random fields or ranges, IMIX cycles.
generator   ProxGenerator, a measurement.trial.Generator.
binary      the PROX binary a host runs: given, or built and cached.
build       PROX built from a pinned samplevnf source and cached
            (`epa-chain prox build`, and in the images).
dpdk_sdk    the DPDK PROX builds against and the driver-SDK headers
            libdpdk-dev lacks.

This package is installed into the images, where only the standard library
and PyYAML exist (build and dpdk_sdk use the standard library only): do
not import `generator` (it needs epa_chain.measurement) from here.
"""
