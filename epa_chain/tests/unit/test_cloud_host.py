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

"""The cloud test's readers of QEMU processes, on a fake /proc."""

import os

import fixtures
import testtools

from epa_chain.tests.cloud import host

_CMDLINE = 'root=LABEL=cloudimg-rootfs ro isolcpus=1-N pci=nomsi'


class QemuProcessesTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.proc = self.useFixture(fixtures.TempDir()).path

    def process(self, pid, *argv):
        os.makedirs(os.path.join(self.proc, str(pid)))
        with open(os.path.join(self.proc, str(pid), 'cmdline'), 'wb') as f:
            f.write(b'\0'.join(word.encode() for word in argv) + b'\0')

    def test_libvirt_guests_by_domain_name(self):
        # libvirt's -name form, QEMU's plain form, and not QEMU at all.
        self.process(101, '/usr/bin/qemu-system-x86_64', '-name',
                     'guest=instance-00000001,debug-threads=on',
                     '-kernel', 'k', '-append', _CMDLINE)
        self.process(102, 'qemu-system-x86_64', '-name', 'plain')
        self.process(103, '/usr/bin/python3', '-name', 'guest=not-qemu')
        self.process(104, 'qemu-system-x86_64', '-machine', 'pc')
        os.makedirs(os.path.join(self.proc, 'self'))
        self.assertEqual({'instance-00000001': 101, 'plain': 102},
                         host.qemu_pids(self.proc))

    def test_kernel_command_line_of_a_direct_boot(self):
        self.process(101, 'qemu-system-x86_64', '-kernel', 'k',
                     '-append', _CMDLINE)
        self.process(102, 'qemu-system-x86_64', '-drive', 'file=disk')
        self.assertEqual(_CMDLINE, host.kernel_cmdline(101, self.proc))
        self.assertIsNone(host.kernel_cmdline(102, self.proc))


_STATUS = """<!--
WARNING: THIS IS AN AUTO-GENERATED FILE.
-->
<domstatus state='running' reason='unpaused' pid='%(pid)d'>
  <domain type='qemu' id='3'>
    <name>%(domain)s</name>
    <metadata>
      <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
        <nova:name>%(server)s</nova:name>
      </nova:instance>
    </metadata>
    <devices>
      <serial type='pty'>
        <log file='/var/lib/nova/%(uuid)s/console.log' append='off'/>
      </serial>
    </devices>
  </domain>
</domstatus>
"""


class RunningDomainTest(testtools.TestCase):
    """What VcpuStall finds of a server, from libvirt's status files."""

    def setUp(self):
        super().setUp()
        self.run_dir = self.useFixture(fixtures.TempDir()).path

    def domain(self, domain, server, pid, uuid):
        with open(os.path.join(self.run_dir, domain + '.xml'), 'w') as f:
            f.write(_STATUS % {'domain': domain, 'server': server,
                               'pid': pid, 'uuid': uuid})

    def test_the_servers_qemu_and_console(self):
        self.domain('instance-00000001', 's-vnf10', 4242, 'u10')
        self.domain('instance-00000002', 's-vnf1', 4343, 'u1')
        with open(os.path.join(self.run_dir, 'instance-00000002.pid'),
                  'w') as f:
            f.write('4343')
        self.assertEqual(
            (4343, '/var/lib/nova/u1/console.log'),
            host.running_domain('s-vnf1', self.run_dir))
        self.assertIsNone(host.running_domain('s-vnf', self.run_dir))

    def test_the_vcpu_thread_by_its_libvirt_name(self):
        proc = self.useFixture(fixtures.TempDir()).path
        for tid, name in ((7, 'qemu-system-x86'), (8, 'CPU 0/TCG'),
                          (9, 'CPU 1/TCG'), (10, 'worker')):
            os.makedirs(os.path.join(proc, '7', 'task', str(tid)))
            with open(os.path.join(proc, '7', 'task', str(tid), 'comm'),
                      'w') as f:
                f.write(name + '\n')
        self.assertEqual(9, host.vcpu_thread(7, 1, proc))
        self.assertEqual(8, host.vcpu_thread(7, 0, proc))
        self.assertIsNone(host.vcpu_thread(7, 2, proc))
