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

"""Check that the chain forwards in every direction before measuring.

A wrong next-hop MAC or a VNF that did not bind its ports loses every
frame: a search would then run for hours to report a throughput of zero.
A few seconds at a rate any vSwitch sustains (by default the seeds' 1 %
of line rate, 64-byte frames, one flow; [epa_chain] hop_check_* lower it
for slow hosts) tell a broken hop from a slow one. The generator only
sees the ends, so the error lists the hops of the failing direction, from
the stack's forward_chain / reverse_chain outputs, to inspect.

A path just brought up can drop frames for a moment (MAC learning, a guest
still finishing its boot): RFC 2544 section 23 sends learning frames and
lets the device restabilise before a trial. A direction therefore gets up
to `attempts` trials, with a pause between them; a broken hop fails all of
them. Every failed attempt is kept and reported, not hidden.
"""

import dataclasses
import logging
import math
import time
import typing

from epa_chain.measurement import trial

LOG = logging.getLogger(__name__)

FRAME = trial.FrameSize(size=64)
LOAD_FRACTION = 0.01
DURATION_S = 2.0
# "Forwards" means wired right; the searches measure loss properly. Allow
# the few frames a cold path (MAC learning, first packets) may drop.
MAX_LOSS_RATIO = 0.01
ATTEMPTS = 3
# RFC 2544 section 23 F: "wait for at least five seconds for the DUT to
# restabilize" before the next trial.
SETTLE_S = 5.0
CHAIN_OUTPUTS = {'forward': 'forward_chain', 'reverse': 'reverse_chain'}
# Bounds of the settings (`epa-chain prove`'s options): a load of at least
# a few frames in DURATION_S, at most line rate; up to ten attempts, as
# [epa_chain] hop_check_attempts. Losing half the frames or more is not
# forwarding: such a chain must never pass.
LOAD_FRACTION_RANGE = (1e-6, 1.0)
MAX_LOSS_RATIO_BELOW = 0.5
ATTEMPTS_RANGE = (1, 10)


class SettingError(ValueError):
    """A hop check setting out of its bounds: which, the value, the fix."""

    def __init__(self, setting, value, fix):
        super().__init__('hop check %s=%r: %s' % (setting, value, fix))
        self.setting = setting
        self.value = value
        self.fix = fix


def _finite(value):
    return (isinstance(value, (int, float)) and
            not isinstance(value, bool) and math.isfinite(value))


def check_settings(load_fraction, max_loss_ratio, attempts):
    """Refuse settings out of bounds (SettingError); NaN never compares."""
    low, high = LOAD_FRACTION_RANGE
    if not (_finite(load_fraction) and low <= load_fraction <= high):
        raise SettingError('load_fraction', load_fraction,
                           'give a fraction of line rate in [%g, %g]'
                           % (low, high))
    if not (_finite(max_loss_ratio) and
            0 <= max_loss_ratio < MAX_LOSS_RATIO_BELOW):
        raise SettingError('max_loss_ratio', max_loss_ratio,
                           'give a ratio in [0, %g): a chain losing more '
                           'does not forward' % MAX_LOSS_RATIO_BELOW)
    low, high = ATTEMPTS_RANGE
    if isinstance(attempts, bool) or not isinstance(attempts, int) or \
            not low <= attempts <= high:
        raise SettingError('attempts', attempts,
                           'give a whole number in [%d, %d]' % (low, high))


class HopCheckError(RuntimeError):
    """A direction of the chain does not forward.

    `counters`: the failed trial's frames ({tx_frames, rx_frames,
    loss_ratio}) when it ran to the end, else empty.
    """

    def __init__(self, message, counters=None):
        super().__init__(message)
        self.counters = dict(counters or {})


@dataclasses.dataclass
class DirectionCheck:
    """One direction's hop check: the passing trial and the failed ones."""

    direction: str
    result: trial.TrialResult
    # {'error': str, and the trial's counters when it ran} per failure.
    failed_attempts: typing.List[dict] = dataclasses.field(
        default_factory=list)

    @property
    def counters(self):
        return [d for d in self.result.directions
                if d.direction == self.direction][0]

    @property
    def attempts(self):
        return len(self.failed_attempts) + 1

    def as_dict(self):
        counters = self.counters
        return {'direction': self.direction,
                'tx_frames': counters.tx_frames,
                'rx_frames': counters.rx_frames,
                'loss_ratio': counters.loss_ratio,
                'attempts': self.attempts,
                'failed_attempts': list(self.failed_attempts)}


def describe_path(hops):
    """'gen:left (mac) -> vnf1:left (mac) -> ...' from a chain output."""
    return ' -> '.join('%s:%s (%s, %s/%s)' % (
        hop.get('server'), hop.get('role'), hop.get('mac'),
        hop.get('network'), hop.get('vlan')) for hop in hops or [])


def frame_for(generator):
    """The smallest frame `generator` sends: 64 bytes, 68 tagged."""
    smallest = getattr(generator, 'smallest_frame_bytes', FRAME.size)
    return FRAME if smallest <= FRAME.size else trial.FrameSize(
        size=smallest)


def record(checks, load_fraction=LOAD_FRACTION,
           max_loss_ratio=MAX_LOSS_RATIO, attempts=ATTEMPTS):
    """The hop check as the results document's cloud.hop_check."""
    load_fps = checks[0].result.spec.load_fps if checks else None
    frame = (checks[0].result.spec.profile.frame_size if checks else FRAME)
    return {
        'frame_size': frame.size,
        'duration_s': DURATION_S,
        'load_fraction': load_fraction,
        'load_fps': load_fps,
        'max_loss_ratio': max_loss_ratio,
        'attempts': attempts,
        'directions': [check.as_dict() for check in checks],
    }


def _run_trial(run):
    """The default observe hook: only the generator's view."""
    return run()


def _attempt(generator, spec, direction, path, load_fraction,
             max_loss_ratio, observe):
    """One trial's result, or HopCheckError saying what went wrong."""
    try:
        result = observe(lambda: generator.run_trial(spec))
    except trial.GeneratorError as exc:
        raise HopCheckError('%s direction: %s; hops: %s'
                            % (direction, exc, path or 'unknown'))
    counters = [d for d in result.directions if d.direction == direction]
    if not counters:
        raise HopCheckError('%s direction: the generator returned no '
                            'counters for it' % direction)
    counters = counters[0]
    if counters.rx_frames <= 0 or counters.loss_ratio > max_loss_ratio:
        raise HopCheckError(
            '%s direction does not forward: %d of %d frames came back '
            'at %.0f frames/s (%g of line rate; at most %g %% may be '
            'lost: [epa_chain] hop_check_load_fraction, '
            'hop_check_max_loss_ratio); hops: %s'
            % (direction, counters.rx_frames, counters.tx_frames,
               spec.load_fps, load_fraction, max_loss_ratio * 100,
               path or 'unknown'),
            counters={'tx_frames': counters.tx_frames,
                      'rx_frames': counters.rx_frames,
                      'loss_ratio': counters.loss_ratio})
    return result


def _attempts_summary(failed):
    """'481/595, error, 590/595': the frames back of each failed attempt."""
    return ', '.join('%d/%d' % (f['rx_frames'], f['tx_frames'])
                     if 'rx_frames' in f else 'error' for f in failed)


def check(generator, directions, outputs=None,
          load_fraction=LOAD_FRACTION, max_loss_ratio=MAX_LOSS_RATIO,
          attempts=ATTEMPTS, observe=_run_trial, sleep=time.sleep):
    """Run a low-rate trial per direction; return its DirectionChecks.

    `directions` are trial directions ('forward', 'reverse'); `outputs`
    the stack outputs, for the hop lists in error messages. A direction
    that fails `attempts` trials raises the last failure, with the number
    of attempts. `observe(run)` runs a trial (run()) and returns its
    result; it may raise HopCheckError for what it saw besides the ends
    (`epa-chain prove`'s per-hop counters), which fails that attempt too.
    Settings out of bounds raise SettingError before any trial.
    """
    check_settings(load_fraction, max_loss_ratio, attempts)
    outputs = outputs or {}
    frame = frame_for(generator)
    load_fps = frame.line_rate_fps(generator.link_bps) * load_fraction
    checks = []
    for direction in directions:
        path = describe_path(outputs.get(CHAIN_OUTPUTS[direction]))
        spec = trial.TrialSpec(
            profile=trial.TrafficProfile(frame_size=frame, flows=1,
                                         directions=(direction,)),
            load_fps=load_fps, duration_s=DURATION_S)
        failed = []
        while True:
            try:
                result = _attempt(generator, spec, direction, path,
                                  load_fraction, max_loss_ratio, observe)
                break
            except HopCheckError as exc:
                failed.append(dict(exc.counters, error=str(exc)))
                if len(failed) >= attempts:
                    raise HopCheckError(
                        '%s (%d of %d attempts failed; frames back per '
                        'attempt: %s)' % (exc, len(failed), attempts,
                                          _attempts_summary(failed)),
                        counters=exc.counters)
                LOG.warning('Hop check %s, attempt %d of %d: %s; trying '
                            'again in %.0f s', direction, len(failed),
                            attempts, exc, SETTLE_S)
                sleep(SETTLE_S)
        done = DirectionCheck(direction, result, failed)
        LOG.info('Hop check %s: %d/%d frames forwarded (attempt %d)',
                 direction, done.counters.rx_frames,
                 done.counters.tx_frames, done.attempts)
        checks.append(done)
    return checks
