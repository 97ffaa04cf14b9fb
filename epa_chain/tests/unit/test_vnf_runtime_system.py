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


"""Guest plumbing on fake trees: NICs, CPUs, huge pages, DPDK binding."""

import json
import os
import shutil
import subprocess

import fixtures
import testtools

from epa_chain.local import config_drive as local_drive
from epa_chain.tests.unit import test_local_plan
from epa_chain.tests.unit import vnf_runtime_fakes as fakes
from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import cpus
from epa_chain.vnf_runtime import devices
from epa_chain.vnf_runtime import dpdk_binding
from epa_chain.vnf_runtime import errors
from epa_chain.vnf_runtime import hugepages
from epa_chain.vnf_runtime import management
from epa_chain.vnf_runtime import sysfs

MAC_L, MAC_R, MAC_M = ('fa:16:3e:00:00:0a', 'fa:16:3e:00:00:0b',
                       'fa:16:3e:00:00:0c')


def ok(argv, **_):
    return subprocess.CompletedProcess(argv, 0, '', '')


class Case(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fakes.TempDir()).path
        self.root = os.path.join(self.tmp, 'sys')


class TestDevices(Case):

    def test_scan_finds_the_pci_function_behind_virtio(self):
        guest = fakes.FakeGuest(self.root)
        guest.add_nic(MAC_M, '0000:00:03.0', 'ens3')
        guest.add_nic(MAC_L, '0000:00:07.0', 'ens7', queues=4)
        nics = devices.scan(sysfs.Sysfs(self.root))
        self.assertEqual([
            devices.Nic(MAC_M, 'ens3', '0000:00:03.0', 'virtio-pci', None, 1),
            devices.Nic(MAC_L, 'ens7', '0000:00:07.0', 'virtio-pci', None, 4),
        ], nics)   # no loopback

    def test_a_nic_bound_earlier_is_found_by_its_record(self):
        guest = fakes.FakeGuest(self.root)
        guest.add_nic(MAC_L, '0000:00:04.0', 'eth1')
        os.unlink(guest.path('class/net/eth1'))  # the kernel let go of it
        nic = devices.pci_nic(sysfs.Sysfs(self.root), MAC_L, '0000:00:04.0')
        self.assertEqual((None, '0000:00:04.0'), (nic.interface, nic.pci))
        self.assertIsNone(devices.pci_nic(sysfs.Sysfs(self.root), MAC_L,
                                          '0000:00:09.0'))


class TestCpus(Case):

    def test_workers_on_isolated_cpus_master_elsewhere(self):
        fakes.FakeGuest(self.root, cpus=4, isolated='2-3')
        layout = cpus.layout(sysfs.Sysfs(self.root), 2)
        self.assertEqual(cpus.CoreLayout(0, (2, 3), True), layout)

    def test_not_enough_isolated_cpus_uses_all_but_the_first(self):
        fakes.FakeGuest(self.root, cpus=4, isolated='3')
        layout = cpus.layout(sysfs.Sysfs(self.root), 2)
        self.assertEqual(cpus.CoreLayout(0, (1, 2), False), layout)

    def test_offline_vcpus_come_online_for_the_layout(self):
        # maxcpus=1: the isolated vCPU is present, not yet online
        fakes.FakeGuest(self.root, cpus=3, isolated='1-2', online='0')
        kernel = fakes.FakeKernelSysfs(self.root)
        self.assertEqual([1, 2], cpus.bring_online(kernel))
        self.assertEqual(cpus.CoreLayout(0, (1, 2), True),
                         cpus.layout(kernel, 2))

    def test_all_online_writes_nothing(self):
        fakes.FakeGuest(self.root, cpus=2, isolated='1')
        kernel = fakes.FakeKernelSysfs(self.root)
        self.assertEqual([], cpus.bring_online(kernel))
        self.assertEqual([], kernel.writes)

    def test_a_vcpu_that_stays_offline_names_its_knob_and_the_fix(self):
        fakes.FakeGuest(self.root, cpus=2, isolated='1', online='0')
        kernel = fakes.FakeKernelSysfs(self.root, stuck_cpus={1})
        error = self.assertRaises(errors.SystemSetupError,
                                  cpus.bring_online, kernel)
        self.assertEqual(
            '%s: CPU 1 did not come online (Input/output error): boot the '
            'image without maxcpus= on its kernel command line'
            % kernel.path('devices/system/cpu/cpu1/online'), error.reason)

    def test_cpu_list_format(self):
        self.assertEqual([0, 1, 2, 5, 7, 8], cpus.parse_cpu_list('0-2,5,7-8'))
        self.assertEqual([], cpus.parse_cpu_list('\n'))


class TestHugepages(Case):

    def test_free_pages_are_used_as_they_are(self):
        fakes.FakeGuest(self.root, hugepages={2048: (0, 0),
                                              1048576: (2, 1)})
        plan = hugepages.plan(sysfs.Sysfs(self.root), 512)
        self.assertEqual((1048576, False), (plan.page_kb, plan.changes))
        self.assertIsNone(hugepages.reserve(sysfs.Sysfs(self.root), plan))

    def test_missing_pages_are_added_and_given_back(self):
        fakes.FakeGuest(self.root, hugepages={2048: (100, 40)})
        guest_sysfs = sysfs.Sysfs(self.root)
        plan = hugepages.plan(guest_sysfs, 512)
        # 40 free pages are 80 MB: 216 more make 512 MB.
        self.assertEqual((100, 316), (plan.pages_before, plan.pages_wanted))
        undo = hugepages.reserve(guest_sysfs, plan)
        knob = 'kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'
        self.assertEqual('316', guest_sysfs.read(knob))
        undo()
        self.assertEqual('100', guest_sysfs.read(knob))

    def test_the_guest_keeps_enough_ram_besides(self):
        fakes.FakeGuest(self.root, memory_mb=1024)
        error = self.assertRaises(errors.SystemSetupError, hugepages.plan,
                                  sysfs.Sysfs(self.root), 512)
        self.assertIn('would leave the guest 512 of its 1024 MB, less than '
                      'the 768 MB it needs besides', error.reason)

    def test_the_generators_gigabyte_fits_the_templates_guest(self):
        # 2 GB of flavor, MemTotal 1966 MB (the kernel keeps some): the
        # generator's 1 GB leaves enough besides.
        fakes.FakeGuest(self.root, memory_mb=1966)
        self.assertEqual(512, hugepages.plan(sysfs.Sysfs(self.root),
                                             1024).pages_wanted)

    def test_kernel_giving_fewer_pages_is_an_error_and_undone(self):
        fakes.FakeGuest(self.root)

        class Stingy(sysfs.Sysfs):
            def write(self, relative, value):
                super().write(relative, str(min(int(value), 10)))

        stingy = Stingy(self.root)
        plan = hugepages.plan(stingy, 512)
        error = self.assertRaises(errors.SystemSetupError, hugepages.reserve,
                                  stingy, plan)
        self.assertIn('asked the kernel for 256 pages of 2048 kB, got 10',
                      error.reason)
        self.assertEqual('0', stingy.read(
            'kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'))

    def test_mount_only_when_no_hugetlbfs_of_that_size(self):
        mounts = os.path.join(self.tmp, 'mounts')
        calls = []

        def run(argv, **_):
            calls.append(argv)
            return ok(argv)

        with open(mounts, 'w') as stream:
            stream.write('hugetlbfs /dev/hugepages hugetlbfs '
                         'rw,pagesize=1024M 0 0\n')
        target = os.path.join(self.tmp, 'huge')
        undo = hugepages.ensure_mount(2048, mounts=mounts, run=run,
                                      target=target)
        self.assertEqual([['mount', '-t', 'hugetlbfs', '-o', 'pagesize=2M',
                           'nodev', target]], calls)
        undo()
        self.assertEqual(['umount', target], calls[-1])
        self.assertIsNone(hugepages.ensure_mount(1048576, mounts=mounts,
                                                 run=run, target=target))


class TestBinding(Case):

    def setUp(self):
        super().setUp()
        self.guest = fakes.FakeGuest(self.root)
        self.guest.add_nic(MAC_M, '0000:00:03.0', 'eth0')
        self.guest.add_nic(MAC_L, '0000:00:04.0', 'eth1')
        self.guest.add_nic(MAC_R, '0000:00:05.0', 'eth2')
        self.commands = []
        self.state = os.path.join(self.tmp, 'run', 'bindings.json')

    def run_command(self, argv, **_):
        self.commands.append(argv)
        if argv[:2] == ['modprobe', 'vfio']:
            fakes._write(self.guest.path(dpdk_binding.NOIOMMU), 'N\n')
        return ok(argv)

    def ports(self, kernel):
        nics = {n.mac: n for n in devices.scan(kernel)}
        return [devices.PortDevice('left', MAC_L, nics[MAC_L], 0),
                devices.PortDevice('right', MAC_R, nics[MAC_R], 1)]

    def driver(self, kernel, pci):
        return kernel.link_name('bus/pci/devices/%s/driver' % pci)

    def test_vfio_no_iommu_bind_and_give_back(self):
        kernel = fakes.FakeKernelSysfs(self.root)
        binder = dpdk_binding.Binder(kernel, run=self.run_command,
                                     state_file=self.state)
        choice = binder.prepare()
        self.assertEqual(('vfio-pci', 'no-IOMMU mode'),
                         (choice.driver, choice.detail))
        self.assertEqual([['modprobe', 'vfio', 'enable_unsafe_noiommu_mode=1'],
                          ['modprobe', 'vfio-pci']], self.commands)
        undo = binder.bind(self.ports(kernel), choice.driver)
        self.assertEqual(['virtio-pci', 'vfio-pci', 'vfio-pci'], [
            self.driver(kernel, pci) for pci in
            ('0000:00:03.0', '0000:00:04.0', '0000:00:05.0')])
        # Only the data NICs were touched, through driver_override.
        self.assertEqual([
            ('module/vfio/parameters/enable_unsafe_noiommu_mode', 'Y'),
            ('bus/pci/devices/0000:00:04.0/driver_override', 'vfio-pci'),
            ('bus/pci/devices/0000:00:04.0/driver/unbind', '0000:00:04.0'),
            ('bus/pci/drivers_probe', '0000:00:04.0'),
            ('bus/pci/devices/0000:00:05.0/driver_override', 'vfio-pci'),
            ('bus/pci/devices/0000:00:05.0/driver/unbind', '0000:00:05.0'),
            ('bus/pci/drivers_probe', '0000:00:05.0')], kernel.writes)
        with open(self.state) as stream:
            records = json.load(stream)
        self.assertEqual([('0000:00:04.0', 'virtio-pci'),
                          ('0000:00:05.0', 'virtio-pci')],
                         [(r['pci'], r['original_driver']) for r in records])
        undo()
        self.assertEqual(['virtio-pci'] * 2, [
            self.driver(kernel, pci) for pci in
            ('0000:00:04.0', '0000:00:05.0')])
        self.assertEqual('', kernel.read(
            'bus/pci/devices/0000:00:04.0/driver_override'))
        self.assertFalse(os.path.exists(self.state))

    def test_without_no_iommu_support_falls_back_to_uio(self):
        kernel = fakes.FakeKernelSysfs(self.root)
        os.makedirs(self.guest.path('bus/pci/drivers/uio_pci_generic'))
        binder = dpdk_binding.Binder(kernel, run=ok, state_file=self.state)
        # `ok` creates no vfio no-IOMMU parameter: a kernel without it.
        self.assertEqual('uio_pci_generic', binder.prepare().driver)

    def test_a_driver_refusing_a_device_rolls_back_the_other(self):
        kernel = fakes.FakeKernelSysfs(self.root)
        binder = dpdk_binding.Binder(kernel, run=self.run_command,
                                     state_file=self.state)
        ports = self.ports(kernel)

        def refuse_second(relative, value, original=kernel._probe):
            if value == '0000:00:05.0':
                kernel.refuse.add('vfio-pci')
            return original(value)

        kernel._probe = lambda pci: refuse_second('', pci)
        error = self.assertRaises(errors.SystemSetupError, binder.bind,
                                  ports, 'vfio-pci')
        self.assertIn('0000:00:05.0: still bound to no driver after binding '
                      'to vfio-pci', error.reason)
        kernel.refuse.clear()
        self.assertEqual(['virtio-pci', 'virtio-pci'], [
            self.driver(kernel, pci) for pci in
            ('0000:00:04.0', '0000:00:05.0')])
        self.assertFalse(os.path.exists(self.state))

    def test_devices_left_bound_by_a_killed_run_are_reused(self):
        kernel = fakes.FakeKernelSysfs(self.root)
        binder = dpdk_binding.Binder(kernel, run=self.run_command,
                                     state_file=self.state)
        binder.bind(self.ports(kernel), 'vfio-pci')   # then SIGKILL
        for interface in ('eth1', 'eth2'):
            os.unlink(self.guest.path('class/net/' + interface))
        again = dpdk_binding.Binder(kernel, run=self.run_command,
                                    state_file=self.state)
        known = again.known()
        self.assertEqual({MAC_L, MAC_R}, set(known))
        nics = {mac: devices.pci_nic(kernel, mac, record['pci'])
                for mac, record in known.items()}
        node = _node()
        ports = devices.match(node, [config_drive.Link(
            'l', m, None, None, None) for m in (MAC_L, MAC_R)],
            devices.scan(kernel), nics)
        self.assertEqual('vfio-pci', ports['left'].nic.driver)
        undo = again.bind(ports.values(), 'vfio-pci', known)
        undo()
        self.assertEqual(['virtio-pci', 'virtio-pci'], [
            self.driver(kernel, pci) for pci in
            ('0000:00:04.0', '0000:00:05.0')])


def _node():
    from epa_chain.chain import node_config
    return node_config.from_dict({
        'schema_version': 1, 'role': 'vnf', 'name': 'n', 'engine': 'prox',
        'forwarding_cores': 1,
        'ports': {'left': {'mac': MAC_L}, 'right': {'mac': MAC_R}},
        'flows': [{'direction': 'forward', 'rx_port': 'left',
                   'tx_port': 'right', 'next_hop_mac': MAC_M}]})


class TestLocator(Case):

    def test_finds_the_drive_by_label_and_unmounts_it(self):
        dev = os.path.join(self.tmp, 'dev')
        os.makedirs(os.path.join(dev, 'disk', 'by-label'))
        device = os.path.join(dev, 'sr0')
        open(device, 'w').close()
        os.symlink(device, os.path.join(dev, 'disk', 'by-label', 'config-2'))
        calls = []
        source = os.path.join(os.path.dirname(__file__), '..', 'fixtures',
                              'vnf_runtime', 'pvp-unidir', 'vnf1',
                              'config-drive')

        def run(argv, **_):
            calls.append(argv[0])
            if argv[0] == 'mount':
                # Stand in for the kernel: copy the drive to the target.
                os.rmdir(argv[-1])
                shutil.copytree(source, argv[-1])
            elif argv[0] == 'umount':
                for entry in os.listdir(argv[-1]):
                    shutil.rmtree(os.path.join(argv[-1], entry))
            return ok(argv)

        locator = config_drive.Locator(dev_root=dev, mounts='/nonexistent',
                                       run=run, wait_s=0)
        drive = locator.read()
        self.assertEqual(device, drive.source)
        self.assertEqual('epa-chain-vnf1', drive.server_name)
        self.assertEqual(['mount', 'umount'], calls)

    def test_no_drive_says_how_to_get_one(self):
        def run(argv, **_):
            return subprocess.CompletedProcess(argv, 2, '', '')

        locator = config_drive.Locator(dev_root=self.tmp, run=run,
                                       wait_s=0)
        error = self.assertRaises(errors.MetadataError, locator.read)
        self.assertEqual('config drive: no filesystem labelled config-2: '
                         'boot the server with config_drive: true, or pass '
                         '--config-drive DIR', error.reason)


class TestManagement(Case):

    def drive(self, preset='pvp-bidir', node='generator'):
        return config_drive.read(os.path.join(
            os.path.dirname(__file__), '..', 'fixtures', 'vnf_runtime',
            preset, node, 'config-drive'))

    def nics(self, drive):
        return [devices.Nic(link.mac, 'eth%d' % i, None, None)
                for i, link in enumerate(drive.links())]

    def test_dhcp_address_is_awaited_on_the_management_interface(self):
        drive = self.drive()
        node = drive.node_config()
        answers = [None, None, '10.0.0.5']
        asked = []

        def address_of(interface):
            asked.append(interface)
            return answers.pop(0)

        self.assertEqual(('10.0.0.5', 'eth0'), management.resolve(
            drive, node, drive.links(), self.nics(drive),
            address_of=address_of, sleep=lambda s: None))
        self.assertEqual(['eth0'] * 3, asked)

    def test_no_address_in_time(self):
        drive = self.drive()
        error = self.assertRaises(
            errors.SystemSetupError, management.resolve, drive,
            drive.node_config(), drive.links(), self.nics(drive),
            address_of=lambda i: None, wait_s=3, sleep=lambda s: None)
        self.assertIn('management NIC eth0 (fa:16:3e:00:00:05) has no '
                      'address after 3 s', error.reason)

    def test_fixed_address_from_network_data(self):
        drive = self.drive()
        mgmt = drive.network_data['networks'][0]
        mgmt.update(type='ipv4', ip_address='192.0.2.10')
        self.assertEqual(('192.0.2.10', 'eth0'), management.resolve(
            drive, drive.node_config(), drive.links(), self.nics(drive),
            address_of=lambda i: self.fail('no lookup with a fixed IP')))

    def test_loopback_address_is_read_from_the_kernel(self):
        self.assertEqual('127.0.0.1', management.interface_address('lo'))
        self.assertIsNone(management.interface_address('nonexistent0'))


class TestLocalBedConfigDrive(testtools.TestCase):
    """The local bed writes the layout (chain/config_drive.py) read here."""

    def test_the_runtime_reads_what_the_bed_writes(self):
        plan = test_local_plan._plan('pvvp')
        vnf = plan.vnfs[1]
        directory = self.useFixture(fixtures.TempDir()).path
        local_drive.write(directory, vnf)
        drive = config_drive.read(directory)
        self.assertEqual(vnf.name, drive.server_name)
        self.assertEqual(vnf.config, drive.node_config())
        self.assertEqual({p.mac for p in vnf.ports},
                         {link.mac for link in drive.links()})
        self.assertEqual({'vhostuser'}, {link.type for link in
                                         drive.links()})
