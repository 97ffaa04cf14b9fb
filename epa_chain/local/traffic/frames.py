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

"""Test frames: Ethernet + IPv4 + UDP with a measurement payload.

A frame of L bytes (RFC 2544 size, FCS included) is L - 4 bytes on the
veth; the kernel has no FCS to add. Every frame carries, right after the
UDP header (offset 42, so it fits in the 18 payload bytes of a 64-byte
frame):

    offset 42  1 byte   signature (SIGNATURE)
    offset 43  1 byte   stream tag: trial number (7 bits), direction (1)
    offset 44  8 bytes  sequence number, from 0 in every trial
    offset 52  8 bytes  transmit time, time.time_ns() just before send

all in network byte order, and the UDP destination port is SIGNATURE_PORT:
a receiver counts a frame only when both match. The UDP checksum is 0
(none, valid in IPv4), so patching the sequence number and time needs no
checksum update; the IPv4 header checksum is computed per template.

Flows vary the UDP source port first, then the source IP: flow f uses
port FLOW_PORT_BASE + f % FLOW_PORTS and address source + f // FLOW_PORTS.
The 12 bytes that change between flows (IPv4 checksum, source and
destination address, UDP source port: offsets 24-35) are precomputed per
flow and frame size, so a sender patches a flow with one slice copy.
"""

import ipaddress
import struct

ETH_HEADER = 14
IPV4_HEADER = 20
UDP_HEADER = 8
FCS_BYTES = 4
ETHERTYPE_IPV4 = 0x0800
IPPROTO_UDP = 17
PAYLOAD_OFFSET = ETH_HEADER + IPV4_HEADER + UDP_HEADER  # 42
SIGNATURE = 0xE7
SIGNATURE_PORT = 0xE7CA  # 59338, UDP destination port of every frame
SIGNATURE_PORT_BYTES = struct.pack('!H', SIGNATURE_PORT)
TAG_OFFSET = PAYLOAD_OFFSET + 1
SEQ_OFFSET = PAYLOAD_OFFSET + 2
MEASURED_BYTES = SEQ_OFFSET + 16  # 60: the 64-byte frame without FCS
SEQ_TIME = struct.Struct('!QQ')
FLOW_PATCH = slice(24, 36)
FLOW_PATCH_BYTES = 12
FLOW_PORT_BASE = 1024
FLOW_PORTS = 65536 - FLOW_PORT_BASE
# RFC 2544 appendix C.2.2: the benchmarking network 198.18.0.0/15, one
# half per direction.
ADDRESSES = {'forward': ('198.18.0.1', '198.19.0.1'),
             'reverse': ('198.19.0.1', '198.18.0.1')}
MAX_TRIAL_TAG = 128


def mac_bytes(mac):
    """'fa:16:3e:00:00:01' -> 6 bytes; ValueError naming the bad MAC."""
    parts = str(mac).split(':')
    try:
        if len(parts) != 6:
            raise ValueError
        data = bytes(int(part, 16) for part in parts)
    except ValueError:
        raise ValueError('%r is not a MAC address (write it as '
                         'aa:bb:cc:dd:ee:ff)' % (mac,)) from None
    return data


def stream_tag(trial_index, direction_index):
    """The tag byte of a stream in one trial: old trials' frames differ."""
    return ((trial_index % MAX_TRIAL_TAG) << 1) | (direction_index & 1)


def ipv4_checksum(header):
    """RFC 791 header checksum of `header` (its checksum field zero)."""
    total = sum(struct.unpack('!%dH' % (len(header) // 2), header))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def wire_bytes(frame_size):
    """Bytes handed to the kernel for an RFC 2544 frame size (with FCS)."""
    length = frame_size - FCS_BYTES
    if length < MEASURED_BYTES:
        raise ValueError('frame size %d is below the 64-byte minimum'
                         % frame_size)
    return length


def flow_fields(source_ip, flow):
    """(source address, UDP source port) of flow number `flow`."""
    address = ipaddress.IPv4Address(source_ip) + flow // FLOW_PORTS
    return address, FLOW_PORT_BASE + flow % FLOW_PORTS


def _ip_header(total_length, source, destination):
    header = bytearray(struct.pack(
        '!BBHHHBBH4s4s', 0x45, 0, total_length, 0, 0x4000, 64,
        IPPROTO_UDP, 0, source.packed, destination.packed))
    struct.pack_into('!H', header, 10, ipv4_checksum(bytes(header)))
    return header


def build_frame(frame_size, dst_mac, src_mac, source_ip, destination_ip,
                tag, flow=0, seq=0, tx_ns=0):
    """One complete frame (without FCS) as a bytearray."""
    length = wire_bytes(frame_size)
    source, port = flow_fields(source_ip, flow)
    destination = ipaddress.IPv4Address(destination_ip)
    ip_length = length - ETH_HEADER
    frame = bytearray(length)
    frame[0:6] = mac_bytes(dst_mac)
    frame[6:12] = mac_bytes(src_mac)
    struct.pack_into('!H', frame, 12, ETHERTYPE_IPV4)
    frame[ETH_HEADER:ETH_HEADER + IPV4_HEADER] = _ip_header(
        ip_length, source, destination)
    struct.pack_into('!HHHH', frame, ETH_HEADER + IPV4_HEADER, port,
                     SIGNATURE_PORT, ip_length - IPV4_HEADER, 0)
    frame[PAYLOAD_OFFSET] = SIGNATURE
    frame[TAG_OFFSET] = tag
    SEQ_TIME.pack_into(frame, SEQ_OFFSET, seq, tx_ns)
    return frame


def flow_patches(frame_size, source_ip, destination_ip, flows):
    """FLOW_PATCH bytes of flows 0..flows-1, concatenated."""
    ip_length = wire_bytes(frame_size) - ETH_HEADER
    destination = ipaddress.IPv4Address(destination_ip)
    patches = bytearray()
    for flow in range(flows):
        source, port = flow_fields(source_ip, flow)
        header = _ip_header(ip_length, source, destination)
        patches += header[10:20] + struct.pack('!H', port)
    return bytes(patches)


def imix_cycle(mix):
    """Frame sizes in sending order for ((size, weight), ...).

    Smooth weighted round robin: each size appears `weight` times per
    cycle, spread out rather than in runs (7:4:1 gives 64, 570, 64, 64,
    570, 64, 1518, ...), and the order is the same in every trial.
    """
    total = sum(weight for _size, weight in mix)
    current = [0] * len(mix)
    cycle = []
    for _ in range(total):
        for index, (_size, weight) in enumerate(mix):
            current[index] += weight
        best = max(range(len(mix)), key=lambda i: (current[i], -i))
        current[best] -= total
        cycle.append(mix[best][0])
    return tuple(cycle)


class StreamFrames:
    """Pre-built frames of one stream in one trial.

    `templates[k]` is the frame of `sizes[k]`; frame i of the stream has
    size index `cycle[i % len(cycle)]` and flow `i % flows`.
    """

    def __init__(self, mix, flows, dst_mac, src_mac, direction, tag):
        self.sizes = tuple(sorted({size for size, _weight in mix}))
        self.cycle = tuple(self.sizes.index(size) for size in imix_cycle(mix))
        self.flows = flows
        self.tag = tag
        source_ip, destination_ip = ADDRESSES[direction]
        self.templates = [build_frame(size, dst_mac, src_mac, source_ip,
                                      destination_ip, tag)
                          for size in self.sizes]
        self.patches = [flow_patches(size, source_ip, destination_ip, flows)
                        if flows > 1 else b'' for size in self.sizes]

    def retag(self, tag):
        """Reuse the frames in another trial."""
        self.tag = tag
        for template in self.templates:
            template[TAG_OFFSET] = tag

    def frame(self, seq, tx_ns=0):
        """Frame number `seq`, as the sender puts it on the wire."""
        size_index = self.cycle[seq % len(self.cycle)]
        frame = self.templates[size_index]
        if self.flows > 1:
            start = (seq % self.flows) * FLOW_PATCH_BYTES
            frame[FLOW_PATCH] = self.patches[size_index][
                start:start + FLOW_PATCH_BYTES]
        SEQ_TIME.pack_into(frame, SEQ_OFFSET, seq, tx_ns)
        return frame


def parse(frame):
    """(tag, seq, tx_ns) of a frame of ours, None for anything else."""
    if (len(frame) < MEASURED_BYTES or
            frame[PAYLOAD_OFFSET] != SIGNATURE or
            frame[12:14] != b'\x08\x00' or
            frame[36:38] != SIGNATURE_PORT_BYTES):
        return None
    seq, tx_ns = SEQ_TIME.unpack_from(frame, SEQ_OFFSET)
    return frame[TAG_OFFSET], seq, tx_ns
