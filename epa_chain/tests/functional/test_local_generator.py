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

"""The AF_PACKET generator on a real veth pair (opt-in: root, ip netns).

A namespace `afp-test-<pid>` holds a veth pair whose ends are the
generator's two ports: forward goes left -> right, reverse right -> left,
no switch in between. A 5 kpps bidirectional trial must deliver every
frame with a kernel-timestamped delay per frame; an impossible rate must
be refused as a rate shortfall; calibrate() must measure more than the
trial needed; learning frames must leave the ports.

``EPA_CHAIN_FUNCTIONAL=1`` (tox -e functional) as root runs it, some
10 s. The namespace is deleted afterwards, which removes the veths.
"""

import os
import shutil
import socket
import subprocess
import time

import testtools

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import learning_frame
from epa_chain import generators
from epa_chain.local import afpacket
from epa_chain.local.traffic import netns
from epa_chain.measurement import guards
from epa_chain.measurement import trial

LEFT_MAC = '02:af:00:00:00:01'
RIGHT_MAC = '02:af:00:00:00:02'


def _skip_reason():
    if os.environ.get('EPA_CHAIN_FUNCTIONAL') != '1':
        return ('real AF_PACKET traffic in a network namespace: run it '
                'with tox -e functional or EPA_CHAIN_FUNCTIONAL=1 (needs '
                'root and iproute2)')
    if os.geteuid() != 0:
        return 'needs root to create network namespaces and veths'
    if not shutil.which('ip'):
        return 'ip (iproute2) is not installed'
    return None


def spec(load, duration, directions=chain_directions.DIRECTIONS, size='64',
         flows=1, latency=True):
    profile = trial.TrafficProfile(
        frame_size=trial.FrameSize.parse(size), flows=flows,
        directions=directions)
    return trial.TrialSpec(profile=profile, load_fps=load,
                           duration_s=duration, measure_latency=latency)


class TestLocalGeneratorOnVeth(testtools.TestCase):

    def setUp(self):
        super().setUp()
        reason = _skip_reason()
        if reason:
            self.skipTest(reason)
        self.ns = 'afp-test-%d' % os.getpid()
        subprocess.run(['ip', 'netns', 'del', self.ns],
                       stderr=subprocess.DEVNULL)
        self._run('ip', 'netns', 'add', self.ns)
        self.addCleanup(subprocess.run, ['ip', 'netns', 'del', self.ns])
        # IPv6 off before the links go up: no router solicitations.
        self._run('ip', 'netns', 'exec', self.ns, 'sysctl', '-qw',
                  'net.ipv6.conf.all.disable_ipv6=1',
                  'net.ipv6.conf.default.disable_ipv6=1')
        self._run('ip', '-n', self.ns, 'link', 'add', 'left', 'address',
                  LEFT_MAC, 'type', 'veth', 'peer', 'name', 'right',
                  'address', RIGHT_MAC)
        for name in ('left', 'right'):
            self._run('ip', '-n', self.ns, 'link', 'set', name, 'up')
        self.generator = generators.create(
            'afpacket', netns=self.ns,
            endpoints=[afpacket.Endpoint('left', 'left', LEFT_MAC),
                       afpacket.Endpoint('right', 'right', RIGHT_MAC)],
            streams=[afpacket.Stream('forward', 'left', 'right', RIGHT_MAC),
                     afpacket.Stream('reverse', 'right', 'left', LEFT_MAC)])
        self.addCleanup(self.generator.close)

    def _run(self, *command):
        subprocess.run(command, check=True, capture_output=True)

    def test_bidirectional_5kpps_delivers_every_frame(self):
        started = time.time()
        result = self.generator.run_trial(spec(5000.0, 1.0))
        self.assertLess(time.time() - started, 5.0)
        self.assertEqual(['forward', 'reverse'],
                         [d.direction for d in result.directions])
        for direction in result.directions:
            self.assertEqual(5000, direction.tx_frames)
            self.assertEqual(5000, direction.rx_frames, result.notes)
            self.assertAlmostEqual(5000.0, direction.offered_fps,
                                   delta=5000.0 * 0.02)
            record = direction.latency
            self.assertEqual(5000, len(record.samples))
            self.assertEqual(list(range(5000)),
                             sorted(seq for seq, _d in record.samples))
            # Same host, same clock: positive and well under a second.
            self.assertGreater(record.min_ns, 0)
            self.assertLess(record.max_ns, 1e9)
            self.assertLessEqual(record.min_ns, record.avg_ns)
            self.assertEqual(0, record.duplicates)
        self.assertGreaterEqual(result.started_at, started)
        guards.check_trial(result, self.generator.rate_tolerance)

    def test_impossible_rate_is_a_rate_shortfall(self):
        started = time.time()
        error = self.assertRaises(trial.GeneratorError,
                                  self.generator.run_trial,
                                  spec(5e6, 0.5, latency=False))
        self.assertEqual(guards.RATE_SHORTFALL, error.cause)
        self.assertIn('intended 5000000 fps', error.detail)
        # Cut off near the trial's length, not after sending 2.5 M frames.
        self.assertLess(time.time() - started, 5.0)

    def test_imix_with_flows_forward_only(self):
        result = self.generator.run_trial(spec(
            2000.0, 0.5, directions=('forward',), size='imix', flows=100,
            latency=False))
        (forward,) = result.directions
        self.assertEqual((1000, 1000), (forward.tx_frames,
                                        forward.rx_frames))
        self.assertIsNone(forward.latency.samples)

    def test_frames_above_the_mtu_are_refused(self):
        error = self.assertRaises(trial.GeneratorError,
                                  self.generator.run_trial,
                                  spec(1000.0, 0.1, size='9018'))
        self.assertEqual(afpacket.UNSUPPORTED_TRIAL, error.cause)
        self.assertIn('MTU', error.detail)

    def test_calibrate_exceeds_the_trial_rate(self):
        fps = self.generator.calibrate(64, seconds=0.3)
        self.assertGreater(fps, 5000.0)
        calibration = self.generator.last_calibration
        self.assertEqual(['forward', 'reverse'], calibration['directions'])
        self.assertEqual(0, calibration['receiver_kernel_dropped'])

    def test_learning_frames_leave_every_port(self):
        def capture(interface):
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                 socket.htons(learning_frame.ETHERTYPE))
            sock.bind((interface, learning_frame.ETHERTYPE))
            sock.settimeout(2.0)
            return sock

        at_right = netns.run_in(self.ns, capture, 'right')
        self.addCleanup(at_right.close)
        at_left = netns.run_in(self.ns, capture, 'left')
        self.addCleanup(at_left.close)
        self.generator.learn()
        # Each end of the pair receives the other end's learning frame.
        self.assertEqual(learning_frame.frame(LEFT_MAC, 'left'),
                         at_right.recv(2048))
        self.assertEqual(learning_frame.frame(RIGHT_MAC, 'right'),
                         at_left.recv(2048))
