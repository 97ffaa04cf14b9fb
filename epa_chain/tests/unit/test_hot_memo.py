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

"""Work shared by every check: kept once, each caller its own copy."""

import datetime
import gc

import testtools
import yaml

from epa_chain.hot import memo


class TestCopied(testtools.TestCase):

    def test_a_copy_is_equal_and_independent(self):
        original = {'a': [1, {'b': 'c'}], 'd': datetime.date(2021, 4, 16),
                    'e': {1, 2}, 'f': (1, [2])}
        copy = memo.copied(original)
        self.assertEqual(original, copy)
        copy['a'][1]['b'] = 'changed'
        copy['e'].add(3)
        copy['f'][1].append(3)
        self.assertEqual({'a': [1, {'b': 'c'}],
                          'd': datetime.date(2021, 4, 16), 'e': {1, 2},
                          'f': (1, [2])}, original)

    def test_an_aliased_node_stays_one_node(self):
        original = yaml.safe_load('a: &x {k: [1]}\nb: *x\n')
        copy = memo.copied(original)
        self.assertIs(copy['a'], copy['b'])
        self.assertIsNot(original['a'], copy['a'])


class TestOnce(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.calls = []

        def parse(text):
            self.calls.append(text)
            if text == 'bad':
                raise ValueError(text)
            return {'text': [text]}

        self.parse = memo.once(parse)

    def test_computed_once_per_argument_each_caller_a_copy(self):
        first = self.parse('one')
        first['text'].append('mine')
        self.assertEqual({'text': ['one']}, self.parse('one'))
        self.assertEqual({'text': ['two']}, self.parse('two'))
        self.assertEqual(['one', 'two'], self.calls)

    def test_a_failure_is_not_kept(self):
        self.assertRaises(ValueError, self.parse, 'bad')
        self.assertRaises(ValueError, self.parse, 'bad')
        self.assertEqual(['bad', 'bad'], self.calls)


class TestResident(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.addCleanup(gc.enable if gc.isenabled() else gc.disable)

    def test_collector_paused_while_loading_then_what_loaded_frozen(self):
        gc.enable()
        before = gc.get_freeze_count()
        with memo.resident():
            self.assertFalse(gc.isenabled())
            kept = [[] for _ in range(100)]
        self.assertTrue(gc.isenabled())
        self.assertGreaterEqual(gc.get_freeze_count(), before + len(kept))

    def test_a_paused_collector_stays_paused(self):
        gc.disable()
        with memo.resident():
            pass
        self.assertFalse(gc.isenabled())

    def test_a_failed_load_still_restarts_the_collector(self):
        gc.enable()

        def load():
            with memo.resident():
                raise ImportError('nothing')
        self.assertRaises(ImportError, load)
        self.assertTrue(gc.isenabled())
