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

"""The plugin's oslo.config options: names, types, defaults, checks.

interfaces.md section 5; the typed view they are read into
(epa_chain.cloud.options.ChainOptions) has its own tests in epa-chain.
"""

import dataclasses

from oslo_config import cfg
from oslo_config import types
import testtools

from epa_chain.cloud import hop_check
from epa_chain.cloud import options as opts
from epa_chain.hot import shipped
from epa_chain.measurement import options as campaign_options
from epa_chain.measurement import searches
from epa_chain.measurement import trial
from epa_chain.prox import generator as prox_generator
from epa_chain_tempest_plugin import config as epa_config

# Read by the plugin itself (the Heat client, the test timeout), not by
# epa_chain.cloud.options.ChainOptions.
PLUGIN_ONLY = {opt.name for opt in epa_config.PLUGIN_OPTS}


def registered_conf(args=()):
    """A private ConfigOpts with the plugin's groups, as Tempest builds."""
    conf = cfg.ConfigOpts()
    for group, options in epa_config.list_opts():
        conf.register_group(cfg.OptGroup(group))
        conf.register_opts(options, group=group)
    conf(list(args), default_config_files=[])
    return conf


class OptionsTest(testtools.TestCase):

    def test_the_group_is_epa_chains_list_and_the_plugins_own(self):
        # Declared once: epa-chain's options, then the plugin's few.
        declared = [opt.name for opt in epa_config.EpaChainGroup]
        self.assertEqual([opt.name for opt in opts.list_opts()] +
                         sorted(PLUGIN_ONLY, key=declared.index), declared)
        self.assertEqual(len(declared), len(set(declared)))
        conf = registered_conf()
        for opt in epa_config.EpaChainGroup:
            self.assertEqual(opt.default, conf.epa_chain[opt.name],
                             opt.name)
            self.assertTrue(opt.help, '%s has no help' % opt.name)

    def test_defaults_owned_elsewhere_are_read_from_their_owners(self):
        declared = {opt.name: opt for opt in epa_config.EpaChainGroup}
        for name in ('generator_latency_bucket_shift',
                     'generator_control_port', 'management_allowed_cidr'):
            self.assertEqual(shipped.parameter_default(name),
                             declared[name].default, name)
        self.assertEqual(hop_check.LOAD_FRACTION,
                         declared['hop_check_load_fraction'].default)
        self.assertEqual(hop_check.ATTEMPTS,
                         declared['hop_check_attempts'].default)
        self.assertEqual(prox_generator.RATE_TOLERANCE,
                         declared['generator_rate_tolerance'].default)
        for name, default in campaign_options.conf_defaults().items():
            self.assertEqual(default, declared[name].default, name)

    def test_service_available_flag_is_off_by_default(self):
        conf = registered_conf()
        (flag,) = epa_config.ServiceAvailableGroup
        self.assertIsInstance(flag, cfg.BoolOpt)
        self.assertEqual('epa_chain', flag.name)
        self.assertIs(False, conf.service_available.epa_chain)

    def test_list_items_are_typed(self):
        conf = registered_conf()
        conf.set_override('chain_lengths', '1,3', 'epa_chain')
        conf.set_override('flow_counts', '1,1000', 'epa_chain')
        self.assertEqual([1, 3], conf.epa_chain.chain_lengths)
        self.assertEqual([1, 1000], conf.epa_chain.flow_counts)
        declared = {opt.name: opt for opt in epa_config.EpaChainGroup}
        self.assertIsInstance(declared['chain_lengths'].type.item_type,
                              types.Integer)

    def test_out_of_range_values_are_refused(self):
        conf = registered_conf()
        for name, value in (('chain_lengths', '1,4'),
                            ('directions', 'sideways'),
                            ('vnf_engine', 'vpp'),
                            ('search_method', 'guess'),
                            ('numa_nodes', 0),
                            ('hop_check_load_fraction', 0.0),
                            ('hop_check_load_fraction', 1.5),
                            ('hop_check_max_loss_ratio', 1.0),
                            ('hop_check_attempts', 0),
                            ('generator_latency_bucket_shift', 10),
                            ('generator_latency_bucket_shift', 31),
                            ('timeout_scaling_factor', 0),
                            ('generator_rate_tolerance', 0.6),
                            ('heat_endpoint_type', 'private')):
            self.assertRaises(ValueError, conf.set_override, name, value,
                              'epa_chain')

    def test_search_method_choices_are_the_campaign_methods(self):
        declared = {opt.name: opt for opt in epa_config.EpaChainGroup}
        choices = [c for c in declared['search_method'].type.choices]
        self.assertEqual(sorted(campaign_options.METHOD_NAMES),
                         sorted(choices))
        self.assertEqual(sorted(searches.METHODS), sorted(choices))

    def test_chain_options_read_every_option(self):
        # Every option epa-chain declares is a field of the typed view,
        # but the campaign's, which make its one Campaign.
        fields = {f.name for f in dataclasses.fields(opts.ChainOptions)}
        campaign_names = set(campaign_options.conf_defaults())
        self.assertEqual({opt.name for opt in opts.list_opts()} -
                         campaign_names, fields - {'campaign'})
        options = opts.ChainOptions.from_conf(registered_conf().epa_chain)
        self.assertEqual(opts.ChainOptions(), options)

    def test_frame_sizes_and_imix(self):
        conf = registered_conf()
        conf.set_override('frame_sizes', '64,imix,64:7/570:4/1518:1',
                          'epa_chain')
        options = opts.ChainOptions.from_conf(conf.epa_chain)
        sizes = options.campaign.frame_sizes
        self.assertEqual(64, sizes[0].size)
        self.assertEqual(trial.IMIX_EANTC, sizes[1].imix)
        self.assertEqual(trial.IMIX_EANTC, sizes[2].imix)

    def test_bad_frame_size_names_the_option(self):
        conf = registered_conf()
        conf.set_override('frame_sizes', '64,32', 'epa_chain')
        error = self.assertRaises(opts.OptionError,
                                  opts.ChainOptions.from_conf,
                                  conf.epa_chain)
        self.assertIn('[epa_chain] frame_sizes', str(error))
        self.assertIn("'32'", str(error))

    def test_defaults_are_the_typed_views(self):
        # One set of defaults: oslo.config's and ChainOptions' agree.
        options = opts.ChainOptions.from_conf(registered_conf().epa_chain)
        self.assertEqual(0.01, options.hop_check_load_fraction)
        self.assertEqual(0.01, options.hop_check_max_loss_ratio)
        self.assertEqual(3, options.hop_check_attempts)
        self.assertEqual('10.0.0.0/8', options.management_allowed_cidr)
        self.assertEqual(600, options.stack_delete_timeout)

    def test_management_allowed_cidr_is_checked(self):
        conf = registered_conf()
        conf.set_override('management_allowed_cidr', '172.24.4.1',
                          'epa_chain')
        error = self.assertRaises(opts.OptionError,
                                  opts.ChainOptions.from_conf,
                                  conf.epa_chain)
        self.assertIn('[epa_chain] management_allowed_cidr', str(error))

    def test_segments(self):
        conf = registered_conf()
        conf.set_override('segments', 'physnet1:101,physnet2:202',
                          'epa_chain')
        options = opts.ChainOptions.from_conf(conf.epa_chain)
        self.assertEqual(
            (opts.Segment('physnet1', 101), opts.Segment('physnet2', 202)),
            options.segments_for(1))
        error = self.assertRaises(opts.OptionError, options.segments_for, 2)
        self.assertIn('[epa_chain] segments: 2 given', str(error))
        self.assertIn('needs 3', str(error))
        self.assertEqual((), opts.ChainOptions().segments_for(3))


class DocumentationTest(testtools.TestCase):

    def test_the_documented_options_are_current(self):
        # doc/source/tempest_plugin.rst's list is generated from the
        # declarations; regenerate it with tools/option_docs.py.
        import importlib.util
        import os

        tool = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..',
                            'tools', 'option_docs.py')
        spec = importlib.util.spec_from_file_location('option_docs', tool)
        option_docs = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(option_docs)
        with open(option_docs.PAGE) as stream:
            page = stream.read()
        generated = option_docs.render(option_docs.current_groups())
        self.assertEqual(option_docs.replace(page, generated), page,
                         'run tools/option_docs.py')
        for opt in epa_config.EpaChainGroup:
            self.assertIn('``%s`` (' % opt.name, generated)

    def test_the_sample_config_holds_every_default(self):
        # The page leaves defaults to the code; the generator prints them.
        import io

        from oslo_config import generator

        conf = cfg.ConfigOpts()
        generator.register_cli_opts(conf)
        conf(['--namespace', 'epa_chain_tempest_plugin'])
        sample = io.StringIO()
        generator.generate(conf, output_file=sample)
        lines = sample.getvalue().splitlines()
        for opt in epa_config.EpaChainGroup:
            self.assertTrue(any(line.startswith('#%s =' % opt.name)
                                for line in lines), opt.name)
        self.assertIn('#generator_latency_bucket_shift = %d' % (
            shipped.parameter_default('generator_latency_bucket_shift')),
            sample.getvalue())
