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

"""When each frame goes out: a schedule, not a rate loop.

Frame i of a trial is due at t0 + i / rate (every stream sends its frame
i at that moment). A sender that fell behind sends every due frame at
once (at most MAX_BURST before it looks at the clock again), so the
number of frames is exact and a slow host shows up as a lower offered
rate, never as fewer frames than planned. The offered rate is
tx_frames / sending time, the sending time being from the first frame to
the last plus one frame interval: a sender exactly on schedule offers
exactly the intended rate.

A sender that can no longer reach the rate within the tolerance even if
the remaining frames went out instantly stops (`cutoff_s`): the trial is a
rate shortfall whatever happens next, and an impossible load must not
hold the host for many times the trial's duration.
"""

import math

MAX_BURST = 64
#: sleep when the next frame is further away than this, spin otherwise
SPIN_S = 50e-6
CUTOFF_MARGIN = 1.01
CUTOFF_SLACK_S = 0.01


def planned_frames(load_fps, duration_s):
    """Frames per stream for a trial; at least one."""
    return max(1, int(round(load_fps * duration_s)))


class Schedule:
    """The frames of one trial per stream, paced at `rate_fps`.

    rate_fps None: unpaced, as fast as possible, for `duration_s`
    (calibration); `total` is then unbounded.
    """

    def __init__(self, rate_fps, duration_s, rate_tolerance=0.0):
        if rate_fps is not None and rate_fps <= 0:
            raise ValueError('rate %r fps must be positive' % (rate_fps,))
        if duration_s <= 0:
            raise ValueError('duration %r s must be positive'
                             % (duration_s,))
        self.rate_fps = rate_fps
        self.duration_s = duration_s
        if rate_fps is None:
            self.total = math.inf
            self.cutoff_s = duration_s
        else:
            self.total = planned_frames(rate_fps, duration_s)
            floor = rate_fps * (1.0 - rate_tolerance)
            self.cutoff_s = (self.total / floor * CUTOFF_MARGIN +
                             CUTOFF_SLACK_S)

    @property
    def paced(self):
        return self.rate_fps is not None

    def due(self, elapsed_s, sent):
        """How many frames should have gone by `elapsed_s` (capped)."""
        if not self.paced:
            return sent + MAX_BURST
        due = min(self.total, int(elapsed_s * self.rate_fps) + 1)
        return min(due, sent + MAX_BURST)

    def send_time(self, seq):
        """Seconds after t0 at which frame `seq` is due."""
        return seq / self.rate_fps if self.paced else 0.0

    def wait_s(self, elapsed_s, sent):
        """How long to sleep before frame `sent` (0: spin or send now)."""
        if not self.paced or sent >= self.total:
            return 0.0
        wait = self.send_time(sent) - elapsed_s
        return wait - SPIN_S if wait > SPIN_S else 0.0


def sending_seconds(tx_frames, first_s, last_s, rate_fps=None):
    """Time the sender took for `tx_frames`: first to last + one gap."""
    if tx_frames <= 0:
        return 0.0
    span = max(0.0, last_s - first_s)
    if rate_fps:
        gap = 1.0 / rate_fps
    elif tx_frames > 1:
        gap = span / (tx_frames - 1)
    else:
        gap = 0.0
    return span + gap


def offered_fps(tx_frames, seconds):
    return tx_frames / seconds if seconds > 0 else 0.0
