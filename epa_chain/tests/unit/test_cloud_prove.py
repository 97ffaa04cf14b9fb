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

"""`epa-chain prove`'s parts without a cloud: the OVS hop counters and the
openstack client adapter. The cloud test (epa_chain/tests/cloud) runs them
against a real OpenStack."""

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

from epa_chain import cli
from epa_chain.cloud import hop_check
from epa_chain.cloud import openstack_cli
from epa_chain.cloud import ovs_hops
from epa_chain.cloud import readiness
from epa_chain.cloud import workflow
from epa_chain.commands import prove
from epa_chain.hot import shipped
from epa_chain.measurement import trial
from epa_chain.tests import repo
from epa_chain.tests.unit import recorded_cloud


def _interfaces(rows):
    """ovs-vsctl --format=json list Interface, as OVS prints it."""
    return json.dumps({
        'headings': ['name', 'external_ids', 'statistics'],
        'data': [[name,
                  ['map', [['iface-id', port]] if port else []],
                  ['map', [['rx_packets', rx], ['tx_packets', tx]]]]
                 for name, port, rx, tx in rows]})


HOPS = [{'server': 'gen', 'role': 'left', 'port': 'p-gl'},
        {'server': 'vnf1', 'role': 'left', 'port': 'p-vl'},
        {'server': 'vnf1', 'role': 'right', 'port': 'p-vr'},
        {'server': 'gen', 'role': 'right', 'port': 'p-gr'}]


class OVSHopsTest(unittest.TestCase):

    def test_parse_maps_neutron_ports_to_counters(self):
        ports = ovs_hops.parse_interfaces(_interfaces([
            ('vhu1', 'p-gl', 10, 20), ('br-int', None, 1, 1)]))
        self.assertEqual({'p-gl': ('vhu1', 10, 20)}, ports)

    def test_hop_counts_alternate_sent_and_delivered(self):
        before = ovs_hops.parse_interfaces(_interfaces([
            ('a', 'p-gl', 0, 0), ('b', 'p-vl', 0, 0),
            ('c', 'p-vr', 0, 0), ('d', 'p-gr', 0, 0)]))
        # OVS's rx is what the guest sent, tx what it was handed.
        after = ovs_hops.parse_interfaces(_interfaces([
            ('a', 'p-gl', 1000, 3), ('b', 'p-vl', 2, 1000),
            ('c', 'p-vr', 998, 1), ('d', 'p-gr', 0, 998)]))
        counts = ovs_hops.hop_counts(HOPS, before, after)
        self.assertEqual([('sent', 1000), ('delivered', 1000),
                          ('sent', 998), ('delivered', 998)],
                         [(c.counted, c.frames) for c in counts])
        self.assertIsNone(ovs_hops.first_short_hop(counts, 1000, 0.01))
        short = ovs_hops.first_short_hop(counts, 1000, 0.001)
        self.assertEqual(('vnf1', 'right'), (short.server, short.role))

    def test_a_port_missing_on_this_host_is_named(self):
        before = after = ovs_hops.parse_interfaces(_interfaces([]))
        with self.assertRaisesRegex(ovs_hops.OVSError, 'p-gl .gen:left.'):
            ovs_hops.hop_counts(HOPS, before, after)


class _LosslessGenerator(trial.Generator):
    """Every frame it sends comes back."""

    name = 'lossless'
    link_bps = 10e9

    def run_trial(self, spec):
        sent = int(spec.load_fps * spec.duration_s)
        return trial.TrialResult(spec, [trial.DirectionResult(
            direction, spec.load_fps, spec.load_fps, spec.load_fps, sent,
            sent) for direction in spec.profile.directions], 0.0,
            spec.duration_s)

    def close(self):
        pass


REQUEST = workflow.ProveRequest(
    stack='pvp', ready_timeout=60.0,
    hop=workflow.HopSettings(load_fraction=1e-5, max_loss_ratio=0.01,
                             attempts=2))


class ProveDirectionTest(unittest.TestCase):
    """A hop short on OVS fails the attempt; the next one is counted anew."""

    def test_each_attempt_has_its_own_ovs_counters(self):
        sent = int(hop_check.FRAME.line_rate_fps(10e9) * 1e-5 *
                   hop_check.DURATION_S)
        zero = [(name, port, 0, 0) for name, port in (
            ('a', 'p-gl'), ('b', 'p-vl'), ('c', 'p-vr'), ('d', 'p-gr'))]

        def after(vnf_sent):
            return [('a', 'p-gl', sent, 0), ('b', 'p-vl', 0, sent),
                    ('c', 'p-vr', vnf_sent, 0), ('d', 'p-gr', 0, vnf_sent)]

        # Attempt 1: the VNF sends nothing on. Attempt 2 counts from its
        # own "before", so the first attempt's frames are not in it.
        snapshots = [ovs_hops.parse_interfaces(_interfaces(rows)) for rows
                     in (zero, after(0), after(0), [
                         ('a', 'p-gl', 2 * sent, 0),
                         ('b', 'p-vl', 0, 2 * sent),
                         ('c', 'p-vr', sent, 0), ('d', 'p-gr', 0, sent)])]
        with mock.patch.object(ovs_hops, 'settled_snapshot',
                               side_effect=snapshots), \
                mock.patch.object(hop_check, 'SETTLE_S', 0):
            entry = workflow.prove_direction(
                _LosslessGenerator(), 'forward', {'forward_chain': HOPS},
                REQUEST, lambda line: None)
        self.assertEqual(2, entry['attempts'])
        self.assertIn('vnf1:right (c) sent 0 of the %d frames' % sent,
                      entry['failed_attempts'][0]['error'])
        self.assertEqual([sent] * 4,
                         [hop['frames'] for hop in entry['hop_counts']])

    def test_a_hop_short_in_every_attempt_fails(self):
        rows = [('a', 'p-gl', 0, 0), ('b', 'p-vl', 0, 0),
                ('c', 'p-vr', 0, 0), ('d', 'p-gr', 0, 0)]
        still = ovs_hops.parse_interfaces(_interfaces(rows))
        with mock.patch.object(ovs_hops, 'settled_snapshot',
                               return_value=still), \
                mock.patch.object(hop_check, 'SETTLE_S', 0):
            with self.assertRaisesRegex(hop_check.HopCheckError,
                                        r'gen:left .*2 of 2 attempts'):
                workflow.prove_direction(
                    _LosslessGenerator(), 'forward',
                    {'forward_chain': HOPS}, REQUEST, lambda line: None)


class _Done:
    def __init__(self, returncode, stdout='', stderr=''):
        self.returncode, self.stdout, self.stderr = (returncode, stdout,
                                                     stderr)


class OpenStackCLITest(unittest.TestCase):

    def cli(self, answers):
        self.calls = []

        def run(argv, **kwargs):
            self.calls.append(argv)
            return answers[argv[3]] if argv[3] in answers else answers['*']
        return openstack_cli.OpenStackCLI('mycloud', run=run)

    def test_console_errors_mean_not_yet(self):
        cli = self.cli({'*': _Done(1, stderr='Instance is building (HTTP '
                                             '409)')})
        with self.assertRaises(readiness.ConsoleUnavailable):
            cli.console_output('srv')
        self.assertEqual(['openstack', '--os-cloud', 'mycloud', 'console',
                          'log', 'show', '--', 'srv'], self.calls[0])

    def test_hard_reboot_and_its_refusal(self):
        cli = self.cli({'*': _Done(0, '')})
        cli.hard_reboot('-srv')
        self.assertEqual(['openstack', '--os-cloud', 'mycloud', 'server',
                          'reboot', '--hard', '--', '-srv'], self.calls[0])
        cli = self.cli({'*': _Done(1, stderr='Cannot reboot (HTTP 409)')})
        with self.assertRaisesRegex(readiness.RebootFailed, 'HTTP 409'):
            cli.hard_reboot('srv')

    def test_outputs_by_key(self):
        shown = {'stack_status': 'CREATE_COMPLETE', 'outputs': [
            {'output_key': 'generator_control_endpoint',
             'output_value': {'host': '10.0.0.5', 'port': 8474}}]}
        cli = self.cli({'*': _Done(0, json.dumps(shown))})
        self.assertEqual({'generator_control_endpoint': {
            'host': '10.0.0.5', 'port': 8474}}, cli.stack('s').outputs)

    def test_a_missing_client_says_what_to_install(self):
        def run(argv, **kwargs):
            raise FileNotFoundError(argv[0])
        cli = openstack_cli.OpenStackCLI(run=run)
        with self.assertRaisesRegex(openstack_cli.CLIError,
                                    'python-openstackclient'):
            cli.call('stack', 'list')

    def test_failures_carry_the_command(self):
        cli = self.cli({'*': _Done(1, stderr='Stack not found')})
        with self.assertRaisesRegex(openstack_cli.CLIError,
                                    'stack show -f json -- nope.*Stack not '
                                    'found'):
            cli.stack('nope')

    def test_names_come_after_the_end_of_options(self):
        shown = {'stack_status': 'CREATE_COMPLETE', 'name': 'srv',
                 'physical_resource_id': '--id',
                 'resource_type': 'OS::Nova::Server'}
        calls = []

        def run(argv, **kwargs):
            calls.append(argv)
            listed = argv[3:6] == ['stack', 'resource', 'list']
            return _Done(0, json.dumps([shown] if listed else shown))
        cli = openstack_cli.OpenStackCLI('mycloud', run=run)
        cli.stack('--help')
        cli.stack_servers('-s')
        cli.server_status('--x')
        cli.console_output('-y')
        cli.hard_reboot('-z')
        for argv, name in zip(calls, ('--help', '-s', '--id', '--x', '-y',
                                      '-z')):
            self.assertEqual(['--', name], argv[-2:])
            self.assertNotIn(name, argv[:-1])

    def test_a_server_group_is_not_a_server(self):
        # Heat's `--filter type=OS::Nova::Server` matches a prefix: seen
        # on Heat 19, the stack's server group came too, and prove asked
        # `server show` for it.
        listed = [{'physical_resource_id': 'g1',
                   'resource_type': 'OS::Nova::ServerGroup'},
                  {'physical_resource_id': 's1',
                   'resource_type': 'OS::Nova::Server'}]
        shown = []

        def run(argv, **kwargs):
            if argv[3:6] == ['stack', 'resource', 'list']:
                return _Done(0, json.dumps(listed))
            shown.append(argv[-1])
            return _Done(0, json.dumps({'name': 'vnf1'}))
        cli = openstack_cli.OpenStackCLI('mycloud', run=run)
        self.assertEqual({'s1': {'name': 'vnf1'}}, cli.stack_servers('pvp'))
        self.assertEqual(['s1'], shown)

    def test_a_cloud_name_is_never_an_option(self):
        for cloud in ('-x', '--os-auth-url=http://evil', ''):
            self.assertRaises(ValueError, openstack_cli.OpenStackCLI, cloud)

    def test_runs_the_real_process_api(self):
        # The default runner is subprocess.run with these keywords.
        done = subprocess.run(['true'], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              timeout=openstack_cli.CALL_TIMEOUT_S)
        self.assertEqual(0, done.returncode)

    def test_a_cloud_that_never_answers_is_an_error_in_bounded_time(self):
        asked = []

        def run(argv, **kwargs):
            asked.append(kwargs['timeout'])
            raise subprocess.TimeoutExpired(argv, kwargs['timeout'])
        cli = openstack_cli.OpenStackCLI('mycloud', run=run)
        with self.assertRaisesRegex(openstack_cli.CLIError,
                                    'stack show -f json -- s failed: no '
                                    'answer in 180 s'):
            cli.stack('s')
        self.assertEqual([openstack_cli.CALL_TIMEOUT_S], asked)


class HopCheckSettingsTest(unittest.TestCase):

    def test_bounds(self):
        hop_check.check_settings(1e-6, 0.0, 1)
        hop_check.check_settings(1.0, 0.499, 10)
        for settings, name in (
                ((0.0, 0.01, 3), 'load_fraction'),
                ((float('nan'), 0.01, 3), 'load_fraction'),
                ((1.5, 0.01, 3), 'load_fraction'),
                ((0.01, float('nan'), 3), 'max_loss_ratio'),
                ((0.01, 0.5, 3), 'max_loss_ratio'),
                ((0.01, -0.1, 3), 'max_loss_ratio'),
                ((0.01, float('inf'), 3), 'max_loss_ratio'),
                ((0.01, 0.01, 0), 'attempts'),
                ((0.01, 0.01, 11), 'attempts'),
                ((0.01, 0.01, True), 'attempts'),
                ((0.01, 0.01, 2.0), 'attempts')):
            error = self.assertRaises(hop_check.SettingError,
                                      hop_check.check_settings, *settings)
            self.assertEqual(name, error.setting)

    def assertRaises(self, kind, *args, **kwargs):
        with super().assertRaises(kind) as caught:
            args[0](*args[1:], **kwargs)
        return caught.exception


class ProveCommandTest(unittest.TestCase):
    """What prove writes and says, with the cloud mocked."""

    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix='epa-prove-')
        self.addCleanup(shutil.rmtree, self.directory)

    def prove(self, *argv, cloud=None):
        """cli.main(['prove', ...]) with OpenStackCLI replaced by `cloud`."""
        cloud = cloud or mock.Mock(side_effect=AssertionError('no cloud'))
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(prove.openstack_cli, 'OpenStackCLI', cloud), \
                contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            code = cli.main(['prove'] + list(argv))
        return code, out.getvalue(), err.getvalue(), cloud

    def test_a_fifo_for_json_is_refused_before_the_cloud(self):
        fifo = os.path.join(self.directory, 'proof.json')
        os.mkfifo(fifo)
        code, _out, err, cloud = self.prove('pvp', '--json', fifo)
        self.assertEqual(2, code)
        self.assertEqual('epa-chain prove: --json %s: exists and is a FIFO, '
                         'not a regular file; give a file path (or - for '
                         'standard output)\n' % fifo, err)
        cloud.assert_not_called()
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))

    def test_a_failure_is_one_line_and_the_proof_is_written(self):
        client = mock.Mock()
        client.stack.side_effect = prove.openstack_cli.CLIError(
            'openstack stack show failed: Stack not found\nRequest-ID: x')
        target = os.path.join(self.directory, 'proof.json')
        code, _out, err, cloud = self.prove(
            'pvp', '--os-cloud', 'lab', '--json', target,
            cloud=mock.Mock(return_value=client))
        self.assertEqual(1, code)
        self.assertEqual('epa-chain prove: openstack stack show failed: '
                         'Stack not found Request-ID: x\n', err)
        cloud.assert_called_once_with('lab')
        with open(target) as stream:
            proof = json.load(stream)
        self.assertFalse(proof['proven'])
        self.assertIn('Stack not found', proof['error'])
        self.assertEqual(0o644, stat.S_IMODE(os.stat(target).st_mode))

    def test_a_refused_placement_is_one_line_with_the_policy(self):
        # Heat 19's reason for inter-node.yaml on one host: both servers
        # were scheduled at once, and the compute host's own policy check
        # refused the later one.
        reason = ('Resource CREATE failed: ResourceInError: resources.'
                  'generator.resources.server: Went to status ERROR due to '
                  '"Message: Exceeded maximum number of retries. Exhausted '
                  'all hosts available for retrying build failures for '
                  'instance 54e1ced6., Code: 500"')
        client = mock.Mock()
        client.stack.return_value = prove.openstack_cli.Stack(
            status='CREATE_FAILED', reason=reason, outputs={},
            parameters={'server_group_policy': 'anti-affinity'}, name='pvp')
        code, _out, err, _cloud = self.prove(
            'pvp', '--os-cloud', 'lab', cloud=mock.Mock(return_value=client))
        self.assertEqual(1, code)
        self.assertEqual(1, err.count('\n'), err)
        self.assertIn('stack pvp is CREATE_FAILED: Resource CREATE failed',
                      err)
        self.assertIn('(server_group_policy anti-affinity needs a compute '
                      'host per server: Nova found none', err)
        client.stack_servers.assert_not_called()

    def test_no_valid_host_says_what_preflight_finds(self):
        # No policy to blame: preflight on the template Heat holds names
        # the missing PCPU and the environment that fits.
        code, _out, err, _cloud = self.prove(
            'pvp', '--os-cloud', 'epa-chain',
            cloud=mock.Mock(return_value=_RefusedForWantOfPCPU()))
        self.assertEqual(1, code)
        self.assertEqual(1, err.count('\n'), err)
        self.assertIn('No valid host was found', err)
        self.assertIn('(preflight: the flavors ask dedicated CPUs (PCPU) '
                      'and no compute host reports PCPU', err)
        self.assertIn('-e templates/environments/small-host.yaml', err)


class _RefusedForWantOfPCPU(openstack_cli.OpenStackCLI):
    """The pinned PVP preset Nova refused on the recorded cloud.

    Heat 19's reason as the single-host cloud gave it (98 s after
    create); every other question answered as that cloud's client did.
    """

    REASON = ('Resource CREATE failed: ResourceInError: resources.vnf1.'
              'resources.server: Went to status ERROR due to "Message: No '
              'valid host was found. There are not enough hosts available.'
              ', Code: 500"')

    def __init__(self):
        super().__init__('epa-chain', run=recorded_cloud.ReplayedClient(
            recorded_cloud.answers()))
        # Pinned whatever chain.yaml's default: the preset as refused.
        self.heat = _HeatHolds(parameters={'cpu_policy': 'dedicated'})

    def stack(self, stack):
        return prove.openstack_cli.Stack(
            status='CREATE_FAILED', reason=self.REASON, outputs={},
            parameters={'server_group_policy': ''}, name=stack)

    def created_from(self, stack):
        return self.heat.created_from(stack)


class _HeatHolds:
    """An OpenStackCLI answering with what Heat holds for a stack.

    Created from chain.yaml and a preset (plus `parameters`) as the
    Heat client uploads them: template, environment and files map.
    """

    def __init__(self, preset='pvp-bidir', parameters=None, files=None):
        from epa_chain.hot import files as files_mod
        loaded = files_mod.load(repo.CHAIN, [shipped.preset_path(
            preset, repo.TEMPLATES)])
        environment = dict(loaded.environment)
        environment['parameters'] = dict(environment.get('parameters') or {},
                                         **(parameters or {}))
        self.held = (loaded.template, environment,
                     loaded.files if files is None else files)
        self.asked = []

    def created_from(self, stack):
        self.asked.append(stack)
        # As JSON from the client: nothing shared with the loaded set.
        return json.loads(json.dumps(self.held))

    def stack_servers(self, stack):
        return {'id-gen': {'name': 'pvp-generator'},
                'id-vnf1': {'name': 'pvp-vnf1'}}


class ProveChecksTheCreatedStackTest(unittest.TestCase):
    """prove resolves what Heat holds with the one resolve-and-check."""

    SHOWN = openstack_cli.Stack(status='CREATE_COMPLETE', reason='',
                                outputs={}, parameters={}, name='pvp')

    def check(self, client, stack='pvp'):
        said = []
        checked, found = workflow.check_created(client, stack, self.SHOWN,
                                                said.append)
        proof = {} if found is None else {'findings': found}
        return checked, proof, ''.join(line + '\n' for line in said)

    def test_nodes_and_engines_come_from_the_resolved_stack(self):
        client = _HeatHolds(parameters={'vnf_engine': 'testpmd'})
        checked, proof, err = self.check(client, 'a1b2c3d4-0000-0000-0000-'
                                                 '000000000000')
        self.assertEqual('', err)
        self.assertEqual([], proof['findings'])
        # Heat's name for it, whatever the user gave.
        self.assertEqual('pvp', checked.stack_name)
        nodes = workflow.expected_nodes(client.stack_servers('pvp'), 'pvp',
                                        {}, {}, checked)
        self.assertEqual(
            [readiness.Node('id-gen', 'pvp-generator', 'prox'),
             readiness.Node('id-vnf1', 'pvp-vnf1', 'testpmd')], nodes)

    def test_what_the_rules_find_is_said_and_kept(self):
        client = _HeatHolds(parameters={'net1_physical_network': 'physnet1',
                                        'net1_vlan': 1001})
        checked, proof, err = self.check(client)
        # The stack exists: its findings warn, its frames are the verdict.
        self.assertIsNotNone(checked)
        self.assertEqual(['VLAN-UNIQUE'],
                         [f['rule'] for f in proof['findings']])
        self.assertEqual(1, len(err.splitlines()))
        self.assertTrue(err.startswith('warning: '), err)
        self.assertIn('VLAN 1001 on physnet1', err)
        self.assertNotIn('nothing was created', err)

    def test_hostile_files_are_refused_and_the_outputs_used(self):
        bomb = 'a: &a [x, x]\n' + ''.join(
            'a%d: &a%d [*a%s, *a%s]\n' % (i, i, i - 1 if i else '',
                                          i - 1 if i else '')
            for i in range(40))
        client = _HeatHolds(files={'file:///t/lib/x.yaml': bomb})
        checked, proof, err = self.check(client)
        self.assertIsNone(checked)
        self.assertNotIn('findings', proof)
        self.assertEqual(1, len(err.splitlines()))
        self.assertIn('not checked', err)
        self.assertIn('file:///t/lib/x.yaml', err)

    def test_a_stack_heat_will_not_show_falls_back_to_the_outputs(self):
        client = mock.Mock()
        client.created_from.side_effect = openstack_cli.CLIError(
            'openstack stack file list failed: Not Found\nx')
        checked, _proof, err = self.check(client)
        self.assertIsNone(checked)
        self.assertEqual('note: the stack is not checked (openstack stack '
                         'file list failed: Not Found x); its chain is read '
                         'from its outputs\n', err)

    def test_without_heat_the_outputs_are_used(self):
        with mock.patch.object(workflow.importlib.util, 'find_spec',
                               return_value=None):
            checked, _proof, err = self.check(mock.Mock())
        self.assertIsNone(checked)
        self.assertIn("pip install 'epa-chain[validation]'", err)

    def test_created_from_asks_heat_with_names_after_the_options(self):
        calls = []
        answers = {'template': {'heat_template_version': '2021-04-16'},
                   'environment': {'parameters': {}},
                   'file': {'files': {'file:///t/a.yaml': 'x: 1'}}}

        def run(argv, **kwargs):
            calls.append(argv)
            return _Done(0, json.dumps(answers[argv[2]]))
        cli_ = openstack_cli.OpenStackCLI(run=run)
        self.assertEqual((answers['template'], answers['environment'],
                          answers['file']['files']),
                         cli_.created_from('-s'))
        self.assertEqual([
            ['openstack', 'stack', 'template', 'show', '-f', 'json', '--',
             '-s'],
            ['openstack', 'stack', 'environment', 'show', '-f', 'json',
             '--', '-s'],
            ['openstack', 'stack', 'file', 'list', '-f', 'json', '--',
             '-s']], calls)


class ChainsTest(unittest.TestCase):
    """prove walks every chain of a stack created with chain_count."""

    @staticmethod
    def _chain(index, host):
        prefix = 's' if index == 0 else 's-chain%d' % index
        return {'index': index,
                'forward_chain': [{'server': prefix + '-generator'},
                                  {'server': prefix + '-vnf1'}],
                'generator_control_endpoint': {'host': host, 'port': 8474}}

    def _outputs(self, count):
        chains = [self._chain(i, '10.0.0.%d' % (i + 10)) for i in range(count)]
        return dict(chains[0], chains=chains)

    def test_each_chain_is_proven_through_its_own_generator(self):
        request = workflow.ProveRequest(stack='s', ready_timeout=1)
        chains = workflow.chain_outputs(self._outputs(2), request)
        self.assertEqual([0, 1], [outputs['index'] for outputs, _ in chains])
        self.assertEqual(['10.0.0.10', '10.0.0.11'],
                         [endpoint['host'] for _, endpoint in chains])

    def test_a_stack_without_chains_is_one_chain(self):
        request = workflow.ProveRequest(stack='s', ready_timeout=1)
        outputs = self._chain(0, '10.0.0.10')
        self.assertEqual([(outputs, outputs['generator_control_endpoint'])],
                         workflow.chain_outputs(outputs, request))

    def test_an_external_tester_drives_one_chain_only(self):
        request = workflow.ProveRequest(stack='s', ready_timeout=1,
                                        generator_endpoint=('192.0.2.1', 1))
        outputs = self._outputs(2)
        for chain in outputs['chains']:
            chain['generator_control_endpoint'] = None
        with self.assertRaisesRegex(workflow.StepError,
                                    'stack s has 2 chains'):
            workflow.chain_outputs(outputs, request)

    def test_every_chains_generator_runs_prox(self):
        shown = {'a': {'name': 's-generator'}, 'b': {'name': 's-vnf1'},
                 'c': {'name': 's-chain1-generator'},
                 'd': {'name': 's-chain1-vnf1'}}
        nodes = workflow.expected_nodes(shown, 's', self._outputs(2),
                                        {'vnf_engine': 'testpmd'}, None)
        self.assertEqual({'s-generator': 'prox', 's-vnf1': 'testpmd',
                          's-chain1-generator': 'prox',
                          's-chain1-vnf1': 'testpmd'},
                         {node.name: node.engine for node in nodes})

    def test_chain_0_stays_at_the_top_when_a_later_chain_fails(self):
        request = workflow.ProveRequest(stack='s', ready_timeout=1)
        said = []

        def prove_directions(endpoint, outputs, request, say, entry):
            entry['directions'] = [{'direction': 'forward'}]
            say('proving')
            if outputs['index'] == 1:
                raise workflow.StepError('chain 1 stopped forwarding')

        proof = {}
        with mock.patch.object(workflow, '_prove_directions',
                               prove_directions):
            with self.assertRaises(workflow.StepError):
                workflow._prove_chains(workflow.chain_outputs(
                    self._outputs(2), request), request, said.append, proof)
        self.assertEqual([{'direction': 'forward'}], proof['directions'])
        self.assertEqual([0, 1], [c['index'] for c in proof['chains']])
        self.assertEqual(['chain 0: proving', 'chain 1: proving'], said)
