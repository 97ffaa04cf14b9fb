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

"""What PROX's gen tasks send: flow fields and IMIX sequences.

Flows are distinct UDP 5-tuples. PROX makes them two ways:

- random fields (`set random`): 'X' bits of a field take random values,
  so N random bits give 2**N flows - powers of two only;
- ranges (`set range`, in PROX since 2022; 22.12 has it): a field counts
  first..last in turn, so any count up to the field's size, every flow
  equally often.

`plan_flows` uses random bits over the UDP source and destination ports for
powers of two and one range over the UDP source port otherwise ('exact'),
or rounds up to a power of two ('power-of-two', random bits only). The
plan says how many flows PROX really makes; results record that count.
"""

import dataclasses
import math
import typing

#: Offsets in the generator's untagged IPv4/UDP template.
UDP_SOURCE_PORT_OFFSET = 34
UDP_DESTINATION_PORT_OFFSET = 36
#: Base ports of the template (gen_config writes them); their low 10 bits
#: are zero so that up to 10 random bits per port keep the base visible.
UDP_SOURCE_PORT = 1024
UDP_DESTINATION_PORT = 2048
FLOW_MODES = ('exact', 'power-of-two')
MAX_RANDOM_BITS = 30
# A range on the source port runs from the base port up to 65535.
MAX_RANGE_FLOWS = 65536 - UDP_SOURCE_PORT


@dataclasses.dataclass(frozen=True)
class FlowPlan:
    requested: int
    generated: int
    #: (offset, bit string) for `set random`
    randoms: typing.Tuple[typing.Tuple[int, str], ...] = ()
    #: (offset, first, last) for `set range`
    ranges: typing.Tuple[typing.Tuple[int, int, int], ...] = ()

    @property
    def description(self):
        if self.ranges:
            parts = ['UDP source ports %d-%d in turn' % r[1:]
                     for r in self.ranges]
        elif self.randoms:
            parts = ['%d random bits in the UDP %s port'
                     % (bits.count('X'), 'source'
                        if offset == UDP_SOURCE_PORT_OFFSET
                        else 'destination')
                     for offset, bits in self.randoms]
        else:
            parts = ['fixed UDP ports %d -> %d'
                     % (UDP_SOURCE_PORT, UDP_DESTINATION_PORT)]
        text = '%d flows requested, %d generated (%s)' % (
            self.requested, self.generated, ', '.join(parts))
        return text


def plan_flows(count, mode='exact'):
    """How PROX makes `count` flows; ValueError names what to change."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError('flow count must be a whole number >= 1, not %r'
                         % (count,))
    if mode not in FLOW_MODES:
        raise ValueError('flow mode must be one of %s, not %r'
                         % (', '.join(FLOW_MODES), mode))
    if count == 1:
        return FlowPlan(1, 1)
    bits = math.ceil(math.log2(count))
    if 2 ** bits != count and mode == 'exact':
        if count > MAX_RANGE_FLOWS:
            raise ValueError(
                '%d flows: PROX can count one UDP port through at most %d '
                'values; ask for a power of two (random bits) or use flow '
                'mode power-of-two' % (count, MAX_RANGE_FLOWS))
        return FlowPlan(count, count, ranges=(
            (UDP_SOURCE_PORT_OFFSET, UDP_SOURCE_PORT,
             UDP_SOURCE_PORT + count - 1),))
    if bits > MAX_RANDOM_BITS:
        raise ValueError('%d flows need %d random bits; PROX takes at most '
                         '%d here' % (count, bits, MAX_RANDOM_BITS))
    source_bits = (bits + 1) // 2
    randoms = [(UDP_SOURCE_PORT_OFFSET,
                _random_field(UDP_SOURCE_PORT, source_bits))]
    if bits - source_bits:
        randoms.append((UDP_DESTINATION_PORT_OFFSET,
                        _random_field(UDP_DESTINATION_PORT,
                                      bits - source_bits)))
    return FlowPlan(count, 2 ** bits, randoms=tuple(randoms))


def _random_field(base, random_bits, width=16):
    fixed = format(base, '0%db' % width)
    return fixed[:width - random_bits] + 'X' * random_bits


def apply_flows(client, gen_tasks, plan, shift=0):
    """Give every (core, task) in `gen_tasks` the flows of `plan`.

    PROX only resets randoms and ranges on all gen tasks at once, so all
    gen tasks are set together. `shift`: bytes before the IPv4 header
    beyond Ethernet's 14 (4 in 802.1Q-tagged frames).
    """
    client.reset_randoms_all()
    client.reset_ranges_all()
    for core, task in gen_tasks:
        for offset, bits in plan.randoms:
            client.set_random(core, task, offset + shift, bits)
        for offset, first, last in plan.ranges:
            client.set_range(core, task, offset + shift, first, last)


def imix_sequence(mix, limit=128):
    """Frame sizes in the order PROX should cycle through them.

    `mix` is ((size, weight), ...); weights are reduced by their greatest
    common divisor, and sizes interleaved (smooth weighted round robin) so
    that the large frames do not come in one burst.
    """
    mix = [(int(size), int(weight)) for size, weight in mix]
    divisor = 0
    for _size, weight in mix:
        divisor = math.gcd(divisor, weight)
    mix = [(size, weight // divisor) for size, weight in mix]
    total = sum(weight for _size, weight in mix)
    if total > limit:
        raise ValueError('IMIX %s needs %d frames per cycle; PROX cycles '
                         'through at most %d: use smaller weights'
                         % (mix, total, limit))
    current = [0] * len(mix)
    order = []
    for _ in range(total):
        for index, (_size, weight) in enumerate(mix):
            current[index] += weight
        best = max(range(len(mix)), key=lambda i: current[i])
        current[best] -= total
        order.append(mix[best][0])
    return order
