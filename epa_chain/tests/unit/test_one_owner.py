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

"""Every setting has one owner: the others read it, tests check the rest.

A template parameter's default that code also needs is read from
chain.yaml (hot.shipped.parameter_default): the [epa_chain] options that
set a chain.yaml parameter take its default, so that Tempest deploys what
`openstack stack create` does. Nested templates get every value passed
and state no default of their own; bounds the guest checks
(chain/node_config.py) are the templates' constraints too.

The flavors' EPA extra specs (hw:cpu_policy and the rest) and the
other values the TOSCA service templates share with chain.yaml are stated
in chain.yaml's parameters only, and the other places read them:

- The TOSCA service templates take each EPA spec from an input of the
  chain.yaml parameter's name (compute_requirements' hw:cpu_policy:
  {get_input: cpu_policy}), and every input named after a chain.yaml
  parameter (but a segment's: the shape's presets set those) is optional
  with no default of its own. epa-chain's TOSCA path (tosca/loader.py)
  fills an input left out with chain.yaml's default, and the translated
  parameter defaults to it (tosca/repairs.py; the EPA ones keep
  chain.yaml's definition, host_sizing). A TOSCA input with a default of
  its own would be a second statement, free to drift.
- devstack's EPA_CHAIN_FLAVOR_PROPERTIES is empty by default: the flavors
  devstack creates for Tempest get devstack/flavor_properties.py's
  output, chain.yaml's vnf_flavor and lib/epa_flavor.yaml's extra_specs
  evaluated with chain.yaml's defaults, when they are created. A value set
  in local.conf (or the single-host cloud's small-host specs) overrides.

So changing such a default is one line of chain.yaml: test
`test_a_changed_default_is_what_every_path_deploys` changes cpu_policy
and generator_control_port in a copy of templates/ and shows Heat's
flavors, each TOSCA translation and devstack's flavors follow. What
still states a value chain.yaml has (the TOSCA flavors' sizes: a VNF
descriptor writes its sizes, and heat-translator converts "2048 MiB"
while it translates) is compared with what chain.yaml's defaults resolve
to, and a default changed in a copy shows every place that states it.
"""

import os
import re
import shutil
import subprocess
import sys

import fixtures
import testtools
import yaml

from epa_chain.chain import directions
from epa_chain.chain import node_config
from epa_chain.cloud import options as cloud_options
from epa_chain.cloud import stack
from epa_chain.hot import shipped
from epa_chain.tests import repo
from epa_chain.tests.unit import tosca_cases

# Set per scenario (chain length, direction, the in-stack generator), not
# defaults: cloud/stack.py passes them besides the options.
SCENARIO_PARAMETERS = ('vnf_count', 'direction', 'endpoints')
SERVICE_TEMPLATES = ('pvp.yaml', 'pvvp.yaml', 'vecpe.yaml')
# A TOSCA chain's segments and tester MACs are its shape's (its presets'),
# not chain.yaml's defaults.
SHAPE_INPUT = re.compile(r'^(net[0-9]+_|external_)')
SPEC_IN_TEXT = re.compile(r'(hw:[a-z_]+)=([A-Za-z0-9]+)')
STANDINS = os.path.join(repo.ROOT, 'epa_chain', 'tests', 'fixtures',
                        'devstack', 'devstack_standins.sh')


def _load(path):
    with open(path) as stream:
        return yaml.safe_load(stream)


def _parameters(relative, directory=repo.TEMPLATES):
    return _load(os.path.join(directory, relative))['parameters']


def default_flavors(directory=repo.TEMPLATES):
    """{role: flavor properties} as Heat resolves chain.yaml's defaults."""
    realisation = tosca_cases.realise(os.path.join(directory, 'chain.yaml'),
                                      ())
    return {role: realisation.get((role + '_flavor', 'flavor')).properties
            for role in ('vnf', 'generator')}


def translations(test, directory):
    """{service template: (parameters, [flavor properties])}.

    Of each translation: its HOT parameters and its realised flavors.

    Translated with `directory` as the shipped templates (what loader.py
    and repairs.py read chain.yaml's defaults from), each with its
    bidirectional preset: the presets give the shape, not the EPA specs.
    """
    from epa_chain.tosca import translate

    test.useFixture(fixtures.MonkeyPatch(
        'epa_chain.hot.shipped.template_dir', lambda: directory))
    work = test.useFixture(fixtures.TempDir()).path
    found = {}
    for name in SERVICE_TEMPLATES:
        preset = name[:-len('.yaml')] + '-bidir'
        result = translate.translate(tosca_cases.service_template(preset),
                                     tosca_cases.inputs_file(preset))
        path = os.path.join(work, name)
        with open(path, 'w') as stream:
            stream.write(result.to_yaml())
        found[name] = (result.template['parameters'], [
            flavor.properties for flavor in tosca_cases.realise(
                path, ()).of_type('OS::Nova::Flavor')])
    return found


def devstack_properties(directory=repo.TEMPLATES, **knobs):
    """{spec: value} of the flavors devstack creates for Tempest.

    lib/epa_chain's epa_chain_flavor_properties after devstack/settings,
    with `directory` as the templates Tempest deploys.
    """
    env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
           'PYTHON': sys.executable,
           'EPA_CHAIN_TEMPEST_TEMPLATE_DIR': directory}
    env.update(knobs)
    script = ('set -e; source %s; source %s/devstack/settings; '
              'source %s/devstack/lib/epa_chain; epa_chain_flavor_properties'
              % (STANDINS, repo.ROOT, repo.ROOT))
    result = subprocess.run(['bash', '-c', script], env=env,
                            capture_output=True, text=True, timeout=30)
    if result.returncode:
        raise AssertionError(result.stderr)
    return dict(item.split('=', 1) for item in result.stdout.split())


def stale_in_tosca(defaults, flavors):
    """What the TOSCA service templates state otherwise than chain.yaml."""
    stale = []
    for name in SERVICE_TEMPLATES:
        topology = _load(os.path.join(repo.TOSCA, name))['topology_template']
        for item, spec in topology['inputs'].items():
            if (item in defaults and 'default' in spec and
                    not SHAPE_INPUT.match(item)):
                stale.append('tosca/%s input %s: default %r, chain.yaml\'s '
                             'is %r; leave it to chain.yaml' % (
                                 name, item, spec['default'],
                                 defaults[item]))
        for node, template in topology['node_templates'].items():
            if template['type'] == 'epa_chain.nodes.ChainNode':
                stale += _stale_compute('tosca/%s %s' % (name, node),
                                        template, flavors)
    return stale


def _stale_compute(where, template, flavors):
    compute = template['capabilities']['virtual_compute']['properties']
    written = {
        'vcpus': compute['virtual_cpu']['num_virtual_cpu'],
        'ram': _quantity(compute['virtual_memory']['virtual_mem_size'],
                         'MiB'),
        'disk': _quantity(
            compute['virtual_local_storage'][0]['size_of_storage'], 'GiB')}
    flavor = flavors[template['properties']['role']]
    stale = ['%s %s: %r, chain.yaml\'s defaults give %r' % (
        where, key, value, flavor[key])
        for key, value in written.items() if value != flavor[key]]
    # The EPA specs: each taken from chain.yaml's parameter's input.
    specs = compute['compute_requirements']
    stale += ['%s extra spec %s: %r, not an input' % (where, key, value)
              for key, value in specs.items()
              if not (isinstance(value, dict) and list(value) == [
                  'get_input'])]
    missing = set(flavor['extra_specs']) - set(specs)
    if missing:
        stale.append('%s: no %s' % (where, ', '.join(sorted(missing))))
    return stale


def _quantity(text, unit):
    number, _space, written = str(text).partition(' ')
    return int(number) if written == unit else text


def stale_in_devstack(flavors):
    """What devstack/settings and its page state otherwise than chain.yaml.

    Tempest boots the flavors devstack creates (EPA_CHAIN_CREATE_FLAVORS):
    they carry the extra specs the stack's own flavors would.
    """
    specs = flavors['vnf']['extra_specs']
    stale = []
    page = os.path.join('doc', 'source', 'devstack.rst')
    with open(os.path.join(repo.ROOT, page)) as stream:
        for key, value in SPEC_IN_TEXT.findall(stream.read()):
            if specs.get(key) != value:
                stale.append('%s states %s=%s; chain.yaml\'s defaults give '
                             '%s' % (page, key, value, specs.get(key)))
    return stale


def changed_templates(test, changes):
    """A copy of templates/ whose chain.yaml has `changes` as defaults.

    Each change is the one line a maintainer would edit.
    """
    directory = os.path.join(test.useFixture(fixtures.TempDir()).path,
                             'templates')
    shutil.copytree(repo.TEMPLATES, directory)
    path = os.path.join(directory, 'chain.yaml')
    with open(path) as stream:
        text = stream.read()
    for name, value in changes.items():
        line = re.compile(r'(\n  %s:\n(?:    [^\n]*\n)*?    default: )'
                          r'[^\n]*' % re.escape(name))
        text, count = line.subn(
            lambda match: match.group(1) + yaml.safe_dump(
                value, default_flow_style=True).splitlines()[0], text)
        test.assertEqual(1, count, name)
    with open(path, 'w') as stream:
        stream.write(text)
    return directory


class NestedTemplatesTest(testtools.TestCase):

    def test_no_default_for_a_value_chain_yaml_passes(self):
        # A nested default chain.yaml always overrides is a second
        # statement of the value, free to drift.
        passed = {}
        for resource in _load(repo.CHAIN)['resources'].values():
            if resource['type'].startswith('lib/'):
                given = set(resource.get('properties') or ())
                passed[resource['type']] = passed.get(
                    resource['type'], given) & given
        self.assertIn('lib/epa_flavor.yaml', passed)
        for nested, names in passed.items():
            parameters = _parameters(nested)
            stated = sorted(name for name in names
                            if 'default' in parameters.get(name, {}))
            self.assertEqual([], stated, 'templates/%s: drop these '
                             'defaults, chain.yaml passes the values'
                             % nested)

    def test_the_bucket_bounds_are_the_guests(self):
        low, high = (node_config.MIN_LATENCY_BUCKET_SHIFT,
                     node_config.MAX_LATENCY_BUCKET_SHIFT)
        for relative, name in (
                ('chain.yaml', 'generator_latency_bucket_shift'),
                (os.path.join('lib', 'chain_server.yaml'),
                 'latency_bucket_shift')):
            (constraint,) = _parameters(relative)[name]['constraints']
            self.assertEqual({'min': low, 'max': high}, constraint['range'],
                             relative)

    def test_a_missing_default_names_the_template_and_parameter(self):
        error = self.assertRaises(shipped.PresetError,
                                  shipped.parameter_default, 'vnf_count_x')
        self.assertIn('chain.yaml: parameter vnf_count_x has no default',
                      str(error))


class TempestOptionsTest(testtools.TestCase):

    def test_tempest_deploys_what_stack_create_does(self):
        chain = _parameters('chain.yaml')
        options = cloud_options.ChainOptions()
        for length in cloud_options.CHAIN_LENGTHS:
            passed = stack.stack_parameters(options, length,
                                            directions.UNIDIRECTIONAL)
            for name, value in passed.items():
                if name not in SCENARIO_PARAMETERS:
                    self.assertEqual(chain[name]['default'], value, name)

    def test_choices_and_bounds_are_chain_yamls(self):
        chain = _parameters('chain.yaml')
        for opt in cloud_options.deployment_opts():
            parameter = chain.get(
                cloud_options.TEMPLATE_PARAMETERS.get(opt.dest), {})
            for constraint in parameter.get('constraints', ()):
                if 'allowed_values' in constraint:
                    self.assertEqual(constraint['allowed_values'],
                                     list(opt.type.choices), opt.dest)
                # oslo.config's PortOpt takes 0 too: not compared.
                if 'range' in constraint and opt.type.min:
                    self.assertEqual(constraint['range'], {
                        'min': opt.type.min, 'max': opt.type.max}, opt.dest)

    def test_every_template_backed_option_follows_a_changed_default(self):
        chain = _parameters('chain.yaml')
        changes = {}
        for option, parameter in cloud_options.TEMPLATE_PARAMETERS.items():
            changes[parameter] = _another_value(chain[parameter])
        directory = changed_templates(self, changes)
        declared = {opt.dest: opt.default
                    for opt in cloud_options.deployment_opts(directory)}
        for option, parameter in cloud_options.TEMPLATE_PARAMETERS.items():
            self.assertEqual(changes[parameter], declared[option], option)


def _another_value(definition):
    """A valid value other than a chain.yaml parameter's default."""
    default = definition['default']
    for constraint in definition.get('constraints') or ():
        if 'allowed_values' in constraint:
            return [value for value in constraint['allowed_values']
                    if value != default][0]
        if 'range' in constraint:
            low, high = (constraint['range']['min'],
                         constraint['range']['max'])
            return low if default != low else high
        if constraint.get('custom_constraint') == 'net_cidr':
            return '192.0.2.0/24'
    return default + 'x' if default else 'changed'


class StatedElsewhereTest(testtools.TestCase):
    """What cannot read chain.yaml is compared with it."""

    def test_tosca_and_devstack_state_chain_yamls_defaults(self):
        defaults = shipped.parameter_defaults(_parameters('chain.yaml'))
        flavors = default_flavors()
        self.assertEqual([], stale_in_tosca(defaults, flavors) +
                         stale_in_devstack(flavors))

    def test_a_changed_default_names_every_place_that_states_it(self):
        directory = changed_templates(self, {'generator_control_port': 8475,
                                             'vnf_vcpus': 3})
        defaults = shipped.parameter_defaults(
            _parameters('chain.yaml', directory), directory)
        stale = '\n'.join(stale_in_tosca(defaults,
                                         default_flavors(directory)))
        for name in SERVICE_TEMPLATES:
            self.assertIn('tosca/%s vnf1 vcpus' % name, stale)
        self.assertNotIn('input', stale)
        self.assertNotIn('extra spec', stale)


class FollowsChainYamlTest(testtools.TestCase):
    """The EPA specs' defaults: one line of chain.yaml, read everywhere."""

    def setUp(self):
        super().setUp()
        if not shutil.which('bash'):
            self.skipTest('bash is not installed')

    def test_devstacks_flavors_get_what_the_stacks_do(self):
        self.assertEqual(default_flavors()['vnf']['extra_specs'],
                         devstack_properties())
        with open(os.path.join(repo.ROOT, 'devstack', 'settings')) as stream:
            self.assertIn('\nEPA_CHAIN_FLAVOR_PROPERTIES='
                          '${EPA_CHAIN_FLAVOR_PROPERTIES:-}\n', stream.read())

    def test_a_set_devstack_value_overrides(self):
        self.assertEqual({'hw:cpu_policy': 'shared'}, devstack_properties(
            EPA_CHAIN_FLAVOR_PROPERTIES='hw:cpu_policy=shared'))

    def test_a_changed_default_is_what_every_path_deploys(self):
        tosca_cases.require_translator()
        chain = _parameters('chain.yaml')
        policy = _another_value(chain['cpu_policy'])
        port = _another_value(chain['generator_control_port'])
        directory = changed_templates(self, {'cpu_policy': policy,
                                             'generator_control_port': port})
        flavors = default_flavors(directory)
        specs = flavors['vnf']['extra_specs']
        self.assertEqual(policy, specs['hw:cpu_policy'])
        self.assertEqual(specs, flavors['generator']['extra_specs'])
        # Unpinned: lib/epa_flavor.yaml leaves the thread policies out.
        self.assertNotEqual(default_flavors()['vnf']['extra_specs'], specs)
        for name, (parameters, translated) in translations(
                self, directory).items():
            self.assertTrue(translated, name)
            for flavor in translated:
                self.assertEqual(specs, flavor['extra_specs'], name)
            self.assertEqual(policy, parameters['cpu_policy']['default'])
            # vecpe.yaml has an external tester: no control port.
            if 'generator_control_port' in parameters:
                self.assertEqual(port, parameters[
                    'generator_control_port']['default'], name)
        self.assertEqual(specs, devstack_properties(directory))
        defaults = shipped.parameter_defaults(
            _parameters('chain.yaml', directory), directory)
        self.assertEqual([], stale_in_tosca(defaults, flavors))
