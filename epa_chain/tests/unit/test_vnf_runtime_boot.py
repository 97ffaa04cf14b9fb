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


"""The runtime end to end on a fake guest: errors, dry run, bring-up, stop.

Nothing here needs root or a kernel: the guest is a fake sysfs tree whose
PCI core reacts to binding (vnf_runtime_fakes), commands and the engine
are recorded instead of run, and the console is a temporary file.
"""

import contextlib
import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import sys
from unittest import mock

import testtools

from epa_chain.tests.unit import vnf_runtime_fakes as fakes
from epa_chain.tests.unit import vnf_runtime_fixtures as fixtures
from epa_chain.vnf_runtime import __main__ as cli
from epa_chain.vnf_runtime import boot
from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import dpdk_binding
from epa_chain.vnf_runtime import readiness
from epa_chain.vnf_runtime import supervisor

NOIOMMU = 'module/vfio/parameters/enable_unsafe_noiommu_mode'
# A guest's boot as boot_timeline.read gives it (the host's clocks would
# give the host's boot).
TIMELINE = {'initramfs_at': 5.1, 'init_at': 9.2, 'runtime_at': 14.6,
            'ready_at': 21.4,
            'kernel_started': '2026-11-28T16:00:00.000+00:00'}
BOOT_LINE = ('EPA-CHAIN BOOT %s initramfs_at=5.1 init_at=9.2 runtime_at=14.6 '
             'ready_at=21.4 kernel_started=2026-11-28T16:00:00.000+00:00')


class Recorder:
    """Commands and engine events, in the order they happened."""

    def __init__(self, guest_root):
        self.guest_root = guest_root
        self.events = []

    def run(self, argv, **_):
        self.events.append(('run', tuple(argv)))
        if argv[:2] == ['modprobe', 'vfio']:
            path = os.path.join(self.guest_root, NOIOMMU)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as stream:
                stream.write('N\n')
        return subprocess.CompletedProcess(argv, 0, '', '')

    def learning(self, ports):
        self.events.append(('learn', tuple(ports)))
        return []


class FakeSupervisor:
    """Stands for supervisor.Supervisor; `during_watch` runs in watch()."""

    instances = []

    def __init__(self, recorder, during_watch=None, fail=None):
        self.recorder = recorder
        self.during_watch = during_watch
        self.fail = fail

    def __call__(self, argv, ready, cwd=None, log_path=None, on_state=None):
        self.argv, self.ready, self.on_state = argv, ready, on_state
        self.restarts, self.pid = 0, 4242
        return self

    def start(self):
        self.recorder.events.append(('start', tuple(self.argv)))
        if self.fail:
            raise supervisor.EngineFailed(self.fail)

    def watch(self):
        if self.during_watch:
            self.during_watch()

    def stop_requested(self):
        pass

    def stop(self):
        self.recorder.events.append(('stop', tuple(self.argv)))


class RuntimeCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fakes.TempDir()).path
        self.root = os.path.join(self.tmp, 'sys')
        self.console = os.path.join(self.tmp, 'console')
        self.status = os.path.join(self.tmp, 'status.json')
        self.run_dir = os.path.join(self.tmp, 'run')
        self.mounts = os.path.join(self.tmp, 'mounts')
        with open(self.mounts, 'w') as stream:
            stream.write('hugetlbfs /dev/hugepages hugetlbfs '
                         'rw,relatime,pagesize=2M 0 0\n')
        self.recorder = Recorder(self.root)

    def drive(self, preset='pvp-bidir', node='vnf1'):
        """A copy of a fixture drive, free to break."""
        target = os.path.join(self.tmp, 'drive-%s-%s' % (preset, node))
        shutil.copytree(fixtures.drive_dir(fixtures.node_dirs(preset)[node]),
                        target)
        self.guest = fakes.FakeGuest(
            self.root, cpus=4 if node == 'generator' else 2,
            isolated='1-3' if node == 'generator' else '1')
        self.guest.add_nics_from(target)
        return target

    def edit_json(self, drive, relative, change):
        path = os.path.join(drive, relative)
        with open(path) as stream:
            data = json.load(stream)
        change(data)
        with open(path, 'w') as stream:
            json.dump(data, stream)

    def edit_node(self, drive, change):
        path = os.path.join(drive, config_drive.USER_DATA)
        with open(path) as stream:
            data = fixtures.with_engine(stream.read(), 'prox')
        change(data['epa_chain'])
        with open(path, 'w') as stream:
            stream.write('#cloud-config\nepa_chain: %s\n'
                         % json.dumps(data['epa_chain']))

    def runtime(self, drive, engine_binary=sys.executable, dry_run=False,
                **supervisor_options):
        self.kernel = fakes.FakeKernelSysfs(self.root)
        options = boot.Options(
            config_drive=drive, sysfs=self.root, console=self.console,
            status=self.status, dry_run=dry_run, run_dir=self.run_dir,
            prox=engine_binary, testpmd=engine_binary)
        self.supervisor = FakeSupervisor(self.recorder, **supervisor_options)
        binder = dpdk_binding.Binder(
            self.kernel, run=self.recorder.run,
            state_file=os.path.join(self.run_dir, 'bindings.json'))
        self.relays = []
        self.out = io.StringIO()
        reporter = readiness.Reporter(console=self.console,
                                      status_file=self.status,
                                      stderr=io.StringIO())
        return boot.Runtime(
            options, out=self.out, binder=binder, reporter=reporter,
            learning_sender=self.recorder.learning,
            supervisor_factory=self.supervisor,
            relay_factory=self._relay, address_of=lambda i: '192.0.2.99',
            run=self.recorder.run, mounts=self.mounts,
            timeline=lambda: dict(TIMELINE))

    def _relay(self, address, port, interface=None, log=None):
        relay = FakeRelay(address, port, interface)
        self.relays.append(relay)
        return relay

    def console_lines(self):
        if not os.path.exists(self.console):
            return []
        with open(self.console) as stream:
            return stream.read().splitlines()

    def status_file(self):
        with open(self.status) as stream:
            return json.load(stream)

    def drivers(self):
        return {pci: self.kernel.link_name('bus/pci/devices/%s/driver' % pci)
                for _, pci, _ in self.guest.nics}

    def hugepages(self):
        return self.kernel.read(
            'kernel/mm/hugepages/hugepages-2048kB/nr_hugepages', default='0')


class FakeRelay:

    def __init__(self, address, port, interface):
        self.address, self.port, self.interface = address, port, interface
        self.running = False

    def start(self, sleep=None):
        self.running = True

    def stop(self):
        self.running = False


class TestBadMetadata(RuntimeCase):
    """Each failure names the file and field; nothing gets configured."""

    def fails(self, drive, expected, name='epa-chain-vnf1', **options):
        runtime = self.runtime(drive, **options)
        self.assertEqual(1, runtime.run())
        lines = self.console_lines()
        self.assertEqual(1, len(lines), lines)
        self.assertTrue(lines[0].startswith('EPA-CHAIN FAILED %s: ' % name),
                        lines[0])
        self.assertIn(expected, lines[0])
        # Nothing half-configured: no command, no write, no engine.
        self.assertEqual([], self.recorder.events)
        self.assertEqual([], self.kernel.writes)
        self.assertEqual('0', self.hugepages())
        self.assertEqual('failed', self.status_file()['state'])
        return lines[0]

    def test_no_config_drive(self):
        drive = self.drive()
        self.fails(os.path.join(drive, 'nowhere'), 'nowhere: no such '
                   'directory', name=os.uname().nodename)

    def test_missing_meta_data(self):
        drive = self.drive()
        os.unlink(os.path.join(drive, config_drive.META_DATA))
        self.fails(drive, 'openstack/latest/meta_data.json: missing',
                   name=os.uname().nodename)

    def test_meta_data_not_json(self):
        drive = self.drive()
        with open(os.path.join(drive, config_drive.META_DATA), 'a') as s:
            s.write('}')
        self.fails(drive, 'openstack/latest/meta_data.json: not JSON: Extra '
                   'data: line 11 column 1', name=os.uname().nodename)

    def test_meta_data_without_uuid(self):
        drive = self.drive()
        self.edit_json(drive, config_drive.META_DATA,
                       lambda data: data.pop('uuid'))
        self.fails(drive, 'openstack/latest/meta_data.json: uuid: missing',
                   name=os.uname().nodename)

    def test_network_data_not_json(self):
        drive = self.drive()
        with open(os.path.join(drive, config_drive.NETWORK_DATA), 'w') as s:
            s.write('{"links": [')
        self.fails(drive, 'openstack/latest/network_data.json: not JSON')

    def test_network_data_without_links(self):
        drive = self.drive()
        self.edit_json(drive, config_drive.NETWORK_DATA,
                       lambda data: data.pop('links'))
        self.fails(drive, 'network_data.json: links: must be a non-empty '
                   'list')

    def test_missing_user_data(self):
        drive = self.drive()
        os.unlink(os.path.join(drive, config_drive.USER_DATA))
        self.fails(drive, 'openstack/latest/user_data: missing: the server '
                   'was booted without user_data')

    def test_user_data_of_another_kind(self):
        drive = self.drive()
        with open(os.path.join(drive, config_drive.USER_DATA), 'w') as s:
            s.write('#cloud-config\npackages: [htop]\n')
        self.fails(drive, 'openstack/latest/user_data: no epa_chain key')

    def test_bad_mac_names_its_field(self):
        drive = self.drive()
        self.edit_node(drive, lambda node: node['ports']['left'].update(
            mac='FA:16:3E:00:00:03'))
        self.fails(drive, 'openstack/latest/user_data: '
                   'epa_chain.ports.left.mac: not a lower-case MAC address: '
                   "'FA:16:3E:00:00:03'")

    def test_wrong_role(self):
        drive = self.drive()
        self.edit_node(drive, lambda node: node.update(role='router'))
        self.fails(drive, "epa_chain.role: must be one of vnf, generator, "
                   "not 'router'")

    def test_generator_with_testpmd(self):
        drive = self.drive('pvp-unidir', 'generator')
        self.edit_node(drive,
                       lambda node: fixtures.set_engine(node, 'testpmd'))
        self.fails(drive, 'epa_chain.engine: the generator runs prox only',
                   name='epa-chain-generator')

    def test_newer_schema(self):
        drive = self.drive()
        self.edit_node(drive, lambda node: node.update(schema_version=2))
        self.fails(drive, 'epa_chain.schema_version: is 2, this code reads '
                   '1')

    def test_data_mac_not_among_the_servers_links(self):
        drive = self.drive()
        self.edit_node(drive, lambda node: node['ports']['right'].update(
            mac='fa:16:3e:99:99:99'))
        self.fails(drive, 'openstack/latest/network_data.json: links: no '
                   'link has MAC fa:16:3e:99:99:99 (epa_chain.ports.right.mac '
                   'in user_data): the port is not attached to this server')

    def test_data_mac_without_a_nic(self):
        drive = self.drive()
        with open(os.path.join(drive, config_drive.USER_DATA)) as stream:
            right = fixtures.with_engine(stream.read(), 'prox')[
                'epa_chain']['ports']['right']['mac']
        os.unlink(self.guest.path('class/net/eth2'))
        self.fails(drive, 'openstack/latest/user_data: '
                   'epa_chain.ports.right.mac: %s: no network interface of '
                   'this server has this MAC (found: eth0 ' % right)

    def test_engine_not_installed(self):
        drive = self.drive()
        self.fails(drive, 'epa_chain.engine: prox is not installed in this '
                   'image (looked for /nonexistent/prox): use an image built '
                   'with it, or the other engine (vnf_engine)',
                   engine_binary='/nonexistent/prox')

    def test_generator_booted_from_an_image_without_prox(self):
        drive = self.drive('pvp-bidir', 'generator')
        self.fails(drive, 'prox is not installed in this image (looked for '
                   '/nonexistent/prox): boot the generator image',
                   name='epa-chain-generator',
                   engine_binary='/nonexistent/prox')

    def test_kernel_without_huge_pages(self):
        drive = self.drive()
        shutil.rmtree(self.guest.path('kernel/mm/hugepages'))
        self.fails(drive, 'huge pages: the kernel offers none')

    def test_too_few_cpus(self):
        drive = self.drive()
        self.edit_node(drive, lambda node: node.update(forwarding_cores=4))
        self.fails(drive, 'epa_chain.forwarding_cores: the engine needs 5 '
                   'CPUs (a master and 4 workers), the guest has 2')

    def test_a_node_that_fails_later_is_reachable_already(self):
        # --manage-guest comes first: the SSH key and address are there
        # when the engine cannot be set up, to find out why.
        drive = self.drive()
        self.edit_node(drive, lambda node: node.update(forwarding_cores=4))
        runtime = self.runtime(drive)
        applied = []
        runtime.options = dataclasses.replace(runtime.options,
                                              manage_guest=True)
        runtime.guest_manager = mock.Mock(apply=applied.append)
        self.assertEqual(1, runtime.run())
        (planned,) = applied
        self.assertEqual('epa-chain-vnf1', planned.hostname)
        self.assertIn('the engine needs 5 CPUs', self.console_lines()[-1])


class TestBringUp(RuntimeCase):

    def test_vcpus_left_offline_come_up_before_the_cores_are_laid_out(self):
        drive = self.drive()
        with open(self.guest.path('devices/system/cpu/online'), 'w') as out:
            out.write('0\n')             # the kernel booted with maxcpus=1
        seen = {}

        def during_watch():
            seen['status'] = self.status_file()
            runtime.request_stop()

        runtime = self.runtime(drive, during_watch=during_watch)
        runtime.sysfs = self.kernel
        runtime.options = dataclasses.replace(runtime.options,
                                              online_cpus=True)
        self.assertEqual(0, runtime.run())
        self.assertIn(('devices/system/cpu/cpu1/online', '1'),
                      self.kernel.writes)
        self.assertEqual({'master': 0, 'workers': [1]},
                         seen['status']['cores'])
        self.assertIn('epa-chain: brought CPU 1 online', self.console_lines())

    def test_vnf_comes_up_and_stops_clean(self):
        drive = self.drive('vecpe-unidir', 'vnf1')
        seen = {}

        def during_watch():
            seen['status'] = self.status_file()
            seen['drivers'] = self.drivers()
            seen['hugepages'] = self.hugepages()
            with open(os.path.join(self.run_dir, 'prox.cfg')) as stream:
                seen['cfg'] = stream.read()
            seen['console'] = self.console_lines()
            runtime.request_stop()

        runtime = self.runtime(drive, during_watch=during_watch)
        self.assertEqual(0, runtime.run())
        self._check_forwarding(seen)
        self._check_bring_up_order()
        self._check_parked(seen)
        self._check_given_back()

    def _check_forwarding(self, seen):
        """While forwarding: ready, data NICs on vfio-pci, pages reserved.

        First on the console: where the boot went.
        """
        self.assertEqual([BOOT_LINE % 'epa-chain-vnf1',
                          'EPA-CHAIN READY epa-chain-vnf1 prox'],
                         seen['console'])
        self.assertEqual(TIMELINE, seen['status']['boot_timeline'])
        self.assertEqual('ready', seen['status']['state'])
        self.assertEqual({'0000:00:03.0': 'virtio-pci',
                          '0000:00:04.0': 'vfio-pci',
                          '0000:00:05.0': 'vfio-pci'}, seen['drivers'])
        self.assertEqual('256', seen['hugepages'])
        with open(os.path.join(fixtures.node_dirs('vecpe-unidir')['vnf1'],
                               'prox.cfg')) as stream:
            self.assertEqual(stream.read(), seen['cfg'])
        self.assertEqual({'left': '0000:00:04.0', 'right': '0000:00:05.0'},
                         {name: port['pci'] for name, port in
                          seen['status']['ports'].items()})

    def _check_bring_up_order(self):
        """Learning frames while the kernel had the NICs, vfio, engine."""
        kinds = [event[0] for event in self.recorder.events]
        self.assertEqual(['learn', 'run', 'run', 'start', 'stop'], kinds)
        self.assertEqual((('eth1', '00:00:00:00:00:10', 'left'),
                          ('eth2', '00:00:00:00:00:11', 'right')),
                         self.recorder.events[0][1])
        self.assertEqual(('modprobe', 'vfio', 'enable_unsafe_noiommu_mode=1'),
                         self.recorder.events[1][1])
        self.assertEqual('Y', self.kernel.read(NOIOMMU))
        self.assertEqual(('-f', os.path.join(self.run_dir, 'prox.cfg')),
                         self.recorder.events[3][1][1:3])

    def _check_parked(self, seen):
        """PROX waits with its tasks stopped (-e, the templates' default).

        Its control socket relayed on the management NIC.
        """
        self.assertIn('-e', self.recorder.events[3][1])
        relay, = self.relays
        self.assertEqual(('192.0.2.99', 8474, 'eth0'),
                         (relay.address, relay.port, relay.interface))
        self.assertEqual({'address': '192.0.2.99', 'port': 8474,
                          'interface': 'eth0'}, seen['status']['control'])

    def _check_given_back(self):
        """Stopped: NICs back on virtio-pci, pages freed, no bindings."""
        self.assertEqual('stopped', self.status_file()['state'])
        self.assertEqual({'0000:00:03.0': 'virtio-pci',
                          '0000:00:04.0': 'virtio-pci',
                          '0000:00:05.0': 'virtio-pci'}, self.drivers())
        self.assertEqual('0', self.hugepages())
        self.assertFalse(os.path.exists(os.path.join(self.run_dir,
                                                     'bindings.json')))

    def test_a_vnf_running_at_ready_forwards_at_once_without_a_relay(self):
        drive = self.drive('pvp-bidir', 'vnf1')
        self.edit_node(drive, lambda node: node.update(
            tasks_at_ready='running', control_port=None))
        runtime = self.runtime(drive,
                               during_watch=lambda: runtime.request_stop())
        self.assertEqual(0, runtime.run())
        started = [e[1] for e in self.recorder.events if e[0] == 'start'][0]
        self.assertNotIn('-e', started)
        self.assertEqual([], self.relays)
        self.assertEqual([BOOT_LINE % 'epa-chain-vnf1',
                          'EPA-CHAIN READY epa-chain-vnf1 prox'],
                         self.console_lines())

    def test_a_parked_vnf_without_a_control_port_names_the_field(self):
        drive = self.drive('pvp-bidir', 'vnf1')
        self.edit_node(drive, lambda node: node.update(control_port=None))
        self.assertEqual(1, self.runtime(drive).run())
        (line,) = self.console_lines()
        self.assertIn('user_data: epa_chain.control_port: the parked VNF '
                      'needs a TCP port', line)

    def test_engine_failure_undoes_everything(self):
        drive = self.drive('pvp-bidir', 'vnf1')
        runtime = self.runtime(drive, fail='prox exited with code 1 before '
                               'it was ready: Failed to init port 0')
        self.assertEqual(1, runtime.run())
        self.assertEqual(['EPA-CHAIN FAILED epa-chain-vnf1: prox exited '
                          'with code 1 before it was ready: Failed to init '
                          'port 0'], self.console_lines())
        self.assertEqual(set(['virtio-pci']), set(self.drivers().values()))
        self.assertEqual('0', self.hugepages())
        self.assertEqual(['learn', 'run', 'run', 'start', 'stop'],
                         [event[0] for event in self.recorder.events])

    def test_testpmd_vnf_runs_the_golden_command(self):
        drive = self.drive('pvvp-bidir', 'vnf2')
        self.edit_node(drive,
                       lambda node: fixtures.set_engine(node, 'testpmd'))
        binary = os.path.join(self.tmp, 'dpdk-testpmd')
        with open(binary, 'w') as stream:
            stream.write('#!/bin/sh\n')
        os.chmod(binary, 0o755)
        runtime = self.runtime(drive, engine_binary=binary,
                               during_watch=lambda: runtime.request_stop())
        self.assertEqual(0, runtime.run())
        started = [e[1] for e in self.recorder.events if e[0] == 'start'][0]
        with open(os.path.join(fixtures.node_dirs('pvvp-bidir')['vnf2'],
                               'testpmd.argv')) as stream:
            golden = stream.read().splitlines()
        self.assertEqual([binary] + golden[1:], list(started))
        self.assertEqual("output line 'Press enter to exit'",
                         self.supervisor.ready.describe)
        self.assertFalse(os.path.exists(os.path.join(self.run_dir,
                                                     'prox.cfg')))

    def test_generator_relays_its_control_socket_on_management(self):
        drive = self.drive('pvvp-bidir', 'generator')
        runtime = self.runtime(drive,
                               during_watch=lambda: runtime.request_stop())
        self.assertEqual(0, runtime.run())
        self.assertEqual(['epa-chain: generator layout standard: gen tasks '
                          'on CPU 1,2, lat tasks on CPU 3',
                          BOOT_LINE % 'epa-chain-generator',
                          'EPA-CHAIN READY epa-chain-generator prox'],
                         self.console_lines())
        self.assertEqual('standard', self.status_file()['generator_layout'])
        relay, = self.relays
        self.assertEqual(('192.0.2.99', 8474, 'eth0'),
                         (relay.address, relay.port, relay.interface))
        self.assertFalse(relay.running)   # stopped with the runtime
        started = [e[1] for e in self.recorder.events if e[0] == 'start'][0]
        self.assertIn('-e', started)
        self.assertNotIn('-t', started)


class TestInternalError(RuntimeCase):

    def test_a_bug_still_undoes_and_reports(self):
        drive = self.drive()

        def broken():
            raise KeyError('surprise')

        runtime = self.runtime(drive, during_watch=broken)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            self.assertEqual(1, runtime.run())
        self.assertEqual(["EPA-CHAIN FAILED epa-chain-vnf1: internal error: "
                          "KeyError: 'surprise' (traceback in the journal)"],
                         self.console_lines()[2:])
        self.assertIn('Traceback', stderr.getvalue())
        self.assertEqual(set(['virtio-pci']), set(self.drivers().values()))
        self.assertEqual('0', self.hugepages())


class TestDryRun(RuntimeCase):

    def main(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(
                io.StringIO()):
            code = cli.main(list(argv))
        return code, out.getvalue()

    def test_dry_run_prints_the_golden_config_and_touches_nothing(self):
        drive = self.drive('vecpe-bidir', 'vnf3')
        before = sorted(os.walk(self.root))
        code, out = self.main('run', '--config-drive', drive, '--sysfs',
                              self.root, '--console', self.console,
                              '--dry-run')
        self.assertEqual(0, code, out)
        with open(os.path.join(fixtures.node_dirs('vecpe-bidir')['vnf3'],
                               'prox.cfg')) as stream:
            golden = stream.read()
        self.assertTrue(out.endswith(golden), out)
        self.assertIn('# port left: MAC 00:00:00:00:00:30, eth1, PCI '
                      '0000:00:04.0 (virtio-pci), DPDK port 0, '
                      'net-phys2-2001 VLAN 2001', out)
        self.assertIn('# huge pages: raise 2 MB pages from 0 to 256', out)
        self.assertEqual(before, sorted(os.walk(self.root)))
        self.assertEqual([], self.console_lines())
        self.assertFalse(os.path.exists(self.status))

    def test_dry_run_reports_bad_metadata_on_the_console(self):
        drive = self.drive('pvp-unidir', 'vnf1')
        self.edit_node(drive, lambda node: node['flows'][0].update(
            next_hop_mac='not-a-mac'))
        code, out = self.main('run', '--config-drive', drive, '--sysfs',
                              self.root, '--console', self.console,
                              '--status', self.status, '--dry-run')
        self.assertEqual(1, code)
        self.assertEqual(['EPA-CHAIN FAILED epa-chain-vnf1: '
                          'openstack/latest/user_data: '
                          'epa_chain.flows[0].next_hop_mac: not a lower-case '
                          "MAC address: 'not-a-mac'"], self.console_lines())
        self.assertEqual('failed', self.status_file()['state'])

    def test_usage_error(self):
        with contextlib.redirect_stderr(io.StringIO()):
            error = self.assertRaises(SystemExit, cli.main,
                                      ['run', '--driver', 'igb_uio'])
        self.assertEqual(2, error.code)


class TestStoppedDuringStart(RuntimeCase):

    def test_sigterm_before_the_engine_starts_undoes_the_binding(self):
        drive = self.drive()
        runtime = self.runtime(drive)
        original_bind = runtime.binder.bind

        def bind_then_stop(*args, **kwargs):
            undo = original_bind(*args, **kwargs)
            runtime.request_stop()
            return undo

        runtime.binder.bind = bind_then_stop
        self.assertEqual(0, runtime.run())
        self.assertEqual([], [e for e in self.recorder.events
                              if e[0] == 'start'])
        self.assertEqual(set(['virtio-pci']), set(self.drivers().values()))
        self.assertEqual('stopped', self.status_file()['state'])
        self.assertEqual([], self.console_lines())


class TestImageDependencies(testtools.TestCase):

    def test_runtime_imports_only_stdlib_yaml_and_its_own_packages(self):
        # A fresh interpreter: this test process has Heat loaded already.
        script = (
            'import sys\n'
            'before = set(sys.modules)\n'
            'import epa_chain.vnf_runtime.__main__\n'
            'import epa_chain.vnf_runtime.boot\n'
            'import epa_chain.prox.build\n'
            'import epa_chain.prox.gen_config\n'
            '# PyYAML\'s C extension brings Cython\'s runtime with it.\n'
            'own = ("epa_chain", "yaml", "_yaml", "cython_runtime")\n'
            'print("\\n".join(sorted(set(\n'
            '    m.split(".")[0] for m in set(sys.modules) - before\n'
            '    if m.split(".")[0] not in sys.stdlib_module_names\n'
            '    and m.split(".")[0] not in own\n'
            '    and not m.startswith("_cython_")))))\n')
        result = subprocess.run([sys.executable, '-c', script],
                                capture_output=True, text=True,
                                cwd=fixtures.TOP,
                                env=dict(os.environ, PYTHONPATH=fixtures.TOP))
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('', result.stdout.strip())

    def test_runtime_needs_only_the_packages_the_image_gets(self):
        # diskimage-elements/epa-chain-runtime copies these packages and
        # modules only; the guest runs the runtime and, in
        # epa-chain-prox's install.d, the PROX builder.
        element = os.path.join(
            fixtures.TOP, 'diskimage-elements', 'epa-chain-runtime',
            'extra-data.d', '50-epa-chain-runtime-source')
        with open(element) as stream:
            text = stream.read()
        copied = re.search(r'^packages=\((.*)\)$', text, re.M).group(1).split()
        # and the top-level modules it names, as module names.
        copied += [name[:-len('.py')] for name in re.search(
            r'^modules=\((.*)\)$', text, re.M).group(1).split()]
        script = (
            'import sys\n'
            'import epa_chain.vnf_runtime.__main__\n'
            'import epa_chain.vnf_runtime.boot\n'
            'import epa_chain.prox.build\n'
            'print("\\n".join(sorted(set(\n'
            '    m.split(".")[1] for m in sys.modules\n'
            '    if m.startswith("epa_chain.")))))\n')
        result = subprocess.run([sys.executable, '-c', script],
                                capture_output=True, text=True,
                                cwd=fixtures.TOP,
                                env=dict(os.environ, PYTHONPATH=fixtures.TOP))
        self.assertEqual(0, result.returncode, result.stderr)
        used = set(result.stdout.split())
        self.assertIn('chain', used)
        self.assertEqual(set(), used - set(copied))
