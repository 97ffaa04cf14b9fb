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

"""The TOSCA presets translate, validate, and need every repair."""

import contextlib
import io
import json
import os
import tempfile
from unittest import mock

import testtools
import yaml

from epa_chain import cli
from epa_chain.hot import shipped
from epa_chain.tests import repo
from epa_chain.tests.unit import tosca_cases


class TestPresets(testtools.TestCase):

    def test_every_hot_preset_has_a_tosca_preset(self):
        tosca = sorted(os.listdir(os.path.join(tosca_cases.TOSCA,
                                               'presets')))
        hot = sorted(os.listdir(os.path.join(tosca_cases.TEMPLATES,
                                             'presets')))
        self.assertEqual(hot, tosca)
        self.assertEqual(sorted(p + '.yaml' for p in tosca_cases.PRESETS),
                         tosca)
        for preset in tosca_cases.PRESETS:
            self.assertTrue(os.path.isfile(
                tosca_cases.service_template(preset)), preset)


class TestTranslatedPresetsValidate(testtools.TestCase):
    """epa-chain validate finds no error in any translated preset."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()

    def _check(self, preset):
        from epa_chain.validation import runner

        result, path = tosca_cases.translated(preset)
        report = runner.validate(path)
        self.assertEqual([], [str(f) for f in report.errors], preset)
        # The inputs file's values are the parameters' defaults, so the
        # translation stands alone.
        with open(tosca_cases.inputs_file(preset)) as f:
            inputs = yaml.safe_load(f)
        parameters = result.template['parameters']
        for name, value in inputs.items():
            self.assertEqual(value, parameters[name]['default'], name)
        self.assertEqual('2021-04-16', result.template[
            'heat_template_version'])

    def test_pvp_unidir(self):
        self._check('pvp-unidir')

    def test_pvp_bidir(self):
        self._check('pvp-bidir')

    def test_pvvp_unidir(self):
        self._check('pvvp-unidir')

    def test_pvvp_bidir(self):
        self._check('pvvp-bidir')

    def test_vecpe_unidir(self):
        self._check('vecpe-unidir')

    def test_vecpe_bidir(self):
        self._check('vecpe-bidir')


class TestHeatTranslatorLosses(testtools.TestCase):
    """What heat-translator 3.5 writes for tosca/pvp.yaml, unrepaired.

    If heat-translator stops losing one of these, its test fails: the
    repair (and doc/source/tosca.rst) can then go.
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()
        from epa_chain.tosca import loader
        from epa_chain.tosca import translate

        loaded = loader.load(os.path.join(tosca_cases.TOSCA, 'pvp.yaml'))
        cls.raw, cls.messages = translate.run_heat_translator(loaded)
        cls.resources = cls.raw['resources']

    def test_vlan_segments_become_tenant_networks(self):
        net0 = self.resources['net0']
        self.assertEqual('OS::Neutron::Net', net0['type'])
        self.assertNotIn('physical_network', net0.get('properties', {}))

    def test_extra_specs_taken_from_inputs_are_dropped(self):
        # Only compute_requirements.nova_extra_specs (a YAML text) is
        # read; the service templates' EPA inputs are entries of their own.
        self.assertNotIn('extra_specs',
                         self.resources['vnf1_flavor']['properties'])

    def test_ports_keep_port_security(self):
        port = self.resources['vnf1_left']['properties']
        self.assertNotIn('port_security_enabled', port)
        self.assertNotIn('security_groups', port)

    def test_servers_have_no_image_user_data_or_config_drive(self):
        server = self.resources['vnf1']['properties']
        for key in ('image', 'user_data', 'config_drive'):
            self.assertNotIn(key, server)
        self.assertEqual('vnf1', server['name'])

    def test_relationships_make_a_dependency_cycle(self):
        self.assertIn('generator', self.resources['vnf1_left']['depends_on'])
        self.assertIn('vnf1', self.resources['generator_left']['depends_on'])

    def test_existing_network_is_created(self):
        self.assertEqual('OS::Neutron::Net',
                         self.resources['management']['type'])

    def test_chain_count_is_a_parameter_nothing_reads(self):
        self.assertIn('chain_count', self.raw['parameters'])
        self.assertNotIn('chain_count', json.dumps(self.resources))

    def test_empty_default_dropped_and_old_version(self):
        self.assertNotIn('default', self.raw['parameters']['key_name'])
        self.assertEqual('2013-05-23', self.raw['heat_template_version'])

    def test_every_repair_changes_something(self):
        changed = set()
        for preset in tosca_cases.PRESETS:
            result, _ = tosca_cases.translated(preset)
            changed |= {r.name for r in result.repairs if r.changes}
        from epa_chain.tosca import repairs
        self.assertEqual({r.__name__ for r in repairs.REPAIRS}, changed)

    def test_heat_translator_yaml_text_does_not_parse(self):
        # Its writer strips every quote: the extra specs text breaks YAML.
        from epa_chain.tosca import loader
        from epa_chain.tosca import translate
        from translator.hot import tosca_translator

        loaded = loader.load(os.path.join(tosca_cases.TOSCA, 'pvp.yaml'))
        loaded.tosca.topology_template.policies = []
        with loader.captured_log('heat-translator'), (
                translate.keep_yaml_dumper()):
            text = tosca_translator.TOSCATranslator(
                loaded.tosca, {}).translate_to_yaml_files_dict(
                    'x.yaml')['x.yaml']
        self.assertRaises(yaml.YAMLError, yaml.safe_load, text)
        # ... and the process's yaml.dump still sorts keys afterwards.
        self.assertEqual('a: 2\nb: 1\n', yaml.dump({'b': 1, 'a': 2}))


class TestCommand(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()

    def _run(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(['translate'] + list(argv))
        return status, out.getvalue(), err.getvalue()

    def test_writes_the_repaired_template(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, 'chain.yaml')
            status, stdout, _ = self._run(
                tosca_cases.service_template('pvvp-bidir'), '-i',
                tosca_cases.inputs_file('pvvp-bidir'), '-o', out)
            self.assertEqual(0, status)
            with open(out) as f:
                template = yaml.safe_load(f)
        self.assertEqual('OS::Neutron::ProviderNet',
                         template['resources']['net1']['type'])
        self.assertIn('provider_networks', stdout)
        self.assertIn('mac_chain', stdout)

    def test_stdout_and_json_report(self):
        status, stdout, stderr = self._run(
            tosca_cases.service_template('vecpe-unidir'), '-o', '-',
            '--json')
        self.assertEqual(0, status)
        self.assertEqual('2021-04-16', yaml.safe_load(stdout)[
            'heat_template_version'])
        # Skip any import-time warning printed before the document.
        report = json.loads(stderr[stderr.index('{\n'):])
        self.assertTrue(report['translated'])
        self.assertIn('repair_flavors', [r['name'] for r in
                                         report['repairs']])

    def test_broken_template_exits_1_naming_node_and_field(self):
        with tempfile.TemporaryDirectory() as tmp:
            inputs = os.path.join(tmp, 'inputs.yaml')
            with open(inputs, 'w') as f:
                f.write('net1_vlan: 4095\n')
            status, _, stderr = self._run(
                tosca_cases.service_template('pvp-bidir'), '-i', inputs,
                '-o', os.path.join(tmp, 'out.yaml'))
            self.assertFalse(os.path.exists(os.path.join(tmp, 'out.yaml')))
        self.assertEqual(1, status)
        self.assertIn('input net1_vlan', stderr)
        self.assertIn('out of range', stderr)


class TestOfficialSol001Definitions(testtools.TestCase):
    """The templates read the same with ETSI's own SOL001 files.

    tosca/definitions/etsi_nfv_sol001_subset.yaml stands in for ETSI's
    definition files, which are not shipped. Point
    EPA_CHAIN_SOL001_DEFINITIONS at a directory holding
    etsi_nfv_sol001_common_types.yaml and etsi_nfv_sol001_vnfd_types.yaml
    (v2.6.1) to check that every preset translates to the same HOT.
    """

    FILES = ('etsi_nfv_sol001_common_types.yaml',
             'etsi_nfv_sol001_vnfd_types.yaml')

    def test_presets_translate_the_same(self):
        tosca_cases.require_translator()
        official = os.environ.get('EPA_CHAIN_SOL001_DEFINITIONS')
        if not official or not all(os.path.isfile(os.path.join(
                official, name)) for name in self.FILES):
            self.skipTest('EPA_CHAIN_SOL001_DEFINITIONS does not name a '
                          'directory with ETSI\'s SOL001 v2.6.1 files')
        from epa_chain.tosca import translate

        with tempfile.TemporaryDirectory() as tmp:
            definitions = os.path.join(tmp, 'definitions')
            os.mkdir(definitions)
            for name in self.FILES:
                with open(os.path.join(official, name)) as f:
                    text = f.read()
                with open(os.path.join(definitions, name), 'w') as f:
                    f.write(text)
            with open(os.path.join(tosca_cases.TOSCA, 'definitions',
                                   'epa_chain_types.yaml')) as f:
                types = f.read().replace(
                    '  - etsi_nfv_sol001_subset.yaml\n',
                    ''.join('  - %s\n' % n for n in self.FILES))
            with open(os.path.join(definitions, 'epa_chain_types.yaml'),
                      'w') as f:
                f.write(types)
            for preset in tosca_cases.PRESETS:
                source = tosca_cases.service_template(preset)
                copy = os.path.join(tmp, os.path.basename(source))
                with open(source) as f, open(copy, 'w') as g:
                    g.write(f.read())
                result = translate.translate(copy,
                                             tosca_cases.inputs_file(preset))
                self.assertEqual(tosca_cases.translated(preset)[0].template,
                                 result.template, preset)


class TestTranslationTakesParameters(testtools.TestCase):
    """Inputs stay parameters: a translation is not frozen to its preset."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()

    def _validate_with(self, preset, parameters):
        from epa_chain.validation import runner

        _, path = tosca_cases.translated(preset)
        with tempfile.TemporaryDirectory() as tmp:
            env = os.path.join(tmp, 'env.yaml')
            with open(env, 'w') as f:
                yaml.safe_dump({'parameters': parameters}, f)
            report = runner.validate(path, [env])
            realisation = tosca_cases.realise(path, [env])
        self.assertEqual([], [str(f) for f in report.errors])
        return realisation

    def test_unidirectional_translation_run_bidirectional(self):
        realisation = self._validate_with('pvvp-unidir',
                                          {'direction': 'bidirectional'})
        forward = realisation.outputs['forward_chain']
        reverse = realisation.outputs['reverse_chain']
        self.assertEqual(6, len(forward))
        self.assertEqual([h['mac'] for h in reversed(forward)],
                         [h['mac'] for h in reverse])

    def test_the_hot_small_host_environment_fits_a_translation(self):
        # environments/small-host.yaml, unedited, on every translated
        # chain: chain.yaml's sizing parameters, with its own rules.
        from epa_chain.validation import runner

        small_host = os.path.join(repo.TEMPLATES, 'environments',
                                  'small-host.yaml')
        for preset in ('pvp-bidir', 'vecpe-bidir'):
            _, path = tosca_cases.translated(preset)
            report = runner.validate(path, [small_host])
            self.assertEqual([], [str(f) for f in report.errors])
            flavors = tosca_cases.realise(path, [small_host]).of_type(
                'OS::Nova::Flavor')
            self.assertTrue(flavors, preset)
            for flavor in flavors:
                self.assertEqual({'hw:cpu_policy': 'shared',
                                  'hw:mem_page_size': 'large',
                                  'hw:numa_nodes': '1'},
                                 flavor.properties['extra_specs'], preset)
                self.assertEqual((2, 2048), (flavor.properties['vcpus'],
                                             flavor.properties['ram']))

    def test_sizing_defaults_are_what_the_service_template_writes(self):
        # The sizes are written in the service template; the EPA specs are
        # its inputs, left to chain.yaml's defaults.
        from epa_chain.tosca import repairs

        parameters = tosca_cases.translated('pvp-bidir')[0].template[
            'parameters']
        epa = shipped.parameter_defaults(repairs.SPEC_PARAMETERS.values())
        self.assertEqual(
            dict(epa, vnf_vcpus=2, vnf_ram=2048, generator_vcpus=4,
                 generator_ram=4096),
            {name: parameters[name]['default'] for name in list(epa) + [
                'vnf_vcpus', 'vnf_ram', 'generator_vcpus', 'generator_ram']})
        # chain.yaml's constraints come along.
        self.assertEqual(shipped.parameter_definition('cpu_policy')[
            'constraints'], parameters['cpu_policy']['constraints'])
        # The thread and emulator policies apply when pinned by default.
        specs = set(repairs.SPEC_PARAMETERS)
        if epa['cpu_policy'] != 'dedicated':
            specs -= set(repairs.PINNED_ONLY)
        for flavor in tosca_cases.realised_translation('pvp-bidir').of_type(
                'OS::Nova::Flavor'):
            self.assertEqual(specs, set(flavor.properties['extra_specs']))

    def test_vecpe_without_fixed_macs(self):
        macs = {'vnf%d_%s_mac' % (n, side): ''
                for n in (1, 2, 3) for side in ('left', 'right')}
        realisation = self._validate_with('vecpe-bidir', macs)
        ports = realisation.of_type('OS::Neutron::Port')
        data = [p for p in ports
                if p.properties.get('port_security_enabled') is False]
        self.assertEqual(6, len(data))
        for port in data:
            self.assertIsNone(port.properties.get('mac_address'))
            self.assertEqual({}, port.properties['value_specs'])
            self.assertTrue(port.attributes['mac_address'].startswith(
                'fa:16:3e'))

    def test_vecpe_fixed_macs_through_value_specs(self):
        # Not a mac_address property under a two-argument `if`, which
        # crashes Heat 19; the realiser (and so the local bed) reads it.
        realisation = self._validate_with('vecpe-bidir', {})
        left = realisation.get(('vnf2_left',))
        self.assertNotIn('mac_address', left.given)
        self.assertEqual({'mac_address': '00:00:00:00:00:20'},
                         left.properties['value_specs'])
        self.assertEqual('00:00:00:00:00:20', left.attributes['mac_address'])

    def test_generator_latency_buckets_reach_its_node_config(self):
        from epa_chain.chain import node_config

        def shift(realisation, server):
            (found,) = [r for r in realisation.of_type('OS::Nova::Server')
                        if r.name == server]
            return node_config.parse_user_data(
                found.properties['user_data']).latency_bucket_shift

        wider = self._validate_with('pvp-bidir',
                                    {'generator_latency_bucket_shift': 18})
        self.assertEqual(18, shift(wider, 'generator'))
        self.assertIsNone(shift(wider, 'vnf1'))
        # Not given: chain.yaml's default, which owns it.
        self.assertEqual(
            shipped.parameter_default('generator_latency_bucket_shift'),
            shift(self._validate_with('pvp-bidir', {}), 'generator'))

    def test_key_name_is_a_three_argument_if(self):
        result, _ = tosca_cases.translated('pvp-bidir')
        server = result.template['resources']['vnf1']['properties']
        self.assertEqual({'if': ['has_key_name', {'get_param': 'key_name'},
                                 None]}, server['key_name'])


class TestChainYamlOwnsTheBucketShift(testtools.TestCase):
    """generator_latency_bucket_shift's default is chain.yaml's.

    The service templates leave it out; the translation fills it in.
    """

    NAME = 'generator_latency_bucket_shift'

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()

    def test_the_service_templates_write_no_default(self):
        for preset in ('pvp-bidir', 'pvvp-bidir'):
            with open(tosca_cases.service_template(preset)) as stream:
                inputs = yaml.safe_load(stream)['topology_template'][
                    'inputs']
            self.assertNotIn('default', inputs[self.NAME], preset)
            self.assertIs(False, inputs[self.NAME]['required'], preset)

    def test_translation_carries_chain_yamls_default(self):
        from epa_chain.hot import shipped
        from epa_chain.tosca import translate

        real = shipped.parameter_default

        def changed(name):
            return 17 if name == self.NAME else real(name)

        # A change of chain.yaml's default is all it takes.
        with mock.patch.object(shipped, 'parameter_default',
                               side_effect=changed) as default:
            result = translate.translate(
                tosca_cases.service_template('pvp-bidir'),
                tosca_cases.inputs_file('pvp-bidir'))
        default.assert_any_call(self.NAME)
        self.assertEqual(17, result.template['parameters'][self.NAME][
            'default'])

    def test_an_optional_input_chain_yaml_has_no_default_for(self):
        from epa_chain.hot import shipped
        from epa_chain.tosca import errors
        from epa_chain.tosca import loader

        real = shipped.parameter_default

        def missing(name):
            if name == self.NAME:
                raise shipped.PresetError('no default')
            return real(name)

        with mock.patch.object(shipped, 'parameter_default',
                               side_effect=missing):
            error = self.assertRaises(
                errors.ToscaError, loader.load,
                tosca_cases.service_template('pvp-bidir'))
        self.assertEqual(1, len(error.problems))
        self.assertIn('input %s' % self.NAME, str(error))
        self.assertIn('no default from templates/chain.yaml', str(error))


class TestChainsSideBySide(testtools.TestCase):
    """chain_count unrolls chains; the count is fixed by the translation."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()

    def _validate(self, path, parameters):
        from epa_chain.validation import runner

        with tempfile.TemporaryDirectory() as tmp:
            env = os.path.join(tmp, 'env.yaml')
            with open(env, 'w') as f:
                yaml.safe_dump({'parameters': parameters}, f)
            return runner.validate(path, [env])

    def test_the_count_leaves_the_parameters(self):
        one = tosca_cases.translated('pvp-bidir')[0].template
        two, path = tosca_cases.translated('pvp-bidir', 2)
        for name in ('chain_count', 'chain_vlan_stride'):
            self.assertNotIn(name, one['parameters'])
        self.assertNotIn('chain_count', two.template['parameters'])
        self.assertEqual(
            shipped.parameter_default('chain_vlan_stride'),
            two.template['parameters']['chain_vlan_stride']['default'])
        # Heat refuses a count the translation would ignore.
        report = self._validate(path, {'chain_count': 3})
        self.assertIn('chain_count', ' '.join(str(e) for e in report.errors))

    def test_two_chains_validate_each_on_its_own_vlans(self):
        from epa_chain.validation import runner

        _, path = tosca_cases.translated('vecpe-bidir', 2)
        self.assertEqual([], [str(e) for e in runner.validate(path).errors])
        realisation = tosca_cases.realise(path, ())
        vlans = sorted(int(n.properties['segmentation_id']) for n in
                       realisation.of_type('OS::Neutron::ProviderNet'))
        self.assertEqual([1001, 1002, 1003, 1004, 2001, 2002, 2003, 2004],
                         vlans)
        # Only chain 0's ports keep vecpe's fixed MACs: none written twice.
        macs = [p.attributes['mac_address']
                for p in realisation.of_type('OS::Neutron::Port')]
        self.assertEqual(len(macs), len(set(macs)))

    def test_a_stride_that_overlaps_chains_is_refused(self):
        _, path = tosca_cases.translated('vecpe-bidir', 2)
        # Chain 1's net0 would be VLAN 1002, chain 0's net1.
        report = self._validate(path, {'chain_vlan_stride': 1})
        self.assertIn('VLAN-UNIQUE', [e.rule for e in report.errors])
