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


"""Which NIC is which data port: by MAC, never by order.

Nova gives no guarantee about the order in which NICs appear in the guest,
so each data port of the node configuration is matched to the kernel
interface whose address is the port's MAC, and from there to its PCI
device (a virtio-net interface hangs off a virtioN device below the PCI
function). A NIC already bound to a DPDK driver by an earlier run of the
runtime is no longer a kernel interface; it is found through the record
dpdk_binding keeps. On a host (`--virtio-user MAC=SOCKET`) a data port is
instead a virtio-user device on a vhost-user socket (virtio_user).
"""

import dataclasses
import os
import re
import typing

from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import errors

PCI_ADDRESS_RE = re.compile(r'^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')


@dataclasses.dataclass(frozen=True)
class Nic:
    """A network device of the guest."""

    mac: str
    interface: typing.Optional[str]   # None once bound to a DPDK driver
    pci: typing.Optional[str]         # None for a non-PCI device
    driver: typing.Optional[str]
    numa_node: typing.Optional[int] = None
    queues: int = 1                   # transmit queues the device offers


@dataclasses.dataclass(frozen=True)
class PortDevice:
    """A data port of the node and the NIC that carries it."""

    name: str            # left | right
    mac: str
    nic: Nic
    dpdk_port: int       # the port number DPDK will give it
    virtio_user: typing.Optional[str] = None   # vhost-user socket path

    @property
    def pci(self):
        return self.nic.pci


def scan(sysfs):
    """Every kernel network interface with a MAC, except loopback."""
    nics = []
    for interface in sysfs.listdir('class/net'):
        base = 'class/net/%s' % interface
        mac = sysfs.read(base + '/address', default='').lower()
        if interface == 'lo' or not mac or mac == '00:00:00:00:00:00':
            continue
        pci = _pci_of(sysfs, base + '/device')
        queues = len([q for q in sysfs.listdir(base + '/queues')
                      if q.startswith('tx-')]) or 1
        nics.append(Nic(mac=mac, interface=interface, pci=pci,
                        driver=_driver_of(sysfs, pci),
                        numa_node=_numa_node(sysfs, pci), queues=queues))
    return nics


def pci_nic(sysfs, mac, pci, queues=1):
    """A NIC known only by its PCI address (bound to DPDK earlier)."""
    if not pci or not sysfs.exists('bus/pci/devices/' + pci):
        return None
    return Nic(mac=mac, interface=None, pci=pci,
               driver=_driver_of(sysfs, pci),
               numa_node=_numa_node(sysfs, pci), queues=queues)


def match(node, links, nics, known=None, virtio_user=None):
    """Map each data port of `node` to its NIC; MetadataError if absent.

    `links` come from network_data.json, `nics` from scan(), `known` maps
    MAC -> Nic for devices a previous run bound to DPDK, `virtio_user`
    maps MAC -> vhost-user socket for ports that are virtio-user devices
    (--virtio-user): those need no NIC, but every data port must then be
    one (DPDK would number PCI and virtual ports by different rules).
    """
    link_macs = {link.mac for link in links}
    by_mac = {nic.mac: nic for nic in nics}
    known = known or {}
    virtio_user = virtio_user or {}
    found = {}
    sockets = {}
    for name, port in sorted(node.ports.items()):
        field = 'epa_chain.ports.%s.mac' % name
        if port.mac not in link_macs:
            raise errors.MetadataError(
                config_drive.NETWORK_DATA, 'links',
                'no link has MAC %s (%s in user_data): the port is not '
                'attached to this server' % (port.mac, field))
        if port.mac in virtio_user:
            sockets[name] = virtio_user[port.mac]
            found[name] = Nic(mac=port.mac, interface=None, pci=None,
                              driver=None)
            continue
        nic = by_mac.get(port.mac) or known.get(port.mac)
        if nic is None:
            present = ', '.join('%s %s' % (n.interface, n.mac)
                                for n in nics) or 'none'
            raise errors.MetadataError(
                config_drive.USER_DATA, field,
                '%s: no network interface of this server has this MAC '
                '(found: %s)' % (port.mac, present))
        if nic.pci is None:
            raise errors.SystemSetupError(
                '%s: %s (%s) is not a PCI device: DPDK cannot drive it'
                % (field, nic.interface, port.mac))
        found[name] = nic
    _check_virtio_user(node, virtio_user, found, sockets)
    if sockets:
        order = virtio_user_port_order(found)
        return {name: PortDevice(name=name, mac=node.ports[name].mac,
                                 nic=nic, dpdk_port=order.index(name),
                                 virtio_user=sockets[name])
                for name, nic in found.items()}
    order = dpdk_port_order([nic.pci for nic in found.values()])
    return {name: PortDevice(name=name, mac=node.ports[name].mac, nic=nic,
                             dpdk_port=order.index(nic.pci))
            for name, nic in found.items()}


def _check_virtio_user(node, virtio_user, found, sockets):
    data_macs = {port.mac: name for name, port in node.ports.items()}
    for mac, path in sorted(virtio_user.items()):
        if mac not in data_macs:
            raise errors.SystemSetupError(
                '--virtio-user %s=%s: no data port has this MAC (user_data '
                'epa_chain.ports: %s)' % (mac, path, ', '.join(
                    '%s %s' % (name, port.mac)
                    for name, port in sorted(node.ports.items()))))
    if sockets and len(sockets) != len(found):
        pci = sorted(set(found) - set(sockets))
        raise errors.SystemSetupError(
            '--virtio-user: every data port or none: %s %s virtio-user, %s '
            '%s a PCI NIC: give --virtio-user for %s too, or for none'
            % (', '.join(sorted(sockets)),
               'is' if len(sockets) == 1 else 'are', ', '.join(pci),
               'is' if len(pci) == 1 else 'are', ', '.join(pci)))


def virtio_user_port_order(names):
    """DPDK numbers vdevs in --vdev order: left first, then right."""
    known = ('left', 'right')
    return sorted(names, key=lambda n: (known.index(n) if n in known
                                        else len(known), n))


def dpdk_port_order(pci_addresses):
    """DPDK numbers PCI ports in bus-scan order: by PCI address."""
    return sorted(pci_addresses)


def management_link(node, links):
    """The first NIC that is not a data port (Heat plugs it first)."""
    data = {port.mac for port in node.ports.values()}
    for link in links:
        if link.mac not in data:
            return link
    return None


def _pci_of(sysfs, device_link):
    if not os.path.exists(sysfs.path(device_link)):
        return None
    path = sysfs.realpath(device_link)
    # virtio: .../0000:00:04.0/virtio1; a plain PCI NIC is the function.
    while path and path != os.path.dirname(path):
        name = os.path.basename(path)
        if PCI_ADDRESS_RE.match(name):
            return name
        path = os.path.dirname(path)
    return None


def _driver_of(sysfs, pci):
    if not pci:
        return None
    return sysfs.link_name('bus/pci/devices/%s/driver' % pci)


def _numa_node(sysfs, pci):
    if not pci:
        return None
    value = sysfs.read('bus/pci/devices/%s/numa_node' % pci, default='')
    try:
        node = int(value)
    except ValueError:
        return None
    return node if node >= 0 else None
