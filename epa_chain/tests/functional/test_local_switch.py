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

"""The private OVS-DPDK switch of `epa-chain local` on this host.

Opt-in (EPA_CHAIN_FUNCTIONAL=1, root, openvswitch-switch-dpdk): huge
pages through hugepages.reserve, the switch in namespace swtest-ovs, one
bridge with two access ports in VLAN 100, veth pairs whose other ends are
in namespaces swtest-a and swtest-b. Frames sent with AF_PACKET must teach
the bridge both MACs, a frame to an unknown MAC must be flooded (counted
exactly once by flooded_frames), a learnt one must not; then stop and
release must leave no process, no namespace and no extra page. About 10 s.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import time

import fixtures
import testtools
from testtools import content

from epa_chain.local import hugepages
from epa_chain.local import switch

PREFIX = 'swtest'
NETNS = PREFIX + '-ovs'
BRIDGE = 'br-' + PREFIX
VLAN = 100
PAGES = 512   # dpdk-socket-mem 1024 MB
HOSTS = {'a': 'fa:16:3e:5e:00:0a', 'b': 'fa:16:3e:5e:00:0b'}
UNKNOWN = 'fa:16:3e:5e:00:99'

SEND = textwrap.dedent('''
    import socket, sys
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind(('eth0', 0))
    dst, src, count = sys.argv[1:4]
    frame = (bytes.fromhex(dst.replace(':', '')) +
             bytes.fromhex(src.replace(':', '')) + b'\\x88\\xb5' + bytes(46))
    for _ in range(int(count)):
        sock.send(frame)
''')


def _skip_reason():
    if os.environ.get('EPA_CHAIN_FUNCTIONAL') != '1':
        return ('private OVS-DPDK switch check: run it with tox -e '
                'functional (EPA_CHAIN_FUNCTIONAL=1; root, '
                'openvswitch-switch-dpdk, %d free 2 MB pages)' % PAGES)
    if os.geteuid() != 0:
        return 'needs root for namespaces, huge pages and OVS'
    if not os.access(switch.PrivateSwitch.VSWITCHD_DPDK, os.X_OK):
        return ('%s is missing: apt-get install openvswitch-switch-dpdk' %
                switch.PrivateSwitch.VSWITCHD_DPDK)
    for tool in ('ip', 'ovsdb-tool', 'ovsdb-server', 'ovs-vsctl',
                 'ovs-appctl', 'ovs-ofctl', 'mount'):
        if not shutil.which(tool):
            return '%s is not installed' % tool
    if not os.path.exists(switch.SCHEMA):
        return 'no %s: apt-get install openvswitch-common' % switch.SCHEMA
    listing = subprocess.run(['ip', 'netns', 'list'], capture_output=True,
                             text=True).stdout.split()
    clash = set(listing) & {NETNS, PREFIX + '-a', PREFIX + '-b'}
    if clash:
        return ('namespaces %s exist (another run?): ip netns delete them '
                'first' % ', '.join(sorted(clash)))
    return None


class TestPrivateSwitch(testtools.TestCase):

    def setUp(self):
        super().setUp()
        reason = _skip_reason()
        if reason:
            self.skipTest(reason)
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.pages = hugepages.reserve(PAGES, os.path.join(self.tmp, 'huge'))
        self.addCleanup(hugepages.release, self.pages)
        self.switch = switch.PrivateSwitch(
            os.path.join(self.tmp, 'ovs'), NETNS, prefix=PREFIX,
            huge_dir=self.pages['mount_point'])
        self.addCleanup(self.switch.stop)   # runs before release
        self.timings = {}
        self.addCleanup(lambda: self.addDetail('timings', content.text_content(
            repr(self.timings))))
        self.timings['start_s'] = round(self.switch.start(), 2)
        self.switch.add_bridge(BRIDGE)
        for name, mac in HOSTS.items():
            self._host(name, mac)
            self.switch.add_system_port(BRIDGE, self._port(name), VLAN)

    @staticmethod
    def _port(name):
        return '%s-%s' % (PREFIX, name)

    def _run(self, *argv):
        return subprocess.run(argv, check=True, capture_output=True,
                              text=True).stdout

    def _host(self, name, mac):
        netns = '%s-%s' % (PREFIX, name)
        self._run('ip', 'netns', 'add', netns)
        self.addCleanup(subprocess.run, ['ip', 'netns', 'delete', netns],
                        capture_output=True)
        self._run('ip', 'netns', 'exec', netns, 'sysctl', '-qw',
                  'net.ipv6.conf.all.disable_ipv6=1',
                  'net.ipv6.conf.default.disable_ipv6=1')
        self._run('ip', '-n', netns, 'link', 'add', 'eth0', 'type', 'veth',
                  'peer', 'name', self._port(name), 'netns', NETNS)
        self._run('ip', '-n', netns, 'link', 'set', 'eth0', 'address', mac,
                  'up')

    def _send(self, name, dst, count):
        self._run('ip', 'netns', 'exec', '%s-%s' % (PREFIX, name),
                  sys.executable, '-c', SEND, dst, HOSTS[name], str(count))

    def _wait_for(self, predicate, timeout_s=5):
        deadline = time.monotonic() + timeout_s
        while not predicate() and time.monotonic() < deadline:
            time.sleep(0.05)
        return predicate()

    def _learnt(self):
        return {entry.mac: entry for entry in self.switch.fdb(BRIDGE)}

    def test_learning_flooding_flows_and_clean_stop(self):
        versions = self.switch.versions()
        self.assertTrue(versions['ovs_version'])
        self.assertTrue(versions['dpdk_version'].startswith('DPDK'))

        self._send('a', HOSTS['b'], 1)
        self._send('b', HOSTS['a'], 1)
        self.assertTrue(self._wait_for(
            lambda: set(HOSTS.values()) <= set(self._learnt())),
            self._learnt())
        learnt = self._learnt()
        for name, mac in HOSTS.items():
            self.assertEqual((self._port(name), VLAN),
                             (learnt[mac].port, learnt[mac].vlan))

        flooded = self.switch.flooded_frames(BRIDGE)
        before_b = self.switch.port_counters(BRIDGE)[self._port('b')]
        self._send('a', UNKNOWN, 5)
        self._wait_for(
            lambda: self.switch.flooded_frames(BRIDGE) >= flooded + 5)
        time.sleep(0.3)  # late extra floods would show now
        self.assertEqual(flooded + 5, self.switch.flooded_frames(BRIDGE))
        after_b = self.switch.port_counters(BRIDGE)[self._port('b')]
        self.assertEqual(5, after_b.tx_packets - before_b.tx_packets)

        self._send('a', HOSTS['b'], 3)   # learnt: unicast, no flood
        self._wait_for(lambda: self.switch.port_counters(BRIDGE)[
            self._port('b')].tx_packets >= after_b.tx_packets + 3)
        self.assertEqual(flooded + 5, self.switch.flooded_frames(BRIDGE))

        flows = [flow for flow in self.switch.datapath_flows()
                 if flow.eth_dst == UNKNOWN]
        self.assertEqual(1, len(flows), flows)
        self.assertEqual((self._port('a'), HOSTS['a']),
                         (flows[0].in_port, flows[0].eth_src))
        self.assertIn(self._port('b'), flows[0].outputs)
        self.assertIn(BRIDGE, flows[0].outputs)

        pids = {daemon: int(open(os.path.join(
            self.switch.directory, daemon + '.pid')).read())
            for daemon in switch.DAEMONS}
        report = self.switch.stop()
        self.timings['stop_s'] = round(report['seconds'], 2)
        for daemon, pid in pids.items():
            self.assertFalse(switch.is_daemon_of(
                pid, daemon, self.switch.directory), daemon)
        self.assertNotIn(NETNS, self._run('ip', 'netns', 'list').split())
        added = self.pages['added']
        released = hugepages.release(self.pages)
        self.assertFalse(released['clamped'], released)
        # Exactly what reserve added went back (others may move the count
        # meanwhile, so nr_hugepages itself is not compared).
        self.assertEqual(added, released['removed'])
        self.assertTrue(released['released'])
