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


"""Switch learning: the frame, the schedule, and a real AF_PACKET send."""

import os
import shutil
import subprocess
import sys
import textwrap

import testtools

from epa_chain.chain import learning_frame
from epa_chain.tests.unit import vnf_runtime_fixtures as fixtures
from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import switch_learning

MAC = 'fa:16:3e:12:34:56'


def node(preset, name):
    drive = fixtures.drive_dir(fixtures.node_dirs(preset)[name])
    return config_drive.read(drive).node_config()


class TestFrame(testtools.TestCase):

    def test_source_and_destination_are_the_port(self):
        frame = learning_frame.frame(MAC, 'left')
        self.assertEqual(60, len(frame))
        mac = bytes.fromhex(MAC.replace(':', ''))
        self.assertEqual(mac, frame[0:6])
        self.assertEqual(mac, frame[6:12])
        self.assertEqual(b'\x88\xb5', frame[12:14])
        self.assertIn(b'epa-chain switch learning: left', frame)

    def test_parse_reads_back_only_learning_frames(self):
        frame = learning_frame.frame(MAC, 'left')
        self.assertEqual((MAC, 'left'), learning_frame.parse(frame))
        other = bytes.fromhex('fa163e000001') + frame[6:]
        self.assertIsNone(learning_frame.parse(other))
        self.assertIsNone(learning_frame.parse(frame[:12] + b'\x08\x00' +
                                               frame[14:]))
        self.assertIsNone(learning_frame.parse(frame[:40]))

    def test_prox_rate_is_one_frame_per_interval(self):
        # 60 bytes + FCS + preamble, delimiter and gap = 84 on the wire.
        self.assertEqual(84, switch_learning.prox_bps(1.0))
        self.assertEqual(9, switch_learning.prox_bps(10.0))
        refreshes = switch_learning.MAC_AGING_S / switch_learning.INTERVAL_S
        self.assertGreaterEqual(refreshes, 10)

    def test_prox_inline_reads_back(self):
        frame = learning_frame.frame(MAC, 'right')
        self.assertEqual(frame, bytes.fromhex(
            switch_learning.prox_inline(frame).replace(' ', '')))


class TestPlan(testtools.TestCase):

    def test_unidirectional_vnf_learns_its_receiving_port(self):
        vnf = node('pvvp-unidir', 'vnf2')
        self.assertEqual(['left'], switch_learning.prox_gen_ports(vnf))
        plan = switch_learning.plan(vnf, 'testpmd')
        self.assertEqual((True, False), (plan['left'].receives,
                                         plan['left'].transmits))
        self.assertIn('not refreshed while testpmd forwards',
                      plan['left'].method)

    def test_bidirectional_ports_learn_from_forwarded_frames(self):
        vnf = node('pvvp-bidir', 'vnf1')
        self.assertEqual([], switch_learning.prox_gen_ports(vnf))
        for item in switch_learning.plan(vnf, 'prox').values():
            self.assertIn('the frames it forwards', item.method)

    def test_unidirectional_generator_receives_on_the_right(self):
        generator = node('pvp-unidir', 'generator')
        self.assertEqual(['right'],
                         switch_learning.prox_gen_ports(generator))


class FakeSocket:

    sent = []

    def __init__(self, family, kind):
        self.family, self.kind = family, kind

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False

    def bind(self, address):
        if address[0] == 'missing0':
            raise OSError(19, 'No such device')
        self.address = address

    def send(self, data):
        FakeSocket.sent.append((self.address[0], data))


class TestBootFrames(testtools.TestCase):

    def test_every_port_gets_its_frames_problems_are_reported(self):
        FakeSocket.sent = []
        raised = []
        problems = switch_learning.send_boot_frames(
            [('eth1', MAC, 'left'), ('missing0', MAC, 'right')], count=3,
            socket_factory=FakeSocket, sleep=lambda s: None,
            link_up=raised.append)
        self.assertEqual(['eth1', 'missing0'], raised)
        self.assertEqual([('eth1', learning_frame.frame(MAC, 'left'))] * 3,
                         FakeSocket.sent)
        self.assertEqual(['missing0 (right): [Errno 19] No such device'],
                         problems)


class TestOnARealLink(testtools.TestCase):
    """The frame leaves a down veth (brought up) and arrives intact."""

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0 or not shutil.which('ip'):
            self.skipTest('needs root and iproute2 to make a network '
                          'namespace')
        self.ns = 'epa-learn-%d' % os.getpid()
        if subprocess.run(['ip', 'netns', 'add', self.ns],
                          capture_output=True).returncode:
            self.skipTest('cannot create a network namespace here')
        self.addCleanup(subprocess.run, ['ip', 'netns', 'delete', self.ns],
                        capture_output=True)
        subprocess.run(['ip', '-n', self.ns, 'link', 'add', 'tx0', 'address',
                        MAC, 'type', 'veth', 'peer', 'name', 'rx0'],
                       check=True)
        subprocess.run(['ip', '-n', self.ns, 'link', 'set', 'rx0', 'up'],
                       check=True)

    def test_sent_and_received(self):
        script = textwrap.dedent('''
            import socket, sys
            from epa_chain.chain import learning_frame
            from epa_chain.vnf_runtime import switch_learning as sl
            rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                               socket.htons(learning_frame.ETHERTYPE))
            rx.bind(('rx0', 0))
            rx.settimeout(5)
            problems = sl.send_boot_frames([('tx0', sys.argv[1], 'left')],
                                           count=2, gap_s=0.01)
            print(problems)
            print(rx.recv(2048).hex())
            print(open('/sys/class/net/tx0/operstate').read().strip())
        ''')
        env = dict(os.environ, PYTHONPATH=fixtures.TOP)
        result = subprocess.run(
            ['ip', 'netns', 'exec', self.ns, sys.executable, '-c', script,
             MAC], capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(0, result.returncode, result.stderr)
        problems, received, state = result.stdout.split('\n')[:3]
        self.assertEqual('[]', problems)
        self.assertEqual(learning_frame.frame(MAC, 'left').hex(), received)
        self.assertEqual('up', state)
