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

"""The private OVS-DPDK switch: parsers on captured outputs, command lines
built with a fake `run`, and stop_in refusing pids that are not ours."""

import itertools
import json
import os
import signal
import subprocess
from unittest import mock

import fixtures
import testtools

from epa_chain.local import host
from epa_chain.local import switch

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'fixtures', 'local')
MAC_A, MAC_B, MAC_V, MAC_UNKNOWN = ('fa:16:3e:00:00:0a', 'fa:16:3e:00:00:0b',
                                    'fa:16:3e:00:00:0c', 'fa:16:3e:00:00:99')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as stream:
        return stream.read()


class TestParsers(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.names = switch.parse_ofctl_show(fixture('ofctl_show.txt'))

    def test_ofctl_show_names_numbered_ports_and_local(self):
        self.assertEqual({'1': 'swp-a', '2': 'swp-b', 'LOCAL': 'br-probe'},
                         self.names)

    def test_fdb_entries_carry_port_names(self):
        entries = switch.parse_fdb(fixture('fdb_show.txt'), self.names)
        self.assertEqual(
            {(MAC_A, 'swp-a', 100), (MAC_B, 'swp-b', 100)},
            {(entry.mac, entry.port, entry.vlan) for entry in entries})
        self.assertTrue(all(entry.age_s >= 0 for entry in entries))

    def test_fdb_unknown_port_number_is_kept(self):
        entries = switch.parse_fdb(fixture('fdb_show_vhost.txt'), self.names)
        by_mac = {entry.mac: entry for entry in entries}
        # Port 3 (vhu1) was added after ofctl_show.txt was captured.
        self.assertEqual('3', by_mac[MAC_V].port)
        self.assertEqual(15, by_mac[MAC_A].age_s)

    def test_fdb_header_only_is_empty(self):
        self.assertEqual([], switch.parse_fdb(
            ' port  VLAN  MAC                Age\n', {}))

    def test_dump_ports_rx_tx_drops(self):
        counters = switch.parse_dump_ports(fixture('dump_ports.txt'),
                                           self.names)
        self.assertEqual({'swp-a', 'swp-b', 'br-probe'}, set(counters))
        local = counters['br-probe']
        self.assertEqual((0, 0, 0, 8), (local.rx_packets, local.tx_packets,
                                        local.rx_dropped, local.tx_dropped))
        self.assertEqual(8, counters['swp-a'].rx_packets)
        self.assertEqual(3, counters['swp-a'].tx_packets)

    def test_dump_ports_without_names_and_unknown_counters(self):
        counters = switch.parse_dump_ports(fixture('dump_ports_vhost.txt'))
        self.assertEqual({'LOCAL', '1', '2', '3'}, set(counters))
        # vhost-user ports print '?' for counters they do not keep.
        self.assertEqual(switch.PortCounters(39, 7, 0, 0), counters['3'])

    def test_dump_ports_with_quoted_names(self):
        text = ('  port  "swp-a": rx pkts=8, bytes=480, drop=1, errs=0\n'
                '           tx pkts=3, bytes=180, drop=2, errs=0, coll=0\n')
        self.assertEqual({'swp-a': switch.PortCounters(8, 3, 1, 2)},
                         switch.parse_dump_ports(text))

    def test_dpctl_flows_of_pmd_and_main_thread(self):
        flows = switch.parse_dpctl_flows(fixture('dpctl_flows_pmd.txt'))
        self.assertEqual(3, len(flows))
        self.assertEqual(['swp-b', 'vhu1', 'vhu1'],
                         [flow.in_port for flow in flows])
        self.assertEqual({('swp-a',), ('vhu1',)},
                         {flow.outputs for flow in flows})
        self.assertEqual([6, 6, 31], [flow.packets for flow in flows])
        self.assertTrue(all(flow.raw.startswith('recirc_id(0)')
                            for flow in flows))

    def test_dpctl_flood_flow_outputs_exclude_vlan_actions(self):
        flows = switch.parse_dpctl_flows(fixture('dpctl_flows_veth.txt'))
        flood = [flow for flow in flows if flow.eth_dst == MAC_UNKNOWN]
        self.assertEqual(1, len(flood))
        self.assertEqual(('br-probe', 'swp-b'), flood[0].outputs)
        self.assertEqual(('swp-a', MAC_A), (flood[0].in_port,
                                            flood[0].eth_src))

    def test_dpctl_numbers_and_drop(self):
        text = ('recirc_id(0),in_port(2),eth(src=AA:00:00:00:00:01,'
                'dst=aa:00:00:00:00:02),eth_type(0x0800), packets:0, '
                'bytes:0, used:never, actions:drop\n'
                'recirc_id(0),in_port(3),eth(src=aa:00:00:00:00:02,'
                'dst=ff:ff:ff:ff:ff:ff), packets:5, bytes:300, '
                'used:0.1s, actions:pop_vlan,2,1,set(eth(dst=aa:00:00:00:00:'
                '03)),4\n')
        drop, spread = switch.parse_dpctl_flows(text)
        self.assertEqual((), drop.outputs)
        self.assertEqual('aa:00:00:00:00:01', drop.eth_src)
        self.assertEqual(('2', '1', '4'), spread.outputs)
        self.assertEqual(5, spread.packets)


class FakeRun(object):
    """Records argv; answers by the first matching substring of argv."""

    def __init__(self, answers=None, fail=None):
        self.calls = []
        self.answers = answers or {}
        self.fail = fail or {}

    def __call__(self, argv, **kwargs):
        self.calls.append(list(argv))
        line = ' '.join(argv)
        for needle, (code, err) in self.fail.items():
            if needle in line:
                return subprocess.CompletedProcess(argv, code, '', err)
        for needle, out in self.answers.items():
            if needle in line:
                return subprocess.CompletedProcess(argv, 0, out, '')
        return subprocess.CompletedProcess(argv, 0, '', '')

    def find(self, needle):
        return [argv for argv in self.calls if needle in ' '.join(argv)]


class SwitchCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.directory = os.path.join(self.tmp, 'ovs')
        self.huge = os.path.join(self.tmp, 'huge')
        os.makedirs(self.huge)
        self.vswitchd = os.path.join(self.tmp, 'ovs-vswitchd-dpdk')
        with open(self.vswitchd, 'w') as stream:
            stream.write('#!/bin/sh\n')
        os.chmod(self.vswitchd, 0o755)
        self.run = FakeRun({
            '--version': 'ovs-vswitchd-dpdk (Open vSwitch) 3.1.0\n'
                         'DPDK 22.11.11\n',
            'dpdk_initialized': 'true\n',
            'ofport error': '3\n[]\n'})

    def make(self, **kwargs):
        kwargs.setdefault('run', self.run)
        return switch.PrivateSwitch(
            self.directory, 'sw-ovs', prefix='sw', huge_dir=self.huge,
            vswitchd=self.vswitchd, sleep=lambda _: None, **kwargs)


class TestStart(SwitchCase):

    def test_vswitchd_runs_in_netns_with_own_unixctl(self):
        self.make().start()
        [argv] = self.run.find(self.vswitchd + ' unix:')
        self.assertEqual(['ip', 'netns', 'exec', 'sw-ovs', self.vswitchd,
                          'unix:%s/db.sock' % self.directory], argv[:6])
        self.assertIn('--unixctl=%s/ovs-vswitchd.ctl' % self.directory, argv)
        self.assertIn('--pidfile=%s/ovs-vswitchd.pid' % self.directory, argv)
        self.assertIn('--detach', argv)
        self.assertEqual([['ip', 'netns', 'add', 'sw-ovs']],
                         self.run.find('netns add'))

    def test_other_config_and_order(self):
        self.make(pmd_cpus=(2, 3), socket_mem_mb=2048).start()
        [settings] = self.run.find('other_config:dpdk-init')
        self.assertIn('--no-wait', settings)
        self.assertIn('other_config:pmd-cpu-mask="0xc"', settings)
        self.assertIn('other_config:dpdk-socket-mem="2048"', settings)
        self.assertIn('other_config:pmd-maxsleep="500"', settings)
        self.assertIn('ovs_version="3.1.0"', settings)
        self.assertIn('other_config:dpdk-extra="--no-pci --file-prefix=sw '
                      '--huge-dir=%s"' % self.huge, settings)
        self.assertFalse([arg for arg in settings if 'lcore' in arg])
        order = [i for i, argv in enumerate(self.run.calls)
                 if argv[0] in ('ovsdb-tool', 'ovsdb-server') or
                 'other_config:dpdk-init' in ' '.join(argv) or
                 (self.vswitchd in argv and '--detach' in argv)]
        self.assertEqual(4, len(order))
        self.assertEqual(order, sorted(order))
        ipv6 = self.run.find('disable_ipv6')[0]
        self.assertIn('net.ipv6.conf.default.disable_ipv6=1', ipv6)

    def test_existing_netns_is_reused_and_kept(self):
        self.run.answers['netns list'] = 'other\nsw-ovs (id: 3)\n'
        self.make().start()
        self.assertEqual([], self.run.find('netns add'))
        with open(os.path.join(self.directory, switch.STATE_FILE)) as f:
            self.assertFalse(json.load(f)['created_netns'])

    def test_netns_left_by_an_earlier_start_stays_ours(self):
        os.makedirs(self.directory)
        with open(os.path.join(self.directory, switch.STATE_FILE), 'w') as f:
            json.dump({'netns': 'sw-ovs', 'created_netns': True}, f)
        self.run.answers['netns list'] = 'sw-ovs\n'
        self.make().start()
        with open(os.path.join(self.directory, switch.STATE_FILE)) as f:
            self.assertTrue(json.load(f)['created_netns'])

    def test_vswitchd_dying_reports_log_tail(self):
        self.run.answers['dpdk_initialized'] = 'false\n'
        sw = self.make()
        os.makedirs(self.directory)
        with open(sw.log_path, 'w') as stream:
            stream.write('ok\nEAL: Cannot get hugepage information.\n')
        error = self.assertRaises(switch.SwitchError, sw.start)
        self.assertIn('exited before DPDK was initialised', str(error))
        self.assertIn('Cannot get hugepage information', str(error))
        # Nothing is left behind: the namespace start created is gone.
        self.assertEqual([['ip', 'netns', 'delete', 'sw-ovs']],
                         self.run.find('netns delete'))
        self.assertTrue(os.path.exists(sw.log_path))

    def test_timeout_reports_state(self):
        self.run.answers['dpdk_initialized'] = 'false\n'
        sw = self.make(proc_root='/proc')
        os.makedirs(self.directory)
        with open(os.path.join(self.directory, 'ovs-vswitchd.pid'), 'w') as f:
            f.write('%d\n' % os.getpid())  # alive, never initialises
        error = self.assertRaises(switch.SwitchError, sw.start,
                                  timeout_s=0)
        self.assertIn('not initialised in time', str(error))

    def test_missing_dpdk_binary_names_the_package(self):
        sw = switch.PrivateSwitch(self.directory, 'sw-ovs', prefix='sw',
                                  huge_dir=self.huge, run=self.run,
                                  vswitchd=os.path.join(self.tmp, 'none'))
        error = self.assertRaises(switch.SwitchError, sw.start)
        self.assertIn('apt-get install openvswitch-switch-dpdk', str(error))
        self.assertEqual([], self.run.calls)

    def test_missing_tool_names_the_package(self):
        def run(argv, **_):
            raise FileNotFoundError(argv[0])
        error = self.assertRaises(switch.SwitchError,
                                  self.make(run=run).start)
        self.assertIn('ip is not installed: apt-get install iproute2',
                      str(error))

    def test_failed_command_carries_ovs_words(self):
        self.run.fail['ovsdb-tool'] = (1, 'ovsdb-tool: I/O error: denied')
        error = self.assertRaises(switch.SwitchError, self.make().start)
        self.assertIn('ovsdb-tool create', str(error))
        self.assertIn('I/O error: denied', str(error))


class TestPorts(SwitchCase):

    def test_bridge_is_netdev_standalone_with_aging(self):
        sw = self.make()
        os.makedirs(self.directory)
        sw.add_bridge('br-a', mac_aging_s=30)
        [argv] = self.run.find('add-br')
        self.assertNotIn('--no-wait', argv)
        self.assertEqual(['add-br', 'br-a', '--', 'set', 'Bridge', 'br-a',
                          'datapath_type=netdev', 'fail_mode=standalone',
                          'other_config:mac-aging-time=30'],
                         argv[argv.index('add-br'):])

    def test_vhost_client_port(self):
        sock = os.path.join(self.tmp, 'vhu.sock')
        self.make().add_vhost_client_port('br-a', 'vhu1', 101, sock)
        [argv] = self.run.find('add-port')
        self.assertEqual(['add-port', 'br-a', 'vhu1', 'tag=101', '--',
                          'set', 'Interface', 'vhu1',
                          'type=dpdkvhostuserclient',
                          'options:vhost-server-path="%s"' % sock],
                         argv[argv.index('add-port'):])

    def test_port_refused_by_ovs(self):
        self.run.answers['ofport error'] = (
            '-1\n"could not open network device vhu1 (No such device)"\n')
        error = self.assertRaises(
            switch.SwitchError, self.make().add_vhost_client_port, 'br-a',
            'vhu1', 101, '/x.sock')
        self.assertIn('No such device', str(error))

    def test_system_port_must_be_in_netns(self):
        self.run.fail['link set'] = (1, 'Cannot find device "veth9"')
        error = self.assertRaises(switch.SwitchError,
                                  self.make().add_system_port, 'br-a',
                                  'veth9', 5)
        self.assertIn('ip link set veth9 netns sw-ovs', str(error))
        self.assertEqual([], self.run.find('add-port'))

    def test_vlan_range(self):
        for vlan in (0, 4095, '7'):
            self.assertRaises(switch.SwitchError,
                              self.make().add_system_port, 'br-a', 'v', vlan)
        self.make().add_system_port('br-a', 'v', None)
        [argv] = self.run.find('add-port')
        self.assertEqual(['add-port', 'br-a', 'v'],
                         argv[argv.index('add-port'):])

    def test_fdb_and_flooded_frames_read_live_sources(self):
        self.run.answers.update({
            ' show ': fixture('ofctl_show.txt'),
            'fdb/show': fixture('fdb_show.txt'),
            'dump-ports': fixture('dump_ports.txt')})
        sw = self.make()
        self.assertEqual({'swp-a', 'swp-b'},
                         {entry.port for entry in sw.fdb('br-probe')})
        self.assertEqual(8, sw.flooded_frames('br-probe'))
        [dump] = self.run.find('dump-ports')
        self.assertEqual(['ovs-ofctl', 'dump-ports',
                          'unix:%s/br-probe.mgmt' % self.directory, 'LOCAL'],
                         dump)
        [fdb] = self.run.find('fdb/show')
        self.assertEqual(['-t', '%s/ovs-vswitchd.ctl' % self.directory],
                         fdb[1:3])

    def test_versions(self):
        self.run.answers['ovs_version'] = '"3.1.0"\n"DPDK 22.11.11"\n'
        self.assertEqual({'ovs_version': '3.1.0',
                          'dpdk_version': 'DPDK 22.11.11'},
                         self.make().versions())


class TestStopIn(testtools.TestCase):
    """A fake /proc: cmdline decides whether a pid may be signalled."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.proc = os.path.join(self.tmp, 'proc')
        self.directory = os.path.join(self.tmp, 'ovs')
        self.dpdk_run = os.path.join(self.tmp, 'dpdk')
        self.huge = os.path.join(self.tmp, 'huge')
        for path in (self.directory, self.huge,
                     os.path.join(self.dpdk_run, 'sw')):
            os.makedirs(path)
        self.killed = []
        self.run = FakeRun()

    def process(self, pid, argv, state='S'):
        path = os.path.join(self.proc, str(pid))
        os.makedirs(path)
        with open(os.path.join(path, 'cmdline'), 'wb') as stream:
            stream.write(b'\0'.join(arg.encode() for arg in argv) + b'\0')
        with open(os.path.join(path, 'stat'), 'w') as stream:
            stream.write('%d (%s) %s 1 2 3\n' % (pid, argv[0][:15], state))

    def pidfile(self, daemon, pid):
        with open(os.path.join(self.directory, daemon + '.pid'), 'w') as f:
            f.write('%d\n' % pid)

    def kill(self, pid, sig):
        self.killed.append((pid, sig))
        os.unlink(os.path.join(self.proc, str(pid), 'stat'))

    def stop(self):
        return switch.PrivateSwitch.stop_in(
            self.directory, proc_root=self.proc, kill=self.kill,
            run=self.run, sleep=lambda _: None, dpdk_run_dir=self.dpdk_run)

    def daemon_argv(self, binary, daemon, directory=None):
        return [binary, 'unix:db.sock', '--pidfile=%s/%s.pid' % (
            directory or self.directory, daemon), '--detach']

    def test_ours_are_terminated(self):
        self.process(101, self.daemon_argv(
            '/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk',
            'ovs-vswitchd'))
        self.process(102, self.daemon_argv('ovsdb-server', 'ovsdb-server'))
        self.pidfile('ovs-vswitchd', 101)
        self.pidfile('ovsdb-server', 102)
        report = self.stop()
        self.assertEqual([(101, signal.SIGTERM), (102, signal.SIGTERM)],
                         self.killed)
        self.assertEqual('stopped pid 101', report['ovs-vswitchd'])
        self.assertFalse(os.path.exists(
            os.path.join(self.directory, 'ovs-vswitchd.pid')))

    def test_reused_pid_is_left_alone(self):
        self.process(101, ['/usr/bin/sleep', '100'])
        self.process(102, self.daemon_argv('ovsdb-server', 'ovsdb-server',
                                           directory='/elsewhere'))
        self.pidfile('ovs-vswitchd', 101)
        self.pidfile('ovsdb-server', 102)
        report = self.stop()
        self.assertEqual([], self.killed)
        self.assertIn('left alone', report['ovs-vswitchd'])
        self.assertIn('left alone', report['ovsdb-server'])

    def test_zombie_counts_as_gone(self):
        self.process(101, self.daemon_argv('ovs-vswitchd', 'ovs-vswitchd'),
                     state='Z')
        self.pidfile('ovs-vswitchd', 101)
        self.assertEqual('pid 101 not running', self.stop()['ovs-vswitchd'])
        self.assertEqual([], self.killed)

    def test_cleanup_from_state_file_and_idempotence(self):
        with open(os.path.join(self.directory, switch.STATE_FILE), 'w') as f:
            json.dump({'netns': 'sw-ovs', 'created_netns': True,
                       'prefix': 'sw', 'huge_dir': self.huge,
                       'bridges': ['br-a']}, f)
        for name in ('swmap_0', 'swmap_1', 'othermap_0'):
            open(os.path.join(self.huge, name), 'w').close()
        open(os.path.join(self.directory, 'br-a.mgmt'), 'w').close()
        report = self.stop()
        self.assertEqual([['ip', 'netns', 'delete', 'sw-ovs']],
                         self.run.calls)
        self.assertEqual('deleted sw-ovs', report['netns'])
        self.assertEqual(['othermap_0'], os.listdir(self.huge))
        self.assertEqual([], os.listdir(self.dpdk_run))
        self.assertEqual([], os.listdir(self.directory))
        again = self.stop()
        self.assertEqual('no pidfile', again['ovs-vswitchd'])
        self.assertEqual(1, len(self.run.calls))

    def test_foreign_netns_kept_taps_removed(self):
        with open(os.path.join(self.directory, switch.STATE_FILE), 'w') as f:
            json.dump({'netns': 'theirs', 'created_netns': False,
                       'bridges': ['br-a']}, f)
        self.stop()
        self.assertEqual([['ip', '-n', 'theirs', 'link', 'delete', dev]
                          for dev in ('ovs-netdev', 'br-a')], self.run.calls)

    def test_a_record_naming_paths_outside_is_not_followed(self):
        # switch.json is the bed's, but down acts inside the bed only.
        outside = os.path.join(self.tmp, 'a', 'elsewhere')
        os.makedirs(outside)
        open(os.path.join(outside, 'xmap_0'), 'w').close()
        os.makedirs(os.path.join(self.dpdk_run, 'keep'))
        for state in ({'netns': '-all', 'created_netns': True,
                       'prefix': '..', 'huge_dir': self.huge},
                      {'prefix': 'x', 'huge_dir': outside,
                       'netns': 'sw-ovs', 'bridges': ['-x', 'br-a']},
                      ['not', 'a', 'record']):
            with open(os.path.join(self.directory, switch.STATE_FILE),
                      'w') as f:
                json.dump(state, f)
            self.stop()
        self.assertEqual(['xmap_0'], os.listdir(outside))
        self.assertEqual(['keep', 'sw'], sorted(os.listdir(self.dpdk_run)))
        self.assertEqual([['ip', '-n', 'sw-ovs', 'link', 'delete', dev]
                          for dev in ('ovs-netdev', 'br-a')], self.run.calls)

    def test_a_survivor_is_named_after_everything_else_is_cleaned(self):
        self.process(101, self.daemon_argv('ovs-vswitchd', 'ovs-vswitchd'))
        self.pidfile('ovs-vswitchd', 101)
        with open(os.path.join(self.directory, switch.STATE_FILE), 'w') as f:
            json.dump({'netns': 'sw-ovs', 'created_netns': True}, f)
        open(os.path.join(self.directory, 'db.sock'), 'w').close()
        # Each look at the clock is 10 s later: the waits end at once.
        with mock.patch.object(host.time, 'monotonic',
                               side_effect=itertools.count(0, 10)):
            error = self.assertRaises(
                switch.SwitchError, switch.PrivateSwitch.stop_in,
                self.directory, proc_root=self.proc,
                kill=lambda pid, sig: self.killed.append((pid, sig)),
                run=self.run, sleep=lambda _: None,
                dpdk_run_dir=self.dpdk_run)
        self.assertIn('ovs-vswitchd pid 101 survived SIGKILL', str(error))
        self.assertEqual([['ip', 'netns', 'delete', 'sw-ovs']],
                         self.run.calls)
        # the pidfile stays for the next attempt; the sockets are gone
        self.assertEqual(['ovs-vswitchd.pid'],
                         os.listdir(self.directory))

    def test_quiet_commands_are_bounded(self):
        def hang(argv, **kwargs):
            self.assertEqual(switch.QUIET_TIMEOUT_S, kwargs['timeout'])
            raise subprocess.TimeoutExpired(argv, kwargs['timeout'])
        with open(os.path.join(self.directory, switch.STATE_FILE), 'w') as f:
            json.dump({'netns': 'sw-ovs', 'created_netns': True}, f)
        report = switch.PrivateSwitch.stop_in(
            self.directory, proc_root=self.proc, run=hang,
            sleep=lambda _: None, dpdk_run_dir=self.dpdk_run)
        self.assertIn('not deleted sw-ovs: no answer after', report['netns'])
