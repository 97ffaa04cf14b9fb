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
The table owns every default: measurement.rst's table of them is
generated from it (tools/option_docs.py), and a default changed in the
table reaches the command lines, Tempest and that page.
"""

import contextlib
import dataclasses
import glob
import importlib.util
import io
import os
import re
import shutil
import tempfile
from unittest import mock

import fixtures
import testtools

from epa_chain.chain import directions as chain_directions
from epa_chain import cli
from epa_chain.cloud import options as opts
from epa_chain.commands import _arguments
from epa_chain.measurement import campaign
from epa_chain.measurement import options
from epa_chain.measurement import trial
from epa_chain.tests import cli_options
from epa_chain.tests import repo

# A default stated in prose: ``--latency-fraction`` (0.9),
# ``--mlr-initial-trial`` (default 1 s).
PROSE_DEFAULT = re.compile(
    r'``(--[a-z-]+)``\s+\((?:default\s+)?([0-9][0-9.]*)[\s);,]')


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
        plain = options.PROFILES['plain']
        for option in options.TABLE:
            default = plain.get(option.field, option.default)
            self.assertEqual(option.check(default),
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


class SearchProfileTest(testtools.TestCase):
    """A profile fills what the user left unset; a value given wins."""

    def test_plain_is_todays_search(self):
        plan = _arguments.campaign_from_arguments(parse(
            'measure', '--json', 'x'))
        self.assertEqual((0.0, 1.0, 0), (
            plan.mlr_exceed_ratio, plan.mlr_duration_sum_trials,
            plan.loss_verification_repeats))

    def test_noise_robust_sets_its_values_and_a_given_one_wins(self):
        plan = _arguments.campaign_from_arguments(parse(
            'measure', '--json', 'x', '--search-profile', 'noise-robust',
            '--mlr-exceed-ratio', '0'))
        robust = options.PROFILES['noise-robust']
        self.assertEqual(0.0, plan.mlr_exceed_ratio)
        self.assertEqual(robust['mlr_duration_sum_trials'],
                         plan.mlr_duration_sum_trials)
        self.assertEqual(robust['loss_verification_repeats'],
                         plan.loss_verification_repeats)
        self.assertEqual('noise-robust', plan.parameters()['search_profile'])

    def test_an_unknown_profile_names_the_choices(self):
        error = self.assertRaises(options.FieldError, campaign.Campaign,
                                  search_profile='robust')
        self.assertIn('choose one of plain, noise-robust', str(error))


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


def _tool(name):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(repo.ROOT, 'tools', name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _another_default(option):
    """A valid default for `option` other than its own."""
    others = {'frame_sizes': (trial.FrameSize(size=128),),
              'flow_counts': (2,), 'loss_goals': {'NDR': 0.0, 'PDR': 0.01},
              'directions': chain_directions.BIDIRECTIONAL,
              'results_dir': 'elsewhere'}
    if option.field in others:
        return others[option.field]
    if option.kind == 'choice':
        return [c for c in option.choices if c != option.default][0]
    if option.default is None:
        return 7 if option.kind == 'int' else 1e6
    if option.kind == 'int':
        return option.default + 1
    return option.default / 2 if option.default else 0.5


def stale_prose(table, paths=None):
    """Defaults the docs state in prose that no front end starts from."""
    by_flag = {option.flag: option for option in table}
    stale = []
    for path in paths or glob.glob(os.path.join(
            repo.ROOT, 'doc', 'source', '*.rst')) + [
            os.path.join(repo.ROOT, 'README.rst')]:
        with open(path) as stream:
            text = stream.read()
        for flag, value in PROSE_DEFAULT.findall(text):
            option = by_flag.get(flag)
            if option is None:
                continue
            starts = {repr(float(options.PROFILES['plain'].get(
                option.field, options.defaults(front_end)[option.field])))
                for front_end in (options.MEASURE, options.LOCAL)}
            if repr(float(value)) not in starts:
                stale.append('%s: %s (%s)' % (os.path.relpath(
                    path, repo.ROOT), flag, value))
    return stale


class OneOwnerTest(testtools.TestCase):
    """The table owns the defaults; the rest follows a change there."""

    def test_measurement_rst_lists_the_tables_defaults(self):
        tool = _tool('option_docs')
        with open(tool.CAMPAIGN_PAGE) as stream:
            page = stream.read()
        self.assertEqual(tool.replace(page, tool.render_campaign(),
                                      tool.CAMPAIGN_BEGIN, tool.CAMPAIGN_END),
                         page, 'run tools/option_docs.py')
        self.assertEqual([], stale_prose(options.TABLE))

    def test_every_default_changed_in_the_table_reaches_each_front_end(self):
        tool = _tool('option_docs')
        for index, option in enumerate(options.TABLE):
            if option.field in options.PROFILES['plain']:
                continue  # its defaults are the profiles' (test below)
            changed = dataclasses.replace(
                option, default=_another_default(option))
            table = options.TABLE[:index] + (changed,) + \
                options.TABLE[index + 1:]
            with mock.patch.object(options, 'TABLE', table), \
                    mock.patch.dict(options.BY_FIELD, {option.field: changed}):
                self._follows(tool, changed)

    def _follows(self, tool, changed):
        shown = changed.show(changed.default)
        (row,) = [row for row in tool.campaign_rows(options.TABLE)
                  if row[0] == changed.field]
        self.assertEqual(shown, row[3], changed.field)
        measure = cli_options.actions('measure')
        self.assertEqual(shown, measure[changed.flag].default, changed.field)
        if changed.conf and changed.field not in options.OVERRIDES[
                options.TEMPEST]:
            self.assertEqual(changed.to_conf(changed.default),
                             options.conf_defaults()[changed.conf])

    def test_a_changed_profile_value_reaches_each_front_end(self):
        tool = _tool('option_docs')
        option = options.BY_FIELD['mlr_exceed_ratio']
        changed = {name: dict(values) for name, values in
                   options.PROFILES.items()}
        changed['noise-robust']['mlr_exceed_ratio'] = 0.25
        with mock.patch.dict(options.PROFILES, changed):
            self.assertEqual(0.25, campaign.Campaign(
                search_profile='noise-robust').mlr_exceed_ratio)
            self.assertIn('noise-robust 0.25',
                          cli_options.actions('measure')[option.flag].help)
            self.assertIn('mlr_exceed_ratio 0.25', ' '.join(
                tool.render_campaign().split()))
            self.assertEqual('by profile', [
                row for row in tool.campaign_rows(options.TABLE)
                if row[0] == option.field][0][3])

    def test_a_changed_default_names_the_prose_that_states_it(self):
        page = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'page.rst')
        option = options.BY_FIELD['mlr_initial_trial_duration_s']
        with open(page, 'w') as stream:
            stream.write('set by ``--mlr-initial-trial`` (default %g s)\n'
                         % option.default)
        self.assertEqual([], stale_prose(options.TABLE, [page]))
        changed = dataclasses.replace(option, default=option.default + 7)
        table = tuple(changed if o is option else o for o in options.TABLE)
        with mock.patch.object(options, 'TABLE', table), \
                mock.patch.dict(options.BY_FIELD, {option.field: changed}):
            self.assertEqual(['%s: --mlr-initial-trial (%g)' % (
                os.path.relpath(page, repo.ROOT), option.default)],
                stale_prose(table, [page]))

    def test_compare_searches_starts_from_the_table(self):
        args = _tool('compare_searches').parse_args([])
        for field in ('trial_duration_s', 'resolution',
                      'mlr_initial_trial_duration_s',
                      'mlr_preceding_targets'):
            option = options.BY_FIELD[field]
            self.assertEqual(option.default, getattr(args, option.dest))
        self.assertEqual(options.BY_FIELD['loss_goals'].default,
                         options.parse_goals(args.loss_goals))
