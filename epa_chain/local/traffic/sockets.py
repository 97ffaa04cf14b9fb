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

"""The AF_PACKET sockets of a trial (call inside the namespace).

Sending sockets use protocol 0: bound to an interface they receive
nothing, so a busy sender never has a queue to empty. Receiving sockets
take IPv4 frames only, leave out the interface's own outgoing frames
(the other direction's sender uses the same interface), get a kernel
receive timestamp per frame (SO_TIMESTAMPNS, CLOCK_REALTIME, the clock of
the sender's time.time_ns()) and a large buffer, and count what the
kernel had to drop because the receiver fell behind (PACKET_STATISTICS).
"""

import fcntl
import socket
import struct

ETH_P_IP = 0x0800
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23  # Linux 4.20
SO_TIMESTAMPNS = getattr(socket, 'SO_TIMESTAMPNS', 35)
SO_RCVBUFFORCE = getattr(socket, 'SO_RCVBUFFORCE', 33)
SCM_TIMESTAMPNS = SO_TIMESTAMPNS
RECEIVE_BUFFER_BYTES = 32 * 1024 * 1024
TIMESPEC = struct.Struct('@qq')
_TPACKET_STATS = struct.Struct('@II')
_SIOCGIFMTU = 0x8921
_IFREQ_INT = struct.Struct('16si12x')


def open_sender(interface):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        sock.bind((interface, 0))
    except OSError:
        sock.close()
        raise
    return sock


def open_receiver(interface, buffer_bytes=RECEIVE_BUFFER_BYTES):
    """A bound, non-blocking receiving socket; (socket, ignores own tx)."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                         socket.htons(ETH_P_IP))
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, buffer_bytes)
        except OSError:  # not CAP_NET_ADMIN: as much as rmem_max allows
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                            buffer_bytes)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            ignores_outgoing = True
        except OSError:
            ignores_outgoing = False
        sock.bind((interface, ETH_P_IP))  # bind() applies htons itself
        sock.setblocking(False)
        read_statistics(sock)  # zero the kernel's counters
    except OSError:
        sock.close()
        raise
    return sock, ignores_outgoing


def read_statistics(sock):
    """(frames queued, frames dropped) since the last call; resets them."""
    return _TPACKET_STATS.unpack(sock.getsockopt(
        SOL_PACKET, PACKET_STATISTICS, _TPACKET_STATS.size))


def timestamp_ns(ancillary):
    """The SO_TIMESTAMPNS time in recvmsg's ancillary data, or None."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS:
            seconds, nanoseconds = TIMESPEC.unpack_from(data)
            return seconds * 1000000000 + nanoseconds
    return None


def interface_mtu(sock, interface):
    """The MTU of `interface` in the namespace `sock` lives in."""
    request = _IFREQ_INT.pack(interface.encode()[:15], 0)
    return _IFREQ_INT.unpack(fcntl.ioctl(sock, _SIOCGIFMTU, request))[1]
