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

"""The service chain as the VNFs see it: node configuration and topology.

Owns the contracts between the host and the images (standard library and
PyYAML only: the images carry this package), and the chain a resolved
stack describes.

node_config     the configuration a chain node reads (user_data schema).
config_drive    the config drive's layout, both sides of it.
directions      the chain's two directions and how a user spells them.
readiness       the READY/FAILED console line and the wait for it.
learning_frame  the frame a VNF port teaches the vSwitch its MAC with.
wire            Ethernet on the wire: what a frame costs beyond its bytes.
hugetlbfs       hugetlbfs mounts as /proc/mounts shows them.
topology        networks, ports, servers, flavors of a realised stack.
"""
