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

"""A lossy trial's frames are accounted for hop by hop, and reported."""

import collections

import testtools

from epa_chain.generators import model
from epa_chain.measurement import campaign
from epa_chain.measurement import hop_loss
from epa_chain.measurement import readers
from epa_chain.measurement import report
from epa_chain.measurement import results
from epa_chain.measurement import trial
from epa_chain.tests.unit import test_measurement_report as report_tests

Counters = collections.namedtuple(
    'Counters', 'rx_packets tx_packets rx_dropped tx_dropped')

# pvvp, both directions: gen-l -> vnf1-l, vnf1-r -> vnf2-l, vnf2-r -> gen-r
PATHS = {
    'forward': (hop_loss.Hop('gen', 'gen-l', 'vnf-1', 'vnf1-l'),
                hop_loss.Hop('vnf-1', 'vnf1-r', 'vnf-2', 'vnf2-l'),
                hop_loss.Hop('vnf-2', 'vnf2-r', 'gen', 'gen-r')),
    'reverse': (hop_loss.Hop('gen', 'gen-r', 'vnf-2', 'vnf2-r'),
                hop_loss.Hop('vnf-2', 'vnf2-l', 'vnf-1', 'vnf1-r'),
                hop_loss.Hop('vnf-1', 'vnf1-l', 'gen', 'gen-l')),
}
PORTS = ('gen-l', 'gen-r', 'vnf1-l', 'vnf1-r', 'vnf2-l', 'vnf2-r')


class SimulatedSwitch(object):
    """Per-port counters of the pvvp switch, as a trial moves frames.

    Frames a direction loses are lost at `bottleneck`: at the switch's
    delivery to it (ring full) or inside it.
    """

    def __init__(self, bottleneck='vnf-2', where='delivery'):
        self.counts = {p: dict(rx_packets=0, tx_packets=0, rx_dropped=0,
                               tx_dropped=0) for p in PORTS}
        self.bottleneck = bottleneck
        self.where = where
        self.reads = 0

    def read(self):
        self.reads += 1
        return {port: Counters(**c) for port, c in self.counts.items()}

    def carry(self, direction, tx, rx):
        frames, lost = tx, tx - rx
        for hop in PATHS[direction]:
            self.counts[hop.in_port]['rx_packets'] += frames
            out = self.counts[hop.out_port]
            if hop.receiver == self.bottleneck and self.where == 'delivery':
                out['tx_dropped'] += lost
                frames -= lost
            out['tx_packets'] += frames
            if hop.receiver == self.bottleneck and self.where == 'inside':
                frames -= lost


class ModelThroughSwitch(trial.Generator):
    """The model SUT whose trials also move the simulated switch's counts."""

    name = 'model'

    def __init__(self, switch, **options):
        self.model = model.ModelGenerator(**options)
        self.switch = switch

    @property
    def link_bps(self):
        return self.model.link_bps

    def run_trial(self, spec):
        result = self.model.run_trial(spec)
        for found in result.directions:
            self.switch.carry(found.direction, found.tx_frames,
                              found.rx_frames)
        return result


def counters(**by_port):
    base = {p: Counters(0, 0, 0, 0) for p in PORTS}
    base.update({p: Counters(*values) for p, values in by_port.items()})
    return base


class TestAttribute(testtools.TestCase):

    def test_ring_full_at_the_second_vnf(self):
        before = counters()
        # 1000 sent; vnf-1 lost 10 inside, the switch could not deliver
        # 90 to vnf-2 (tx_dropped), the generator counted 2 fewer than
        # delivered to it.
        after = counters(**{'gen-l': (1000, 0, 0, 0),
                            'vnf1-l': (0, 1000, 0, 0),
                            'vnf1-r': (990, 0, 0, 0),
                            'vnf2-l': (0, 900, 0, 90),
                            'vnf2-r': (900, 0, 0, 0),
                            'gen-r': (0, 900, 0, 0)})
        split = hop_loss.attribute('forward', PATHS['forward'], 1000, 898,
                                   before, after)
        self.assertEqual(102, split.lost_frames)
        self.assertEqual(split.lost_frames,
                         sum(s.lost for s in split.segments))
        self.assertEqual({'gen': 2, 'vnf-1': 10, 'vswitch': 0, 'vnf-2': 90},
                         dict(split.by_owner()))
        delivery = [s for s in split.segments if s.where == 'delivery' and
                    s.lost]
        self.assertEqual([('vnf-2', 'vnf2-l', 90, 90)],
                         [(s.owner, s.port, s.lost, s.counted_drops)
                          for s in delivery])
        self.assertIn('its ring was full', delivery[0].describe())

    def test_switch_loss_without_a_counted_drop(self):
        after = counters(**{'gen-l': (100, 0, 0, 0),
                            'vnf1-l': (0, 60, 0, 0),
                            'vnf1-r': (60, 0, 0, 0),
                            'vnf2-l': (0, 60, 0, 0),
                            'vnf2-r': (60, 0, 0, 0),
                            'gen-r': (0, 60, 0, 0)})
        split = hop_loss.attribute('forward', PATHS['forward'], 100, 60,
                                   counters(), after)
        self.assertEqual(40, split.by_owner()['vswitch'])
        switch = next(s for s in split.segments if s.lost)
        self.assertEqual(('switch', 'vnf1-l'), (switch.where, switch.port))

    def test_each_direction_reads_its_own_counters_of_shared_ports(self):
        switch = SimulatedSwitch('vnf-1')
        before = switch.read()
        switch.carry('forward', 500, 500)
        switch.carry('reverse', 500, 470)   # ring full at vnf-1's right
        after = switch.read()
        forward = hop_loss.attribute('forward', PATHS['forward'], 500, 500,
                                     before, after)
        reverse = hop_loss.attribute('reverse', PATHS['reverse'], 500, 470,
                                     before, after)
        self.assertEqual(set(), {s for s in forward.segments if s.lost})
        self.assertEqual(30, reverse.by_owner()['vnf-1'])
        self.assertEqual(1.0, hop_loss.share_of([forward, reverse],
                                                'vnf-1'))

    def test_a_port_missing_from_the_counters_is_named(self):
        after = counters()
        del after['vnf2-l']
        error = self.assertRaises(
            hop_loss.CounterError, hop_loss.attribute, 'forward',
            PATHS['forward'], 10, 5, counters(), after)
        self.assertIn('vnf2-l', str(error))
        self.assertIn('forward', str(error))

    def test_nothing_lost_has_no_share(self):
        self.assertIsNone(hop_loss.share_of([], 'vnf-1'))


def _spec(load):
    return trial.TrialSpec(trial.TrafficProfile(
        trial.FrameSize(64), directions=('forward', 'reverse')), load, 1.0)


class TestCountingGenerator(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.switch = SimulatedSwitch('vnf-2')
        self.inner = ModelThroughSwitch(self.switch, ndr_fps=1000.0,
                                        knee_fps=1200.0, epoch=0)
        self.generator = hop_loss.CountingGenerator(
            self.inner, PATHS, self.switch.read)

    def test_a_lossless_trial_is_read_once_and_not_split(self):
        result = self.generator.run_trial(_spec(900))
        self.assertEqual(1, self.switch.reads)
        self.assertEqual([None, None],
                         [d.loss_by_hop for d in result.directions])

    def test_a_lossy_trial_carries_its_split(self):
        result = self.generator.run_trial(_spec(2000))
        self.assertEqual(2, self.switch.reads)
        for found in result.directions:
            self.assertGreater(found.lost_frames, 0)
            split = found.loss_by_hop
            self.assertEqual(found.lost_frames, split.lost_frames)
            self.assertEqual(found.lost_frames, split.by_owner()['vnf-2'])
        record = results.trial_record(0, 'search', {}, result)
        self.assertEqual(
            result.directions[0].lost_frames,
            record['directions'][0]['loss_by_hop']['by_owner']['vnf-2'])

    def test_a_failed_read_is_noted_and_the_trial_stands(self):
        def broken():
            raise RuntimeError('ovs-ofctl: br-physnet1 is not a bridge')
        generator = hop_loss.CountingGenerator(self.inner, PATHS, broken)
        result = generator.run_trial(_spec(2000))
        self.assertGreater(result.loss_ratio, 0)
        self.assertIsNone(result.directions[0].loss_by_hop)
        self.assertIn('loss not split by hop: ovs-ofctl: br-physnet1 is '
                      'not a bridge', result.notes)

    def test_what_it_wraps_shows_through(self):
        self.assertEqual('model', self.generator.name)
        self.assertEqual(self.inner.model.link_bps, self.generator.link_bps)
        self.assertTrue(self.generator.describe()['loss_by_hop'])
        self.assertIs(self.inner.model, self.generator.model)


class TestKneeReport(testtools.TestCase):

    def _document(self, bottleneck='vnf-2', where='delivery'):
        switch = SimulatedSwitch(bottleneck, where)
        inner = ModelThroughSwitch(switch, ndr_fps=2.5e5, link_bps=10e9,
                                   epoch=0)
        generator = hop_loss.CountingGenerator(inner, PATHS, switch.read)
        plan = campaign.Campaign(frame_sizes=['64'], flow_counts=[1],
                                 directions=('forward', 'reverse'),
                                 method='rfc2544', trial_duration_s=10,
                                 latency_duration_s=10, chain_length=2)
        document = campaign.run(generator, plan)
        results.validate(document)
        return document

    def test_the_knee_is_the_lowest_split_load_above_the_ndr(self):
        document = self._document()
        case = document['cases'][0]
        knee = readers.knee_trial(case)
        ndr = readers.goal_of(case, 'NDR')['throughput_fps']
        lossy = [t['intended_fps'] for t in case['trials']
                 if t['phase'] == 'search' and t['loss_ratio'] > 0]
        self.assertEqual(min(lossy), knee['intended_fps'])
        self.assertGreater(knee['intended_fps'], ndr)

    def test_the_table_names_the_bottleneck(self):
        document = self._document('vnf-1', 'inside')
        text = report.render_tables(document)
        header, rows = report_tests.table_rows(text, 'Where frames were lost')
        self.assertEqual(['Packet Size', 'Load fps/dir', 'Direction',
                          'Owner', 'Where', 'Port', 'Frames lost',
                          'Switch drops', '% of loss'], header)
        # Inside vnf-1: read where it sends on, a port for each direction.
        self.assertEqual({('forward', 'vnf-1', 'inside', 'vnf1-r'),
                          ('reverse', 'vnf-1', 'inside', 'vnf1-l')},
                         {(r[2], r[3], r[4], r[5]) for r in rows})
        self.assertEqual(['100.0', '100.0'], [r[8] for r in rows])

    def test_the_knee_summed_by_owner_as_the_local_run_says_it(self):
        from epa_chain.local import runner
        document = self._document('vnf-2', 'delivery')
        splits = [split for _c, _k, _f, split in
                  readers.knee_splits(document)]
        self.assertEqual(2, len(splits))    # both directions
        lost, owners = readers.lost_by_owner(splits)
        self.assertEqual(lost, owners['vnf-2'])
        (line,) = runner.knee_lines(document)
        self.assertIn('frames lost: vnf-2 100 %', line)

    def test_no_split_no_table(self):
        document = report_tests.measure()
        self.assertNotIn('Where frames were lost',
                         report.render_tables(document))
