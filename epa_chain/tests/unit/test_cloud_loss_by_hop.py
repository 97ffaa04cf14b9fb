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

"""`epa-chain measure --loss-by-hop`: a proof's path, the host's counters.

The cloud test runs it on the single-host cloud's vE-CPE chain through
the external tester.
"""

import subprocess

import fixtures
import testtools

from epa_chain.cloud import ovs_hops
from epa_chain.cloud import proof
from epa_chain.cloud import workflow
from epa_chain.commands import measure
from epa_chain.measurement import hop_loss
from epa_chain.tests.unit import test_measurement_hop_loss as hop_tests


def _count(server, role, interface, counted, frames=100):
    return {'server': server, 'role': role, 'port': 'p-' + interface,
            'interface': interface, 'counted': counted, 'frames': frames}


# prove's hop_counts of a 2-VNF chain behind the external tester: the
# tester's own ends have no Neutron port and are not counted.
TESTER_PROOF = [
    {'direction': 'forward', 'hop_counts': [
        _count('vnf-1', 'left', 'vhu1l', 'delivered'),
        _count('vnf-1', 'right', 'vhu1r', 'sent'),
        _count('vnf-2', 'left', 'vhu2l', 'delivered'),
        _count('vnf-2', 'right', 'vhu2r', 'sent')]},
    {'direction': 'reverse', 'hop_counts': [
        _count('vnf-2', 'right', 'vhu2r', 'delivered'),
        _count('vnf-2', 'left', 'vhu2l', 'sent'),
        _count('vnf-1', 'right', 'vhu1r', 'delivered'),
        _count('vnf-1', 'left', 'vhu1l', 'sent')]},
]
IN_STACK_PROOF = [
    {'direction': 'forward', 'hop_counts': [
        _count('gen', 'left', 'vhugl', 'sent'),
        _count('vnf-1', 'left', 'vhu1l', 'delivered'),
        _count('vnf-1', 'right', 'vhu1r', 'sent'),
        _count('gen', 'right', 'vhugr', 'delivered')]},
]

SHOW = '''OFPT_FEATURES_REPLY (OF1.3) (xid=0x2): dpid:0000f2b1c0a4d94f
n_tables:254, n_buffers:0
OFPST_PORT_DESC reply (OF1.3) (xid=0x3):
 1(int-br-physnet1): addr:6e:0e:8f:3d:54:2c
     config:     0
 %s(%s): addr:fa:16:3e:00:00:01
     config:     0
 LOCAL(br-int): addr:f2:b1:c0:a4:d9:4f
'''
DUMP = '''OFPST_PORT reply (OF1.3) (xid=0x2): 2 ports
  port  %s: rx pkts=%d, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=%d, bytes=0, drop=%d, errs=0, coll=0
           duration=3552.153s
  port LOCAL: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=0, bytes=0, drop=8, errs=0, coll=0
           duration=3552.159s
'''


class RecordedOVS(object):
    """ovs-vsctl and ovs-ofctl as a single-host cloud's OVS answers."""

    def __init__(self, ports, fail=None):
        self.ports = ports      # {bridge: (number, name, rx, tx, tx_drop)}
        self.fail = fail
        self.calls = []

    def __call__(self, argv, **kwargs):
        self.calls.append((argv, kwargs))
        if self.fail and self.fail in argv:
            return subprocess.CompletedProcess(argv, 1, '', 'ovs-ofctl: '
                                               '%s is not a bridge' % argv[-1])
        if argv[-1] == 'list-br':
            out = '\n'.join(sorted(self.ports)) + '\n'
        else:
            number, name, rx, tx, drop = self.ports[argv[-1]]
            out = SHOW % (number, name) if 'show' in argv else \
                DUMP % (number, rx, tx, drop)
        return subprocess.CompletedProcess(argv, 0, out, '')


class TestPaths(testtools.TestCase):

    def test_a_tester_outside_the_switch_leaves_the_ends_open(self):
        paths = ovs_hops.loss_paths(TESTER_PROOF)
        self.assertEqual((
            hop_loss.Hop('external-tester', None, 'vnf-1', 'vhu1l'),
            hop_loss.Hop('vnf-1', 'vhu1r', 'vnf-2', 'vhu2l'),
            hop_loss.Hop('vnf-2', 'vhu2r', 'external-tester', None)),
            paths['forward'])
        self.assertEqual('vhu2r', paths['reverse'][0].out_port)

    def test_an_in_stack_generator_has_both_ends_on_the_switch(self):
        self.assertEqual({'forward': (
            hop_loss.Hop('gen', 'vhugl', 'vnf-1', 'vhu1l'),
            hop_loss.Hop('vnf-1', 'vhu1r', 'gen', 'vhugr'))},
            ovs_hops.loss_paths(IN_STACK_PROOF))

    def test_a_proof_without_counts_gives_no_path(self):
        self.assertEqual({}, ovs_hops.loss_paths([{'direction': 'forward'}]))

    def test_open_ends_still_sum_to_the_loss(self):
        path = ovs_hops.loss_paths(TESTER_PROOF)['forward']
        before = {p: hop_tests.Counters(0, 0, 0, 0)
                  for p in ('vhu1l', 'vhu1r', 'vhu2l', 'vhu2r')}
        # 1000 sent by the tester, 990 reached vnf-1, 980 left it, 970
        # delivered to vnf-2 (10 ring drops), 970 left it, 965 came back.
        after = {'vhu1l': hop_tests.Counters(0, 990, 0, 0),
                 'vhu1r': hop_tests.Counters(980, 0, 0, 0),
                 'vhu2l': hop_tests.Counters(0, 970, 0, 10),
                 'vhu2r': hop_tests.Counters(970, 0, 0, 0)}
        split = hop_loss.attribute('forward', path, 1000, 965, before,
                                   after)
        self.assertEqual(35, sum(s.lost for s in split.segments))
        self.assertEqual({'vswitch': 15, 'vnf-1': 10, 'vnf-2': 10},
                         dict(split.by_owner()))
        self.assertNotIn('send', [s.where for s in split.segments])
        self.assertNotIn('receive', [s.where for s in split.segments])


class TestCountedHops(testtools.TestCase):

    def test_a_chain_output_becomes_what_prove_records(self):
        hops = [{'server': 'external-tester', 'role': 'left', 'port': None},
                {'server': 'vnf-1', 'role': 'left', 'port': 'p1'},
                {'server': 'vnf-1', 'role': 'right', 'port': 'p2'},
                {'server': 'external-tester', 'role': 'right',
                 'port': None}]
        interfaces = {'p1': ('vhu1l', 0, 0), 'p2': ('vhu1r', 0, 0)}
        counted = ovs_hops.counted_hops(hops, interfaces)
        self.assertEqual([('vnf-1', 'vhu1l', 'delivered'),
                          ('vnf-1', 'vhu1r', 'sent')],
                         [(c['server'], c['interface'], c['counted'])
                          for c in counted])
        self.assertEqual((
            hop_loss.Hop('external-tester', None, 'vnf-1', 'vhu1l'),
            hop_loss.Hop('vnf-1', 'vhu1r', 'external-tester', None)),
            ovs_hops.loss_paths([{'direction': 'forward',
                                  'hop_counts': counted}])['forward'])
        del interfaces['p2']
        error = self.assertRaises(ovs_hops.OVSError, ovs_hops.counted_hops,
                                  hops, interfaces)
        self.assertIn('port p2 (vnf-1:right)', str(error))


class TestLiveCounters(testtools.TestCase):

    def test_every_bridge_read_by_name_over_openflow_1_3(self):
        run = RecordedOVS({'br-int': ('5', 'vhu1l', 10, 20, 3),
                           'br-physnet1': ('2', 'epa-tester-l', 7, 0, 0)})
        counters = ovs_hops.live_counters(run)
        self.assertEqual((10, 20, 0, 3), (
            counters['vhu1l'].rx_packets, counters['vhu1l'].tx_packets,
            counters['vhu1l'].rx_dropped, counters['vhu1l'].tx_dropped))
        self.assertEqual(7, counters['epa-tester-l'].rx_packets)
        for argv, kwargs in run.calls[1:]:
            self.assertEqual(['ovs-ofctl', '-O', 'OpenFlow10,OpenFlow13'],
                             argv[:3])
            self.assertEqual(ovs_hops.OVS_TIMEOUT_S, kwargs['timeout'])

    def test_a_failed_read_names_the_command(self):
        run = RecordedOVS({'br-int': ('5', 'vhu1l', 1, 1, 0)},
                          fail='dump-ports')
        error = self.assertRaises(ovs_hops.OVSError,
                                  ovs_hops.live_counters, run)
        self.assertIn('dump-ports br-int failed', str(error))

    def test_ports_missing_here_are_said_before_measuring(self):
        paths = ovs_hops.loss_paths(TESTER_PROOF)
        present = {'vhu1l': None, 'vhu1r': None}
        reason = workflow.absent_ports(paths, lambda: present)
        self.assertIn('vhu2l, vhu2r not on this host\'s Open vSwitch',
                      reason)
        self.assertEqual('', workflow.absent_ports(
            paths, lambda: dict(present, vhu2l=None, vhu2r=None)))

        def unreadable():
            raise ovs_hops.OVSError('ovs-vsctl not found')
        self.assertEqual('ovs-vsctl not found',
                         workflow.absent_ports(paths, unreadable))


class TestParkedVnfsOfTheProof(testtools.TestCase):
    """The proof names the chain's parked VNFs: measure runs their tasks."""

    def _proof(self, **fields):
        import json
        import os

        tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(tmp, 'proof.json')
        with open(path, 'w') as stream:
            json.dump(dict({'schema': proof.SCHEMA, 'proven': True,
                            'directions': IN_STACK_PROOF}, **fields),
                      stream)
        return path

    def test_the_endpoints_come_with_the_path(self):
        paths, parked = proof.proven_chain(self._proof(
            vnf_control_endpoints={'vnf1': {'host': '10.0.0.6',
                                            'port': 8474}}), ('forward',))
        self.assertEqual(['forward'], sorted(paths))
        self.assertEqual([('vnf1', '10.0.0.6', 8474)],
                         [(e.node, e.host, e.port) for e in parked])
        self.assertEqual((), proof.proven_chain(
            self._proof(), ('forward',))[1])

    def test_garbled_endpoints_name_the_field(self):
        error = self.assertRaises(
            ValueError, proof.proven_chain, self._proof(
                vnf_control_endpoints={'vnf1': {'host': 'h',
                                                'port': 'x'}}),
            ('forward',))
        self.assertIn('vnf_control_endpoints is not what prove writes',
                      str(error))

    def test_tasks_run_for_the_campaign_only(self):
        import dataclasses

        from epa_chain.cloud import vnf_tasks
        from epa_chain import generators
        from epa_chain.tests.unit import prox_replay

        transcript = prox_replay.Transcript()
        server = prox_replay.ReplayServer(
            lambda line: prox_replay.Reply()
            if line in ('start all', 'stop all') else None,
            transcript.version_reply)
        tmp = self.useFixture(fixtures.TempDir()).path
        with server:
            args = measure_parser().parse_args([
                '--generator', 'model', '--frame-sizes', '64',
                '--method', 'rfc2544', '--trial-duration', '1',
                '--json', tmp + '/out.json', '-q'])
            # What --loss-by-hop takes from a proof, without the switch.
            request = dataclasses.replace(
                measure._request(args), vnf_endpoints=(vnf_tasks.Endpoint(
                    'vnf1', '127.0.0.1', server.port),))
            seen = []
            model = generators.create(request.generator, **request.options)
            real = model.run_trial

            def trial(spec):
                seen.append(list(server.received))
                return real(spec)

            model.run_trial = trial
            self.assertEqual(0, measure._measure(request, model))
        commands = [c for c in server.received if c != 'version']
        self.assertEqual(['start all', 'stop all'], commands)
        # Every trial ran with the tasks started and not yet parked.
        self.assertTrue(seen)
        for received in seen:
            self.assertIn('start all', received)
            self.assertNotIn('stop all', received)
        import json
        with open(tmp + '/out.json') as stream:
            document = json.load(stream)
        self.assertEqual(['started', 'parked'], [
            e['action'] for e in document['cloud']['vnf_tasks']['events']])
        from epa_chain.measurement import results
        results.validate(document, 'out.json')


def measure_parser():
    import argparse

    parser = argparse.ArgumentParser()
    measure.add_arguments(parser)
    return parser


class TestChainsMeasuredTogether(testtools.TestCase):
    """measure with a --prox-endpoint per chain of a chain_count stack."""

    def _proof(self, chains):
        import json
        import os

        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'proof.json')
        with open(path, 'w') as stream:
            json.dump({'schema': proof.SCHEMA, 'proven': True,
                       'directions': IN_STACK_PROOF, 'chains': chains},
                      stream)
        return path

    def _chain(self, node):
        return {'index': 0, 'directions': IN_STACK_PROOF,
                'vnf_control_endpoints': {node: {'host': '10.0.0.6',
                                                 'port': 8474}}}

    def test_every_chain_of_the_proof_in_order(self):
        path = self._proof([self._chain('vnf1'), self._chain('c1-vnf1')])
        chains = proof.proven_chains(path, ('forward',))
        self.assertEqual(2, len(chains))
        self.assertEqual(['c1-vnf1'], [e.node for e in chains[1][1]])
        one = self._proof([self._chain('vnf1')])
        self.assertEqual(1, len(proof.proven_chains(one, ('forward',))))

    def test_a_garbled_chain_is_named_by_index(self):
        path = self._proof([self._chain('vnf1'), 'x'])
        error = self.assertRaises(ValueError, proof.proven_chains, path,
                                  ('forward',))
        self.assertIn('chains[1]', str(error))

    def _args(self, *extra):
        import os

        out = os.path.join(self.useFixture(fixtures.TempDir()).path,
                           'out.json')
        return measure_parser().parse_args(
            ['--generator', 'prox', '--frame-sizes', '64', '--json', out] +
            list(extra))

    def test_one_endpoint_per_chain_and_the_proof_must_agree(self):
        request = measure._request(self._args(
            '--prox-endpoint', '127.0.0.1:8474', '--prox-endpoint',
            '127.0.0.2:8474'))
        self.assertEqual(('127.0.0.1:8474', '127.0.0.2:8474'),
                         request.prox_endpoints)
        self.assertEqual([('127.0.0.2', 8474)], [
            (o['host'], o['port']) for o in request.more_options])
        error = self.assertRaises(ValueError, measure._request, self._args(
            '--prox-endpoint', '127.0.0.1:8474', '--prox-endpoint',
            '127.0.0.1:8474'))
        self.assertIn('twice', str(error))
        path = self._proof([self._chain('vnf1'), self._chain('c1-vnf1')])
        error = self.assertRaises(ValueError, measure._request, self._args(
            '--prox-endpoint', '127.0.0.1:8474', '--loss-by-hop', path))
        self.assertIn('proves 2 chain(s), --prox-endpoint gives 1',
                      str(error))

    def test_each_chains_parked_vnfs_are_named_apart(self):
        # prove records each chain's parked VNFs under their node names:
        # vnf1 in both chains here.
        path = self._proof([self._chain('vnf1'), self._chain('vnf1')])
        _paths, parked = measure._proven(path, ('forward',), 2)
        self.assertEqual(['vnf1', 'chain1-vnf1'], [e.node for e in parked])

    def test_several_generators_run_together_each_split_by_hop(self):
        from epa_chain.generators import model
        from epa_chain.measurement import together

        members = [model.ModelGenerator(), model.ModelGenerator()]
        self.assertIs(members[0], workflow.chains_generator(members[:1]))
        paths = {'forward': ()}
        both = workflow.chains_generator(members, (paths, paths))
        self.assertIsInstance(both, together.TogetherGenerator)
        self.assertEqual([hop_loss.CountingGenerator] * 2,
                         [type(m) for m in both.members])
