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

"""The sending loop: every stream's frame i at its scheduled time.

One process sends every stream (frame i of each in turn), so both
directions of a bidirectional trial go at the same rate and the host
spends one core, not two, on sending. The loop patches the sequence
number, the transmit time (time.time_ns() just before the send) and,
with several flows, the flow's addresses and port into a pre-built frame.
"""

import ctypes
import ctypes.util
import errno
import time

from epa_chain.local.traffic import pacing

PR_SET_TIMERSLACK = 29
#: a full device queue: give the CPU away and try the same frame again
RETRY_ERRNOS = (errno.ENOBUFS, errno.EAGAIN)
MAX_RETRIES = 10000


def tighten_timer_slack():
    """Make short sleeps end on time (the default slack is 50 us)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
        libc.prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def send(senders, schedule, clock=time.perf_counter, wall_ns=time.time_ns,
         sleep=time.sleep, wall=time.time):
    """Send `schedule` on [(send function, frames.StreamFrames)].

    Returns the report the generator reads: frames sent per stream, the
    first and last send on `clock`, the UNIX time of the first send,
    whether the schedule was cut off, retries and the error that stopped
    it (None when all went out).
    """
    streams = [(send_one, frames.frame) for send_one, frames in senders]
    tx = [0] * len(streams)
    retries = 0
    error = None
    cut_off = False
    seq = 0
    total = schedule.total
    cutoff_s = schedule.cutoff_s
    due_at = schedule.due
    wait_for = schedule.wait_s
    started_at = wall()
    first = clock()
    last = first
    while seq < total and error is None:
        elapsed = clock() - first
        if elapsed > cutoff_s:
            cut_off = schedule.paced
            break
        before = seq
        seq, more, error = _burst(streams, tx, seq, due_at(elapsed, seq),
                                  wall_ns, sleep)
        retries += more
        now = clock()
        if seq != before:
            last = now
        pause = wait_for(now - first, seq)
        if pause > 0:
            sleep(pause)
    return {'tx': tx, 'first': first, 'last': last, 'started_at': started_at,
            'cut_off': cut_off, 'retries': retries, 'error': error,
            'rate_fps': schedule.rate_fps}


def _burst(streams, tx, seq, due, wall_ns, sleep):
    """Frames seq..due-1 of every stream: (next seq, retries, error).

    Counts into `tx`; a frame whose send fails for good stops the burst
    with the error (that frame of that stream is not counted).
    """
    retries = 0
    while seq < due:
        for index, (send_one, frame) in enumerate(streams):
            data = frame(seq, wall_ns())
            attempts = 0
            while True:
                try:
                    send_one(data)
                    break
                except OSError as exc:
                    attempts += 1
                    if (exc.errno not in RETRY_ERRNOS or
                            attempts > MAX_RETRIES):
                        return seq, retries, (
                            'sending frame %d of stream %d: %s' % (
                                seq, index, exc))
                    retries += 1
                    sleep(0)
            tx[index] += 1
        seq += 1
    return seq, retries, None


def sending_seconds(report):
    """The report's sending time (pacing.sending_seconds) per stream."""
    return [pacing.sending_seconds(count, report['first'], report['last'],
                                   report['rate_fps'])
            for count in report['tx']]
