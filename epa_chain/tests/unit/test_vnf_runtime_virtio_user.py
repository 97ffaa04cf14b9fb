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


"""The runtime on a host: data ports as virtio-user devices, given CPUs.

The host is a fake sysfs tree without the data NICs (they are vhost-user
sockets in a temporary directory), the engine is recorded instead of run,
and /proc/net/unix is a file the tests write.
"""

import contextlib
import io
import json
import os
import shutil
import socket

import testtools

from epa_chain.chain import node_config
from epa_chain.tests.unit import test_vnf_runtime_boot as boot_tests
from epa_chain.tests.unit import vnf_runtime_fakes as fakes
from epa_chain.tests.unit import vnf_runtime_fixtures as fixtures
from epa_chain.vnf_runtime import __main__ as cli
from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import cpus
from epa_chain.vnf_runtime import devices
from epa_chain.vnf_runtime import engine
from epa_chain.vnf_runtime import errors
from epa_chain.vnf_runtime import prox_l2fwd
from epa_chain.vnf_runtime import switch_learning
from epa_chain.vnf_runtime import sysfs
from epa_chain.vnf_runtime import testpmd
from epa_chain.vnf_runtime import virtio_user

HOST_NIC = ('52:54:00:12:34:56', '0000:00:19.0', 'enp0s25')


def make_socket(path):
    """A socket file nobody serves any more: what a killed run leaves."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(path)
    return path


def is_socket(path):
    return virtio_user.stale(path)


def unix_table(path, listening=()):
    """A /proc/net/unix with `listening` sockets and one connected one."""
    lines = ['Num       RefCount Protocol Flags    Type St Inode Path']
    for index, served in enumerate(listening):
        lines.append('%016x: 00000002 00000000 00010000 0001 01 %d %s'
                     % (index, 1000 + index, served))
    lines.append('ffff000000000000: 00000003 00000000 00000000 0001 03 999 '
                 '/run/other.sock')
    with open(path, 'w') as stream:
        stream.write('\n'.join(lines) + '\n')
    return path


def read_node(drive):
    read = config_drive.read(drive)
    return read, read.node_config()


def node_with_engine(drive, name):
    with open(os.path.join(drive, config_drive.USER_DATA)) as stream:
        data = fixtures.with_engine(stream.read(), name)
    return node_config.from_dict(data['epa_chain'])


class HostCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fakes.TempDir()).path
        self.root = os.path.join(self.tmp, 'sys')
        self.sockets = os.path.join(self.tmp, 'vhu')
        os.makedirs(self.sockets)
        self.unix = unix_table(os.path.join(self.tmp, 'unix'))

    def host(self, cpus_count=2, isolated=''):
        """A fresh host tree (replacing any earlier one)."""
        shutil.rmtree(self.root, ignore_errors=True)
        guest = fakes.FakeGuest(self.root, cpus=cpus_count,
                                isolated=isolated)
        guest.add_nic(*HOST_NIC)   # the host's own NIC: no data port
        return guest

    def fixture_drive(self, preset='pvp-bidir', node='vnf1'):
        target = os.path.join(self.tmp, 'drive-%s-%s' % (preset, node))
        if not os.path.isdir(target):
            shutil.copytree(
                fixtures.drive_dir(fixtures.node_dirs(preset)[node]), target)
        return target

    def sockets_for(self, node, swap=False):
        """MAC -> socket for every data port of `node`."""
        names = sorted(node.ports)
        paths = [os.path.join(self.sockets, name + '.sock') for name in names]
        if swap:
            paths.reverse()
        return {node.ports[name].mac: path
                for name, path in zip(names, paths)}


class TestOption(HostCase):

    def test_mac_and_absolute_socket_path(self):
        self.assertEqual(('fa:16:3e:00:00:0a', '/run/vhu/a.sock'),
                         virtio_user.parse_option(
                             'FA:16:3E:00:00:0A=/run/vhu/a.sock'))
        mac, path = virtio_user.parse_option('fa:16:3e:00:00:0a=vhu/a.sock')
        self.assertEqual(os.path.join(os.getcwd(), 'vhu', 'a.sock'), path)

    def test_bad_options(self):
        for text, expected in (
                ('fa:16:3e:00:00:0a', 'the vhost-user socket path after ='),
                ('fa:16:3e:00:00:0a=', 'the vhost-user socket path after ='),
                ('eth1=/run/a.sock', 'with a MAC like'),
                ('fa:16:3e:00:00=/run/a.sock', 'with a MAC like'),
                ('fa:16:3e:00:00:0g=/run/a.sock', 'with a MAC like')):
            error = self.assertRaises(ValueError, virtio_user.parse_option,
                                      text)
            self.assertIn(expected, str(error))

    def usage_error(self, *argv):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            error = self.assertRaises(SystemExit, cli.main, list(argv))
        self.assertEqual(2, error.code)
        return stderr.getvalue()

    def test_usage_errors(self):
        self.assertIn('MAC fa:16:3e:00:00:0a given twice', self.usage_error(
            'run', '--virtio-user', 'fa:16:3e:00:00:0a=/run/a.sock',
            '--virtio-user', 'FA:16:3E:00:00:0A=/run/b.sock'))
        self.assertIn('expected MAC=SOCKET', self.usage_error(
            'run', '--virtio-user', '/run/a.sock'))
        for bad in ('3-1', 'a', ''):
            self.assertIn('expected a kernel CPU list', self.usage_error(
                'run', '--cpus', bad))


class TestCpus(HostCase):

    def layout(self, allowed, workers=1, **host):
        self.host(**host)
        return cpus.layout(sysfs.Sysfs(self.root), workers, allowed=allowed)

    def test_master_and_workers_from_the_given_cpus(self):
        self.assertEqual(cpus.CoreLayout(2, (3,), False),
                         self.layout([2, 3], cpus_count=4))

    def test_isolated_cpus_outside_the_list_are_ignored(self):
        # Without --cpus CPU 1 (isolated) would be the worker.
        self.assertEqual(cpus.CoreLayout(0, (1,), True),
                         self.layout(None, cpus_count=4, isolated='1'))
        self.assertEqual(cpus.CoreLayout(2, (3,), False),
                         self.layout([2, 3], cpus_count=4, isolated='1'))

    def test_isolated_cpus_inside_the_list_take_the_workers(self):
        self.assertEqual(cpus.CoreLayout(1, (3,), True),
                         self.layout([1, 3], cpus_count=4, isolated='3'))

    def test_too_few_names_the_option(self):
        error = self.assertRaises(errors.SystemSetupError, self.layout,
                                  [1], workers=2, cpus_count=4)
        self.assertEqual(
            '--cpus 1: the engine needs 3 CPUs (a master and 2 workers for '
            'epa_chain.forwarding_cores), --cpus names 1: name more CPUs or '
            'use fewer forwarding cores', error.reason)

    def test_offline_cpus_are_refused(self):
        error = self.assertRaises(errors.SystemSetupError, self.layout,
                                  [1, 2, 3], cpus_count=2)
        self.assertEqual('--cpus 1-3: CPU 2-3 are not online (online: 0-1): '
                         'name online CPUs only', error.reason)

    def test_cpu_list_round_trip(self):
        for text in ('0', '0-1', '0-2,5,7-8', '1,3,5'):
            self.assertEqual(text, cpus.format_cpu_list(
                cpus.parse_cpu_list(text)))


class TestMatch(HostCase):

    def match(self, drive, sockets):
        self.host()
        read, node = read_node(drive)
        return devices.match(node, read.links(),
                             devices.scan(sysfs.Sysfs(self.root)),
                             virtio_user=sockets)

    def test_ports_are_vdevs_left_first(self):
        drive = self.fixture_drive()
        _, node = read_node(drive)
        for swap in (False, True):
            sockets = self.sockets_for(node, swap=swap)
            ports = self.match(drive, sockets)
            self.assertEqual({'left': 0, 'right': 1},
                             {n: p.dpdk_port for n, p in ports.items()})
            for name, port in ports.items():
                self.assertEqual(node.ports[name].mac, port.mac)
                self.assertEqual(sockets[port.mac], port.virtio_user)
                self.assertEqual((None, None, None), (
                    port.pci, port.nic.interface, port.nic.driver))

    def test_a_mac_that_is_no_link_fails_as_before(self):
        drive = self.fixture_drive()
        _, node = read_node(drive)
        sockets = self.sockets_for(node)
        data = fixtures.with_engine(
            config_drive.read(drive).user_data, 'prox')['epa_chain']
        data['ports']['right']['mac'] = 'fa:16:3e:99:99:99'
        with open(os.path.join(drive, config_drive.USER_DATA), 'w') as s:
            s.write('#cloud-config\nepa_chain: %s\n' % json.dumps(data))
        sockets['fa:16:3e:99:99:99'] = sockets.pop(node.ports['right'].mac)
        error = self.assertRaises(errors.MetadataError, self.match, drive,
                                  sockets)
        self.assertEqual(
            'openstack/latest/network_data.json: links: no link has MAC '
            'fa:16:3e:99:99:99 (epa_chain.ports.right.mac in user_data): the '
            'port is not attached to this server', error.reason)

    def test_a_mac_that_is_no_data_port(self):
        drive = self.fixture_drive()
        _, node = read_node(drive)
        sockets = self.sockets_for(node)
        sockets['fa:16:3e:00:00:06'] = '/run/vhu/mgmt.sock'  # management
        error = self.assertRaises(errors.SystemSetupError, self.match, drive,
                                  sockets)
        self.assertEqual(
            '--virtio-user fa:16:3e:00:00:06=/run/vhu/mgmt.sock: no data '
            'port has this MAC (user_data epa_chain.ports: left '
            'fa:16:3e:00:00:03, right fa:16:3e:00:00:04)', error.reason)

    def test_one_port_without_virtio_user_and_without_nic(self):
        drive = self.fixture_drive()
        _, node = read_node(drive)
        sockets = self.sockets_for(node)
        del sockets[node.ports['right'].mac]
        error = self.assertRaises(errors.MetadataError, self.match, drive,
                                  sockets)
        self.assertEqual(
            'openstack/latest/user_data: epa_chain.ports.right.mac: '
            'fa:16:3e:00:00:04: no network interface of this server has '
            'this MAC (found: %s %s)' % (HOST_NIC[2], HOST_NIC[0]),
            error.reason)

    def test_virtio_user_and_pci_ports_do_not_mix(self):
        drive = self.fixture_drive()
        _, node = read_node(drive)
        sockets = self.sockets_for(node)
        del sockets[node.ports['right'].mac]
        guest = self.host()
        guest.add_nic(node.ports['right'].mac, '0000:00:05.0', 'eth2')
        read = config_drive.read(drive)
        error = self.assertRaises(
            errors.SystemSetupError, devices.match, node, read.links(),
            devices.scan(sysfs.Sysfs(self.root)), virtio_user=sockets)
        self.assertEqual(
            '--virtio-user: every data port or none: left is virtio-user, '
            'right is a PCI NIC: give --virtio-user for right too, or for '
            'none', error.reason)


class TestSockets(HostCase):

    def ports(self, *paths):
        nic = devices.Nic('fa:16:3e:00:00:0a', None, None, None)
        return [devices.PortDevice(name, 'fa:16:3e:00:00:%02x' % (10 + i),
                                   nic, i, virtio_user=path)
                for i, (name, path) in enumerate(zip(('left', 'right'),
                                                     paths))]

    def check(self, *paths, listening=()):
        virtio_user.check_sockets(self.ports(*paths), unix_table(
            self.unix, listening))

    def refused(self, expected, *paths, **kwargs):
        error = self.assertRaises(errors.SystemSetupError, self.check,
                                  *paths, **kwargs)
        self.assertIn(expected, error.reason)
        self.assertTrue(error.reason.startswith('--virtio-user fa:16:3e'),
                        error.reason)

    def test_new_and_stale_sockets_are_fine(self):
        left = os.path.join(self.sockets, 'l.sock')
        right = make_socket(os.path.join(self.sockets, 'r.sock'))
        self.check(left, right)

    def test_unusable_paths(self):
        regular = os.path.join(self.sockets, 'file')
        with open(regular, 'w') as stream:
            stream.write('not a socket\n')
        ok = os.path.join(self.sockets, 'ok.sock')
        self.refused('exists and is not a socket', ok, regular)
        self.refused('no directory %s/missing' % self.sockets, ok,
                     os.path.join(self.sockets, 'missing', 'r.sock'))
        self.refused('the same socket as port left', ok, ok)
        self.refused('AF_UNIX takes at most 107', ok,
                     os.path.join(self.sockets, 'x' * 120))
        self.refused('a comma or a space', ok,
                     os.path.join(self.sockets, 'a,b.sock'))
        self.refused('a comma or a space', ok,
                     os.path.join(self.sockets, 'a b.sock'))
        self.assertTrue(os.path.isfile(regular))   # never removed

    def test_a_served_socket_is_refused(self):
        served = make_socket(os.path.join(self.sockets, 'served.sock'))
        self.refused('a running process serves this socket',
                     os.path.join(self.sockets, 'ok.sock'), served,
                     listening=[served])

    def test_claim_removes_the_stale_file_and_its_undo_ours(self):
        path = make_socket(os.path.join(self.sockets, 'l.sock'))
        undo = virtio_user.claim(path)
        self.assertFalse(os.path.exists(path))
        make_socket(path)       # the engine serves it
        undo()
        self.assertFalse(os.path.exists(path))
        undo()                  # nothing left: no error


class TestEngines(HostCase):

    def ports(self, drive):
        read, node = read_node(drive)
        sockets = self.sockets_for(node)
        return devices.match(node, read.links(), [], virtio_user=sockets)

    def test_testpmd_is_the_golden_with_vdevs_for_pci(self):
        for preset in ('pvp-bidir', 'pvp-unidir'):
            drive = self.fixture_drive(preset)
            ports = self.ports(drive)
            node = node_with_engine(drive, 'testpmd')
            layout = cpus.CoreLayout(0, (1,), False)
            argv = testpmd.argv('dpdk-testpmd', node, ports, layout)
            with open(os.path.join(fixtures.node_dirs(preset)['vnf1'],
                                   'testpmd.argv')) as stream:
                golden = stream.read().splitlines()
            # The golden's left NIC is on the lower PCI slot: port 0 too.
            start = golden.index('-a')
            expected = golden[:start] + [
                '--no-pci', '--in-memory', '--single-file-segments',
                '--vdev=net_virtio_user0,path=%s/left.sock,server=1,'
                'mac=%s' % (self.sockets, node.ports['left'].mac),
                '--vdev=net_virtio_user1,path=%s/right.sock,server=1,'
                'mac=%s' % (self.sockets, node.ports['right'].mac),
            ] + golden[start + 4:]
            self.assertEqual(expected, argv, preset)

    def test_prox_passes_the_vdevs_to_eal(self):
        drive = self.fixture_drive('pvp-unidir')
        ports = self.ports(drive)
        node = node_with_engine(drive, 'prox')
        text = prox_l2fwd.render(node, ports, cpus.CoreLayout(0, (1,), False))
        with open(os.path.join(fixtures.node_dirs('pvp-unidir')['vnf1'],
                               'prox.cfg')) as stream:
            golden = stream.read()
        eal = ('eal=--in-memory --single-file-segments '
               '--vdev=net_virtio_user0,path={0}/left.sock,server=1,'
               'mac=fa:16:3e:00:00:03 '
               '--vdev=net_virtio_user1,path={0}/right.sock,server=1,'
               'mac=fa:16:3e:00:00:04'.format(self.sockets))
        self.assertIn('[eal options]\n-n=4\nno-output=no\nno-pci=yes\n%s\n'
                      % eal, text)
        self.assertIn('virtio-user %s/left.sock' % self.sockets, text)
        for port in (0, 1):
            self.assertIn('[port %d]\nname=%s\nmac=hardware\n'
                          'promiscuous=no\nlsc=no\n'
                          % (port, ('left', 'right')[port]), text)
        # The tasks are the golden's: only the devices changed.
        tail = golden[golden.index('[defaults]'):]
        self.assertTrue(text.endswith(tail), text)

    def test_the_generator_drives_virtio_user_ports(self):
        # The external tester (epa_chain.cloud.tester) on a host: vdevs on
        # the sockets, with the memory options vhost-user needs.
        drive = self.fixture_drive('pvp-bidir', 'generator')
        ports = self.ports(drive)
        _, node = read_node(drive)
        plan = engine.plan(node, ports, cpus.CoreLayout(0, (1, 2, 3), False),
                           'prox')
        eal = [line for line in plan.config_text.splitlines()
               if line.startswith('eal=')]
        self.assertEqual(1, len(eal), plan.config_text)
        for index, name in enumerate(('left', 'right')):
            self.assertIn('--vdev=net_virtio_user%d,path=%s,server=1,mac=%s'
                          % (index, ports[name].virtio_user,
                             ports[name].mac), eal[0])
        self.assertIn('--in-memory --single-file-segments', eal[0])
        self.assertNotIn('no-huge', plan.config_text)

    def test_learning_without_boot_frames(self):
        drive = self.fixture_drive('pvp-unidir')
        node = node_with_engine(drive, 'testpmd')
        methods = {name: item.method for name, item in
                   switch_learning.plan(node, 'testpmd',
                                        boot_frames=False).items()}
        for method in methods.values():
            self.assertNotIn('boot frames', method)
        self.assertTrue(methods['right'].startswith(
            'the --tx-first burst, then the frames it forwards'))
        self.assertTrue(methods['left'].startswith(
            'the --tx-first burst only'))
        prox = switch_learning.plan(node, 'prox', boot_frames=False)
        self.assertEqual('a PROX gen task: one frame every 1 s',
                         prox['left'].method)


class TestRuntimeOnAHost(boot_tests.RuntimeCase):
    """Bring-up, stop, failures and dry run with --virtio-user."""

    def setUp(self):
        super().setUp()
        self.sockets = os.path.join(self.tmp, 'vhu')
        os.makedirs(self.sockets)
        self.unix = unix_table(os.path.join(self.tmp, 'unix'))
        self.testpmd = os.path.join(self.tmp, 'dpdk-testpmd')
        with open(self.testpmd, 'w') as stream:
            stream.write('#!/bin/sh\n')
        os.chmod(self.testpmd, 0o755)

    def host_drive(self, preset='pvp-bidir', node='vnf1', engine='testpmd',
                   cpus_count=2):
        target = os.path.join(self.tmp, 'drive-%s-%s' % (preset, node))
        shutil.copytree(fixtures.drive_dir(fixtures.node_dirs(preset)[node]),
                        target)
        self.guest = fakes.FakeGuest(self.root, cpus=cpus_count)
        self.guest.add_nic(*HOST_NIC)
        self.edit_node(target, lambda data: fixtures.set_engine(data, engine)
                       if data['role'] == 'vnf' else None)
        _, node_cfg = read_node(target)
        self.macs = {name: port.mac for name, port in node_cfg.ports.items()}
        self.paths = {name: os.path.join(self.sockets, name + '.sock')
                      for name in node_cfg.ports}
        return target

    def host_runtime(self, drive, allowed=None, **kwargs):
        runtime = self.runtime(drive, engine_binary=self.testpmd, **kwargs)
        runtime.options.virtio_user = {self.macs[name]: path
                                       for name, path in self.paths.items()}
        runtime.options.cpus = allowed
        runtime.unix_sockets = self.unix
        return runtime

    def test_comes_up_on_sockets_and_leaves_none(self):
        drive = self.host_drive()
        make_socket(self.paths['left'])         # left over by a killed run
        seen = {}

        def during_watch():
            seen['status'] = self.status_file()
            seen['console'] = self.console_lines()
            seen['stale left'] = is_socket(self.paths['left'])
            seen['run dir'] = os.path.isdir(self.run_dir)
            for path in self.paths.values():
                make_socket(path)               # testpmd serves them
            runtime.request_stop()

        runtime = self.host_runtime(drive, during_watch=during_watch)
        self.assertEqual(0, runtime.run())
        self.assertEqual(['EPA-CHAIN READY epa-chain-vnf1 testpmd'],
                         seen['console'])
        self.assertFalse(seen['stale left'])
        self.assertTrue(seen['run dir'])
        # No learning frames, no modprobe, no binding: the engine only.
        self.assertEqual(['start', 'stop'],
                         [event[0] for event in self.recorder.events])
        self.assertEqual([], [w for w in self.kernel.writes
                              if 'pci' in w[0]])
        argv = list(self.recorder.events[0][1])
        self.assertEqual([
            '--no-pci', '--in-memory', '--single-file-segments',
            '--vdev=net_virtio_user0,path=%s,server=1,mac=%s'
            % (self.paths['left'], self.macs['left']),
            '--vdev=net_virtio_user1,path=%s,server=1,mac=%s'
            % (self.paths['right'], self.macs['right'])],
            argv[argv.index('4') + 1:argv.index('--')])
        status = seen['status']
        self.assertEqual('ready', status['state'])
        self.assertIsNone(status['driver'])
        self.assertEqual({name: {'virtio_user': self.paths[name], 'pci': None,
                                 'interface': None, 'mac': self.macs[name],
                                 'dpdk_port': index}
                          for index, name in enumerate(('left', 'right'))},
                         {name: {k: v for k, v in port.items()
                                 if k != 'switch_learning'}
                          for name, port in status['ports'].items()})
        self.assertNotIn('boot frames',
                         status['ports']['left']['switch_learning'])
        # Stopped: the engine's sockets and the huge pages are gone.
        self.assertEqual('stopped', self.status_file()['state'])
        self.assertEqual([], os.listdir(self.sockets))
        self.assertEqual('0', self.hugepages())

    def test_engine_failure_removes_the_sockets(self):
        drive = self.host_drive()
        runtime = self.host_runtime(drive, fail='dpdk-testpmd exited with '
                                    'code 1 before it was ready: EAL: '
                                    'failed to parse device')
        make_socket(self.paths['right'])
        self.assertEqual(1, runtime.run())
        self.assertEqual(['EPA-CHAIN FAILED epa-chain-vnf1: dpdk-testpmd '
                          'exited with code 1 before it was ready: EAL: '
                          'failed to parse device'], self.console_lines())
        self.assertEqual([], os.listdir(self.sockets))
        self.assertEqual('0', self.hugepages())

    def test_cpus_pick_the_lcores(self):
        drive = self.host_drive(cpus_count=4)
        runtime = self.host_runtime(
            drive, allowed=[2, 3], during_watch=lambda: runtime.request_stop())
        self.assertEqual(0, runtime.run())
        argv = list(self.recorder.events[0][1])
        self.assertEqual(['-l', '2,3', '--main-lcore', '2'], argv[1:5])

    def fails(self, runtime, expected):
        self.assertEqual(1, runtime.run())
        lines = self.console_lines()
        self.assertEqual(1, len(lines), lines)
        self.assertIn(expected, lines[0])
        self.assertEqual([], self.recorder.events)
        self.assertEqual([], self.kernel.writes)
        return lines[0]

    def test_checks_come_before_any_change(self):
        drive = self.host_drive()
        stale = make_socket(self.paths['left'])
        with open(self.paths['right'], 'w') as stream:
            stream.write('a file of someone else\n')
        self.fails(self.host_runtime(drive), '--virtio-user %s=%s (port '
                   'right): exists and is not a socket'
                   % (self.macs['right'], self.paths['right']))
        self.assertTrue(is_socket(stale))   # not removed: nothing started
        os.unlink(self.paths['right'])
        self.recorder.events.clear()
        os.unlink(self.console)
        self.fails(self.host_runtime(drive, allowed=[1]),
                   'EPA-CHAIN FAILED epa-chain-vnf1: --cpus 1: the engine '
                   'needs 2 CPUs')
        self.assertTrue(is_socket(stale))

    def test_generator_needs_its_management_address(self):
        # On a host the generator's control relay needs an address from
        # network_data (epa_chain.cloud.tester gives 127.0.0.1); a drive
        # whose management NIC is no interface here fails by name.
        drive = self.host_drive('pvp-bidir', 'generator', engine='prox',
                                cpus_count=4)
        self.assertEqual(1, self.host_runtime(drive).run())
        lines = self.console_lines()
        self.assertIn('EPA-CHAIN FAILED epa-chain-generator: openstack/'
                      'latest/network_data.json: links: the management NIC',
                      lines[-1])

    def test_dry_run_prints_sockets_and_eal(self):
        drive = self.host_drive()
        make_socket(self.paths['right'])
        before = sorted(os.walk(self.tmp))
        argv = ['run', '--config-drive', drive, '--sysfs', self.root,
                '--testpmd', self.testpmd, '--cpus', '0-1', '--dry-run']
        for name in ('left', 'right'):
            argv += ['--virtio-user', '%s=%s' % (self.macs[name],
                                                 self.paths[name])]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(
                io.StringIO()):
            code = cli.main(argv)
        out = out.getvalue()
        self.assertEqual(0, code, out)
        self.assertIn('# port left: MAC %s, virtio-user %s, DPDK port 0, '
                      'net-phys1-1001 VLAN 1001\n' % (
                          self.macs['left'], self.paths['left']), out)
        self.assertIn('# port right: MAC %s, virtio-user %s (a stale socket '
                      'file: removed at start), DPDK port 1, ' % (
                          self.macs['right'], self.paths['right']), out)
        self.assertIn('# cores: master 0, workers 1 from --cpus 0-1\n', out)
        self.assertIn('# DPDK driver: none (virtio-user ports: nothing to '
                      'bind, no PCI scan)\n', out)
        self.assertIn('# EAL: --no-pci --in-memory --single-file-segments '
                      '--vdev=net_virtio_user0,path=%s,server=1,mac=%s '
                      '--vdev=net_virtio_user1,path=%s,server=1,mac=%s\n' % (
                          self.paths['left'], self.macs['left'],
                          self.paths['right'], self.macs['right']), out)
        self.assertIn('--vdev=net_virtio_user1', out.split('# command: ')[1])
        self.assertEqual(before, sorted(os.walk(self.tmp)))
