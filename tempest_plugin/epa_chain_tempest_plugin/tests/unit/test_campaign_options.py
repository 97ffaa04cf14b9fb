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

"""The Tempest options and the command line agree: one table.

The campaign options of [epa_chain] are generated from
epa_chain/measurement/options.py, as `epa-chain measure` and `epa-chain
local run` are. These tests read the registered oslo.config group as
Tempest does and compare it with the Campaign the table describes and
with the command line's parser (epa-chain's own tests check the command
line alone).
"""

from oslo_config import cfg
import testtools

from epa_chain.chain import directions as chain_directions
from epa_chain import cli
from epa_chain.cloud import options as opts
from epa_chain.commands import _arguments
from epa_chain.measurement import campaign
from epa_chain.measurement import options
from epa_chain.measurement import searches
from epa_chain.tests import cli_options
from epa_chain_tempest_plugin import config as epa_config


def parse(*argv):
    return cli.build_parser().parse_args(list(argv))


def conf_values(conf):
    return {name: conf.epa_chain[name] for name in options.conf_defaults()}


def registered_conf():
    conf = cfg.ConfigOpts()
    for group, declared in epa_config.list_opts():
        conf.register_group(cfg.OptGroup(group))
        conf.register_opts(declared, group=group)
    conf([], default_config_files=[])
    return conf


class DefaultsAgreeTest(testtools.TestCase):

    def test_tempest_starts_from_its_declared_overrides(self):
        values = options.values_from_conf(conf_values(registered_conf()))
        expected = campaign.Campaign(**options.OVERRIDES[options.TEMPEST])
        self.assertEqual(expected, campaign.Campaign(**values))
        self.assertEqual([64, 128, 256, 512, 1024, 1280, 1518],
                         [f.size for f in expected.frame_sizes])

    def test_cli_and_tempest_agree_on_every_shared_default(self):
        """Every difference is one of the declared overrides."""
        measured = _arguments.campaign_from_arguments(
            parse('measure', '--json', 'x'))
        local = _arguments.campaign_from_arguments(parse('local', 'run'),
                                                   options.LOCAL)
        tempest = campaign.Campaign(**options.values_from_conf(
            conf_values(registered_conf())))
        for option in options.TABLE:
            name = option.field
            for front_end, plan in ((options.LOCAL, local),
                                    (options.TEMPEST, tempest)):
                if name in options.OVERRIDES[front_end]:
                    continue
                if front_end == options.TEMPEST and \
                        option not in options.for_front_end(front_end):
                    continue
                self.assertEqual(getattr(measured, name),
                                 getattr(plan, name),
                                 '%s differs in %s' % (name, front_end))

    def test_tempest_names_every_campaign_option_it_offers(self):
        conf = registered_conf()
        offered = set(options.conf_defaults())
        self.assertEqual(
            {'frame_sizes', 'flow_counts', 'search_method', 'trial_duration',
             'ndr_loss_ratio', 'pdr_loss_ratio', 'search_resolution',
             'repetitions', 'max_load_fps', 'min_load_fps',
             'latency_load_fraction', 'latency_duration',
             'latency_soak_duration', 'invalid_trial_retries',
             'search_profile', 'repeat'}, offered)
        for name in offered:
            self.assertEqual(options.conf_defaults()[name],
                             conf.epa_chain[name], name)
        # The plugin's typed view starts from the same values.
        self.assertEqual(opts.ChainOptions(),
                         opts.ChainOptions.from_conf(conf.epa_chain))


class ChoicesAndBoundsAgreeTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.declared = {opt.name: opt for opt in epa_config.EpaChainGroup}

    def test_method_choices(self):
        tempest = sorted(self.declared['search_method'].type.choices)
        for flags in (cli_options.actions('measure'),
                      cli_options.actions('local', 'run')):
            self.assertEqual(tempest, sorted(flags['--method'].choices))
        self.assertEqual(tempest, sorted(searches.METHODS))
        self.assertEqual(tempest, sorted(options.METHOD_NAMES))

    def test_search_profile_choices(self):
        # Each choice option offers its own choices, not the methods'.
        tempest = sorted(self.declared['search_profile'].type.choices)
        for flags in (cli_options.actions('measure'),
                      cli_options.actions('local', 'run')):
            self.assertEqual(tempest,
                             sorted(flags['--search-profile'].choices))
        self.assertEqual(tempest, sorted(options.PROFILES))

    def test_tempest_bounds_are_the_table_bounds(self):
        for option in options.for_front_end(options.TEMPEST):
            if option.field == 'loss_goals':
                for name in ('ndr_loss_ratio', 'pdr_loss_ratio'):
                    self.assertEqual(options.LOSS_RATIO_LOW,
                                     self.declared[name].type.min)
                    self.assertEqual(options.LOSS_RATIO_HIGH,
                                     self.declared[name].type.max)
                continue
            opt = self.declared[option.conf]
            if option.item_low is not None:
                self.assertEqual(option.item_low, opt.type.item_type.min)
                continue
            self.assertEqual(option.low, getattr(opt.type, 'min', None),
                             option.field)
            self.assertEqual(option.high, getattr(opt.type, 'max', None),
                             option.field)


class DirectionTest(testtools.TestCase):

    def test_the_scenarios_words_are_the_tables(self):
        declared = {opt.name: opt for opt in epa_config.EpaChainGroup}
        self.assertEqual(
            [chain_directions.word(d) for d in (
                chain_directions.UNIDIRECTIONAL,
                chain_directions.BIDIRECTIONAL)],
            list(declared['directions'].type.item_type.choices))
