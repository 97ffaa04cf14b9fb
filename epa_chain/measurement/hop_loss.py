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

"""Where a trial's frames were lost, hop by hop along each direction.

A direction of a chain is a list of hops: a node (the generator or a VNF)
transmits on a switch port, the switch delivers on the next node's port.
The switch counts both ends of every hop from its side (rx: frames the
node sent into the switch, tx: frames the switch handed to the node,
tx_dropped: frames it could not hand over, the receiver's ring being
full), and the generator counts what it sent and got back. Read around a
trial, these counts split the direction's loss into segments whose sum is
exactly the generator's tx - rx:

    send      generator sent, the switch did not receive    (generator)
    switch    received, neither delivered nor counted as
              dropped at the next port: lost in the switch   (vswitch)
    delivery  the switch's tx drops at the receiver's port:
              its ring was full, it did not poll in time     (receiver)
    inside    delivered to a VNF, not sent on by it          (the VNF)
    receive   delivered to the generator, not counted by it  (generator)

Each switch counter of a port belongs to one direction (a port's rx is
what its node forwards one way, its tx what the switch delivers the other
way), so a bidirectional trial splits as cleanly as a unidirectional one.
Frames outside the trial (learning, flooding) would show as negative or
spurious segments; none are sent while a trial runs.

`CountingGenerator` wraps any generator: it reads the counters before
and after every trial and attaches the split to each direction that lost
frames (DirectionResult.loss_by_hop).
"""

import collections
import dataclasses
import subprocess
import typing

from epa_chain.measurement import trial

VSWITCH = 'vswitch'
WHERE = ('send', 'switch', 'delivery', 'inside', 'receive')


class CounterError(RuntimeError):
    """A hop's port is missing from the counters read."""


@dataclasses.dataclass(frozen=True)
class Hop:
    """One hop: `sender` on `in_port` to `receiver` on `out_port`.

    Port names as the counter reader names them; None for the end of a
    generator that has no port on the switch (an external tester).
    """

    sender: str
    in_port: typing.Optional[str]
    receiver: str
    out_port: typing.Optional[str]


@dataclasses.dataclass(frozen=True)
class Segment:
    where: str          # one of WHERE
    owner: str          # the node the loss belongs to, or VSWITCH
    port: typing.Optional[str]  # the switch port it was read at
    lost: int           # frames in minus frames out (< 0: more came out)
    counted_drops: int  # what the switch itself counted as dropped there

    def as_dict(self):
        return dataclasses.asdict(self)

    def describe(self):
        return {
            'send': 'sent by %s, not received by the switch on %s',
            'switch': 'received by the switch, not forwarded to %s%s',
            'delivery': 'not delivered to %s on %s (its ring was full)',
            'inside': 'delivered to %s, not sent on by it (%s)',
            'receive': 'delivered to %s on %s, not counted by it',
        }[self.where] % ((self.owner, self.port) if self.where != 'switch'
                         else (self.port, ''))


@dataclasses.dataclass(frozen=True)
class Attribution:
    """One direction's loss of one trial, split along its path."""

    direction: str
    lost_frames: int
    segments: typing.Tuple[Segment, ...]

    def by_owner(self):
        """{owner: frames lost}, in path order."""
        owners = collections.OrderedDict()
        for segment in self.segments:
            owners[segment.owner] = owners.get(segment.owner, 0) + \
                segment.lost
        return owners

    def as_dict(self):
        return {'lost_frames': self.lost_frames,
                'by_owner': dict(self.by_owner()),
                'segments': [s.as_dict() for s in self.segments]}


def attribute(direction, hops, sent, received, before, after):
    """The Attribution of `sent - received` along `hops`.

    `before` and `after` map port names to counters (rx_packets,
    tx_packets, rx_dropped, tx_dropped), read around the trial. A
    generator outside the switch (an external tester) has no port on
    it: the first hop's in_port and the last hop's out_port are None,
    and the switch segments of those hops start at its send and end at
    its receive.
    """
    if not hops:
        raise CounterError('direction %s has no hops' % direction)

    def delta(port, counter):
        try:
            return getattr(after[port], counter) - getattr(before[port],
                                                           counter)
        except KeyError:
            raise CounterError('port %s of direction %s is not among the '
                               'switch\'s counters' % (port, direction))

    segments = []
    first, last = hops[0], hops[-1]
    if first.in_port is not None:
        segments.append(Segment('send', first.sender, first.in_port,
                                sent - delta(first.in_port, 'rx_packets'),
                                delta(first.in_port, 'rx_dropped')))
    for index, hop in enumerate(hops):
        received_here = sent if hop.in_port is None else delta(
            hop.in_port, 'rx_packets')
        if hop.out_port is None:
            segments.append(Segment('switch', VSWITCH, hop.in_port,
                                    received_here - received, 0))
            continue
        delivered = delta(hop.out_port, 'tx_packets')
        ring_full = delta(hop.out_port, 'tx_dropped')
        segments.append(Segment('switch', VSWITCH, hop.out_port,
                                received_here - delivered - ring_full, 0))
        segments.append(Segment('delivery', hop.receiver, hop.out_port,
                                ring_full, ring_full))
        if index + 1 < len(hops):
            onward = hops[index + 1]
            segments.append(Segment(
                'inside', hop.receiver, onward.in_port,
                delivered - delta(onward.in_port, 'rx_packets'),
                delta(onward.in_port, 'rx_dropped')))
    if last.out_port is not None:
        segments.append(Segment('receive', last.receiver, last.out_port,
                                delta(last.out_port, 'tx_packets') -
                                received, 0))
    return Attribution(direction, sent - received, tuple(segments))


def counters_disagree(split):
    """True when a recorded loss_by_hop has a segment that gained frames.

    More frames out than in: the counters do not describe the same
    frames, and shares of the loss computed from them mislead.
    """
    return any(segment['lost'] < 0 for segment in split['segments'])


def share_of(attributions, owner):
    """The fraction of all frames lost that `owner`'s segments hold.

    None when nothing was lost.
    """
    lost = sum(a.lost_frames for a in attributions)
    if lost <= 0:
        return None
    return sum(a.by_owner().get(owner, 0) for a in attributions) / lost


class CountingGenerator(trial.Generator):
    """A generator whose lossy trials carry their loss split by hop.

    `paths` maps each direction to its hops; `read_counters()` returns
    {port name: counters} now. A failed read is noted on the trial, not
    raised: the trial's own figures stand without the split.
    """

    def __init__(self, inner, paths, read_counters):
        self._inner = inner
        self._paths = dict(paths)
        self._read = read_counters
        self.name = inner.name
        self.rate_tolerance = inner.rate_tolerance

    @property
    def link_bps(self):
        return self._inner.link_bps

    def __getattr__(self, name):
        # calibrate(), calibration_margin and what else a runner asks of
        # the generator it wrapped.
        return getattr(self._inner, name)

    def describe(self):
        described = self._inner.describe()
        described['loss_by_hop'] = True
        return described

    def close(self):
        self._inner.close()

    def run_trial(self, spec):
        before, unread = self._counters()
        result = self._inner.run_trial(spec)
        if unread is None and any(d.lost_frames > 0
                                  for d in result.directions):
            after, unread = self._counters()
        if unread is not None:
            result.notes.append('loss not split by hop: %s' % unread)
            return result
        for position, found in enumerate(result.directions):
            if found.lost_frames <= 0:
                continue
            try:
                split = attribute(found.direction,
                                  self._paths[found.direction],
                                  found.tx_frames, found.rx_frames,
                                  before, after)
            except (KeyError, CounterError) as error:
                result.notes.append('loss of %s not split by hop: %s'
                                    % (found.direction, error))
                continue
            result.directions[position] = dataclasses.replace(
                found, loss_by_hop=split)
        return result

    def _counters(self):
        try:
            return self._read(), None
        except (RuntimeError, OSError, ValueError,
                subprocess.SubprocessError) as error:
            return None, str(error) or type(error).__name__
