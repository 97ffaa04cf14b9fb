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

"""Huge page arithmetic on a fake sysfs whose 'kernel' grants a capped
number of pages and never drops below the pages in use."""

import json
import os
import subprocess
from unittest import mock

import fixtures
import testtools

from epa_chain.chain import hugetlbfs
from epa_chain.local import hugepages


class FakeKernel(object):
    """2 MB page counters under `root`, updated as the kernel would."""

    def __init__(self, root, total, in_use, reserved=0, cap=10 ** 6):
        self.root = root
        self.in_use = in_use
        self.reserved = reserved
        self.cap = cap
        self.writes = []
        os.makedirs(os.path.join(root, os.path.dirname(hugepages.NR_FILE)))
        self._set(total)

    def _file(self, name, value):
        with open(os.path.join(self.root, name), 'w') as stream:
            stream.write('%d\n' % value)

    def _set(self, total):
        self.total = total
        self._file(hugepages.NR_FILE, total)
        self._file(hugepages.FREE_FILE, total - self.in_use)
        self._file(hugepages.RESV_FILE, self.reserved)

    def write(self, counters, name, value):
        assert name == hugepages.NR_FILE, name
        self.writes.append(value)
        self._set(max(self.in_use, min(value, self.cap)))


class FakeMounts(object):
    """A mounts file and a `run` that mount/umount edit."""

    def __init__(self, path, lines=()):
        self.path = path
        self.calls = []
        self.fail = None
        self.lines = list(lines)
        self._save()

    def _save(self):
        with open(self.path, 'w') as stream:
            stream.write(''.join(line + '\n' for line in self.lines))

    def __call__(self, argv, **_):
        self.calls.append(argv)
        if self.fail:
            return subprocess.CompletedProcess(argv, 32, '', self.fail)
        target = argv[-1].replace(' ', '\\040')
        if argv[0] == 'mount':
            self.lines.append('nodev %s hugetlbfs rw,relatime,pagesize=2M '
                              '0 0' % target)
        else:
            self.lines = [line for line in self.lines
                          if line.split()[1] != target]
        self._save()
        return subprocess.CompletedProcess(argv, 0, '', '')


class HugepageCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.root = os.path.join(self.tmp, 'root')
        self.mounts = FakeMounts(os.path.join(self.tmp, 'mounts'))
        self.mount_point = os.path.join(self.tmp, 'huge pages')

    def kernel(self, **kwargs):
        kernel = FakeKernel(self.root, **kwargs)
        patcher = mock.patch.object(
            hugepages._Counters, 'write',
            lambda counters, name, value: kernel.write(counters, name,
                                                       value))
        patcher.start()
        self.addCleanup(patcher.stop)
        return kernel

    def reserve(self, pages):
        return hugepages.reserve(pages, self.mount_point, root=self.root,
                                 mounts=self.mounts.path, run=self.mounts)

    def release(self, record, **waiting):
        waiting.setdefault('wait_s', 0)
        return hugepages.release(record, root=self.root,
                                 mounts=self.mounts.path, run=self.mounts,
                                 **waiting)


class TestReserve(HugepageCase):

    def test_free_pages_cover_the_need(self):
        kernel = self.kernel(total=600, in_use=0)
        record = self.reserve(512)
        self.assertEqual(0, record['added'])
        self.assertEqual([], kernel.writes)
        self.assertEqual(['mount', '-t', 'hugetlbfs', '-o', 'pagesize=2M',
                          'nodev', self.mount_point], self.mounts.calls[0])
        self.assertTrue(record['mounted'])
        self.assertTrue(os.path.isdir(self.mount_point))
        json.dumps(record)  # the state file keeps it

    def test_adds_only_the_shortfall_relative_to_the_count(self):
        # 100 pages, 70 used by another process, 10 of the free reserved.
        kernel = self.kernel(total=100, in_use=70, reserved=10)
        record = self.reserve(50)
        self.assertEqual(30, record['added'])
        self.assertEqual([130], kernel.writes)
        self.assertEqual(100, record['nr_before'])

    def test_kernel_grants_fewer_gives_back(self):
        kernel = self.kernel(total=100, in_use=100, cap=130)
        error = self.assertRaises(hugepages.HugepageError, self.reserve, 50)
        message = str(error)
        self.assertIn('granted 30 of the 50', message)
        self.assertIn('/proc/sys/vm/nr_hugepages', message)
        self.assertIn(hugepages.NR_FILE, message)
        self.assertIn('hugepages=150', message)
        self.assertEqual(100, kernel.total)
        self.assertEqual([], self.mounts.calls)

    def test_existing_2m_mount_is_used_not_owned(self):
        self.kernel(total=0, in_use=0)
        self.mounts.lines.append('nodev %s hugetlbfs rw,pagesize=2M 0 0' %
                                 self.mount_point.replace(' ', '\\040'))
        self.mounts._save()
        record = self.reserve(8)
        self.assertFalse(record['mounted'])
        self.release(record)
        self.assertEqual([], self.mounts.calls)

    def test_mount_of_other_page_size_is_refused_and_pages_returned(self):
        kernel = self.kernel(total=0, in_use=0)
        self.mounts.lines.append('nodev %s hugetlbfs rw,pagesize=1024M 0 0'
                                 % self.mount_point.replace(' ', '\\040'))
        self.mounts._save()
        error = self.assertRaises(hugepages.HugepageError, self.reserve, 8)
        self.assertIn('not pagesize=2M', str(error))
        self.assertEqual(0, kernel.total)

    def test_failed_mount_returns_pages_and_directory(self):
        kernel = self.kernel(total=4, in_use=4)
        self.mounts.fail = 'mount: only root can do that'
        error = self.assertRaises(hugepages.HugepageError, self.reserve, 8)
        self.assertIn('only root can do that', str(error))
        self.assertEqual(4, kernel.total)
        self.assertFalse(os.path.exists(self.mount_point))

    def test_no_2m_pages_in_kernel(self):
        os.makedirs(self.root)
        error = self.assertRaises(hugepages.HugepageError, self.reserve, 8)
        self.assertIn('no 2 MB huge pages', str(error))


class TestRelease(HugepageCase):

    def test_release_subtracts_what_was_added(self):
        kernel = self.kernel(total=20, in_use=20)
        record = self.reserve(512)
        self.assertEqual(532, kernel.total)
        # Another process added and mapped 30 pages meanwhile; they stay.
        kernel.in_use += 30
        kernel._set(kernel.total + 30)
        released = self.release(record)
        self.assertEqual(50, kernel.total)
        self.assertEqual(512, released['removed'])
        self.assertFalse(released['clamped'])
        self.assertTrue(released['released'])
        self.assertEqual(['umount', self.mount_point], self.mounts.calls[-1])
        self.assertFalse(os.path.exists(self.mount_point))

    def test_pages_still_in_use_clamp_and_stay_owed(self):
        kernel = self.kernel(total=0, in_use=0)
        record = self.reserve(100)
        kernel.in_use = 60  # e.g. a DPDK process outside the mount
        kernel._set(kernel.total)
        released = self.release(record)
        self.assertTrue(released['clamped'])
        self.assertEqual(40, released['removed'])
        self.assertEqual(60, released['added'])
        self.assertIn('gave back 40 of 100', released['message'])
        self.assertEqual(60, kernel.total)
        kernel.in_use = 0
        kernel._set(kernel.total)
        again = self.release(released)
        self.assertEqual(0, kernel.total)
        self.assertTrue(again['released'])
        self.assertEqual(1, [call[0] for call in self.mounts.calls].count(
            'umount'))

    def test_release_is_idempotent(self):
        kernel = self.kernel(total=10, in_use=10)
        record = self.reserve(5)
        self.release(record)
        writes = list(kernel.writes)
        self.release(record)
        self.release(json.loads(json.dumps(record)))
        self.assertEqual(writes, kernel.writes)
        self.assertEqual(10, kernel.total)

    def test_mounts_file_escapes(self):
        path = os.path.join(self.tmp, 'mounts2')
        with open(path, 'w') as stream:
            stream.write('nodev /a\\040b hugetlbfs rw,pagesize=2M 0 0\n'
                         'tmpfs /tmp tmpfs rw 0 0\n')
        self.assertEqual({'/a b': 'rw,pagesize=2M'},
                         hugetlbfs.mounts(path))


class TestInterruptedReserve(HugepageCase):

    def test_a_reserve_cut_short_is_given_back_from_its_intent(self):
        # Killed after the count grew by 300 of the 800 asked for, before
        # reserve() returned its record: down rebuilds one from the intent.
        kernel = self.kernel(total=400, in_use=0)
        intent = {'intent': 800, 'nr_before': 100}
        record = hugepages.interrupted_record(
            intent, self.mount_point, root=self.root,
            mounts=self.mounts.path)
        self.assertEqual(300, record['added'])
        self.assertFalse(record['mounted'])
        self.release(record)
        self.assertEqual(100, kernel.total)
        self.assertTrue(record['released'])

    def test_growth_beyond_the_intent_is_not_taken_as_ours(self):
        self.kernel(total=2000, in_use=0)
        record = hugepages.interrupted_record(
            {'intent': 800, 'nr_before': 100}, self.mount_point,
            root=self.root, mounts=self.mounts.path)
        self.assertEqual(800, record['added'])

    def test_a_hanging_umount_is_an_error_not_a_hang(self):
        self.kernel(total=0, in_use=0)
        record = self.reserve(8)

        def hang(argv, **kwargs):
            self.assertEqual(hugepages.COMMAND_TIMEOUT_S, kwargs['timeout'])
            raise subprocess.TimeoutExpired(argv, kwargs['timeout'])
        error = self.assertRaises(
            hugepages.HugepageError, hugepages.release, record,
            root=self.root, mounts=self.mounts.path, run=hang, wait_s=0)
        self.assertIn('umount %s gave no answer after' % self.mount_point,
                      str(error))
        self.assertTrue(record['mounted'])   # a later down tries again


class TestReleaseWaits(HugepageCase):

    def test_pages_a_just_exited_process_still_holds_are_waited_for(self):
        # ovs-vswitchd's pid is gone, its 512 pages come back a moment later.
        kernel = self.kernel(total=0, in_use=0)
        record = self.reserve(512)
        kernel.in_use = 512
        kernel._set(kernel.total)
        ticks = []

        def sleep(seconds):
            ticks.append(seconds)
            if len(ticks) == 3:
                kernel.in_use = 0
                kernel._set(kernel.total)

        self.release(record, wait_s=5, sleep=sleep,
                     clock=lambda: 0.1 * len(ticks))
        self.assertEqual(0, kernel.total)
        self.assertTrue(record['released'])
        self.assertEqual(512, record['removed'])
        self.assertEqual(3, len(ticks))

    def test_pages_still_in_use_after_the_wait_stay_owed(self):
        kernel = self.kernel(total=0, in_use=0)
        record = self.reserve(100)
        kernel.in_use = 60
        kernel._set(kernel.total)
        clock = iter(range(100))
        self.release(record, wait_s=3, sleep=lambda s: None,
                     clock=lambda: next(clock))
        self.assertTrue(record['clamped'])
        self.assertEqual(60, record['added'])       # still owed
        self.assertEqual(60, kernel.total)
