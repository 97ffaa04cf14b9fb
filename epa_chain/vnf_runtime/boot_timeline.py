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


"""Where a guest's boot went, read from its own clocks at READY.

Seconds since the kernel started (CLOCK_BOOTTIME), at the moments that
split the boot into its phases:

  kernel     0 to the kernel running the initramfs ("Run /init as init
             process" in the kernel's log: its record's own time stamp);
  initramfs  to systemd in the real root (its first kernel log record);
  init       to this runtime's start (/proc/self/stat);
  runtime    to READY (now).

Firmware and the boot loader come before the kernel's clock starts: only
the host knows when it started the guest. The timeline therefore carries
the guest's wall-clock time of the kernel's start, which the host holds
against its own record (chain/readiness.boot_phases). A moment the log no
longer holds (a long boot overwrote it) is None and its phase is folded
into the next one.
"""

import datetime
import errno
import os
import re
import time

KMSG = '/dev/kmsg'
_INITRAMFS = re.compile(r'^Run /init as init process')
_INIT = re.compile(r'^systemd\[1\]: ')
MAX_RECORDS = 20000


def kernel_log(path=KMSG):
    """[(seconds since boot, text)] of the kernel's log, oldest first."""
    records = []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return records
    try:
        while len(records) < MAX_RECORDS:
            try:
                raw = os.read(fd, 8192)
            except OSError as exc:
                if exc.errno == errno.EPIPE:    # overwritten: read on
                    continue
                break                           # EAGAIN: all read
            if not raw:
                break
            header, _, text = raw.decode('utf-8', 'replace').partition(';')
            fields = header.split(',')
            if len(fields) >= 3 and fields[2].isdigit():
                records.append((int(fields[2]) / 1e6,
                                text.split('\n', 1)[0]))
    finally:
        os.close(fd)
    return records


def process_start(stat_path='/proc/self/stat'):
    """Seconds since boot at which this process started, or None."""
    try:
        with open(stat_path) as stream:
            fields = stream.read().rsplit(')', 1)[1].split()
        return int(fields[19]) / os.sysconf('SC_CLK_TCK')
    except (OSError, IndexError, ValueError):
        return None


def _first(records, pattern):
    for seconds, text in records:
        if pattern.search(text):
            return seconds
    return None


def read(records=None, runtime_started=None, now=None, wall=None):
    """The timeline: seconds since the kernel's start, and its wall time.

    {'initramfs_at', 'init_at', 'runtime_at', 'ready_at' (seconds since
    the kernel started, None where unknown), 'kernel_started' (ISO 8601
    UTC, the guest's clock)}.
    """
    records = kernel_log() if records is None else records
    ready = time.clock_gettime(time.CLOCK_BOOTTIME) if now is None else now
    wall = time.time() if wall is None else wall
    started = datetime.datetime.fromtimestamp(
        wall - ready, datetime.timezone.utc)
    return {
        'initramfs_at': _round(_first(records, _INITRAMFS)),
        'init_at': _round(_first(records, _INIT)),
        'runtime_at': _round(process_start() if runtime_started is None
                             else runtime_started),
        'ready_at': _round(ready),
        'kernel_started': started.isoformat(timespec='milliseconds'),
    }


def _round(value):
    return None if value is None else round(value, 2)
