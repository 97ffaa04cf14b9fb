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


"""The management address: where the generator's control socket listens.

The management NIC is the one network_data.json lists that is not a data
port. Its address is in network_data.json when the subnet has no DHCP;
with DHCP (the usual tenant network) it is read from the interface once
the DHCP client has configured it.
"""

import fcntl
import ipaddress
import socket
import struct
import time

from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import devices
from epa_chain.vnf_runtime import errors

WAIT_S = 120.0
_SIOCGIFADDR = 0x8915


def interface_address(interface, if_inet6='/proc/net/if_inet6'):
    """The interface's IPv4 address, else its global IPv6 one, else None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            reply = fcntl.ioctl(sock, _SIOCGIFADDR, struct.pack(
                '256s', interface.encode()[:15]))
            return socket.inet_ntoa(reply[20:24])
        except OSError:
            pass
    try:
        with open(if_inet6) as stream:
            for line in stream:
                fields = line.split()
                if len(fields) == 6 and fields[5] == interface and (
                        fields[3] == '00'):
                    return str(ipaddress.IPv6Address(bytes.fromhex(
                        fields[0])))
    except OSError:
        pass
    return None


def link(node, links, needed_by='the control socket'):
    """The management link; MetadataError saying who needs one."""
    found = devices.management_link(node, links)
    if found is None:
        raise errors.MetadataError(
            config_drive.NETWORK_DATA, 'links',
            'no management NIC (every link is a data port): %s needs one; '
            'plug management_network first' % needed_by)
    return found


def static_address(drive, mgmt_link):
    """From network_data.json, or None when the subnet uses DHCP."""
    addresses = drive.static_addresses(mgmt_link.id)
    addresses.sort(key=lambda a: ':' in a)  # IPv4 first
    return addresses[0] if addresses else None


def resolve(drive, node, links, nics, address_of=interface_address,
            wait_s=WAIT_S, sleep=time.sleep):
    """(address, interface) of the management NIC, waiting for DHCP."""
    mgmt = link(node, links)
    interface = next((n.interface for n in nics if n.mac == mgmt.mac), None)
    static = static_address(drive, mgmt)
    if static:
        return static, interface
    if interface is None:
        raise errors.MetadataError(
            config_drive.NETWORK_DATA, 'links',
            'the management NIC %s is not a network interface of this '
            'server' % mgmt.mac)
    waited = 0.0
    while True:
        address = address_of(interface)
        if address:
            return address, interface
        if waited >= wait_s:
            raise errors.SystemSetupError(
                'management NIC %s (%s) has no address after %d s: is DHCP '
                'configured on it?' % (interface, mgmt.mac, wait_s))
        sleep(1.0)
        waited += 1.0
