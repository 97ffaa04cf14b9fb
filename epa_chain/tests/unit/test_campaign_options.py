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

"""One table of campaign options: the model, the CLI and Tempest agree.

`epa-chain measure`, `epa-chain local run` and the Tempest plugin's
[epa_chain] options all come from measurement/options.py. These tests
read each command line as its users meet it (the argparse parser) and
check defaults, choices and bounds against the Campaign the table
describes; the Tempest plugin's own unit tests
(tempest_plugin/epa_chain_tempest_plugin/tests/unit/test_campaign_options.py)
do the same with its registered oslo.config group, against the same CLI.
"""

import contextlib
import dataclasses
import io
import os
import shutil
import tempfile

import testtools

from epa_chain.chain import directions as chain_directions
from epa_chain import cli
from epa_chain.cloud import options as opts
from epa_chain.commands import _arguments
from epa_chain.measurement import campaign
from epa_chain.measurement import options
from epa_chain.tests import cli_options


def parse(*argv):
    return cli.build_parser().parse_args(list(argv))


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


class DefaultsAgreeTest(testtools.TestCase):

    def test_the_model_takes_the_table_defaults(self):
        plan = campaign.Campaign()
        for option in options.TABLE:
            self.assertEqual(option.check(option.default),
                             getattr(plan, option.field), option.field)
        self.assertEqual(sorted(f.name for f in dataclasses.fields(plan)),
                         sorted(options.BY_FIELD))

    def test_measure_starts_from_the_model_defaults(self):
        args = parse('measure', '--json', 'out.json')
        self.assertEqual(campaign.Campaign(),
                         _arguments.campaign_from_arguments(args))

    def test_local_run_starts_from_its_declared_overrides(self):
        args = parse('local', 'run')
        plan = _arguments.campaign_from_arguments(args, options.LOCAL)
        self.assertEqual(campaign.Campaign(**options.OVERRIDES[options.LOCAL]),
                         plan)
        # The bed sets these; the command line does not offer them.
        flags = cli_options.actions('local', 'run')
        self.assertNotIn('--direction', flags)
        self.assertNotIn('--chain-length', flags)
        self.assertEqual('rfc2544', plan.method)

    def test_help_shows_the_default_each_command_uses(self):
        measure_help = cli_options.actions('measure')
        local_help = cli_options.actions('local', 'run')
        # The table's default and the local bed's declared override.
        self.assertEqual(options.BY_FIELD['method'].default,
                         measure_help['--method'].default)
        self.assertEqual(options.OVERRIDES[options.LOCAL]['method'],
                         local_help['--method'].default)
        self.assertIn('(default: %s)' % options.OVERRIDES[options.LOCAL][
            'trial_duration_s'], local_help['--trial-duration'].help)
        self.assertIn('(default: %s)' % options.BY_FIELD[
            'trial_duration_s'].default,
            measure_help['--trial-duration'].help)


class ChoicesAndBoundsAgreeTest(testtools.TestCase):

    def test_the_model_refuses_what_the_bounds_exclude(self):
        for option in options.TABLE:
            if option.low is None:
                continue
            step = 1 if option.kind == 'int' else 1e-9
            below = option.low - step
            self.assertRaises(options.FieldError, campaign.Campaign,
                              **{option.field: below})
            if option.low_open:
                self.assertRaises(options.FieldError, campaign.Campaign,
                                  **{option.field: option.low})
            else:
                campaign.Campaign(**{option.field: option.low})
            if option.high is not None:
                self.assertRaises(options.FieldError, campaign.Campaign,
                                  **{option.field: option.high + step})
                if option.high_open:
                    self.assertRaises(options.FieldError, campaign.Campaign,
                                      **{option.field: option.high})

    def test_loss_ratio_bounds(self):
        campaign.Campaign(loss_goals={'NDR': options.LOSS_RATIO_LOW})
        for ratio in (options.LOSS_RATIO_HIGH, options.LOSS_RATIO_LOW - 0.1):
            self.assertRaises(options.FieldError, campaign.Campaign,
                              loss_goals={'NDR': ratio})


class ErrorsNameTheOptionTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = tempfile.mkdtemp(prefix='epa-options-')
        self.addCleanup(shutil.rmtree, self.directory)

    def test_measure_names_the_flag_as_written(self):
        out = os.path.join(self.directory, 'x.json')
        for argv, expected in (
                (['--frame-sizes', '64,32'], "--frame-sizes '64,32': "),
                (['--resolution', '0'], "--resolution '0': give a number "
                                        "in (0, 1)"),
                (['--resolution', 'fine'], "--resolution 'fine': give a "
                                           "number"),
                (['--direction', 'sideways'], "--direction 'sideways': "
                                              "give uni"),
                (['--max-load', '10', '--min-load', '20'],
                 "--min-load '20': must be below"),
                (['--loss-goals', 'NDR=2'], "--loss-goals 'NDR=2': "),
                (['--repetitions', '0'], "--repetitions '0': give a whole "
                                         "number >= 1"),
                (['--soak-duration', '60'], '--results-dir: a soak writes '
                                            'partial results')):
            code, _out, err = run('measure', '--json', out, *argv)
            self.assertEqual(2, code, argv)
            self.assertIn(expected, err, argv)
            self.assertNotIn('Campaign.', err, argv)
            self.assertEqual(1, len(err.splitlines()), err)
        self.assertFalse(os.path.exists(out))

    def test_local_run_names_the_flag_before_anything_is_created(self):
        state_root = os.path.join(self.directory, 'state')
        code, _out, err = run('local', 'run', '--state-root', state_root,
                              '--trial-duration', '-1')
        self.assertEqual(2, code)
        self.assertIn("epa-chain local: --trial-duration '-1': give a "
                      "positive number", err)
        self.assertFalse(os.path.exists(os.path.join(state_root, 'epa')))

    def test_tempest_names_the_option(self):
        conf = campaign_options_conf(latency_load_fraction=0.0)
        error = self.assertRaises(opts.OptionError, opts.parse_campaign,
                                  conf, None)
        self.assertEqual("[epa_chain] latency_load_fraction: 0.0: give a "
                         "number in (0, 1]", str(error))
        self.assertNotIn('Campaign.', str(error))

    def test_the_model_names_its_field(self):
        error = self.assertRaises(options.FieldError, campaign.Campaign,
                                  resolution=2)
        self.assertEqual('resolution', error.field)
        self.assertIn('Campaign.resolution=2', str(error))


def campaign_options_conf(**changes):
    """[epa_chain]'s campaign values as oslo.config gives them."""
    return dict(options.conf_defaults(), **changes)


class DirectionTest(testtools.TestCase):

    def test_every_spelling_in_use(self):
        for text in ('uni', 'unidir', 'unidirectional', 'Unidirectional',
                     'forward', ('forward',), ['forward']):
            self.assertEqual(('forward',), chain_directions.parse(text))
        for text in ('bi', 'bidir', 'bidirectional', 'forward,reverse',
                     'forward, reverse', ('forward', 'reverse')):
            self.assertEqual(('forward', 'reverse'),
                             chain_directions.parse(text))
        for text in ('sideways', 'reverse', ('reverse', 'forward'), ()):
            self.assertRaises(ValueError, chain_directions.parse, text)

    def test_one_form_everywhere(self):
        self.assertEqual(('forward', 'reverse'),
                         _arguments.campaign_from_arguments(parse(
                             'measure', '--direction', 'bidirectional',
                             '--json', 'x')).directions)
        options_ = opts.ChainOptions()
        plan = options_.case_campaign(
            options_.campaign.frame_sizes[0], 1,
            chain_directions.parse('unidirectional'), 1, None)
        self.assertEqual(('forward',), plan.directions)

    def test_replace_checks_again(self):
        plan = campaign.Campaign()
        both = dataclasses.replace(plan, directions='bi', chain_length=3)
        self.assertEqual(('forward', 'reverse'), both.directions)
        self.assertRaises(options.FieldError, dataclasses.replace, plan,
                          chain_length=-1)
