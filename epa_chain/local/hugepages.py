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

"""2 MB huge pages and a private hugetlbfs mount for the local test bed.

Other processes on the host may hold huge pages too, so nothing here sets
an absolute count: `reserve` adds only what the free pages do not cover,
relative to the count it reads just before writing, and `release` takes
back only what `reserve` added, never below what is in use at that moment.
The record `reserve` returns is plain JSON so that `epa-chain local down`
can release after the process that reserved is gone.
"""

import os
import subprocess
import time

from epa_chain.chain import hugetlbfs

PAGE_KB = 2048
_SIZE_DIR = 'sys/kernel/mm/hugepages/hugepages-%dkB' % PAGE_KB
NR_FILE = _SIZE_DIR + '/nr_hugepages'
FREE_FILE = _SIZE_DIR + '/free_hugepages'
RESV_FILE = _SIZE_DIR + '/resv_hugepages'
PROC_NR_FILE = '/proc/sys/vm/nr_hugepages'
COMMAND_TIMEOUT_S = 30      # mount, umount: down must not hang on either


class HugepageError(RuntimeError):
    """The kernel did not grant the pages, or a mount failed."""


class _Counters(object):
    """The 2 MB page counters under a (possibly fake) root directory."""

    def __init__(self, root):
        self.root = root

    def path(self, name):
        return os.path.join(self.root, name)

    def read(self, name):
        with open(self.path(name)) as stream:
            return int(stream.read().strip() or 0)

    def write(self, name, value):
        with open(self.path(name), 'w') as stream:
            stream.write('%d\n' % value)

    @property
    def total(self):
        return self.read(NR_FILE)

    @property
    def available(self):
        # Reserved pages are free but promised to a mapping already.
        return self.read(FREE_FILE) - self.read(RESV_FILE)

    @property
    def in_use(self):
        return self.total - self.available


def _nr_file_names(counters):
    name = counters.path(NR_FILE)
    return '%s (%s where 2 MB is the default page size)' % (
        name, PROC_NR_FILE)


def _mounted(mount_point, mounts):
    return mount_point in hugetlbfs.mounts(mounts)


def _is_2m_mount(options):
    return hugetlbfs.page_kb_of(options) in (PAGE_KB, None)


def _check(run, argv, what, timeout_s=COMMAND_TIMEOUT_S):
    try:
        result = run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise HugepageError('%s: %s gave no answer after %d s' % (
            what, ' '.join(argv), timeout_s)) from None
    if result.returncode:
        raise HugepageError('%s failed: %s: %s' % (
            what, ' '.join(argv), (result.stderr or result.stdout).strip()))


def reserve(pages, mount_point, *, root='/', mounts='/proc/mounts',
            run=subprocess.run):
    """Make `pages` free 2 MB pages available at a hugetlbfs `mount_point`.

    Returns the JSON-able record `release` needs.
    """
    if pages < 0:
        raise HugepageError('pages must be >= 0, got %r' % pages)
    counters = _Counters(root)
    if not os.path.exists(counters.path(NR_FILE)):
        raise HugepageError(
            'this kernel offers no 2 MB huge pages (%s is missing): use a '
            'kernel with CONFIG_HUGETLBFS' % counters.path(NR_FILE))
    available = counters.available
    short = max(0, pages - available)
    before = counters.total
    added = 0
    if short:
        counters.write(NR_FILE, before + short)
        after = counters.total
        added = max(0, after - before)
        if after < before + short:
            # Give back exactly what we got; others may have moved too.
            counters.write(NR_FILE, counters.total - added)
            raise HugepageError(
                'the kernel granted %d of the %d 2 MB huge pages asked '
                'for (%d needed, %d were free) through %s: free memory '
                '(drop caches: sync; echo 3 > /proc/sys/vm/drop_caches) or '
                'reserve them at boot (hugepagesz=2M hugepages=%d on the '
                'kernel command line)' % (
                    added, short, pages, available,
                    _nr_file_names(counters), before + short))
    record = {'page_kb': PAGE_KB, 'pages': pages, 'added': added,
              'nr_before': before, 'nr_after': before + added,
              'mount_point': mount_point, 'mounted': False,
              'created_dir': False, 'released': False}
    try:
        existing = hugetlbfs.mounts(mounts).get(mount_point)
        if existing is not None:
            if not _is_2m_mount(existing):
                raise HugepageError(
                    '%s is a hugetlbfs mount with options %s, not '
                    'pagesize=2M: choose another mount point or umount '
                    'it' % (mount_point, existing))
        else:
            if not os.path.isdir(mount_point):
                os.makedirs(mount_point)
                record['created_dir'] = True
            _check(run, ['mount', '-t', 'hugetlbfs', '-o', 'pagesize=2M',
                         'nodev', mount_point],
                   'mounting hugetlbfs (needs root)')
            record['mounted'] = True
    except BaseException:
        release(record, root=root, mounts=mounts, run=run)
        raise
    return record


def total(root='/'):
    """The 2 MB pages the kernel holds now (nr_hugepages)."""
    return _Counters(root).total


def interrupted_record(intent, mount_point, root='/', mounts='/proc/mounts'):
    """A record for a reserve() that a kill cut short.

    `intent` holds the pages asked for and `nr_before`, written before
    reserve() ran: what the count grew by since (at most the pages asked
    for) is taken as ours. Another process moving the count in that
    window would be miscounted; release() still never goes below the
    pages in use.
    """
    grown = max(0, total(root) - intent['nr_before'])
    return {'page_kb': PAGE_KB, 'pages': intent['intent'],
            'added': min(grown, intent['intent']),
            'nr_before': intent['nr_before'], 'mount_point': mount_point,
            'mounted': _mounted(mount_point, mounts),
            'created_dir': os.path.isdir(mount_point), 'released': False}


RELEASE_WAIT_S = 5.0


def release(record, *, root='/', mounts='/proc/mounts', run=subprocess.run,
            wait_s=RELEASE_WAIT_S, sleep=time.sleep, clock=time.monotonic):
    """Undo `reserve`; safe to call again with the same record.

    Returns the record updated with what was given back; `clamped` says
    that pages in use kept the count up: `added` then keeps what is still
    owed and a later call tries again. A process that has just exited
    (ovs-vswitchd, an engine) can hold its pages a moment longer than its
    pid: pages in use are waited for up to `wait_s` first.
    """
    deadline = clock() + wait_s
    while True:
        _release_once(record, root, mounts, run)
        if not record.get('clamped') or clock() >= deadline:
            return record
        sleep(0.1)


def _release_once(record, root, mounts, run):
    if record.get('released'):
        return record
    mount_point = record['mount_point']
    if record.get('mounted') and _mounted(mount_point, mounts):
        # Unmounting drops files a killed DPDK process left behind.
        _check(run, ['umount', mount_point],
               'unmounting %s (stop what still maps it)' % mount_point)
    record['mounted'] = False
    if record.get('created_dir') and os.path.isdir(mount_point):
        try:
            os.rmdir(mount_point)
        except OSError:
            pass  # someone put files there: leave it
    record['created_dir'] = False
    counters = _Counters(root)
    added = record.get('added', 0)
    removed = 0
    clamped = False
    if added:
        total = counters.total
        target = total - added
        floor = counters.in_use
        if target < floor:
            target, clamped = floor, True
        if target < total:
            counters.write(NR_FILE, target)
        removed = total - counters.total
    owed = max(0, added - removed)
    removed += record.get('removed', 0)     # earlier passes
    record.update(added=owed, removed=removed, clamped=clamped,
                  released=not owed, nr_after_release=counters.total)
    if clamped:
        record['message'] = (
            'gave back %d of %d 2 MB pages: the rest are in use; lower %s '
            'once they are free' % (removed, added,
                                    _nr_file_names(counters)))
    return record
