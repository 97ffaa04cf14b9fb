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

"""One trial: the contract between searches and traffic generators.

A search asks a generator for trials (`TrialSpec`) and reads back what
happened (`TrialResult`); it never sees how the frames were made. Every
generator - the PROX client, the model of a system under test, the local
test bed's AF_PACKET sender - implements `Generator.run_trial`.

Rates are frames per second per direction. Line rate follows the seed
reports: a frame of L bytes (with FCS) occupies (L + 20) * 8 bits on the
wire (preamble, start delimiter and inter-frame gap add 20 bytes).
"""

import abc
import dataclasses
import re
import typing

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import wire

# Seed 002 (EANTC): 64, 570 and 1518 byte frames in the ratio 7:4:1.
IMIX_EANTC = ((64, 7), (570, 4), (1518, 1))


class GeneratorError(RuntimeError):
    """A trial could not be run or its counters cannot be trusted.

    Never a throughput figure: searches stop and report `cause`.
    """

    def __init__(self, cause, detail=''):
        self.cause = cause
        self.detail = detail
        super().__init__('%s%s' % (cause, ': ' + detail if detail else ''))


# Digits only: Python's int() also reads '6_4' and ' 64 ' as 64.
_WHOLE = re.compile(r'^[0-9]+$')


def whole_number(text):
    """A whole number written in digits; ValueError otherwise."""
    if not _WHOLE.match(text):
        raise ValueError('%r is not a whole number' % text)
    return int(text)


def _size_weight(item):
    size, weight = item.split(':')
    return whole_number(size.strip()), whole_number(weight.strip())


@dataclasses.dataclass(frozen=True)
class FrameSize:
    """A fixed frame size, or an IMIX as ((size, weight), ...).

    Sizes include the 4-byte FCS, as in RFC 2544 and the seed tables.
    """

    size: typing.Optional[int] = None
    imix: typing.Optional[typing.Tuple[typing.Tuple[int, int], ...]] = None

    def __post_init__(self):
        if (self.size is None) == (self.imix is None):
            raise ValueError('give exactly one of size and imix')
        for size, weight in self.mix:
            if size < 64 or size > 9018 or weight < 1:
                raise ValueError('bad frame size %r weight %r'
                                 % (size, weight))

    @classmethod
    def parse(cls, text):
        """Read a frame size the way users write it.

        '64' is 64 bytes; 'imix' is seed 002's 64:7,570:4,1518:1;
        '64:7,570:4,1518:1' is that mix.
        """
        text = str(text).strip().lower()
        if text == 'imix':
            return cls(imix=IMIX_EANTC)
        try:
            if ':' not in text:
                size, mix = whole_number(text), None
            else:
                size, mix = None, tuple(_size_weight(item)
                                        for item in text.split(','))
        except ValueError:
            raise ValueError('%r is neither a size, "imix" nor SIZE:WEIGHT '
                             'pairs' % text) from None
        return cls(size=size, imix=mix)

    @property
    def mix(self):
        return self.imix if self.imix is not None else ((self.size, 1),)

    @property
    def mean_bytes(self):
        total = sum(weight for _size, weight in self.mix)
        return sum(size * weight for size, weight in self.mix) / total

    @property
    def label(self):
        if self.imix is None:
            return str(self.size)
        return 'IMIX(%s)' % ','.join('%d:%d' % item for item in self.imix)

    def line_rate_fps(self, link_bps):
        """Frames per second filling a link of `link_bps` bits/s."""
        return link_bps / (wire.wire_bytes(self.mean_bytes) * 8)

    def fps_to_mbps(self, fps):
        """Wire rate in Mbit/s, the seed tables' (size + 20) * 8 formula."""
        return fps * wire.wire_bytes(self.mean_bytes) * 8 / 1e6


@dataclasses.dataclass(frozen=True)
class TrafficProfile:
    """What the generator sends: frame size, flow count, directions."""

    frame_size: FrameSize
    flows: int = 1
    directions: typing.Tuple[str, ...] = ('forward',)

    def __post_init__(self):
        if self.flows < 1:
            raise ValueError('flows must be >= 1')
        if not self.directions or set(self.directions) - set(
                chain_directions.DIRECTIONS):
            raise ValueError('directions must be a subset of %s'
                             % (chain_directions.DIRECTIONS,))


@dataclasses.dataclass(frozen=True)
class TrialSpec:
    """One trial: `load_fps` frames/s offered in each direction."""

    profile: TrafficProfile
    load_fps: float
    duration_s: float
    measure_latency: bool = False


@dataclasses.dataclass
class LatencyRecord:
    """One-way delays seen by the receiver in one direction.

    A generator fills what it can observe: per-frame `samples` as
    (sequence number, delay ns) in arrival order when it timestamps every
    frame (the local generator, the model), or only a `histogram` of
    (bucket lower bound ns, bucket upper bound ns, count) when the
    hardware or PROX bins them. min/avg/max are in ns.
    """

    min_ns: typing.Optional[float] = None
    avg_ns: typing.Optional[float] = None
    max_ns: typing.Optional[float] = None
    samples: typing.Optional[typing.List[typing.Tuple[int, float]]] = None
    histogram: typing.Optional[
        typing.List[typing.Tuple[float, float, int]]] = None
    out_of_order: int = 0
    duplicates: int = 0


@dataclasses.dataclass
class DirectionResult:
    """Counters of one direction of one trial, as the generator saw them.

    `offered_fps` is what the generator actually sent (tx_frames over the
    sending time), which may fall short of the intended load;
    `achieved_fps` is what came back (rx_frames over the same time).
    """

    direction: str
    intended_fps: float
    offered_fps: float
    achieved_fps: float
    tx_frames: int
    rx_frames: int
    latency: typing.Optional[LatencyRecord] = None
    #: hop_loss.Attribution of a lossy trial, when the switch was read
    loss_by_hop: typing.Any = None
    #: chains measured together: each chain's own (together.ChainResult)
    chains: typing.Optional[typing.List[typing.Any]] = None

    @property
    def lost_frames(self):
        return self.tx_frames - self.rx_frames

    @property
    def loss_ratio(self):
        if self.tx_frames <= 0:
            return 1.0
        return max(0.0, self.lost_frames / self.tx_frames)


@dataclasses.dataclass
class TrialResult:
    """A trial as it happened: spec, per-direction counters, timing."""

    spec: TrialSpec
    directions: typing.List[DirectionResult]
    started_at: float  # UNIX time
    duration_s: float  # measured, not intended
    notes: typing.List[str] = dataclasses.field(default_factory=list)

    @property
    def tx_frames(self):
        return sum(d.tx_frames for d in self.directions)

    @property
    def rx_frames(self):
        return sum(d.rx_frames for d in self.directions)

    @property
    def loss_ratio(self):
        """Aggregate loss over all directions (RFC 2544 counts both)."""
        if self.tx_frames <= 0:
            return 1.0
        return max(0.0, (self.tx_frames - self.rx_frames) / self.tx_frames)


class Generator(abc.ABC):
    """A traffic generator facing a system under test.

    Implementations raise GeneratorError (never return a result) when they
    cannot offer the intended load within `rate_tolerance`, when the system
    under test stops forwarding entirely, or when counters go backwards.
    """

    #: short name used on the command line and in result files
    name = None
    #: fraction by which the offered rate may fall short of the intended one
    rate_tolerance = 0.01

    @property
    @abc.abstractmethod
    def link_bps(self):
        """Nominal link speed in bits/s per direction (line rate basis)."""

    @abc.abstractmethod
    def run_trial(self, spec):
        """Run one trial and return a TrialResult."""

    def describe(self):
        """Self-description written into result files."""
        return {'name': self.name, 'link_bps': self.link_bps}

    def close(self):
        """Release connections and processes; idempotent."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
