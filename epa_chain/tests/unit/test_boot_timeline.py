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


"""A guest's boot timeline: read in the guest, printed, read on the host."""

import datetime
import os

import testtools

from epa_chain.chain import readiness
from epa_chain.tests.unit import vnf_runtime_fakes as fakes
from epa_chain.vnf_runtime import boot_timeline

# What the kernel's log of a booting guest holds (seconds, text).
RECORDS = [(0.0, 'Linux version 6.1.0-56-amd64'),
           (5.11, 'Run /init as init process'),
           (9.16, 'systemd[1]: Inserted module \'autofs4\''),
           (9.6, 'systemd[1]: systemd 252 running in system mode')]
WALL = datetime.datetime(2026, 11, 28, 16, 0, 30,
                         tzinfo=datetime.timezone.utc).timestamp()


class ReadTest(testtools.TestCase):

    def test_moments_from_the_kernel_log_and_the_process(self):
        timeline = boot_timeline.read(RECORDS, runtime_started=14.6,
                                      now=21.4, wall=WALL)
        self.assertEqual({'initramfs_at': 5.11, 'init_at': 9.16,
                          'runtime_at': 14.6, 'ready_at': 21.4,
                          'kernel_started': '2026-11-28T16:00:08.600+00:00'},
                         timeline)

    def test_a_log_that_lost_its_start_leaves_moments_unknown(self):
        timeline = boot_timeline.read(RECORDS[3:], runtime_started=14.6,
                                      now=21.4, wall=WALL)
        self.assertIsNone(timeline['initramfs_at'])
        self.assertEqual(9.6, timeline['init_at'])

    def test_the_kernel_log_is_read_record_by_record(self):
        tmp = self.useFixture(fakes.TempDir()).path
        path = os.path.join(tmp, 'kmsg')
        # A regular file reads as one record: the first line of each.
        with open(path, 'w') as stream:
            stream.write('6,339,5113329,-;Run /init as init process\n'
                         ' SUBSYSTEM=x\n')
        self.assertEqual([(5.113329, 'Run /init as init process')],
                         boot_timeline.kernel_log(path))
        self.assertEqual([], boot_timeline.kernel_log(
            os.path.join(tmp, 'missing')))


class ConsoleTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.timeline = boot_timeline.read(RECORDS, runtime_started=14.6,
                                           now=21.4, wall=WALL)

    def test_the_line_round_trips(self):
        console = 'noise\n%s\nEPA-CHAIN READY vnf1 prox\n' % (
            readiness.boot_line('vnf1', self.timeline))
        self.assertEqual(self.timeline,
                         readiness.boot_timeline(console, 'vnf1'))
        self.assertIsNone(readiness.boot_timeline(console, 'vnf2'))

    def test_unknown_moments_stay_unknown_and_fold_into_the_next(self):
        self.timeline['initramfs_at'] = None
        line = readiness.boot_line('vnf1', self.timeline)
        self.assertIn('initramfs_at=-', line)
        back = readiness.boot_timeline(line, 'vnf1')
        self.assertIsNone(back['initramfs_at'])
        phases = readiness.boot_phases(back)
        self.assertIsNone(phases['kernel'])
        self.assertEqual(9.16, phases['initramfs'])

    def test_phases_with_the_firmware_the_host_saw(self):
        launched = datetime.datetime(2026, 11, 28, 16, 0, 5,
                                     tzinfo=datetime.timezone.utc)
        self.assertEqual({'firmware': 3.6, 'kernel': 5.11, 'initramfs': 4.05,
                          'init': 5.44, 'runtime': 6.8},
                         readiness.boot_phases(self.timeline, launched))

    def test_a_garbled_line_is_no_timeline(self):
        self.assertIsNone(readiness.boot_timeline(
            'EPA-CHAIN BOOT vnf1 init_at=soon', 'vnf1'))
