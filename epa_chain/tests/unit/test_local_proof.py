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

"""The chain proof against a scripted switch, and the runner's reports.

The switch here is a stand-in that answers as the real one parses OVS's
output (epa_chain/local/switch.py, checked against a real OVS in the
functional tests): it lets every way the proof can fail be shown.
"""

import collections
import time
from unittest import mock

import testtools

from epa_chain.local import proof
from epa_chain.local import runner
from epa_chain.measurement import trial
from epa_chain.tests.unit import test_local_plan

Fdb = collections.namedtuple('Fdb', 'port vlan mac age_s')
Flow = collections.namedtuple('Flow',
                              'in_port eth_src eth_dst packets outputs raw')


class ScriptedSwitch:
    """Learns every port, carries every hop: then tests break one thing."""

    def __init__(self, plan, probe_frames):
        self.plan = plan
        self.unlearned = set()
        self.learned_from_traffic = set()
        self.wrong_dst = None
        self.flood_per_probe = 0
        self.flooded = collections.Counter()
        self.probe_frames = probe_frames

    def fdb(self, bridge):
        return [Fdb(p.name, p.vlan, p.mac, 1) for p in self.plan.ports
                if p.bridge == bridge and p.name not in self.unlearned]

    def flooded_frames(self, bridge):
        return self.flooded[bridge]

    def carry_probe(self):
        self.unlearned -= self.learned_from_traffic
        for bridge in self.plan.bridges:
            self.flooded[bridge.name] += self.flood_per_probe

    def datapath_flows(self):
        flows = []
        for hop in self.plan.hops():
            dst, out = hop.dst, hop.out_port
            if hop.in_port == self.wrong_dst:
                dst, out = 'fa:16:3e:99:99:99', 'LOCAL'
            flows.append(Flow(hop.in_port, hop.src, dst,
                              self.probe_frames - 1, (out,), ''))
        return flows


class ScriptedGenerator:

    def __init__(self, switch, lose=0):
        self.switch = switch
        self.lose = lose
        self.learned = 0

    def learn(self):
        self.learned += 1

    def run_trial(self, spec):
        self.switch.carry_probe()
        frames = int(spec.load_fps * spec.duration_s)
        return trial.TrialResult(spec, [
            trial.DirectionResult(d, spec.load_fps, spec.load_fps,
                                  spec.load_fps, frames, frames - self.lose)
            for d in spec.profile.directions], time.time(), spec.duration_s)


class TestProof(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.plan = test_local_plan._plan('pvvp')
        frames = int(proof.PROBE_FPS * proof.PROBE_S)
        self.switch = ScriptedSwitch(self.plan, frames)
        self.generator = ScriptedGenerator(self.switch)

    def prove(self):
        return proof.prove(self.plan, self.switch, self.generator)

    def test_a_wired_chain_passes_every_check(self):
        found = self.prove()
        self.assertEqual([], found.problems)
        self.assertEqual(6, len(found.hops))
        self.assertTrue(all(found.learned.values()))
        self.assertEqual({'forward', 'reverse'}, set(found.delivered))
        text = '\n'.join(found.lines())
        self.assertIn('learning: 6/6', text)
        self.assertIn('flooded frames during the probe: 0', text)

    def test_a_vnf_that_does_not_rewrite_is_named_with_its_hop(self):
        self.switch.wrong_dst = 'vhu-v1-r'
        found = self.prove()
        self.assertFalse(found.ok)
        self.assertEqual(['vhu-v1-r'],
                         [h.in_port for h in found.hops if not h.ok])
        self.assertIn('hop forward vhu-v1-r -> vhu-v2-l', found.problems[0])
        self.assertIn('it sent fa:16:3e:00:00:04 -> fa:16:3e:99:99:99 (499 '
                      'frames) out LOCAL', found.problems[0])

    def test_flooding_during_the_probe_fails_it(self):
        self.switch.flood_per_probe = 3
        found = self.prove()
        self.assertEqual(6, found.flooded_during_probe)
        self.assertIn('6 frames flooded', ' '.join(found.problems))

    def test_lost_probe_frames_fail_delivery(self):
        self.generator.lose = 2
        found = self.prove()
        self.assertIn('forward: 500 probe frames sent, 498 came back',
                      found.problems)

    def test_a_silent_engine_is_taught_by_learning_traffic(self):
        # PROX sends nothing until it forwards: the first frames through
        # the chain teach OVS its ports, and are flooded while they do.
        silent = {'vhu-v1-l', 'vhu-v1-r'}
        self.switch.unlearned |= silent
        self.switch.learned_from_traffic |= silent
        self.switch.flood_per_probe = 0
        clock = iter([0, 0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5,
                      5.0, 5.5, 6.0, 6.5, 7.0])
        self.patch(proof.time, 'monotonic', lambda: next(clock))
        self.patch(proof.time, 'sleep', lambda s: None)
        found = proof.prove(self.plan, self.switch, self.generator)
        self.assertEqual([], found.problems)
        self.assertEqual(1, found.warm_up_bursts)
        self.assertIn('learning traffic: 1 burst(s) of 20 frames',
                      '\n'.join(found.lines()))

    def test_a_port_never_learned_is_named(self):
        self.switch.unlearned.add('vhu-v2-l')
        learned, _seconds, bursts = proof.wait_for_learning(
            self.switch, self.plan, self.generator, timeout_s=5.0,
            sleep=lambda s: None, clock=iter(range(100)).__next__)
        self.assertFalse(learned['vhu-v2-l'])
        self.assertGreater(self.generator.learned, 1)   # it kept teaching
        self.assertEqual(proof.WARM_UP_BURSTS, bursts)  # and sent traffic


def _document(vnf_count, ndr_by_size, errors=(), flooded=0):
    cases = []
    for size, ndr in ndr_by_size.items():
        cases.append({
            'frame_size': {'label': str(size), 'size': size}, 'flows': 1,
            'directions': ['forward'],
            'search': {'goals': [
                {'name': 'PDR', 'loss_ratio': 0.005,
                 'throughput_fps': ndr * 1.1 if ndr else None},
                {'name': 'NDR', 'loss_ratio': 0.0, 'throughput_fps': ndr}]},
            'error': None})
    for cause in errors:
        cases[0]['error'] = {'cause': cause, 'detail': 'd',
                             'phase': 'search'}
    testbed = {'vnf_count': vnf_count,
               'end_checks': {'learned': {'a': True}, 'all_learned': True,
                              'flooded_since_proof': flooded}}
    return {'cases': cases, 'testbed': testbed,
            'parameters': {'loss_goals': {'NDR': 0.0, 'PDR': 0.005}}}


class TestRunnerReports(testtools.TestCase):

    def test_chain_lengths_as_ratios_to_the_first(self):
        table = runner.comparison([_document(0, {64: 40000, 1518: 30000}),
                                   _document(1, {64: 20000, 1518: 15000}),
                                   _document(3, {64: 10000, 1518: None})])
        ratios = {(r['vnf_count'], r['frame_size']): r['ratio']
                  for r in table['rows']}
        self.assertEqual(0.5, ratios[(1, '64')])
        self.assertEqual(0.25, ratios[(3, '64')])
        self.assertIsNone(ratios[(3, '1518')])
        text = runner.render_comparison(table)
        self.assertIn('(OVS alone)', text)
        self.assertIn('20,000 (0.50)', text)

    def test_flooding_or_errors_make_the_run_fail(self):
        self.assertEqual([], runner.failures(_document(1, {64: 1000})))
        self.assertIn('7 frames flooded during the measurement',
                      runner.failures(_document(1, {64: 1000}, flooded=7)))
        self.assertEqual(1, len(runner.failures(
            _document(1, {64: 1000}, errors=['rate shortfall']))))


class TestCrossings(testtools.TestCase):
    """A datapath flow from one chain's port out of another's crossed."""

    CHAIN_OF = {'vhu-v1-l': 0, 'gen-left': 0, 'vhu-v2-l': 1, 'g1-left': 1}

    def test_flows_inside_a_chain_cross_nothing(self):
        flows = [Flow('gen-left', 'a', 'b', 500, ('vhu-v1-l',), ''),
                 Flow('g1-left', 'c', 'd', 500, ('vhu-v2-l',), '')]
        self.assertEqual({}, proof.crossings(flows, self.CHAIN_OF, 0))
        self.assertEqual({}, proof.crossings(flows, self.CHAIN_OF, 1))

    def test_a_flow_into_another_chain_is_counted_by_ports(self):
        flows = [Flow('gen-left', 'a', 'b', 40, ('vhu-v1-l', 'vhu-v2-l'),
                      ''),
                 Flow('gen-left', 'a', 'x', 2, ('g1-left',), '')]
        self.assertEqual({'gen-left -> vhu-v2-l': 40,
                          'gen-left -> g1-left': 2},
                         proof.crossings(flows, self.CHAIN_OF, 0))
        # Chain 1's view: those flows are not from its ports.
        self.assertEqual({}, proof.crossings(flows, self.CHAIN_OF, 1))

    def test_one_chain_is_proven_as_before(self):
        plan = test_local_plan._plan('pvp')
        seen = []
        with mock.patch.object(proof, 'prove', side_effect=lambda *a:
                               seen.append(a) or 'proof'):
            self.assertEqual('proof', proof.prove_chains(
                plan, 'switch', ['generator']))
        self.assertEqual(plan, seen[0][0])

    def test_two_chains_each_alone_then_merged_with_crossings(self):
        plan = test_local_plan._plan('pvp', chain_count=2)

        def prove(chain_plan, switch, generator, *rest):
            chain = chain_plan.generator.chain
            return proof.Proof(
                learned={p.name: True for p in chain_plan.ports},
                hops=[], delivered={'forward': (500, 500)},
                flooded_during_probe=0, learn_seconds=1.0,
                problems=['lost one'] if chain else [])

        switch = mock.Mock()
        switch.datapath_flows.return_value = [
            Flow('g1-left', 'a', 'b', 7, ('gen-left',), '')]
        with mock.patch.object(proof, 'prove', side_effect=prove):
            merged = proof.prove_chains(plan, switch, ['g0', 'g1'])
        self.assertEqual({'forward': (500, 500),
                          'chain 1 forward': (500, 500)}, merged.delivered)
        self.assertEqual(7, merged.crossed_frames)
        self.assertEqual(['chain 1: lost one',
                          'chain 1: frames crossed into another chain: '
                          'g1-left -> gen-left (7)'], merged.problems)
        self.assertEqual([0, 1], [c['chain'] for c in merged.chains])
        self.assertEqual(2.0, merged.learn_seconds)
        self.assertIn('between 2 chains: 7 frames crossed',
                      merged.lines()[-1])
