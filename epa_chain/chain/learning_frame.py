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

"""The switch-learning frame: how a VNF port teaches the vSwitch its MAC.

Source AND destination are the port's own MAC: OVS (NORMAL action) learns
the source, finds the destination behind the input port and drops the
frame, so no receiver ever sees it. The VNF images send it
(vnf_runtime/switch_learning.py: boot frames, PROX gen tasks) and a host
that stands in for a node (the local bed's generator) sends the same
bytes; `parse` tells such a frame from traffic.

Layout, 60 bytes without FCS (the Ethernet minimum)::

    0   destination MAC = the port's MAC
    6   source MAC      = the port's MAC
    12  EtherType 0x88b5 (IEEE 802 local experimental 1)
    14  b'epa-chain switch learning: ' + port name (ASCII), zero padded
"""

import struct

ETHERTYPE = 0x88b5          # IEEE 802 local experimental ethertype 1
FRAME_BYTES = 60            # without FCS: the Ethernet minimum
HEADER_BYTES = 14
PAYLOAD_PREFIX = b'epa-chain switch learning: '


def mac_bytes(mac):
    return bytes(int(part, 16) for part in mac.split(':'))


def frame(mac, port_name):
    """The learning frame of a port: source = destination = its MAC."""
    address = mac_bytes(mac)
    body = (PAYLOAD_PREFIX + port_name.encode('ascii'))[
        :FRAME_BYTES - HEADER_BYTES]
    header = address + address + struct.pack('!H', ETHERTYPE)
    return (header + body).ljust(FRAME_BYTES, b'\0')


def parse(data):
    """(mac, port name) of a learning frame, or None for anything else."""
    if len(data) < FRAME_BYTES or data[0:6] != data[6:12]:
        return None
    if struct.unpack('!H', data[12:14])[0] != ETHERTYPE:
        return None
    body = data[HEADER_BYTES:FRAME_BYTES]
    if not body.startswith(PAYLOAD_PREFIX):
        return None
    name = body[len(PAYLOAD_PREFIX):].rstrip(b'\0').decode('ascii',
                                                           'replace')
    return ':'.join('%02x' % byte for byte in data[0:6]), name
