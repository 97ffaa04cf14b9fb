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

"""The one resolve-and-check: Heat's refusals and the rules', one error."""

import multiprocessing
import os

from unittest import mock

import fixtures
import testtools

from epa_chain.hot import files
from epa_chain.hot import offline
from epa_chain.hot import resolve
from epa_chain.hot import shipped
from epa_chain.tests import repo
from epa_chain.validation import check
from epa_chain.validation import findings
from epa_chain.validation import nova_rules
from epa_chain.validation import runner

PVP = [shipped.preset_path('pvp-bidir', repo.TEMPLATES)]


class TestCheckStack(testtools.TestCase):

    def refused(self, parameters, stack_name='s1'):
        # Inline, as the Tempest benchmark sends the preset: the parameters
        # win over it.
        return self.assertRaises(check.StackRefused, check.check_stack,
                                 repo.CHAIN, PVP, parameters, stack_name,
                                 inline=True)

    def test_a_stack_the_rules_pass_is_resolved_with_its_findings(self):
        checked = check.check_stack(repo.CHAIN, PVP, {'vnf_count': 1}, 's1')
        self.assertIsInstance(checked, resolve.Resolved)
        self.assertEqual('s1', checked.stack_name)
        self.assertEqual({'vnf_count': 1}, checked.parameters)
        self.assertEqual(['chains.0.generator.server', 'chains.0.vnf1.server'],
                         sorted(n.name for n in checked.topology.nodes))
        # Never an error; the cloud lookups it skipped are listed.
        self.assertEqual([], [f for f in checked.findings
                              if f.severity == findings.ERROR])
        self.assertIn('CLOUD-LOOKUP', {f.rule for f in checked.findings})

    def test_warnings_pass_and_are_kept(self):
        checked = check.check_stack(
            repo.CHAIN, PVP, {'management_allowed_cidr': '0.0.0.0/0'})
        self.assertEqual(['MGMT-CIDR'], [f.rule for f in checked.findings
                                         if f.severity == findings.WARNING])

    def test_heat_refusal_says_nothing_was_created(self):
        error = self.refused({'cpu_thread_policy': 'sometimes'})
        self.assertIsNone(error.resolved)
        self.assertIsNotNone(error.template_set)
        self.assertEqual(['HEAT'], [f.rule for f in error.errors])
        self.assertTrue(str(error).startswith(
            'stack s1 does not validate; nothing was created:\n  '))
        self.assertIn('cpu_thread_policy', str(error))

    def test_rule_refusal_says_nothing_was_created(self):
        # Heat accepts two segments on one VLAN; the NFV rules do not.
        error = self.refused({'net1_physical_network': 'physnet1',
                              'net1_vlan': 1001}, 'chain-x')
        self.assertIsNotNone(error.resolved)
        self.assertEqual(['VLAN-UNIQUE'], [f.rule for f in error.errors])
        self.assertIn('stack chain-x does not validate; nothing was created',
                      str(error))
        self.assertIn('VLAN 1001 on physnet1', str(error))
        # Only errors are in the message; the rest stays on the error.
        self.assertNotIn('CLOUD-LOOKUP', str(error))
        self.assertIn('CLOUD-LOOKUP', {f.rule for f in error.findings})

    def test_a_file_that_does_not_load_is_a_load_finding(self):
        missing = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'none.yaml')
        error = self.assertRaises(check.StackRefused, check.check_stack,
                                  missing)
        self.assertIsNone(error.template_set)
        self.assertEqual([check.LOAD], [f.rule for f in error.errors])
        self.assertIn('none.yaml', str(error))


class TestCheckACreatedStack(testtools.TestCase):
    """What Heat holds for a created stack goes through check_stack too."""

    def held(self):
        loaded = files.load(repo.CHAIN, PVP)
        return loaded.template, loaded.environment, loaded.files

    def test_heat_held_files_resolve_as_the_paths_do(self):
        template_set = files.from_heat('pvp', *self.held())
        environment = dict(template_set.environment)
        checked = check.check_stack(template_set, (),
                                    {'vnf_engine': 'testpmd'}, 'pvp')
        self.assertEqual({'pvp-generator': 'prox', 'pvp-vnf1': 'testpmd'},
                         {n.config.name: n.config.engine
                          for n in checked.topology.nodes})
        # The parameters went on a copy: the set is still Heat's.
        self.assertEqual(environment, template_set.environment)
        self.assertEqual('stack pvp', checked.display_template)

    def test_a_loaded_set_takes_no_environment_paths(self):
        template_set = files.from_heat('pvp', *self.held())
        self.assertRaises(TypeError, check.check_stack, template_set, PVP)

    def test_what_heat_gives_is_checked_before_parsing(self):
        template, environment, held = self.held()
        for bad, message in (
                ((['x'], environment, held), 'its template is a list'),
                ((template, environment, None), 'its files is empty'),
                ((template, {'nope': {}}, held), "section 'nope'"),
                ((template, environment, {'file:///a.yaml': 7}),
                 'file file:///a.yaml of its files map is a number, not '
                 'text'),
                ((template, environment, {'file:///a.yaml': '[' * 500}),
                 'file:///a.yaml')):
            error = self.assertRaises(files.LoadError, files.from_heat,
                                      'pvp', *bad)
            self.assertIn(message, str(error))


class TestParametersMergeAsHeatMerges(testtools.TestCase):
    """`openstack stack create -e ... --parameter` and an inline call.

    Seen on a real Heat 19: the vE-CPE preset with --parameter
    endpoints=generator made a stack with an external tester, because
    Heat merges every environment file over the parameters.
    """

    VECPE = [shipped.preset_path('vecpe-bidir', repo.TEMPLATES),
             os.path.join(repo.TEMPLATES, 'environments', 'small-host.yaml')]
    GENERATOR = os.path.join(repo.TEMPLATES, 'environments',
                             'in-stack-generator.yaml')

    def endpoints(self, checked):
        return checked.realisation.parameters['endpoints']

    def test_an_environment_file_beats_a_parameter_and_it_is_said(self):
        checked = check.check_stack(repo.CHAIN, self.VECPE,
                                    {'endpoints': 'generator'})
        self.assertEqual('external', self.endpoints(checked))
        (warning,) = [f for f in checked.findings
                      if f.rule == 'PARAM-OVERRIDDEN']
        self.assertEqual('endpoints', warning.parameter)
        self.assertIn('vecpe-bidir.yaml sets', warning.message)
        self.assertIn('in-stack-generator.yaml', warning.fix)

    def test_a_later_environment_file_is_how_to_change_it(self):
        checked = check.check_stack(repo.CHAIN,
                                    self.VECPE + [self.GENERATOR])
        self.assertEqual('generator', self.endpoints(checked))
        self.assertEqual(4, len(checked.topology.nodes))

    def test_inline_the_parameters_win(self):
        # heatclient's stacks.create with the preset as `environment`.
        checked = check.check_stack(repo.CHAIN, self.VECPE,
                                    {'endpoints': 'generator'}, inline=True)
        self.assertEqual('generator', self.endpoints(checked))
        self.assertEqual([], [f for f in checked.findings
                              if f.rule == 'PARAM-OVERRIDDEN'])

    def test_the_merge_is_heats_api_then_engine(self):
        # What Heat's API and engine do with the request the client sends
        # (environment_files named: the client's merged environment is
        # not used), done here step by step with Heat's own code.
        from heat.api.openstack.v1 import stacks as heat_api
        from heat.common import environment_util

        loaded = files.load(repo.CHAIN, self.VECPE)
        request = {'parameters': {'endpoints': 'generator', 'vnf_count': 2,
                                  'cpu_policy': 'dedicated'},
                   'environment': loaded.environment,
                   'environment_files': loaded.environment_files,
                   'files': loaded.files}
        params = heat_api.InstantiationData(request).environment()
        # heat/engine/service.py: the template's parameter schemata.
        template = offline.heat().template.Template(loaded.template,
                                                    files=loaded.files)
        environment_util.merge_environments(
            loaded.environment_files, loaded.files, params,
            template.all_param_schemata(loaded.files))
        merged = resolve.heat_merge(loaded, request['parameters'])
        self.assertEqual(params['parameters'], merged['parameters'])
        # The small-host environment, last, set cpu_policy.
        self.assertEqual('shared', merged['parameters']['cpu_policy'])
        self.assertEqual(3, merged['parameters']['vnf_count'])


class TestChecksShareNothing(testtools.TestCase):
    """What every check shares (hot/memo.py) never carries one's state."""

    def findings(self, checked):
        return sorted(str(f) for f in checked.findings)

    def test_a_check_after_a_refused_one_is_unaffected(self):
        first = check.check_stack(repo.CHAIN, PVP)
        self.assertRaises(check.StackRefused, check.check_stack, repo.CHAIN,
                          PVP, {'cpu_thread_policy': 'sometimes'},
                          inline=True)
        again = check.check_stack(repo.CHAIN, PVP)
        self.assertEqual(self.findings(first), self.findings(again))
        self.assertEqual(first.realisation.parameters,
                         again.realisation.parameters)

    def test_what_a_caller_does_to_its_stack_stays_its_own(self):
        first = check.check_stack(repo.CHAIN, PVP)
        first.template_set.template['resources'].clear()
        first.template_set.files.clear()
        again = check.check_stack(repo.CHAIN, PVP)
        self.assertTrue(again.template_set.template['resources'])
        self.assertEqual(self.findings(first), self.findings(again))

    def test_a_file_changed_between_checks_is_read_again(self):
        directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(directory, 't.yaml')
        text = ('heat_template_version: 2021-04-16\nparameters:\n'
                '  n: {type: number, default: 1}\n')
        for default, refused in (('1', False), ('.nan', True)):
            with open(path, 'w') as stream:
                stream.write(text.replace('1}', default + '}'))
            if refused:
                self.assertRaises(check.StackRefused, check.check_stack,
                                  path)
            else:
                check.check_stack(path)


class TestValidatePairsInWorkers(testtools.TestCase):
    """Checks forked to every CPU report what one process reports."""

    PAIRS = [(repo.CHAIN, [])] + [
        (repo.CHAIN, [shipped.preset_path(p, repo.TEMPLATES)])
        for p in ('pvp-unidir', 'pvvp-bidir', 'vecpe-unidir')]

    def reports(self, reports):
        return [(r.template, r.environments,
                 sorted(str(f) for f in r.findings)) for r in reports]

    def test_in_order_and_as_one_process_makes_them(self):
        with mock.patch.object(runner, '_cpus', return_value=2):
            forked = runner.validate_pairs(self.PAIRS)
        with mock.patch.object(runner, '_cpus', return_value=1):
            alone = runner.validate_pairs(self.PAIRS)
        self.assertEqual(self.reports(alone), self.reports(forked))
        self.assertEqual([[], self.PAIRS[1][1]],
                         [r.environments for r in forked[:2]])

    def test_nothing_to_validate(self):
        self.assertEqual([], runner.validate_pairs([]))


class TestConstraintsLoadedWhenUsed(testtools.TestCase):
    """Heat's constraint plugins, loaded lazily, judge as loaded eagerly."""

    def setUp(self):
        super().setUp()
        self.env = offline.heat().resources.global_env()

    def test_a_lookup_is_skipped_and_recorded(self):
        constraint = self.env.get_constraint('glance.image')
        self.assertEqual('Skipped_glance_image', constraint.__name__)
        with offline.SkippedLookups() as skipped:
            self.assertTrue(constraint().validate('cirros', None))
        self.assertEqual([offline.SkippedLookup('glance.image', 'cirros')],
                         skipped.lookups)

    def test_a_pure_check_is_heats_own(self):
        constraint = self.env.get_constraint('net_cidr')()
        self.assertTrue(constraint.validate('10.0.0.0/8', None))
        self.assertFalse(constraint.validate('10.0.0.0/33', None))

    def test_an_unknown_name_is_not_found(self):
        self.assertIsNone(self.env.get_constraint('no.such.constraint'))

    def test_every_entry_point_is_known_unloaded(self):
        names = {point.name for point in offline.importlib.metadata
                 .entry_points(group=offline.CONSTRAINTS)}
        self.assertIn('nova.flavor', names)
        self.assertEqual(names, names & set(self.env.constraints._points))


class TestNovaLoadedAside(testtools.TestCase):
    """Nova's rules asked of a process of their own answer as here."""

    SPECS = [{'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': 'large'},
             {'hw:cpu_policy': 'pinned'}, {'hw:numa_nodes': 3}]

    def answers(self):
        return ([nova_rules.invalid_extra_specs(s) for s in self.SPECS],
                [nova_rules.numa_constraints(2, 2048, s)
                 for s in self.SPECS])

    def test_the_same_answers_here_aside_and_from_a_forked_process(self):
        here = self.answers()
        with nova_rules.loaded_aside():
            self.assertIsNotNone(nova_rules._aside)
            aside = self.answers()
            with multiprocessing.get_context('fork').Pool(2) as pool:
                forked = pool.apply(self.answers)
        self.assertIsNone(nova_rules._aside)
        self.assertEqual(here, aside)
        self.assertEqual(here, forked)
        self.assertNotEqual([], here[0][1])

    def test_what_nova_raises_is_raised_here(self):
        with nova_rules.loaded_aside():
            self.assertRaises(ValueError, nova_rules.numa_constraints,
                              'two', 2048, {})

    def test_nova_failing_to_load_fails_each_question_as_here(self):
        with mock.patch.object(nova_rules, '_nova',
                               side_effect=ImportError('no nova')):
            with nova_rules.loaded_aside():
                error = self.assertRaises(
                    ImportError, nova_rules.invalid_extra_specs, {})
        self.assertEqual('no nova', str(error))
