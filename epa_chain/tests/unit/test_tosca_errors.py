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

"""A broken TOSCA template fails with an error naming the node and field.

Each fixture in epa_chain/tests/fixtures/tosca/ breaks one shipped service
template and says which node and field the error must name (see the
README there).
"""

import os
import re
import shutil
import tempfile

import testtools
import yaml

from epa_chain.tests.unit import tosca_cases

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'fixtures', 'tosca')
_INDEX = re.compile(r'^(.*)\[(\d+)\]$')


def _steps(path):
    for part in path.split('.'):
        match = _INDEX.match(part)
        if match:
            yield match.group(1)
            yield int(match.group(2))
        else:
            yield part


def _walk(document, path):
    steps = list(_steps(path))
    for step in steps[:-1]:
        document = document[step]
    return document, steps[-1]


def break_template(fixture, workdir):
    """Write the fixture's broken template (and inputs); return paths."""
    with open(os.path.join(FIXTURES, fixture)) as f:
        spec = yaml.safe_load(f)
    with open(os.path.join(tosca_cases.TOSCA, spec['base'])) as f:
        document = yaml.safe_load(f)
    for path, value in (spec.get('set') or {}).items():
        parent, key = _walk(document, path)
        parent[key] = value
    for path in spec.get('delete') or []:
        parent, key = _walk(document, path)
        del parent[key]
    template = os.path.join(workdir, 'broken-' + fixture)
    with open(template, 'w') as f:
        yaml.safe_dump(document, f, sort_keys=False)
    inputs = None
    if 'inputs' in spec:
        inputs = os.path.join(workdir, 'inputs-' + fixture)
        with open(inputs, 'w') as f:
            yaml.safe_dump(spec['inputs'], f)
    return template, inputs, spec['expect']


class TestBrokenTemplates(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        tosca_cases.require_translator()
        cls.workdir = tempfile.mkdtemp(prefix='epa-chain-tosca-broken-')
        shutil.copytree(os.path.join(tosca_cases.TOSCA, 'definitions'),
                        os.path.join(cls.workdir, 'definitions'))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.workdir, ignore_errors=True)
        super().tearDownClass()

    def _check(self, fixture):
        from epa_chain.tosca import errors
        from epa_chain.tosca import translate

        template, inputs, expect = break_template(fixture, self.workdir)
        error = self.assertRaises(errors.ToscaError, translate.translate,
                                  template, inputs)
        wanted = [p for p in error.problems
                  if (p.node, p.kind, p.field) == (
                      expect['node'], expect.get('kind', 'node'),
                      expect.get('field', p.field)) and (
                      expect['message'] in p.message)]
        self.assertNotEqual([], wanted, '\n'.join(
            str(p) for p in error.problems))
        problem = wanted[0]
        named = inputs if expect.get('file') == 'inputs' else template
        self.assertEqual(os.path.basename(named),
                         os.path.basename(problem.file))
        self.assertTrue(problem.fix)
        text = str(problem)
        if expect['node']:
            self.assertIn('%s %s' % (problem.kind, expect['node']), text)
        if 'field' in expect:
            self.assertIn('field %s' % expect['field'], text)
        return error.problems

    def test_every_fixture_is_tested(self):
        tested = {name[len('test_'):] + '.yaml' for name in dir(self)
                  if name.startswith('test_') and name != (
                      'test_every_fixture_is_tested')}
        fixtures = {n for n in os.listdir(FIXTURES) if n.endswith('.yaml')}
        self.assertEqual(fixtures, tested)

    def test_unknown_property(self):
        self._check('unknown_property.yaml')

    def test_vlan_out_of_range(self):
        self._check('vlan_out_of_range.yaml')

    def test_cores_not_an_integer(self):
        problems = self._check('cores_not_an_integer.yaml')
        # Not tosca-parser's crash that follows ('<' not supported ...).
        self.assertEqual([], [p for p in problems
                              if 'not supported between' in p.message])

    def test_cpu_not_an_integer(self):
        self._check('cpu_not_an_integer.yaml')

    def test_missing_role(self):
        self._check('missing_role.yaml')

    def test_unknown_segment(self):
        self._check('unknown_segment.yaml')

    def test_unknown_type(self):
        problems = self._check('unknown_type.yaml')
        self.assertEqual(1, len(problems))

    def test_extra_specs_not_a_map(self):
        self._check('extra_specs_not_a_map.yaml')

    def test_next_hop_other_segment(self):
        self._check('next_hop_other_segment.yaml')

    def test_next_hop_wrong_side(self):
        self._check('next_hop_wrong_side.yaml')

    def test_no_forward_next_hop(self):
        self._check('no_forward_next_hop.yaml')

    def test_rule_on_data_port(self):
        self._check('rule_on_data_port.yaml')

    def test_input_misspelt(self):
        self._check('input_misspelt.yaml')

    def test_missing_import(self):
        problems = self._check('missing_import.yaml')
        self.assertEqual(1, len(problems))

    def test_input_out_of_range(self):
        self._check('input_out_of_range.yaml')

    def test_virtual_link_not_a_name(self):
        self._check('virtual_link_not_a_name.yaml')

    def test_compute_requirements_not_a_map(self):
        self._check('compute_requirements_not_a_map.yaml')

    def test_input_constraints_not_a_list(self):
        self._check('input_constraints_not_a_list.yaml')
