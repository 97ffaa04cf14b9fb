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

"""Ethernet on the wire: what a frame costs beyond its own bytes.

Frame sizes in epa-chain (RFC 2544's 64 ... 1518) include the 4-byte FCS.
On the wire every frame also takes a preamble and start frame delimiter
(8 bytes) and the inter-frame gap (12 bytes): 20 bytes, so a 64-byte
frame occupies 84 byte times and 10 Gbit/s carries 14.88 Mframes/s.
The measurement engine, PROX's pacing and the VNF images count the same.
"""

FCS_BYTES = 4
#: Preamble + start frame delimiter (8) and inter-frame gap (12), on top
#: of a frame that includes its FCS.
WIRE_OVERHEAD_BYTES = 20


def wire_bytes(frame_bytes_with_fcs):
    """Byte times one frame (FCS included) occupies on the wire."""
    return frame_bytes_with_fcs + WIRE_OVERHEAD_BYTES
