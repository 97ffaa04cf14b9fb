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


"""Fake guests for the VNF runtime tests: a sysfs tree and a kernel.

`FakeGuest` writes, under a temporary root, the parts of /sys the runtime
reads: virtio-net NICs below PCI functions (class/net/ethN/device is the
virtioN child, as on a real guest), drivers, CPUs, huge pages and NUMA
memory. `FakeKernelSysfs` reacts to the writes the binder makes
(driver_override, unbind, drivers_probe) the way the PCI core does, so
binding can be tested without a kernel.
"""

import errno
import json
import os
import re
import tempfile

from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import cpus as cpus_mod
from epa_chain.vnf_runtime import sysfs


def temp_dir():
    """A TemporaryDirectory, in RAM where possible.

    Fake trees are many small directories, and removing them from a
    journalled disk costs milliseconds each.
    """
    shm = '/dev/shm'
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    return tempfile.TemporaryDirectory(prefix='epa-vnf-runtime-', dir=base)


class TempDir:
    """testtools fixture: a temp_dir() removed at cleanup."""

    def setUp(self):
        self._tmp = temp_dir()
        self.path = self._tmp.name

    def cleanUp(self):
        self._tmp.cleanup()

    def getDetails(self):
        return {}


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as stream:
        stream.write(text)


def _link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


class FakeGuest:
    """A guest's /sys under `root`."""

    def __init__(self, root, cpus=2, isolated='', memory_mb=2048,
                 hugepages=None, iommu=False, online=None):
        self.root = root
        self.nics = []
        every = '0-%d\n' % (cpus - 1) if cpus > 1 else '0\n'
        _write(self.path('devices/system/cpu/present'), every)
        # `online`: fewer than all, as a kernel booted with maxcpus= has
        _write(self.path('devices/system/cpu/online'),
               every if online is None else online + '\n')
        for cpu in range(1, cpus):
            os.makedirs(self.path('devices/system/cpu/cpu%d' % cpu))
        _write(self.path('devices/system/cpu/isolated'), isolated + '\n')
        _write(self.path('devices/system/node/node0/meminfo'),
               'Node 0 MemTotal:       %d kB\n' % (memory_mb * 1024))
        for size_kb, (total, free) in (hugepages or {
                2048: (0, 0), 1048576: (0, 0)}).items():
            base = 'kernel/mm/hugepages/hugepages-%dkB/' % size_kb
            _write(self.path(base + 'nr_hugepages'), '%d\n' % total)
            _write(self.path(base + 'free_hugepages'), '%d\n' % free)
        os.makedirs(self.path('kernel/iommu_groups'), exist_ok=True)
        if iommu:
            os.makedirs(self.path('kernel/iommu_groups/0'))
        for driver in ('virtio-pci', 'vfio-pci'):
            os.makedirs(self.path('bus/pci/drivers/' + driver),
                        exist_ok=True)
        _write(self.path('bus/pci/drivers_probe'), '')
        lo = 'devices/virtual/net/lo'
        _write(self.path(lo + '/address'), '00:00:00:00:00:00\n')
        _link(self.path('class/net/lo'), '../../' + lo)

    def path(self, relative):
        return os.path.join(self.root, relative)

    def add_nic(self, mac, pci, interface, queues=1):
        index = len(self.nics)
        function = 'devices/pci0000:00/%s' % pci
        virtio = '%s/virtio%d' % (function, index)
        net = '%s/net/%s' % (virtio, interface)
        _write(self.path(net + '/address'), mac + '\n')
        for queue in range(queues):
            os.makedirs(self.path('%s/queues/tx-%d' % (net, queue)))
            os.makedirs(self.path('%s/queues/rx-%d' % (net, queue)))
        _link(self.path(net + '/device'), '../../../virtio%d' % index)
        _link(self.path('class/net/' + interface), '../../' + net)
        _write(self.path(function + '/numa_node'), '-1\n')
        _write(self.path(function + '/driver_override'), '(null)\n')
        _link(self.path(function + '/driver'),
              '../../../bus/pci/drivers/virtio-pci')
        _link(self.path('bus/pci/devices/' + pci),
              '../../../' + function)
        self.nics.append((mac, pci, interface))
        return self

    def add_nics_from(self, drive_dir, first_slot=3, order=None):
        """One virtio NIC per network_data link: eth0, eth1... on slots 3..

        `order` permutes the PCI slots (a list of link indexes by slot) to
        show that ports follow MACs, not the order of devices.
        """
        with open(os.path.join(drive_dir, config_drive.NETWORK_DATA)) as s:
            links = json.load(s)['links']
        order = order or list(range(len(links)))
        for slot, index in enumerate(order):
            link = links[index]
            self.add_nic(link['ethernet_mac_address'],
                         '0000:00:%02x.0' % (first_slot + slot),
                         'eth%d' % index)
        return self


class FakeKernelSysfs(sysfs.Sysfs):
    """Sysfs whose writes to the PCI core's files act like the kernel's."""

    def __init__(self, root, refuse=(), stuck_cpus=()):
        super().__init__(root)
        self.refuse = set(refuse)     # drivers that will not take a device
        self.stuck_cpus = set(stuck_cpus)   # CPUs that will not come up
        self.writes = []

    def write(self, relative, value):
        self.writes.append((relative, value))
        parts = relative.split('/')
        cpu = re.match(r'^devices/system/cpu/cpu(\d+)/online$', relative)
        if cpu:
            self._hotplug(int(cpu.group(1)), value)
        elif relative == 'bus/pci/drivers_probe':
            self._probe(value.strip())
        elif relative.endswith('/driver/unbind'):
            os.unlink(self.path('bus/pci/devices/%s/driver' % value.strip()))
        else:
            super().write(relative, value)
        return parts

    def _hotplug(self, cpu, value):
        if cpu in self.stuck_cpus:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        online = set(cpus_mod.parse_cpu_list(
            self.read('devices/system/cpu/online')))
        if value.strip() == '1':
            online.add(cpu)
        else:
            online.discard(cpu)
        super().write('devices/system/cpu/online',
                      cpus_mod.format_cpu_list(online) + '\n')

    def _probe(self, pci):
        device = 'bus/pci/devices/%s/' % pci
        if os.path.islink(self.path(device + 'driver')):
            return
        override = self.read(device + 'driver_override').strip()
        driver = 'virtio-pci' if override in ('', '(null)') else override
        if driver in self.refuse:
            return
        os.symlink(os.path.join(self.path('bus/pci/drivers'), driver),
                   self.path(device + 'driver'))
