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

"""Prove the chain before measuring it, the way the seed reports check it
by hand (seed 000 section 9.2: ping so that OVS learns, look at its tables).

1. Learning: every port's MAC is in its bridge's forwarding table, on that
   port and that VLAN (the VNFs' --tx-first bursts and the generator's
   learning frames taught it, or learning traffic through the chain for
   an engine that is silent until it forwards; nothing is configured
   statically).
2. Rewriting: a probe of a few hundred frames per direction crosses the
   chain; the datapath's own flows show, for every hop, frames from the
   sending port with that port's MAC as source and the configured next
   hop's MAC as destination, output to the next hop's port only.
3. Delivery: the generator got every probe frame back, in every
   direction.
4. No flooding: the bridges' own ports, which receive every frame NORMAL
   floods in any VLAN, got none during the probe; `flooded_since` checks
   the same at the end of the measurement.
5. With several chains (prove_chains), each is proven alone through its
   own generator, and no datapath flow from one chain's port outputs to
   another chain's port: nothing crosses between chains.
"""

import dataclasses
import time
import typing

from epa_chain.measurement import trial

PROBE_FPS = 500
PROBE_S = 1.0
LEARN_TIMEOUT_S = 15.0
WARM_UP_AFTER_S = 1.0    # the generator's and testpmd's frames came first
WARM_UP_BURSTS = 3
WARM_UP_FPS = 100
WARM_UP_S = 0.2


class ProofError(RuntimeError):
    """The chain is not wired as configured: what was seen."""

    def __init__(self, proof):
        self.proof = proof
        super().__init__('; '.join(proof.problems))


@dataclasses.dataclass
class HopSeen:
    direction: str
    in_port: str
    src: str
    dst: str
    expected_out: str
    packets: int
    outputs: typing.Tuple[str, ...]
    ok: bool
    # What the sending port's frames looked like when they did not match.
    instead: typing.Tuple[str, ...] = ()


@dataclasses.dataclass
class Proof:
    learned: typing.Dict[str, bool]
    hops: typing.List[HopSeen]
    delivered: typing.Dict[str, typing.Tuple[int, int]]
    flooded_during_probe: int
    learn_seconds: float
    problems: typing.List[str]
    warm_up_bursts: int = 0
    flooded_while_learning: int = 0
    #: several chains: each chain's proof (as_dict) with its crossings
    chains: typing.List[dict] = dataclasses.field(default_factory=list)
    crossed_frames: int = 0

    @property
    def ok(self):
        return not self.problems

    def as_dict(self):
        return {
            'ok': self.ok, 'problems': list(self.problems),
            'learned': dict(self.learned),
            'learn_seconds': round(self.learn_seconds, 3),
            'hops': [dataclasses.asdict(h) for h in self.hops],
            'delivered': {d: {'tx': tx, 'rx': rx}
                          for d, (tx, rx) in self.delivered.items()},
            'flooded_during_probe': self.flooded_during_probe,
            'warm_up_bursts': self.warm_up_bursts,
            'flooded_while_learning': self.flooded_while_learning,
            'chains': list(self.chains),
            'crossed_frames': self.crossed_frames,
        }

    def lines(self):
        """Human-readable, one check per line."""
        out = []
        missing = [p for p, seen in self.learned.items() if not seen]
        out.append('learning: %d/%d port MACs in the bridges\' tables%s '
                   '(%.1f s)' % (len(self.learned) - len(missing),
                                 len(self.learned),
                                 ': missing ' + ', '.join(missing)
                                 if missing else '', self.learn_seconds))
        if self.warm_up_bursts:
            out.append('learning traffic: %d burst(s) of %d frames through '
                       'the chain (RFC 2544 section 23); %d frames flooded '
                       'while OVS learned' % (
                           self.warm_up_bursts,
                           int(WARM_UP_FPS * WARM_UP_S),
                           self.flooded_while_learning))
        for hop in self.hops:
            out.append('hop %-7s %s -> %s: %s -> %s, %d frames, out %s %s'
                       % (hop.direction, hop.in_port, hop.expected_out,
                          hop.src, hop.dst, hop.packets,
                          ','.join(hop.outputs) or '-',
                          'OK' if hop.ok else 'WRONG'))
        for direction, (tx, rx) in self.delivered.items():
            out.append('delivery %s: %d sent, %d received'
                       % (direction, tx, rx))
        out.append('flooded frames during the probe: %d'
                   % self.flooded_during_probe)
        if self.chains:
            out.append('between %d chains: %d frames crossed (datapath '
                       'flows from one chain\'s port out of another\'s)'
                       % (len(self.chains), self.crossed_frames))
        return out


def flood_counts(switch, plan):
    return {b.name: switch.flooded_frames(b.name) for b in plan.bridges}


def flooded_since(switch, plan, baseline):
    now = flood_counts(switch, plan)
    return sum(now[name] - baseline.get(name, 0) for name in now)


def wait_for_learning(switch, plan, generator, timeout_s=LEARN_TIMEOUT_S,
                      sleep=None, clock=None):
    """Poll the bridges' tables until every port's MAC is on its port.

    The generator's ports teach the switch with learning frames; a VNF
    port is taught by what the VNF sends (testpmd's --tx-first burst).
    An engine that sends nothing until it forwards (PROX) is taught the
    way RFC 2544 section 23 and seed 000's operator do it: learning
    traffic through the chain before any trial. Returns (learned,
    seconds, warm-up bursts sent).
    """
    sleep, clock = sleep or time.sleep, clock or time.monotonic
    started = clock()
    bursts = 0
    while True:
        generator.learn()
        learned = learned_ports(switch, plan)
        elapsed = clock() - started
        if all(learned.values()) or elapsed >= timeout_s:
            return learned, elapsed, bursts
        if elapsed >= WARM_UP_AFTER_S and bursts < WARM_UP_BURSTS:
            _warm_up(plan, generator)
            bursts += 1
        sleep(0.5)


def _spec(plan, fps, seconds):
    """Small frames in every direction of the chain."""
    return trial.TrialSpec(
        profile=trial.TrafficProfile(frame_size=trial.FrameSize(64),
                                     directions=plan.directions),
        load_fps=fps, duration_s=seconds)


def _warm_up(plan, generator):
    try:
        generator.run_trial(_spec(plan, WARM_UP_FPS, WARM_UP_S))
    except trial.GeneratorError:
        pass    # learning traffic: what came back does not matter


def learned_ports(switch, plan):
    entries = {}
    for bridge in plan.bridges:
        for entry in switch.fdb(bridge.name):
            entries[(bridge.name, entry.port, entry.vlan, entry.mac)] = entry
    return {port.name: (port.bridge, port.name, port.vlan, port.mac)
            in entries for port in plan.ports}


def check_hops(plan, flows, probe_frames):
    """Match each expected hop with the datapath flows that carried it."""
    seen = []
    for hop in plan.hops():
        matching = [f for f in flows if f.in_port == hop.in_port and
                    f.eth_src == hop.src and f.eth_dst == hop.dst]
        packets = sum(f.packets for f in matching)
        outputs = tuple(sorted({o for f in matching for o in f.outputs}))
        # The first frames of a flow take OVS's slow path and are not
        # counted in the datapath flow: allow a tenth for them.
        ok = packets >= 0.9 * probe_frames and outputs == (hop.out_port,)
        instead = () if ok else tuple(
            '%s -> %s (%d frames) out %s' % (
                f.eth_src, f.eth_dst, f.packets, ','.join(f.outputs) or
                'nowhere')
            for f in flows if f.in_port == hop.in_port and f not in matching)
        seen.append(HopSeen(hop.direction, hop.in_port, hop.src, hop.dst,
                            hop.out_port, packets, outputs, ok, instead))
    return seen


def prove(plan, switch, generator, probe_fps=PROBE_FPS, probe_s=PROBE_S):
    """Run the four checks; return the Proof (ProofError is the caller's)."""
    problems = []
    before = flood_counts(switch, plan)
    learned, learn_s, bursts = wait_for_learning(switch, plan, generator)
    for port, seen in learned.items():
        if not seen:
            problems.append('OVS has not learned the MAC of %s' % port)
    baseline = flood_counts(switch, plan)
    while_learning = sum(baseline[b] - before.get(b, 0) for b in baseline)
    result = generator.run_trial(_spec(plan, probe_fps, probe_s))
    flows = switch.datapath_flows()
    flooded = flooded_since(switch, plan, baseline)
    delivered = {}
    for direction in result.directions:
        delivered[direction.direction] = (direction.tx_frames,
                                          direction.rx_frames)
        if direction.rx_frames != direction.tx_frames:
            problems.append('%s: %d probe frames sent, %d came back' % (
                direction.direction, direction.tx_frames,
                direction.rx_frames))
    probe_frames = min((tx for tx, _ in delivered.values()), default=0)
    hops = check_hops(plan, flows, probe_frames)
    for hop in hops:
        if not hop.ok:
            problems.append(
                'hop %s %s -> %s: expected %s -> %s out of %s, saw %d '
                'such frames out of %s%s' % (
                    hop.direction, hop.in_port, hop.expected_out, hop.src,
                    hop.dst, hop.expected_out, hop.packets,
                    ','.join(hop.outputs) or 'nothing',
                    '; it sent ' + ', '.join(hop.instead)
                    if hop.instead else ''))
    if flooded:
        problems.append('%d frames flooded during the probe (unknown '
                        'unicast)' % flooded)
    return Proof(learned=learned, hops=hops, delivered=delivered,
                 flooded_during_probe=flooded, learn_seconds=learn_s,
                 problems=problems, warm_up_bursts=bursts,
                 flooded_while_learning=while_learning)


def prove_chains(plan, switch, generators, probe_fps=PROBE_FPS,
                 probe_s=PROBE_S):
    """Each chain proven alone, then merged; one chain: prove() itself.

    Chain K > 0's hops, deliveries and problems are labelled 'chain K'.
    """
    if plan.chain_count == 1:
        return prove(plan, switch, generators[0], probe_fps, probe_s)
    chain_of = {port.name: port.chain for port in plan.ports}
    merged = Proof(learned={}, hops=[], delivered={},
                   flooded_during_probe=0, learn_seconds=0.0, problems=[])
    for chain, generator in enumerate(generators):
        proof = prove(plan.for_chain(chain), switch, generator, probe_fps,
                      probe_s)
        crossed = crossings(switch.datapath_flows(), chain_of, chain)
        _merge(merged, proof, chain, crossed)
    return merged


def crossings(flows, chain_of, chain):
    """{'in -> out': frames} of flows from `chain`'s ports into another's."""
    found = {}
    for flow in flows:
        if chain_of.get(flow.in_port) != chain:
            continue
        for output in flow.outputs:
            if chain_of.get(output, chain) != chain:
                key = '%s -> %s' % (flow.in_port, output)
                found[key] = found.get(key, 0) + flow.packets
    return found


def _merge(merged, proof, chain, crossed):
    label = 'chain %d ' % chain if chain else ''
    merged.learned.update(proof.learned)
    merged.hops += [dataclasses.replace(h, direction=label + h.direction)
                    for h in proof.hops]
    merged.delivered.update({label + d: counts
                             for d, counts in proof.delivered.items()})
    merged.flooded_during_probe += proof.flooded_during_probe
    merged.learn_seconds += proof.learn_seconds
    merged.warm_up_bursts += proof.warm_up_bursts
    merged.flooded_while_learning += proof.flooded_while_learning
    merged.problems += ['chain %d: %s' % (chain, p) for p in proof.problems]
    if crossed:
        merged.problems.append('chain %d: frames crossed into another '
                               'chain: %s' % (chain, ', '.join(
                                   '%s (%d)' % item
                                   for item in sorted(crossed.items()))))
    merged.crossed_frames += sum(crossed.values())
    merged.chains.append(dict(proof.as_dict(), chain=chain,
                              crossed=crossed))
