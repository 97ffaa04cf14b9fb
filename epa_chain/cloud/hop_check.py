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
"""

import logging

from epa_chain.measurement import trial

LOG = logging.getLogger(__name__)

FRAME = trial.FrameSize(size=64)
LOAD_FRACTION = 0.01
DURATION_S = 2.0
# "Forwards" means wired right; the searches measure loss properly. Allow
# the few frames a cold path (MAC learning, first packets) may drop.
MAX_LOSS_RATIO = 0.01
CHAIN_OUTPUTS = {'forward': 'forward_chain', 'reverse': 'reverse_chain'}


class HopCheckError(RuntimeError):
    """A direction of the chain does not forward."""


def describe_path(hops):
    """'gen:left (mac) -> vnf1:left (mac) -> ...' from a chain output."""
    return ' -> '.join('%s:%s (%s, %s/%s)' % (
        hop.get('server'), hop.get('role'), hop.get('mac'),
        hop.get('network'), hop.get('vlan')) for hop in hops or [])


def record(results, load_fraction=LOAD_FRACTION,
           max_loss_ratio=MAX_LOSS_RATIO):
    """The hop check as the results document's cloud.hop_check."""
    load_fps = results[0].spec.load_fps if results else None
    return {
        'frame_size': FRAME.size,
        'duration_s': DURATION_S,
        'load_fraction': load_fraction,
        'load_fps': load_fps,
        'max_loss_ratio': max_loss_ratio,
        'directions': [{'direction': d.direction, 'tx_frames': d.tx_frames,
                        'rx_frames': d.rx_frames,
                        'loss_ratio': d.loss_ratio}
                       for result in results for d in result.directions],
    }


def check(generator, directions, outputs=None,
          load_fraction=LOAD_FRACTION, max_loss_ratio=MAX_LOSS_RATIO):
    """Run one low-rate trial per direction; return the results.

    `directions` are trial directions ('forward', 'reverse'); `outputs`
    the stack outputs, for the hop lists in error messages.
    """
    outputs = outputs or {}
    load_fps = FRAME.line_rate_fps(generator.link_bps) * load_fraction
    results = []
    for direction in directions:
        path = describe_path(outputs.get(CHAIN_OUTPUTS[direction]))
        spec = trial.TrialSpec(
            profile=trial.TrafficProfile(frame_size=FRAME, flows=1,
                                         directions=(direction,)),
            load_fps=load_fps, duration_s=DURATION_S)
        try:
            result = generator.run_trial(spec)
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
                   load_fps, load_fraction, max_loss_ratio * 100,
                   path or 'unknown'))
        LOG.info('Hop check %s: %d/%d frames forwarded', direction,
                 counters.rx_frames, counters.tx_frames)
        results.append(result)
    return results
