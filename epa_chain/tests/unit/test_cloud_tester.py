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

"""The external tester without a cloud: its plan from a stack's outputs,
its tagged frames, its clean-up, and prove's --generator-endpoint. The
cloud test (epa_chain/tests/cloud) attaches it to a real chain."""

import contextlib
import io
import json
import os
import shutil
import stat
import subprocess
import tempfile
import unittest
from unittest import mock

import testtools

from epa_chain.chain import node_config
from epa_chain import cli
from epa_chain.cloud import hop_check
from epa_chain.cloud import ovs_hops
from epa_chain.cloud import tester
from epa_chain.commands import prove
from epa_chain.measurement import trial
from epa_chain.prox import gen_config
from epa_chain.prox import generator as prox_generator
from epa_chain.prox import traffic

MAPPINGS = 'physnet1:br-physnet1,physnet2:br-physnet2'
T = ovs_hops.EXTERNAL_TESTER


def _hop(server, role, mac, network, vlan, port='p'):
    return {'server': server, 'role': role, 'mac': mac, 'network': network,
            'vlan': vlan, 'port': None if server == T else port}


def vecpe_outputs(bidirectional=True):
    """The chain outputs of the vecpe-bidir preset as shipped.

    forward_chain and reverse_chain as chain.yaml gives them (seed 000
    Table 8-3, Figure 8-11).
    """
    forward = [
        _hop(T, 'left', '00:11:00:00:00:10', 'net-phys1-1001', 1001),
        _hop('vnf1', 'left', '00:00:00:00:00:10', 'net-phys1-1001', 1001),
        _hop('vnf1', 'right', '00:00:00:00:00:11', 'net-phys1-1002', 1002),
        _hop('vnf2', 'left', '00:00:00:00:00:20', 'net-phys1-1002', 1002),
        _hop('vnf2', 'right', '00:00:00:00:00:21', 'net-phys2-2001', 2001),
        _hop('vnf3', 'left', '00:00:00:00:00:30', 'net-phys2-2001', 2001),
        _hop('vnf3', 'right', '00:00:00:00:00:31', 'net-phys2-2002', 2002),
        _hop(T, 'right', '00:22:00:00:00:10', 'net-phys2-2002', 2002)]
    return {'forward_chain': forward,
            'reverse_chain': list(reversed(forward)) if bidirectional
            else []}


PARAMETERS = {'vnf_count': '3', 'endpoints': 'external',
              'net0_physical_network': 'physnet1',
              'net3_physical_network': 'physnet2',
              'generator_latency_bucket_shift': '20'}


def vecpe_plan(**kwargs):
    return tester.plan('vecpe', vecpe_outputs(**kwargs), PARAMETERS,
                       tester.parse_bridge_mappings(MAPPINGS))


class PlanTest(testtools.TestCase):

    def test_the_ixia_of_seed_000_on_both_provider_bridges(self):
        plan = vecpe_plan()
        left, right = plan.ends
        self.assertEqual(('00:11:00:00:00:10', 'br-physnet1', 1001,
                          '00:00:00:00:00:10'),
                         (left.mac, left.bridge, left.vlan,
                          left.next_hop_mac))
        self.assertEqual(('00:22:00:00:00:10', 'br-physnet2', 2002,
                          '00:00:00:00:00:31'),
                         (right.mac, right.bridge, right.vlan,
                          right.next_hop_mac))
        self.assertEqual('127.0.0.1:8474', plan.endpoint)
        # The runtime reads it with the same code as in the images.
        config = node_config.parse_user_data(plan.user_data())
        self.assertEqual('generator', config.role)
        self.assertTrue(all(p.tagged for p in config.ports.values()))
        self.assertEqual(20, config.latency_bucket_shift)
        self.assertEqual([('forward', 'left', '00:00:00:00:00:10'),
                          ('reverse', 'right', '00:00:00:00:00:31')],
                         [(f.direction, f.tx_port, f.next_hop_mac)
                          for f in config.flows])

    def test_a_translated_tosca_chain_has_no_vnf_count(self):
        parameters = dict(PARAMETERS)
        del parameters['vnf_count']
        plan = tester.plan('tosca-vecpe', vecpe_outputs(), parameters,
                           tester.parse_bridge_mappings(MAPPINGS))
        self.assertEqual('physnet2', plan.ends[1].physical_network)
        del parameters['net3_physical_network']
        error = self.assertRaises(
            tester.TesterError, tester.plan, 'x', vecpe_outputs(),
            parameters, tester.parse_bridge_mappings(MAPPINGS))
        self.assertIn('no parameter net3_physical_network', str(error))

    def test_the_histogram_width_given_wins_over_the_stacks(self):
        self.assertEqual(20, vecpe_plan().latency_bucket_shift)
        plan = tester.plan('vecpe', vecpe_outputs(), PARAMETERS,
                           tester.parse_bridge_mappings(MAPPINGS),
                           latency_bucket_shift=21)
        config = node_config.parse_user_data(plan.user_data())
        self.assertEqual(21, config.latency_bucket_shift)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main(['tester', 'up', 'vecpe', '--bridge-mappings',
                             MAPPINGS, '--prox-binary', '/bin/true',
                             '--latency-bucket-shift', '31'])
        self.assertEqual(2, code)
        self.assertIn('--latency-bucket-shift 31: 11..30', err.getvalue())

    def test_what_the_runtime_would_refuse_is_refused_at_plan_time(self):
        outputs = vecpe_outputs()
        outputs['forward_chain'][1]['mac'] = 'not-a-mac'
        error = self.assertRaises(
            tester.TesterError, tester.plan, 'vecpe', outputs, PARAMETERS,
            tester.parse_bridge_mappings(MAPPINGS))
        self.assertIn('flows[0].next_hop_mac', str(error))
        error = self.assertRaises(
            tester.TesterError, tester.plan, 'vecpe', vecpe_outputs(),
            dict(PARAMETERS, generator_latency_bucket_shift='40'),
            tester.parse_bridge_mappings(MAPPINGS))
        self.assertIn('latency_bucket_shift', str(error))

    def test_unidirectional_has_one_flow(self):
        plan = vecpe_plan(bidirectional=False)
        self.assertIsNone(plan.ends[1].next_hop_mac)
        config = node_config.parse_user_data(plan.user_data())
        self.assertEqual(['forward'], [f.direction for f in config.flows])

    def test_a_stack_with_its_own_generator_is_refused(self):
        outputs = vecpe_outputs()
        for hop in (outputs['forward_chain'][0],
                    outputs['forward_chain'][-1]):
            hop['server'] = 'generator'
        error = self.assertRaises(
            tester.TesterError, tester.plan, 'pvp', outputs,
            dict(PARAMETERS, endpoints='generator'),
            tester.parse_bridge_mappings(MAPPINGS))
        self.assertIn("its parameter endpoints is 'generator'", str(error))

    def test_an_end_without_a_bridge_says_which_mapping(self):
        error = self.assertRaises(
            tester.TesterError, tester.plan, 'vecpe', vecpe_outputs(),
            PARAMETERS, tester.parse_bridge_mappings('physnet1:br-physnet1'))
        self.assertIn("physical network 'physnet2'", str(error))
        self.assertIn('add physnet2:BRIDGE', str(error))

    def test_an_end_without_a_vlan_is_refused(self):
        outputs = vecpe_outputs()
        outputs['forward_chain'][-1]['vlan'] = None
        error = self.assertRaises(
            tester.TesterError, tester.plan, 'vecpe', outputs, PARAMETERS,
            tester.parse_bridge_mappings(MAPPINGS))
        self.assertIn('no VLAN segment', str(error))

    def test_bridge_mappings_are_checked(self):
        self.assertEqual({'physnet1': 'br-physnet1',
                          'physnet2': 'br-physnet2'},
                         tester.parse_bridge_mappings(MAPPINGS))
        for bad in ('', 'physnet1', 'physnet1:-br', 'physnet1:br x',
                    'physnet1:' + 'b' * 16, ':br-x'):
            self.assertRaises(ValueError, tester.parse_bridge_mappings, bad)


class TaggedFramesTest(testtools.TestCase):

    def config(self):
        return node_config.parse_user_data(vecpe_plan().user_data())

    def render(self, config):
        devargs = {'left': 'net_virtio_user0,path=/s/l.sock',
                   'right': 'net_virtio_user1,path=/s/r.sock'}
        return gen_config.render(config, devargs, [0, 1], compact=True)

    def test_frames_carry_each_ports_vlan_and_marks_move_on(self):
        text = self.render(self.config())
        # 00:00:00:00:00:10 <- 00:11:00:00:00:10, 802.1Q VID 1001, IPv4
        self.assertIn('pkt inline=00 00 00 00 00 10 00 11 00 00 00 10 81 00 '
                      '03 e9 08 00 45', text)
        # the reverse direction leaves on VLAN 2002 (0x7d2)
        self.assertIn('00 00 00 00 00 31 00 22 00 00 00 10 81 00 07 d2 08 00',
                      text)
        self.assertEqual(4, text.count('lat pos=46'))
        self.assertEqual(4, text.count('signature pos=60'))
        self.assertEqual(2, text.count('pkt size=64'))
        layout = gen_config.layout_from_config(text)
        self.assertEqual(4, layout.tag_bytes)
        self.assertEqual(68, layout.smallest_frame_bytes)
        self.assertEqual(layout, gen_config.GeneratorLayout.from_text(
            layout.to_text()))
        self.assertEqual(layout, gen_config.GeneratorLayout.from_dict(
            layout.to_dict()))

    def test_untagged_layout_text_is_unchanged(self):
        layout = gen_config.GeneratorLayout.recorded_capture()
        self.assertEqual('epa-chain-layout-1,m0,b11,a1000000,x1518,'
                         'forward:1.0:1.1:0:1:0', layout.to_text())
        self.assertEqual(64, layout.smallest_frame_bytes)

    def test_tagging_is_checked(self):
        data = json.loads(vecpe_plan().user_data().split(
            'epa_chain: ', 1)[1])
        for change, field in (
                (lambda d: d['ports']['left'].update(tagged='yes'),
                 'ports.left.tagged'),
                (lambda d: d['ports']['left'].update(vlan=None),
                 'ports.left.vlan'),
                (lambda d: d['ports']['right'].update(vlan=4095),
                 'ports.right.vlan'),
                (lambda d: d['ports']['right'].update(tagged=False),
                 'ports'),
                (lambda d: d.update(role='vnf'), 'ports')):
            bad = json.loads(json.dumps(data))
            change(bad)
            error = self.assertRaises(node_config.NodeConfigError,
                                      node_config.from_dict, bad)
            self.assertEqual(field, error.field)

    def test_the_controller_refuses_frames_too_small_for_the_tag(self):
        layout = gen_config.layout_from_config(self.render(self.config()))
        generator = prox_generator.ProxGenerator('127.0.0.1', layout=layout)
        spec = trial.TrialSpec(
            profile=trial.TrafficProfile(frame_size=trial.FrameSize(size=64),
                                         flows=1, directions=('forward',)),
            load_fps=1000.0, duration_s=1.0)
        error = self.assertRaises(trial.GeneratorError, generator._prepare,
                                  spec)
        self.assertIn('its smallest frame is 68 bytes', str(error))
        self.assertIn('802.1Q tag', str(error))
        ok = trial.TrialSpec(
            profile=trial.TrafficProfile(frame_size=trial.FrameSize(size=68),
                                         flows=1, directions=('forward',)),
            load_fps=1000.0, duration_s=1.0)
        generator._prepare(ok)

    def test_flow_fields_move_with_the_tag(self):
        client = mock.Mock()
        plan = traffic.plan_flows(1024, 'power-of-two')
        traffic.apply_flows(client, [(1, 0)], plan, shift=4)
        offsets = [c.args[2] for c in client.set_random.call_args_list]
        self.assertEqual([offset + 4 for offset, _bits in plan.randoms],
                         offsets)

    def test_the_hop_check_sends_the_smallest_frame(self):
        self.assertEqual(64, hop_check.frame_for(object()).size)
        tagged = mock.Mock(smallest_frame_bytes=68)
        self.assertEqual(68, hop_check.frame_for(tagged).size)


class OVSCountsTest(unittest.TestCase):

    def test_the_testers_hops_are_left_to_its_own_counters(self):
        hops = vecpe_outputs()['forward_chain']
        ports = {'p': ('vhu', 0, 0)}
        counts = ovs_hops.hop_counts(hops, ports, ports)
        self.assertEqual(6, len(counts))
        self.assertEqual(['delivered', 'sent'] * 3,
                         [c.counted for c in counts])


class TesterStateTest(testtools.TestCase):
    """up's records and down's clean-up, with ovs-vsctl recorded."""

    def setUp(self):
        super().setUp()
        self.root = tempfile.mkdtemp(prefix='epa-tester-')
        self.addCleanup(shutil.rmtree, self.root, True)
        self.state_dir = os.path.join(self.root, 'state')
        self.calls = []
        self.bridges = 'br-int\nbr-physnet1\nbr-physnet2\n'

    def run_vsctl(self, argv, **kwargs):
        self.calls.append(argv[2:])
        self.assertLessEqual(kwargs.get('timeout', 0), 60)
        out = self.bridges if argv[2:] == ['list-br'] else ''
        return subprocess.CompletedProcess(argv, 0, out, '')

    def tester(self):
        return tester.Tester(self.state_dir, run=self.run_vsctl)

    def test_a_missing_bridge_fails_before_anything_is_made(self):
        self.bridges = 'br-int\nbr-physnet1\n'
        binary = os.path.join(self.root, 'prox')
        with open(binary, 'w') as stream:
            stream.write('#!/bin/sh\n')
        os.chmod(binary, 0o755)
        error = self.assertRaises(tester.TesterError, self.tester().up,
                                  vecpe_plan(), binary, [0, 1])
        self.assertIn("bridge br-physnet2 (physnet2) is not on this host",
                      str(error))
        self.assertEqual([['list-br']], self.calls)
        self.assertFalse(os.path.exists(self.state_dir))

    def test_a_failed_start_removes_the_ports_it_added(self):
        the_tester = self.tester()
        with mock.patch.object(the_tester, '_start',
                               side_effect=OSError('no python')):
            binary = '/bin/true'
            self.assertRaises(OSError, the_tester.up, vecpe_plan(), binary,
                              [0, 1])
        added = [c[1:4] for c in self.calls if c[0] == 'add-port']
        removed = [c[2] for c in self.calls if c[:2] == ['--if-exists',
                                                         'del-port']]
        # Trunk ports allowing each end's VLAN only.
        self.assertEqual([['br-physnet1', 'epa-tester-l', 'trunks=1001'],
                          ['br-physnet2', 'epa-tester-r', 'trunks=2002']],
                         added)
        self.assertEqual(['epa-tester-r', 'epa-tester-l'], removed)
        self.assertFalse(os.path.exists(self.state_dir))

    def test_state_is_private_and_down_without_a_tester_says_so(self):
        the_tester = self.tester()
        self.assertFalse(the_tester.down())
        os.makedirs(self.state_dir, mode=0o700)
        the_tester._record({'pid': None, 'ovs_ports': ['epa-tester-l']})
        path = os.path.join(self.state_dir, tester.STATE_FILE)
        self.assertEqual(0o600, stat.S_IMODE(os.stat(path).st_mode))
        self.assertRaises(tester.TesterError, the_tester.up, vecpe_plan(),
                          '/bin/true', [0, 1])
        self.assertTrue(the_tester.down())
        self.assertIn(['--if-exists', 'del-port', 'epa-tester-l'],
                      self.calls)
        self.assertFalse(os.path.exists(self.state_dir))

    def test_a_reused_pid_is_left_alone(self):
        # pid 1 is not a session leader running the runtime.
        self.assertFalse(tester._is_runtime(1))
        self.assertFalse(tester._is_runtime(2 ** 22 + 1))


class ProveTesterEndpointTest(unittest.TestCase):

    def prove(self, stack_outputs, *argv):
        client = mock.Mock()
        client.stack.return_value = prove.openstack_cli.Stack(
            status='CREATE_COMPLETE', reason='', outputs=stack_outputs,
            parameters=PARAMETERS, name='vecpe')
        err = io.StringIO()
        with mock.patch.object(prove.openstack_cli, 'OpenStackCLI',
                               mock.Mock(return_value=client)), \
                contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(err):
            code = cli.main(['prove', 'vecpe'] + list(argv))
        return code, err.getvalue()

    def test_an_external_stack_needs_the_testers_address(self):
        code, err = self.prove(vecpe_outputs())
        self.assertEqual(1, code)
        self.assertIn('give the external tester\'s PROX control address '
                      'with --generator-endpoint HOST:PORT', err)

    def test_an_in_stack_generator_refuses_another(self):
        outputs = dict(vecpe_outputs(), generator_control_endpoint={
            'host': '10.0.0.5', 'port': 8474})
        code, err = self.prove(outputs, '--generator-endpoint',
                               '127.0.0.1:8474')
        self.assertEqual(1, code)
        self.assertIn('has its own generator (10.0.0.5:8474)', err)

    def test_a_bad_address_is_refused_before_the_cloud(self):
        err = io.StringIO()
        cloud = mock.Mock(side_effect=AssertionError('no cloud'))
        with mock.patch.object(prove.openstack_cli, 'OpenStackCLI', cloud), \
                contextlib.redirect_stderr(err):
            code = cli.main(['prove', 'vecpe', '--generator-endpoint',
                             '127.0.0.1:99999'])
        self.assertEqual(2, code)
        self.assertIn('--generator-endpoint', err.getvalue())
        cloud.assert_not_called()
