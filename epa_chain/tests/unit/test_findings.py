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

"""The one finding model: its scale, pass rule, JSON shape and table.

Each source's own words map onto the one scale; its JSON keeps the keys
its readers know (the single-host cloud test reads preflight's
'verdict'/'check'/'resource'/'key', the audit's 'severity'/'asked'/
'given'/'aspect', the KPI record's 'verdict').
"""

import testtools

from epa_chain.cloud import audit_model
from epa_chain.cloud import preflight
from epa_chain import findings
from epa_chain.measurement import verdicts
from epa_chain.validation import findings as validation_findings

TOY = findings.Source(
    'toy', 'epa-chain/toy/1', (('bad', findings.FAILS),
                               ('odd', findings.WARNS),
                               ('unknown', findings.UNANSWERED),
                               ('good', findings.PASSES)),
    'verdict', (('thing', 'THING'),))


def _toy(word, subject='a'):
    return findings.Finding(TOY, subject, word, 'found %s' % word,
                            'fix %s' % subject, (('thing', subject),))


class TestScale(testtools.TestCase):

    def test_the_scale_is_worst_first(self):
        self.assertEqual(('fails', 'warns', 'unanswered', 'passes'),
                         findings.LEVELS)

    def test_every_source_maps_its_own_words(self):
        for source in (preflight.SOURCE, audit_model.SOURCE,
                       verdicts.SOURCE, validation_findings.SOURCE):
            levels = [level for _, level in source.words]
            self.assertEqual(sorted(levels, key=findings.LEVELS.index),
                             levels, source.name)
            self.assertEqual(findings.FAILS, levels[0], source.name)

    def test_an_unknown_word_names_the_source_and_its_words(self):
        error = self.assertRaises(ValueError, _toy, 'meh')
        self.assertIn("toy: verdict 'meh' is not one of bad, odd, "
                      "unknown, good", str(error))


class TestPassRule(testtools.TestCase):

    def test_a_failure_never_passes(self):
        self.assertFalse(findings.passed(TOY, [_toy('good'), _toy('bad')]))
        self.assertTrue(findings.passed(TOY, [_toy('good'), _toy('odd')]))

    def test_nothing_found_passes_only_where_the_source_says(self):
        self.assertFalse(findings.passed(TOY, []))
        self.assertFalse(findings.passed(audit_model.SOURCE, []))
        self.assertFalse(verdicts.passed([]))
        self.assertTrue(findings.passed(validation_findings.SOURCE, []))

    def test_unanswered_fails_a_kpi_not_a_preflight_finding(self):
        unknown = verdicts.Verdict('k', 'c', 'n/a', '>= 1', verdicts.UNKNOWN)
        self.assertFalse(verdicts.passed([unknown]))
        unchecked = preflight.Finding('capacity', 'r', 'k',
                                      preflight.UNCHECKED, 'no API')
        self.assertTrue(findings.passed(preflight.SOURCE,
                                        [unchecked.finding()]))


class TestJsonShape(testtools.TestCase):

    def test_common_keys_then_the_sources_own(self):
        self.assertEqual({'subject': 'a', 'level': 'warns', 'verdict': 'odd',
                          'message': 'found odd', 'fix': 'fix a',
                          'thing': 'a'}, _toy('odd').as_dict())

    def test_the_document_keeps_the_sources_schema_and_fields(self):
        shaped = findings.document(TOY, [_toy('bad'), _toy('good', 'b')],
                                   stack='s')
        self.assertEqual('epa-chain/toy/1', shaped['schema'])
        self.assertEqual(findings.SCHEMA, shaped['findings_schema'])
        self.assertEqual('toy', shaped['source'])
        self.assertEqual('s', shaped['stack'])
        self.assertFalse(shaped['passed'])
        self.assertEqual({'fails': 1, 'warns': 0, 'unanswered': 0,
                          'passes': 1}, shaped['counts'])
        self.assertEqual(['a', 'b'],
                         [f['subject'] for f in shaped['findings']])

    def test_a_stricter_gate_overrides_the_pass_rule(self):
        self.assertFalse(findings.document(TOY, [_toy('good')],
                                           False)['passed'])

    def test_keys_the_cloud_test_reads_stay(self):
        shown = preflight.Finding('images', 'vnf1.server', 'vnf_image',
                                  preflight.OK, 'active').as_dict()
        for key in ('verdict', 'check', 'resource', 'key', 'message'):
            self.assertIn(key, shown)
        audited = audit_model.document('s', [audit_model.Finding(
            'vnf1', 'cpu', 'shared', 'floating', audit_model.INFO, 'ok')],
            ['vnf1'])
        self.assertTrue(audited['valid'])
        self.assertEqual({'server': 'vnf1', 'aspect': 'cpu',
                          'asked': 'shared', 'given': 'floating',
                          'severity': 'info'},
                         {key: audited['findings'][0][key] for key in
                          ('server', 'aspect', 'asked', 'given',
                           'severity')})

    def test_an_old_recorded_audit_finding_reads(self):
        old = {'server': 'vnf1', 'aspect': 'pages', 'asked': 'large',
               'given': '4 KiB', 'severity': 'invalidates',
               'message': 'small pages'}
        found = findings.recorded(findings.AUDIT, old)
        self.assertEqual(('vnf1', findings.FAILS, 'small pages'),
                         (found.subject, found.level, found.message))


class TestTable(testtools.TestCase):

    def test_details_word_and_a_free_last_column(self):
        text = findings.table(TOY, [_toy('bad', 'long-thing'),
                                    _toy('good', 'b')])
        self.assertEqual(
            'THING       VERDICT  WHAT / FIX\n'
            'long-thing  BAD      found bad; fix: fix long-thing\n'
            'b           GOOD     found good; fix: fix b', text)

    def test_every_source_prints_through_it(self):
        audited = audit_model.table([audit_model.Finding(
            'vnf1', 'cpu', 'dedicated', 'floating',
            audit_model.INVALIDATES, 'got floating')])
        self.assertIn('SERVER  ASPECT  ASKED      GIVEN     SEVERITY     '
                      'WHAT / FIX', audited)
        self.assertIn('INVALIDATES  got floating', audited)
        title, headers, rows, _ = verdicts.table([verdicts.Verdict(
            'loss', '64B', '0.1', '<= 0.01', verdicts.MISSED)], 'kpi.yaml')
        self.assertEqual(['KPI', 'CASE', 'MEASURED', 'LIMIT', 'VERDICT',
                          'WHAT / FIX'], headers)
        self.assertEqual(['loss', '64B', '0.1', '<= 0.01', 'MISSED', ''],
                         rows[0])
