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


"""Switch learning against a real Open vSwitch (opt-in: root, OVS, netns).

A private ovsdb-server and ovs-vswitchd (userspace datapath, a bridge
with the NORMAL action as Neutron's br-int uses it) with three ports, veth
pairs into network namespaces: "vnf", "other" and "third". The runtime's
learning frame, sent from "vnf", must teach the bridge the VNF's MAC and
reach neither other port; afterwards a frame for that MAC must reach
"vnf" only, not be flooded to "third".

``tox -e functional`` runs it (EPA_CHAIN_FUNCTIONAL=1; or set
EPA_CHAIN_OVS_TEST=1), a few seconds; it creates and removes
the namespaces, the veths and the datapath's ovs-netdev device, so it is
refused while another ovs-vswitchd runs.
"""

import os
import shutil
import subprocess
import sys
import textwrap
import time

import testtools

from epa_chain.chain import learning_frame
from epa_chain.tests.unit import vnf_runtime_fakes as fakes
from epa_chain.tests.unit import vnf_runtime_fixtures as fixtures

MACS = {'vnf': 'fa:16:3e:00:00:10', 'other': 'fa:16:3e:00:00:20',
        'third': 'fa:16:3e:00:00:30'}
SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema'

CAPTURE = textwrap.dedent('''
    import socket, sys, time
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    sock.bind(('eth0', 0))
    sock.settimeout(0.1)
    print('listening', flush=True)
    end = time.time() + float(sys.argv[1])
    while time.time() < end:
        try:
            frame = sock.recv(2048)
        except socket.timeout:
            continue
        print(frame[0:6].hex(), frame[6:12].hex(), frame[12:14].hex(),
              flush=True)
''')

SEND = textwrap.dedent('''
    import socket, sys
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind(('eth0', 0))
    frame = bytes.fromhex(sys.argv[1]) + bytes(46)
    for _ in range(3):
        sock.send(frame)
''')

LEARN = textwrap.dedent('''
    import sys
    from epa_chain.vnf_runtime import switch_learning
    print(switch_learning.send_boot_frames([('eth0', sys.argv[1], 'left')],
                                           count=3, gap_s=0.05))
''')


def _skip_reason():
    if '1' not in (os.environ.get('EPA_CHAIN_FUNCTIONAL'),
                   os.environ.get('EPA_CHAIN_OVS_TEST')):
        return ('real OVS learning check: run it with tox -e functional '
                'or EPA_CHAIN_OVS_TEST=1 (needs root, ip netns and '
                'openvswitch-switch)')
    if os.geteuid() != 0:
        return 'needs root for namespaces and OVS'
    for tool in ('ip', 'ovsdb-tool', 'ovsdb-server', 'ovs-vswitchd',
                 'ovs-vsctl', 'ovs-appctl'):
        if not shutil.which(tool):
            return '%s is not installed' % tool
    if not os.path.exists(SCHEMA):
        return 'no %s' % SCHEMA
    if subprocess.run(['pgrep', '-x', 'ovs-vswitchd'],
                      capture_output=True).returncode == 0:
        return 'another ovs-vswitchd runs; its ovs-netdev device would clash'
    return None


class TestLearningOnOpenVSwitch(testtools.TestCase):

    def setUp(self):
        super().setUp()
        reason = _skip_reason()
        if reason:
            self.skipTest(reason)
        self.tmp = self.useFixture(fakes.TempDir()).path
        self.tag = 'el%d' % (os.getpid() % 10000)
        self.env = dict(os.environ, OVS_RUNDIR=self.tmp, OVS_LOGDIR=self.tmp,
                        OVS_DBDIR=self.tmp, OVS_SYSCONFDIR=self.tmp,
                        PYTHONPATH=fixtures.TOP)
        self.db = 'unix:%s/db.sock' % self.tmp
        self.addCleanup(self._cleanup)
        conf = os.path.join(self.tmp, 'conf.db')
        self._run('ovsdb-tool', 'create', conf, SCHEMA)
        self._run('ovsdb-server', '--remote=punix:%s/db.sock' % self.tmp,
                  '--pidfile=%s/ovsdb-server.pid' % self.tmp, '--detach',
                  '--log-file=%s/ovsdb.log' % self.tmp, conf)
        self._run('ovs-vsctl', '--db=' + self.db, '--no-wait', 'init')
        self._run('ovs-vswitchd', self.db,
                  '--pidfile=%s/ovs-vswitchd.pid' % self.tmp, '--detach',
                  '--log-file=%s/vswitchd.log' % self.tmp)
        self.bridge = 'br-%s' % self.tag
        self._run('ovs-vsctl', '--db=' + self.db, 'add-br', self.bridge,
                  '--', 'set', 'bridge', self.bridge,
                  'datapath_type=netdev')
        for name, mac in MACS.items():
            ns = self._ns(name)
            self._run('ip', 'netns', 'add', ns)
            self._run('ip', 'netns', 'exec', ns, 'sysctl', '-qw',
                      'net.ipv6.conf.all.disable_ipv6=1',
                      'net.ipv6.conf.default.disable_ipv6=1')
            port = '%s-%s' % (self.tag, name)
            self._run('ip', 'link', 'add', port, 'type', 'veth', 'peer',
                      'name', 'eth0', 'netns', ns)
            self._run('ip', '-n', ns, 'link', 'set', 'eth0', 'address', mac)
            self._run('ip', 'link', 'set', port, 'up')
            self._run('ovs-vsctl', '--db=' + self.db, 'add-port',
                      self.bridge, port)
        # vnf's eth0 stays down: the runtime must bring it up itself.
        for name in ('other', 'third'):
            self._run('ip', '-n', self._ns(name), 'link', 'set', 'eth0',
                      'up')

    def _ns(self, name):
        return '%s-%s' % (self.tag, name)

    def _run(self, *argv):
        return subprocess.run(argv, check=True, capture_output=True,
                              text=True, env=self.env).stdout

    def _cleanup(self):
        for name in MACS:
            subprocess.run(['ip', 'netns', 'delete', self._ns(name)],
                           capture_output=True)
            subprocess.run(['ip', 'link', 'delete', '%s-%s' % (self.tag,
                                                               name)],
                           capture_output=True)
        for daemon in ('ovs-vswitchd', 'ovsdb-server'):
            pidfile = os.path.join(self.tmp, daemon + '.pid')
            if os.path.exists(pidfile):
                with open(pidfile) as stream:
                    pid = int(stream.read().strip())
                subprocess.run(['kill', str(pid)], capture_output=True)
                for _ in range(50):
                    if not os.path.exists('/proc/%d' % pid):
                        break
                    time.sleep(0.05)
        for device in ('ovs-netdev', getattr(self, 'bridge', '')):
            if device:
                subprocess.run(['ip', 'link', 'delete', device],
                               capture_output=True)

    def _fdb(self):
        with open(os.path.join(self.tmp, 'ovs-vswitchd.pid')) as stream:
            pid = stream.read().strip()
        target = os.path.join(self.tmp, 'ovs-vswitchd.%s.ctl' % pid)
        return self._run('ovs-appctl', '-t', target, 'fdb/show', self.bridge)

    def _capture(self, name, seconds):
        process = subprocess.Popen(
            ['ip', 'netns', 'exec', self._ns(name), sys.executable, '-c',
             CAPTURE, str(seconds)], stdout=subprocess.PIPE, text=True,
            env=self.env)
        self.assertEqual('listening', process.stdout.readline().strip())
        return process

    def _frames(self, process):
        out, _ = process.communicate(timeout=30)
        return [line.split() for line in out.splitlines()]

    def test_learning_frame_teaches_the_bridge_and_reaches_nobody(self):
        vnf_mac = MACS['vnf']
        self.assertNotIn(vnf_mac, self._fdb())
        captures = {name: self._capture(name, 1.5)
                    for name in ('other', 'third')}
        result = self._run('ip', 'netns', 'exec', self._ns('vnf'),
                           sys.executable, '-c', LEARN, vnf_mac)
        self.assertEqual('[]', result.strip())
        learning = '%04x' % learning_frame.ETHERTYPE
        for name, process in captures.items():
            frames = self._frames(process)
            self.assertEqual([], [f for f in frames if f[2] == learning],
                             '%s received a learning frame' % name)
        fdb = self._fdb()
        self.assertIn(vnf_mac, fdb)
        # Now unicast to the VNF reaches it and is not flooded to third.
        vnf = self._capture('vnf', 1.0)
        third = self._capture('third', 1.0)
        header = (vnf_mac + MACS['other']).replace(':', '') + '0800'
        self._run('ip', 'netns', 'exec', self._ns('other'), sys.executable,
                  '-c', SEND, header)
        to_vnf = vnf_mac.replace(':', '')
        self.assertEqual(3, len([f for f in self._frames(vnf)
                                 if f[0] == to_vnf]))
        self.assertEqual([], [f for f in self._frames(third)
                              if f[0] == to_vnf])
