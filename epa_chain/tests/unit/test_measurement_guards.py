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

"""Untrustworthy trials become errors with causes, never figures."""

import testtools

from epa_chain.generators import model
from epa_chain.measurement import campaign
from epa_chain.measurement import guards
from epa_chain.measurement import trial

PROFILE = trial.TrafficProfile(frame_size=trial.FrameSize(size=64))


def result(intended=1000.0, offered=1000.0, tx=60000, rx=60000,
           samples=None):
    spec = trial.TrialSpec(profile=PROFILE, load_fps=intended,
                           duration_s=60.0)
    record = trial.LatencyRecord(samples=samples) if samples else None
    direction = trial.DirectionResult(
        direction='forward', intended_fps=intended, offered_fps=offered,
        achieved_fps=rx / 60.0, tx_frames=tx, rx_frames=rx, latency=record)
    return trial.TrialResult(spec=spec, directions=[direction],
                             started_at=0.0, duration_s=60.0)


class TestCheckTrial(testtools.TestCase):

    def assert_cause(self, cause, outcome, tolerance=0.01):
        error = self.assertRaises(trial.GeneratorError, guards.check_trial,
                                  outcome, tolerance)
        self.assertEqual(cause, error.cause)
        self.assertIn('forward', error.detail)
        return error

    def test_sane_trial_passes(self):
        guards.check_trial(result(rx=59000))
        guards.check_trial(result(offered=995.0))  # within 1 %

    def test_rate_shortfall(self):
        error = self.assert_cause(guards.RATE_SHORTFALL,
                                  result(offered=900.0))
        self.assertIn('900', error.detail)
        # A looser tolerance accepts the same trial.
        guards.check_trial(result(offered=900.0), 0.2)

    def test_stopped_forwarding(self):
        self.assert_cause(guards.STOPPED_FORWARDING, result(rx=0))

    def test_counters_backwards_and_inconsistent(self):
        self.assert_cause(guards.COUNTERS_BACKWARDS, result(rx=-5))
        self.assert_cause(guards.COUNTERS_INCONSISTENT,
                          result(tx=100, rx=101))

    def test_negative_delay(self):
        self.assert_cause(guards.NEGATIVE_DELAY,
                          result(samples=[(0, 10.0), (1, -3.0)]))

    def test_counter_watch(self):
        watch = guards.CounterWatch('prox port 0')
        self.assertEqual(0, watch.update('rx', 100))
        self.assertEqual(50, watch.update('rx', 150))
        error = self.assertRaises(trial.GeneratorError, watch.update, 'rx',
                                  20)
        self.assertEqual(guards.COUNTERS_BACKWARDS, error.cause)
        self.assertIn('150', error.detail)
        watch.reset()
        self.assertEqual(0, watch.update('rx', 20))


class TestCampaignStopsWithACause(testtools.TestCase):

    def run_case(self, **faults):
        sut = model.ModelGenerator(ndr_fps=4e6, **faults)
        plan = campaign.Campaign(frame_sizes=['64', '1518'],
                                 method='rfc2544', latency_duration_s=10)
        lines = []
        document = campaign.run(sut, plan, progress=lines.append)
        return document, lines

    def assert_no_figure(self, case, cause):
        self.assertEqual(cause, case['error']['cause'])
        self.assertIsNone(case['search'])

    def test_generator_too_slow(self):
        # 1518 B line rate is 812,744 fps: a 1 Mfps generator keeps up.
        document, lines = self.run_case(max_tx_fps=1e6)
        self.assert_no_figure(document['cases'][0], guards.RATE_SHORTFALL)
        self.assertIsNone(document['cases'][1]['error'])
        self.assertTrue(any('ERROR' in line for line in lines))
        self.assertEqual([('64 B, 1 flow', guards.RATE_SHORTFALL,
                           document['cases'][0]['error']['detail'])],
                         campaign.errors(document))

    def test_vnf_stops_forwarding(self):
        document, _lines = self.run_case(stop_forwarding_after=3)
        for case in document['cases']:
            self.assertEqual(guards.STOPPED_FORWARDING,
                             case['error']['cause'])
        first = document['cases'][0]
        # Three trials went through before the SUT died; no figure left.
        self.assertEqual(3, len(first['trials']))

    def test_counter_reset(self):
        document, _lines = self.run_case(counter_reset_at=5)
        self.assert_no_figure(document['cases'][0],
                              guards.COUNTERS_BACKWARDS)

    def test_error_during_latency_keeps_search_but_says_phase(self):
        healthy, _lines = self.run_case()
        searched = healthy['cases'][0]['search']['trials']
        # Die right after the search of the first case.
        document, _lines = self.run_case(stop_forwarding_after=searched)
        case = document['cases'][0]
        self.assertIsNotNone(case['search'])
        self.assertEqual('latency', case['error']['phase'])
        self.assertIsNone(case['latency'])
