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


"""Huge pages for the engine's packet buffers.

The image's kernel command line should reserve them at boot (the only way
to be sure of 1 GB pages, or of 2 MB pages in a fragmented guest); this
module checks what is free and, if that is not enough, asks the kernel for
more 2 MB pages at run time, reading back what it actually got. It also
makes sure a hugetlbfs of that page size is mounted. Everything it changes
is undone when the runtime stops or fails.
"""

import dataclasses
import os
import re
import subprocess

from epa_chain.chain import hugetlbfs
from epa_chain.vnf_runtime import errors

VNF_MB = 512            # PROX l2fwd or testpmd: a few 10 MB of mbufs, x10
GENERATOR_MB = 1024
# What a guest keeps outside huge pages: its kernel, this runtime and the
# engine's own heap. The generator's 1 GB on a 2 GB flavor leaves ~940 MB;
# a 1 GB guest cannot give a VNF its 512 MB and keep this.
MIN_LEFT_MB = 768
DEFAULT_MOUNT = '/dev/hugepages'
_SIZE_DIR = re.compile(r'^hugepages-(\d+)kB$')
_MEMTOTAL = re.compile(r'MemTotal:\s+(\d+)\s*kB')


@dataclasses.dataclass(frozen=True)
class Plan:
    page_kb: int
    pages_before: int
    pages_wanted: int
    needed_mb: int

    @property
    def changes(self):
        return self.pages_wanted != self.pages_before

    def describe(self):
        size = '%d MB' % (self.page_kb // 1024)
        if not self.changes:
            return '%d MB from the %d free %s pages' % (
                self.needed_mb, self.pages_before, size)
        return 'raise %s pages from %d to %d for %d MB' % (
            size, self.pages_before, self.pages_wanted, self.needed_mb)


def sizes(sysfs):
    """Page size (kB) -> (total, free) for every size the kernel offers."""
    found = {}
    for entry in sysfs.listdir('kernel/mm/hugepages'):
        match = _SIZE_DIR.match(entry)
        if not match:
            continue
        base = 'kernel/mm/hugepages/%s/' % entry
        total = int(sysfs.read(base + 'nr_hugepages', default='0') or 0)
        free = int(sysfs.read(base + 'free_hugepages', default='0') or 0)
        found[int(match.group(1))] = (total, free)
    return found


def memory_kb(sysfs):
    """Guest RAM from the NUMA nodes' meminfo (None if not exposed)."""
    total = 0
    for node in sysfs.listdir('devices/system/node'):
        if node.startswith('node'):
            match = _MEMTOTAL.search(
                sysfs.read('devices/system/node/%s/meminfo' % node,
                           default=''))
            if match:
                total += int(match.group(1))
    return total or None


def plan(sysfs, needed_mb):
    """What to reserve; SystemSetupError if the guest cannot give it."""
    available = sizes(sysfs)
    if not available:
        raise errors.SystemSetupError(
            'huge pages: the kernel offers none (no %s): build the image '
            'with a hugetlbfs-enabled kernel'
            % sysfs.path('kernel/mm/hugepages'))
    for page_kb, (total, free) in sorted(available.items(), reverse=True):
        if free * page_kb >= needed_mb * 1024:
            return Plan(page_kb, total, total, needed_mb)
    page_kb = 2048 if 2048 in available else min(available)
    total, free = available[page_kb]
    missing_kb = needed_mb * 1024 - free * page_kb
    wanted = total + -(-missing_kb // page_kb)
    ram_kb = memory_kb(sysfs)
    if ram_kb and ram_kb - wanted * page_kb < MIN_LEFT_MB * 1024:
        raise errors.SystemSetupError(
            'huge pages: %d MB would leave the guest %d of its %d MB, less '
            'than the %d MB it needs besides: give the flavor more RAM' % (
                wanted * page_kb // 1024,
                (ram_kb - wanted * page_kb) // 1024, ram_kb // 1024,
                MIN_LEFT_MB))
    return Plan(page_kb, total, wanted, needed_mb)


def reserve(sysfs, chosen):
    """Apply a plan; returns the undo function (None if nothing changed)."""
    if not chosen.changes:
        return None
    knob = 'kernel/mm/hugepages/hugepages-%dkB/nr_hugepages' % chosen.page_kb

    def undo():
        sysfs.write(knob, str(chosen.pages_before))

    sysfs.write(knob, str(chosen.pages_wanted))
    got = int(sysfs.read(knob, default='0') or 0)
    if got < chosen.pages_wanted:
        undo()
        raise errors.SystemSetupError(
            'huge pages: asked the kernel for %d pages of %d kB, got %d '
            '(memory fragmented): reserve them on the kernel command line '
            '(hugepages=%d)' % (chosen.pages_wanted, chosen.page_kb, got,
                                chosen.pages_wanted))
    return undo


def ensure_mount(page_kb, mounts='/proc/mounts', run=subprocess.run,
                 target=DEFAULT_MOUNT):
    """Mount hugetlbfs for this page size if none is; returns undo or None."""
    want = _pagesize_option(page_kb)
    for options in hugetlbfs.mounts(mounts).values():
        # No pagesize option: the default size, 2 MB on x86.
        if hugetlbfs.page_kb_of(options) in (page_kb, None):
            return None
    if os.path.ismount(target):
        target = '/run/epa-chain/hugepages-%dkB' % page_kb
    os.makedirs(target, exist_ok=True)
    result = run(['mount', '-t', 'hugetlbfs', '-o', want, 'nodev', target],
                 capture_output=True, text=True)
    if result.returncode:
        raise errors.SystemSetupError(
            'huge pages: cannot mount hugetlbfs on %s: %s'
            % (target, result.stderr.strip() or 'mount failed'))

    def undo():
        run(['umount', target], capture_output=True)
    return undo


def _pagesize_option(page_kb):
    if page_kb % (1024 * 1024) == 0:
        return 'pagesize=%dG' % (page_kb // (1024 * 1024))
    return 'pagesize=%dM' % (page_kb // 1024)
