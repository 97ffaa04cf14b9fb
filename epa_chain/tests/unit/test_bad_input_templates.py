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

"""Bad inputs to `epa-chain validate` and `epa-chain translate`, by table.

Each case builds its files in a scratch directory, runs the command
through its real entry point (epa_chain.cli.main) and checks the exit
status, that stderr is one line `epa-chain CMD: ...` naming the file,
option or field, that no traceback is printed, and that no case reads
(or prints) the marker file outside the template's tree, or fetches
anything. A case of kind REPORT is a template Heat or the rules refuse:
validate prints its FAIL report on stdout (its documented format) too.

validate exits 1 for a file it cannot or must not read (a LOAD error,
documented), translate 2; a broken TOSCA template is 1.
"""

import collections
import contextlib
import io
import os
import shutil
import tempfile

import testtools

from epa_chain import cli
from epa_chain import safe_yaml
from epa_chain.tests import repo
from epa_chain.tests.unit import test_template_inputs as inputs
from epa_chain.tests.unit import tosca_cases

HOT = inputs.HOT
MARKER = inputs.SECRET
BOMB = 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n' + ''.join(
    'a%d: &a%d [%s]\n' % (i, i, ', '.join(['*a%d' % (i - 1)] * 10))
    for i in range(1, 10))
DEEP = '[' * 5000 + ']' * 5000
BIG = '#' * (safe_yaml.HEAT_MAX_TEMPLATE_SIZE + 1) + '\n'
LINE = 'line'       # stderr: one line naming the file or option
REPORT = 'report'   # and validate's FAIL report on stdout

# argv: a function of the Scratch, giving the command line. names: what
# the message must name (file names are matched by their basename).
Case = collections.namedtuple('Case', 'argv code names kind outside')


def case(argv, code, *names, kind=LINE, outside=False):
    return Case(argv, code, names, kind, outside)


class Scratch:
    """base/ holds the marker file; base/tree/ the templates."""

    def __init__(self, base):
        self.base = base
        self.tree = os.path.join(base, 'tree')
        self.marker = os.path.join(base, 'outside.yaml')
        os.makedirs(self.tree)
        with open(self.marker, 'w') as stream:
            stream.write(HOT + '# %s\n' % MARKER)

    def file(self, name, text='', mode='w'):
        path = os.path.join(self.tree, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as stream:
            stream.write(text)
        return path

    def binary(self, name, data):
        return self.file(name, data, 'wb')

    def hot(self, resources, name='t.yaml'):
        return self.file(name, HOT + 'resources:\n' + resources)

    def value(self, value, name='t.yaml'):
        """A template with one OS::Heat::Value whose value is `value`."""
        return self.hot('  r:\n    type: OS::Heat::Value\n    properties:\n'
                        '      value: %s\n' % value, name)

    def typed(self, rtype, name='t.yaml'):
        return self.hot('  r:\n    type: %s\n' % rtype, name)

    def registry(self, entries, env='environments/env.yaml'):
        """t.yaml using My::X, and an environment registering it."""
        return ['validate', self.typed('My::X'), '-e',
                self.file(env, 'resource_registry:\n' + entries)]

    def fifo(self, name):
        path = os.path.join(self.tree, name)
        os.mkfifo(path)
        return path

    def tosca(self, imports=None, name='pvp.yaml'):
        """A copy of tosca/ in the tree; pvp.yaml with other imports."""
        if not os.path.exists(os.path.join(self.tree, 'definitions')):
            shutil.copytree(repo.TOSCA, self.tree, dirs_exist_ok=True)
        if imports is None:
            return os.path.join(self.tree, name)
        with open(os.path.join(repo.TOSCA, 'pvp.yaml')) as stream:
            text = stream.read()
        return self.file(name, text.replace(
            '  - definitions/epa_chain_types.yaml\n',
            ''.join('  - %s\n' % item for item in imports)))

    def out(self, name='out.yaml'):
        return os.path.join(self.base, name)


def validate(*argv):
    return ['validate', '-q'] + list(argv)


def translate(template, *argv, output=None):
    return ['translate', template, '-o', output] + list(argv)


def _translated(s, template, *argv):
    return translate(template, *argv, output=s.out())


VALIDATE_CASES = {
    # ---- validate: files outside the template's tree ---------------------
    'type_relative_outside': case(
        lambda s: validate(s.typed('../outside.yaml')), 1, 't.yaml',
        'resources.r.type', outside=True),
    'type_absolute_outside': case(
        lambda s: validate(s.typed(s.marker)), 1, 'resources.r.type',
        outside=True),
    'type_file_url_outside': case(
        lambda s: validate(s.typed('file://' + s.marker)), 1,
        'resources.r.type', outside=True),
    'type_dot_dot_inside_out': case(
        lambda s: validate(s.typed('lib/../../outside.yaml')), 1,
        'resources.r.type', outside=True),
    'get_file_absolute_outside': case(
        lambda s: validate(s.value('{get_file: %s}' % s.marker)), 1,
        'resources.r.properties.value.get_file', outside=True),
    'get_file_relative_outside': case(
        lambda s: validate(s.value('{get_file: ../outside.yaml}')), 1,
        'get_file ../outside.yaml', outside=True),
    'get_file_percent_encoded': case(
        lambda s: validate(s.value('{get_file: "%2e%2e/outside.yaml"}')),
        1, 'get_file', outside=True),
    'get_file_deep_in_a_function': case(
        lambda s: validate(s.value('{list_join: ["", [{get_file: '
                                   '../outside.yaml}]]}')), 1,
        'list_join[1][0].get_file', outside=True),
    'symlink_out_of_the_tree': case(
        lambda s: (os.symlink(s.marker, os.path.join(s.tree, 'l.yaml')),
                   validate(s.typed('l.yaml')))[1], 1, 'resources.r.type',
        outside=True),
    'get_file_of_a_hidden_file': case(
        lambda s: (s.file('.ssh/id_rsa', MARKER),
                   validate(s.value('{get_file: .ssh/id_rsa}')))[1], 1,
        'get_file .ssh/id_rsa', 'hidden'),
    'registry_entry_outside': case(
        lambda s: s.registry('  My::X: ../../outside.yaml\n'), 1,
        'env.yaml', 'resource_registry.My::X', outside=True),
    'registry_resource_entry_outside': case(
        lambda s: s.registry('  resources:\n    r:\n      My::X: '
                             '../../outside.yaml\n'), 1,
        'resource_registry.resources.r.My::X', outside=True),
    'registry_base_url_outside': case(
        lambda s: s.registry('  base_url: file://%s/\n  My::X: '
                             'outside.yaml\n' % s.base), 1,
        'resource_registry.My::X', outside=True),
    'nested_template_reaching_out': case(
        lambda s: (s.typed('../../outside.yaml', 'lib/inner.yaml'),
                   validate(s.typed('lib/inner.yaml')))[1], 1,
        'inner.yaml', 'resources.r.type', outside=True),
    # ---- validate: URLs, never fetched ----------------------------------
    'type_http_url': case(
        lambda s: validate(s.typed('http://127.0.0.1:9/x.yaml')), 1,
        'resources.r.type', 'a URL'),
    'get_file_https_url': case(
        lambda s: validate(s.value('{get_file: "https://example.com/x"}')),
        1, 'get_file', 'a URL'),
    'registry_ftp_url': case(
        lambda s: s.registry('  My::X: ftp://example.com/x.yaml\n'), 1,
        'env.yaml', 'a URL'),
    'registry_base_url_http': case(
        lambda s: s.registry('  base_url: http://127.0.0.1:9/\n'
                             '  My::X: x.yaml\n'), 1, 'My::X', 'a URL'),
    'file_url_of_another_host': case(
        lambda s: validate(s.typed('file://otherhost/x.yaml')), 1,
        'resources.r.type', 'a URL'),
    # ---- validate: sizes, aliases, nesting --------------------------------
    'template_too_large': case(
        lambda s: validate(s.file('t.yaml', HOT + BIG)), 1, 't.yaml',
        '524288'),
    'environment_too_large': case(
        lambda s: validate(s.typed('OS::Heat::None'), '-e',
                           s.file('e.yaml', 'parameters: {}\n' + BIG)), 1,
        'e.yaml', '524288'),
    'nested_template_too_large': case(
        lambda s: (s.file('lib/big.yaml', HOT + BIG),
                   validate(s.typed('lib/big.yaml')))[1], 1,
        'resources.r.type', '524288'),
    'alias_bomb': case(
        lambda s: validate(s.file('t.yaml', HOT + BOMB)), 1, 't.yaml',
        'alias'),
    'alias_bomb_in_an_environment': case(
        lambda s: validate(s.typed('OS::Heat::None'), '-e', s.file(
            'e.yaml', 'parameter_defaults:\n' + ''.join(
                '  %s\n' % line for line in BOMB.splitlines()))), 1,
        'e.yaml', 'alias'),
    'alias_bomb_in_a_get_file': case(
        lambda s: (s.file('bomb.txt', BOMB),
                   validate(s.value('{get_file: bomb.txt}')))[1], 1,
        'bomb.txt', 'alias'),
    'deep_yaml': case(
        lambda s: validate(s.file('t.yaml', HOT + 'x: %s\n' % DEEP)), 1,
        't.yaml', 'nested deeper'),
    'deep_json': case(
        lambda s: validate(s.file('t.json', '{"heat_template_version": '
                                  '"2021-04-16", "x": %s}' % DEEP)), 1,
        't.json', 'nested deeper'),
    'deep_nested_template': case(
        lambda s: (s.file('lib/deep.yaml', HOT + 'x: %s\n' % DEEP),
                   validate(s.typed('lib/deep.yaml')))[1], 1, 'deep.yaml',
        'nested deeper'),
    # ---- validate: what the file is ----------------------------------
    'binary_template': case(
        lambda s: validate(s.binary('t.yaml', b'\x7fELF\x02\x01\x00')), 1,
        't.yaml', 'binary'),
    'latin1_template': case(
        lambda s: validate(s.binary('t.yaml', (HOT + '# caf\xe9\n').encode(
            'latin-1'))), 1, 't.yaml', 'UTF-8'),
    'latin1_environment': case(
        lambda s: validate(s.typed('OS::Heat::None'), '-e', s.binary(
            'e.yaml', 'parameters: {a: caf\xe9}\n'.encode('latin-1'))), 1,
        'e.yaml', 'UTF-8'),
    'binary_nested_template': case(
        lambda s: (s.binary('lib/x.yaml', b'\x00\x01'),
                   validate(s.typed('lib/x.yaml')))[1], 1, 'x.yaml',
        'binary'),
    'truncated_template': case(
        lambda s: validate(s.file('t.yaml', HOT + 'resources:\n  r: {type: '
                                  '"OS::Heat::')), 1, 't.yaml',
        'not YAML', 'line 3'),
    'empty_template': case(
        lambda s: validate(s.file('t.yaml')), 1, 't.yaml', 'empty'),
    'comments_only_template': case(
        lambda s: validate(s.file('t.yaml', '# nothing\n')), 1, 't.yaml',
        'only comments'),
    'empty_environment': case(
        lambda s: validate(s.typed('OS::Heat::None'), '-e', s.file(
            'e.yaml')), 1, 'e.yaml', 'empty'),
    'template_is_a_list': case(
        lambda s: validate(s.file('t.yaml', '- a\n- b\n')), 1, 't.yaml',
        'is a list'),
    'template_is_a_scalar': case(
        lambda s: validate(s.file('t.yaml', 'hello\n')), 1, 't.yaml',
        'is a string'),
    'environment_is_a_list': case(
        lambda s: validate(s.typed('OS::Heat::None'), '-e', s.file(
            'e.yaml', '- a\n')), 1, 'e.yaml', 'is a list'),
    'not_a_heat_template': case(
        lambda s: validate(s.file('t.yaml', 'resources: {}\n')), 1,
        't.yaml', 'heat_template_version'),
    'resources_is_a_list': case(
        lambda s: validate(s.file('t.yaml', HOT + 'resources: [a]\n')), 1,
        't.yaml', 'section resources'),
    'parameters_is_a_string': case(
        lambda s: validate(s.file('t.yaml', HOT + 'parameters: x\n')), 1,
        't.yaml', 'section parameters'),
    'environment_unknown_section': case(
        lambda s: validate(s.typed('OS::Heat::None'), '-e', s.file(
            'e.yaml', 'paramters: {}\n')), 1, 'e.yaml', 'paramters'),
    'environment_parameters_a_list': case(
        lambda s: validate(s.typed('OS::Heat::None'), '-e', s.file(
            'e.yaml', 'parameters: [a]\n')), 1, 'e.yaml',
        'section parameters'),
    'registry_entry_a_number': case(
        lambda s: s.registry('  My::X: 5\n'), 1, 'env.yaml',
        'resource_registry.My::X'),
    'missing_template': case(
        lambda s: validate(os.path.join(s.tree, 'nope.yaml')), 1,
        'nope.yaml', 'no such file'),
    'unknown_preset_name': case(
        lambda s: validate(s.typed('OS::Heat::None'), '-e', 'pvp-sideways'),
        1, 'pvp-sideways', 'no such file'),
    'missing_nested_template': case(
        lambda s: validate(s.typed('lib/nope.yaml')), 1, 't.yaml',
        'resources.r.type', 'no such file'),
    'directory_as_environment': case(
        lambda s: validate(s.typed('OS::Heat::None'), '-e', s.tree), 1,
        'tree', 'directory'),
    'get_file_of_a_directory': case(
        lambda s: (os.mkdir(os.path.join(s.tree, 'd')),
                   validate(s.value('{get_file: d}')))[1], 1, 'get_file d',
        'directory'),
    'fifo_template': case(
        lambda s: validate(s.fifo('t.yaml')), 1, 't.yaml',
        'not a regular file'),
    'device_template': case(
        lambda s: validate(os.devnull), 1, os.devnull, 'not a regular file'),
    'empty_path': case(lambda s: validate(''), 1, "''", 'empty path'),
    'file_named_like_an_option': case(
        lambda s: (s.file('--help', '- a\n'), os.chdir(s.tree),
                   validate('--', '--help'))[2], 1, '--help', 'is a list'),
    'file_name_with_a_newline': case(
        lambda s: validate(os.path.join(s.tree, 'a\nb.yaml')), 1,
        'a\\nb.yaml', 'no such file'),
    'nested_templates_in_a_cycle': case(
        lambda s: (s.typed('b.yaml', 'a.yaml'), s.typed('a.yaml', 'b.yaml'),
                   validate(s.typed('a.yaml')))[2], 1, 'include each other'),
    'environment_option_with_a_directory': case(
        lambda s: ['validate', s.tree, '-e', 'x.yaml'], 2, '-e'),
    # ---- validate: Heat and the rules refuse (FAIL report) ----------------
    'wrong_property_type': case(
        lambda s: validate(s.hot('  r: {type: OS::Nova::Flavor, properties: '
                                 '{vcpus: many, ram: 1}}\n')), 1, 't.yaml',
        'resource r', 'property vcpus', kind=REPORT),
    'unknown_resource_type': case(
        lambda s: validate(s.typed('OS::Nova::Sever')), 1, 't.yaml',
        'resource r', 'OS::Nova::Server', kind=REPORT),
    'bad_cidr_parameter': case(
        lambda s: validate(repo.CHAIN, '-e', s.file(
            'e.yaml', 'parameters: {management_allowed_cidr: anywhere}\n')),
        1, 'management_allowed_cidr', kind=REPORT),
    # ---- validate: numbers every range passes (NaN), or no numbers ---------
    'number_parameter_nan_text': case(
        lambda s: validate(repo.CHAIN, '-e', s.file(
            'e.yaml', 'parameters: {vnf_count: nan}\n')),
        1, 'vnf_count', 'PARAM-VALUE', kind=REPORT),
    'number_parameter_boolean': case(
        lambda s: validate(repo.CHAIN, '-e', s.file(
            'e.yaml', 'parameters: {vnf_count: true}\n')),
        1, 'vnf_count', 'PARAM-VALUE', kind=REPORT),
    'yaml_nan_literal': case(
        lambda s: validate(repo.CHAIN, '-e', s.file(
            'e.yaml', 'parameters: {vnf_count: .nan}\n')),
        1, 'e.yaml', '.nan is not a finite number', kind=REPORT),
    'overflowing_default': case(
        lambda s: validate(s.file('t.yaml', HOT + 'parameters:\n  n: '
                                  '{type: number, default: 1e999}\n')),
        1, 't.yaml', '1e999 is not a finite number', kind=REPORT),
    'nan_in_a_constraint': case(
        lambda s: validate(s.file('t.yaml', HOT + 'parameters:\n  n: '
                                  '{type: number, default: 1, constraints: '
                                  '[{range: {min: .nan}}]}\n')),
        1, 't.yaml', '.nan is not a finite number', kind=REPORT),
    'json_nan_constant': case(
        lambda s: validate(s.file('t.json', '{"heat_template_version": '
                                  '"2021-04-16", "parameters": {"n": '
                                  '{"type": "number", "default": NaN}}}')),
        1, 't.json', 'NaN is not a finite number', kind=REPORT),
}
TRANSLATE_CASES = {
    'import_outside': case(
        lambda s: _translated(s, s.tosca(['../outside.yaml'])), 2,
        'pvp.yaml', 'imports[0]', outside=True),
    'import_absolute_outside': case(
        lambda s: _translated(s, s.tosca([s.marker])), 2, 'imports[0]',
        outside=True),
    'import_file_url_outside': case(
        lambda s: _translated(s, s.tosca(['file://' + s.marker])), 2,
        'imports[0]', outside=True),
    'import_of_an_import_outside': case(
        lambda s: (s.tosca(), s.file('definitions/epa_chain_types.yaml',
                                     'tosca_definitions_version: '
                                     'tosca_simple_yaml_1_2\nimports: '
                                     '[../../outside.yaml]\n'),
                   _translated(s, s.tosca()))[2], 2,
        'epa_chain_types.yaml', 'imports[0]', outside=True),
    'import_hidden': case(
        lambda s: (s.file('.git/types.yaml', 'tosca_definitions_version: '
                          'tosca_simple_yaml_1_2\n# %s\n' % MARKER),
                   _translated(s, s.tosca(['.git/types.yaml'])))[1], 2,
        'imports[0]', 'hidden'),
    'import_of_a_directory': case(
        lambda s: (os.mkdir(os.path.join(s.tree, 'd.yaml')),
                   _translated(s, s.tosca(['d.yaml'])))[1], 2, 'pvp.yaml',
        'imports[0] d.yaml', 'directory'),
    'import_too_large': case(
        lambda s: (s.file('big.yaml', BIG),
                   _translated(s, s.tosca(['big.yaml'])))[1], 2, 'pvp.yaml',
        'imports[0] big.yaml', '524288'),
    'import_not_utf8': case(
        lambda s: (s.binary('l.yaml', b'a: caf\xe9\n'),
                   _translated(s, s.tosca(['l.yaml'])))[1], 2, 'l.yaml',
        'UTF-8'),
    'import_url': case(
        lambda s: _translated(s, s.tosca(['http://127.0.0.1:9/t.yaml'])), 2,
        'imports[0]', 'a URL'),
    'import_from_a_repository': case(
        lambda s: _translated(s, s.tosca(['{t: {file: t.yaml, repository: '
                                          'r}}'])), 2, 'imports[0].t',
        'repository'),
    'imports_in_a_cycle': case(
        lambda s: _translated(s, s.tosca(['pvp.yaml'])), 2,
        'import each other'),
    'import_not_a_file_name': case(
        lambda s: _translated(s, s.tosca(['42'])), 2, 'imports[0]',
        'a number'),
    'tosca_binary': case(
        lambda s: _translated(s, s.binary('t.yaml', b'PK\x03\x04\x00')), 2,
        't.yaml', 'binary'),
    'tosca_file_name_with_a_newline': case(
        lambda s: _translated(s, s.file('a\nb.yaml', '- a\n')), 2,
        'a\\nb.yaml', 'is a list'),
    'tosca_csar_name': case(
        lambda s: _translated(s, s.file('t.csar', 'x: 1\n')), 2, 't.csar',
        '.yaml'),
    'tosca_too_large': case(
        lambda s: _translated(s, s.file('t.yaml', BIG)), 2, 't.yaml',
        '524288'),
    'tosca_alias_bomb': case(
        lambda s: _translated(s, s.file('t.yaml', BOMB)), 2, 't.yaml',
        'alias'),
    'tosca_deep': case(
        lambda s: _translated(s, s.file('t.yaml', 'x: %s\n' % DEEP)), 2,
        't.yaml', 'nested deeper'),
    'tosca_directory': case(
        lambda s: _translated(s, s.tree), 2, 'tree', 'is a directory'),
    'tosca_fifo': case(
        lambda s: _translated(s, s.fifo('t.yaml')), 2, 't.yaml',
        'not a regular file'),
    'tosca_empty_path': case(
        lambda s: _translated(s, ''), 2, "''", 'empty path'),
    'tosca_missing': case(
        lambda s: _translated(s, os.path.join(s.tree, 'nope.yaml')), 2,
        'nope.yaml', 'no such file'),
    'tosca_a_list': case(
        lambda s: _translated(s, s.file('t.yaml', '- a\n')), 2, 't.yaml',
        'is a list'),
    'tosca_not_tosca': case(
        lambda s: _translated(s, s.file('t.yaml', 'a: 1\n')), 1, 't.yaml',
        'tosca_definitions_version'),
    'tosca_section_of_the_wrong_kind': case(
        lambda s: _translated(s, s.file('t.yaml', 'tosca_definitions_version'
                                        ': tosca_simple_yaml_1_2\n'
                                        'topology_template: [a]\n')), 1,
        't.yaml', 'field topology_template'),
    'inputs_latin1': case(
        lambda s: _translated(s, s.tosca(), '-i', s.binary(
            'i.yaml', 'vnf_image: caf\xe9\n'.encode('latin-1'))), 2,
        'i.yaml', 'UTF-8'),
    'inputs_a_list': case(
        lambda s: _translated(s, s.tosca(), '-i', s.file('i.yaml', '- a\n')),
        2, 'i.yaml', 'is a list'),
    'inputs_alias_bomb': case(
        lambda s: _translated(s, s.tosca(), '-i', s.file('i.yaml', BOMB)), 2,
        'i.yaml', 'alias'),
    'inputs_empty': case(
        lambda s: _translated(s, s.tosca(), '-i', s.file('i.yaml')), 2,
        'i.yaml', 'empty'),
    'inputs_value_null': case(
        lambda s: _translated(s, s.tosca(), '-i', s.file(
            'i.yaml', 'direction:\n')), 1, 'i.yaml', 'input direction',
        'given without a value'),
    'inputs_directory': case(
        lambda s: _translated(s, s.tosca(), '-i', s.tree), 2, 'tree',
        'directory'),
    'inputs_empty_path': case(
        lambda s: _translated(s, s.tosca(), '-i', ''), 2, "''"),
    'inputs_unknown_name': case(
        lambda s: _translated(s, s.tosca(), '-i', s.file(
            'i.yaml', 'vnf_imag: x\n')), 1, 'i.yaml', 'input vnf_imag'),
    'inputs_out_of_range': case(
        lambda s: _translated(s, s.tosca(), '-i', s.file(
            'i.yaml', 'net1_vlan: 5000\n')), 1, 'i.yaml', 'input net1_vlan'),
    'translation_that_does_not_validate': case(
        lambda s: _translated(s, s.tosca(), '--validate', '-i', s.file(
            'i.yaml', 'management_allowed_cidr: anywhere\n')), 1,
        'out.yaml', 'does not validate', 'anywhere'),
    'output_is_a_directory': case(
        lambda s: translate(s.tosca(), output=s.tree), 2, '-o', 'directory'),
    'output_is_a_fifo': case(
        lambda s: translate(s.tosca(), output=s.fifo('o.yaml')), 2, '-o',
        'FIFO'),
    'output_is_a_device': case(
        lambda s: translate(s.tosca(), output=os.devnull), 2, '-o',
        'character device'),
    'output_is_a_symbolic_link': case(
        lambda s: (os.symlink(s.marker, s.out('link.yaml')),
                   translate(s.tosca(), output=s.out('link.yaml')))[1], 2,
        '-o', 'symbolic link'),
    'output_under_a_file': case(
        lambda s: translate(s.tosca(), output=os.path.join(
            s.marker, 'out.yaml')), 2, '-o', 'cannot be a file'),
    'output_replacing_the_template': case(
        lambda s: translate(s.tosca(), output=s.tosca()), 2, '-o',
        'pvp.yaml'),
    'output_name_with_a_newline': case(
        lambda s: translate(s.tosca(), output=s.out('o.yaml\n')), 2,
        '-o', 'o.yaml\\n', 'control character'),
    'output_empty': case(
        lambda s: translate(s.tosca(), output=''), 2, '-o'),
    'tosca_named_like_an_option': case(
        lambda s: (s.file('--help.yaml', '- a\n'), os.chdir(s.tree),
                   ['translate', '-o', s.out(), '--', '--help.yaml'])[2],
        2, '--help.yaml', 'is a list'),
}
CASES = dict(VALIDATE_CASES, **TRANSLATE_CASES)


class TestBadInputs(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()
        # Imported before stderr is captured: their warnings at import
        # (shown under unittest) are not the commands' output.
        from epa_chain.hot import offline
        from epa_chain.tosca import translate  # noqa: F401

        offline.heat()
        safe_yaml.max_file_bytes()

    def setUp(self):
        super().setUp()
        base = tempfile.mkdtemp(prefix='epa-chain-bad-input-')
        self.addCleanup(shutil.rmtree, base, True)
        self.addCleanup(os.chdir, os.getcwd())
        self.scratch = Scratch(base)

    def test_there_are_enough_cases(self):
        self.assertGreaterEqual(len(VALIDATE_CASES), 40)
        self.assertGreaterEqual(len(TRANSLATE_CASES), 30)
        self.assertEqual(len(CASES), len(VALIDATE_CASES) + len(
            TRANSLATE_CASES))

    def run_case(self, name):
        bad = CASES[name]
        argv = bad.argv(self.scratch)
        out, err = io.StringIO(), io.StringIO()
        with inputs.watched() as opened, contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            code = cli.main(argv)
        stdout, stderr = out.getvalue(), err.getvalue()
        context = '%s: %r\nstdout:\n%s\nstderr:\n%s' % (name, argv, stdout,
                                                        stderr)
        self.assertEqual(bad.code, code, context)
        self.assertNotIn('Traceback', stdout + stderr, context)
        self.assertNotIn(MARKER, stdout + stderr, context)
        self.assertNotIn(os.path.realpath(self.scratch.marker), opened,
                         context)
        lines = stderr.splitlines()
        self.assertEqual(1, len(lines), context)
        self.assertTrue(lines[0].startswith('epa-chain %s: ' % argv[0]),
                        context)
        shown = lines[0]
        if bad.kind == REPORT:
            self.assertIn('FAIL ', stdout, context)
        for expected in bad.names:
            self.assertIn(os.path.basename(expected) or expected, shown,
                          context)
        if bad.outside:
            self.assertIn('outside the template\'s directory tree', shown)
            self.assertIn('--allow-files-outside', shown)


def _add_tests():
    for name in CASES:
        setattr(TestBadInputs, 'test_%s' % name,
                lambda self, name=name: self.run_case(name))


_add_tests()
