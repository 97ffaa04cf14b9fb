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


"""Teach the vSwitch where each data port is, without touching the traffic.

A DPDK engine answers no ARP, so nothing tells OVS (NORMAL action, MAC
learning) behind which vhost-user port a VNF's MAC lives; frames for it are
flooded to the whole VLAN, and a learnt entry ages out after 300 s of
silence from the port (seed 000, section 9.2). The remedy here is a frame
whose source AND destination are the port's own MAC (chain/learning_frame.py):
OVS learns the source, looks the destination up, finds the input port and
drops the frame ("learned port is input port"). It reaches no other port,
so no receiver and no measurement ever sees it. This module sends it.

- Before the engine starts, the kernel still owns the NIC: a few such
  frames go out through an AF_PACKET socket (`send_boot_frames`).
- While PROX forwards, a port that receives but never transmits (the
  receiving port of a unidirectional chain) gets a gen task sending one
  frame per second on its otherwise idle transmit queue: 300 refreshes per
  aging period. Ports that transmit are refreshed by the frames they
  forward (their source MAC is the port's). A port that both receives and
  transmits has no free queue on a single-queue virtio NIC, and adding a
  queue would make the NIC spread received frames over a queue nobody
  polls; it is refreshed by the traffic it forwards in the other
  direction.
- testpmd has no timer to send from: the port that never transmits gets
  its own MAC as --eth-peer, so the --tx-first burst at start, and any
  frame ever forwarded out of it, is such a learning frame.
- Virtio-user ports (on a host) have no kernel side to send boot frames
  from: the --tx-first burst is their first learning frame.
"""

import dataclasses
import fcntl
import math
import socket
import struct
import time

from epa_chain.chain import learning_frame
from epa_chain.chain import wire

INTERVAL_S = 1.0            # one frame per second per port while forwarding
MAC_AGING_S = 300           # OVS default, as seed 000 section 9.2 says
BOOT_FRAMES = 3
BOOT_GAP_S = 0.1

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


@dataclasses.dataclass(frozen=True)
class PortLearning:
    """How a data port keeps its MAC in the vSwitch's table."""

    port: str
    receives: bool
    transmits: bool
    method: str


def prox_inline(data):
    """A frame as PROX's `pkt inline=` wants it: hex bytes, spaced."""
    return ' '.join('%02x' % byte for byte in data)


def prox_bps(interval_s=INTERVAL_S):
    """PROX gen `bps=` (wire bytes per second) for one frame per interval."""
    on_wire = wire.wire_bytes(learning_frame.FRAME_BYTES + wire.FCS_BYTES)
    # Rounded up: a frame at least every interval, never less often.
    return max(1, int(math.ceil(on_wire / interval_s)))


def plan(node, engine, boot_frames=True):
    """Per data port: does it receive, transmit, and how it is learnt.

    Without boot frames (virtio-user ports have no kernel interface to
    send them from) testpmd's --tx-first burst is the first teacher.
    """
    receiving = {flow.rx_port for flow in node.flows}
    sending = {flow.tx_port for flow in node.flows}
    if boot_frames:
        first = 'boot frames, then '
    elif engine == 'testpmd':
        first = 'the --tx-first burst, then '
    else:
        first = ''
    plans = {}
    for name in sorted(node.ports):
        receives, transmits = name in receiving, name in sending
        if transmits:
            method = first + ('the frames it forwards (source = this '
                              'port)')
            if not receives:
                method += '; it receives nothing, so nothing depends on it'
        elif engine == 'prox':
            method = first + ('a PROX gen task: one frame every %g s'
                              % INTERVAL_S)
        else:
            method = ('%s --tx-first burst only: not refreshed while '
                      'testpmd forwards (aged out after %d s)' % (
                          'boot frames and the' if boot_frames else 'the',
                          MAC_AGING_S))
        plans[name] = PortLearning(name, receives, transmits, method)
    return plans


def prox_gen_ports(node):
    """Ports that get a PROX learning task: they receive, never transmit."""
    return [name for name, item in sorted(plan(node, 'prox').items())
            if item.receives and not item.transmits]


def send_boot_frames(ports, count=BOOT_FRAMES, gap_s=BOOT_GAP_S,
                     socket_factory=socket.socket, sleep=time.sleep,
                     link_up=None):
    """Send learning frames from kernel interfaces: [(ifname, mac, name)].

    Returns the list of problems (one line each); learning is best effort
    here, the engine keeps it up once it runs.
    """
    link_up = link_up or _link_up
    problems = []
    for round_index in range(count):
        for interface, mac, name in ports:
            try:
                if round_index == 0:
                    link_up(interface)
                with socket_factory(socket.AF_PACKET, socket.SOCK_RAW) as sock:
                    sock.bind((interface, 0))
                    sock.send(learning_frame.frame(mac, name))
            except OSError as exc:
                if round_index == 0:
                    problems.append('%s (%s): %s' % (interface, name, exc))
        if round_index + 1 < count:
            sleep(gap_s)
    return problems


def _link_up(interface):
    """Set IFF_UP: a NIC nobody configured is down and sends nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack('16sH14x', interface.encode()[:15], 0)
        flags = struct.unpack('16sH14x',
                              fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(
                '16sH14x', interface.encode()[:15], flags | _IFF_UP))
