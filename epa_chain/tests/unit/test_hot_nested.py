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

"""Nested stacks validated once per distinct input, outcomes replayed."""

import os

import testtools

from epa_chain.hot import nested
from epa_chain.tests import repo
from epa_chain.validation import check

BROKEN = os.path.join(repo.FIXTURES, 'broken', 'nested_misspelled',
                      'chain.yaml')
TEMPLATE = {'resources': {'p': {'type': 'file:///t/lib/port.yaml'}}}


class TestKey(testtools.TestCase):

    FILES = {'file:///t/lib/port.yaml': 'get_file: file:///t/lib/s.sh',
             'file:///t/lib/s.sh': 'echo', 'file:///t/env.yaml': '{}'}

    def test_the_files_it_names_count_not_the_others(self):
        first = nested.key('s', TEMPLATE, files=self.FILES)
        self.assertEqual(first, nested.key('s', TEMPLATE, files=dict(
            self.FILES, **{'file:///t/env.yaml': '{"x": 1}'})))
        # Named by a file the template names.
        self.assertNotEqual(first, nested.key('s', TEMPLATE, files=dict(
            self.FILES, **{'file:///t/lib/s.sh': 'rm'})))
        self.assertNotEqual(first, nested.key('t', TEMPLATE,
                                              files=self.FILES))

    def test_what_is_not_json_has_no_key(self):
        self.assertIsNone(nested.key('s', object()))
        self.assertIsNone(nested.key({1: 'a', 'b': 2}))


class TestOutcomes(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.recorded, self.runs = [], []
        self.outcomes = nested.Outcomes(lambda: self.recorded)

    def validate(self, error=None):
        def run():
            self.runs.append(1)
            self.recorded.append('lookup')
            if error:
                raise error
        return run

    def test_validated_once_its_lookups_replayed(self):
        for _ in range(3):
            self.outcomes.validate('k', self.validate())
        self.assertEqual(1, len(self.runs))
        self.assertEqual(['lookup'] * 3, self.recorded)

    def test_its_error_replayed(self):
        for _ in range(2):
            error = self.assertRaises(
                ValueError, self.outcomes.validate, 'k',
                self.validate(ValueError('bad')))
            self.assertEqual('bad', str(error))
        self.assertEqual(1, len(self.runs))

    def test_without_a_key_validated_every_time(self):
        for _ in range(2):
            self.outcomes.validate(None, self.validate())
        self.assertEqual(2, len(self.runs))


class TestRefusedAlike(testtools.TestCase):

    def test_a_refused_nested_stack_is_refused_again_alike(self):
        first, again = [sorted(str(f) for f in self.assertRaises(
            check.StackRefused, check.check_stack, BROKEN).findings)
            for _ in range(2)]
        self.assertEqual(first, again)
        self.assertIn('HEAT', ' '.join(first))
