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

"""Results documents validate against the shipped schema; soaks save."""

import copy
import io
import json
import os
import stat
import tempfile
from unittest import mock

import jsonschema
import testtools

from epa_chain.generators import model
from epa_chain.measurement import campaign
from epa_chain.measurement import results


def measure(method='mlrsearch', **overrides):
    options = dict(frame_sizes=['64', 'imix'], flow_counts=[1, 1000],
                   directions=('forward', 'reverse'), method=method,
                   trial_duration_s=10.0, latency_duration_s=10.0,
                   linear_steps=20, repetitions=2, chain_length=2)
    options.update(overrides)
    sut = model.ModelGenerator(ndr_fps=3e6, jitter=0.005,
                               spurious_rate=0.001, reorder=0.001,
                               duplicate=0.001)
    return campaign.run(sut, campaign.Campaign(**options))


class TestSchema(testtools.TestCase):

    def test_schema_is_valid_json_schema(self):
        schema = results.load_schema()
        jsonschema.Draft202012Validator.check_schema(schema)
        self.assertEqual(results.SCHEMA_ID,
                         schema['properties']['schema']['const'])

    def test_every_method_validates(self):
        for method in ('rfc2544', 'mlrsearch', 'best-of-n', 'worst-of-n',
                       'linear'):
            document = measure(method)
            results.validate(document, method)
            # And it survives a round trip through a file.
            path = os.path.join(self.useFixture_tmp(), 'r.json')
            campaign.write_json(document, path)
            self.assertEqual(json.loads(json.dumps(document)),
                             results.load(path))

    def useFixture_tmp(self):
        directory = tempfile.mkdtemp(prefix='epa-results-')
        self.addCleanup(_remove_tree, directory)
        return directory

    def test_self_describing(self):
        document = measure('rfc2544')
        self.assertEqual('rfc2544', document['method'])
        self.assertEqual('model', document['generator']['name'])
        self.assertEqual({'NDR': 0.0, 'PDR': 0.005},
                         document['parameters']['loss_goals'])
        case = document['cases'][0]
        self.assertEqual(case['totals']['trials'], len(case['trials']))
        self.assertEqual(sum(t['duration_s'] for t in case['trials']),
                         case['totals']['trial_seconds'])
        self.assertEqual(sum(c['totals']['trials']
                             for c in document['cases']),
                         document['totals']['trials'])

    def test_invalid_documents_name_the_field(self):
        document = measure('rfc2544', frame_sizes=['64'], flow_counts=[1])
        broken = copy.deepcopy(document)
        broken['cases'][0]['search']['goals'][1]['status'] = 'guessed'
        error = self.assertRaises(results.ResultsError, results.validate,
                                  broken, 'r.json')
        self.assertIn('r.json', str(error))
        self.assertIn('cases[0].search.goals[1].status', str(error))
        broken = copy.deepcopy(document)
        broken['cases'][0]['trials'][0]['tx_frames'] = -1
        error = self.assertRaises(results.ResultsError, results.validate,
                                  broken)
        self.assertIn('cases[0].trials[0].tx_frames', str(error))
        broken = copy.deepcopy(document)
        broken['schema'] = 'epa-chain/results/0'
        error = self.assertRaises(results.ResultsError, results.validate,
                                  broken, 'old.json')
        self.assertIn("reads 'epa-chain/results/2' or 'epa-chain/results/1'",
                      str(error))

    def test_names_and_counts_a_report_prints_are_bounded(self):
        # A results file is input too: a goal name with a newline or an
        # escape, or a flow count of 401 digits, never reaches a table.
        document = measure('rfc2544', frame_sizes=['64'], flow_counts=[1])
        for name in ('N\nDR', 'a\x1b[31m'):
            broken = copy.deepcopy(document)
            broken['cases'][0]['search']['goals'][0]['name'] = name
            error = self.assertRaises(results.ResultsError, results.validate,
                                      broken, 'r.json')
            self.assertIn('cases[0].search.goals[0].name', str(error))
        broken = copy.deepcopy(document)
        broken['cases'][0]['flows'] = 10 ** 400
        error = self.assertRaises(results.ResultsError, results.validate,
                                  broken, 'r.json')
        self.assertIn('cases[0].flows', str(error))

    def test_load_refuses_non_json(self):
        directory = self.useFixture_tmp()
        path = os.path.join(directory, 'notes.txt')
        with open(path, 'w') as stream:
            stream.write('NDR was fine\n')
        error = self.assertRaises(results.ResultsError, results.load, path)
        self.assertIn(path, str(error))
        self.assertIn('not JSON', str(error))


class TestUntrustedFiles(testtools.TestCase):
    """A results file is input: every bad one is one error naming it."""

    def setUp(self):
        super().setUp()
        self.directory = tempfile.mkdtemp(prefix='epa-results-')
        self.addCleanup(_remove_tree, self.directory)
        self.document = measure('rfc2544', frame_sizes=['64'],
                                flow_counts=[1])

    def path(self, name):
        return os.path.join(self.directory, name)

    def file(self, name, data):
        with open(self.path(name), 'wb') as stream:
            stream.write(data if isinstance(data, bytes)
                         else data.encode('utf-8'))
        return self.path(name)

    def assertRefused(self, path, *expected):
        error = self.assertRaises(results.ResultsError, results.load, path)
        self.assertIn(path, str(error))
        self.assertNotIn('\n', str(error))
        for text in expected:
            self.assertIn(text, str(error))
        return error

    def good_text(self):
        return json.dumps(self.document)

    def test_nan_and_infinity_are_refused_naming_the_field(self):
        text = self.good_text().replace('"loss_ratio": 0.0', '"loss_ratio": '
                                        'NaN', 1)
        self.assertIn('NaN', text)
        self.assertRefused(self.file('nan.json', text),
                           'field cases[0].search.goals[0].loss_ratio is NaN')
        for constant in ('Infinity', '-Infinity', '1e999', '-1e400'):
            text = self.good_text().replace(
                '"trial_duration_s": 10.0', '"trial_duration_s": %s'
                % constant)
            self.assertRefused(self.file('inf.json', text),
                               'field parameters.trial_duration_s is %s'
                               % constant)

    def test_a_key_of_the_file_s_own_is_quoted_on_one_line(self):
        text = self.good_text().replace(
            '"tags": {', '"tags": {"ab\\n": NaN, ', 1)
        self.assertRefused(self.file('key.json', text),
                           'field cases[0].trials[0].tags["ab\\n"] is NaN')

    def test_a_huge_value_is_not_quoted_whole(self):
        broken = copy.deepcopy(self.document)
        broken['cases'][0]['flows'] = 'x' * 100000
        error = self.assertRaises(results.ResultsError, results.validate,
                                  broken, 'r.json')
        self.assertIn('field cases[0].flows', str(error))
        self.assertLess(len(str(error)), 1000)

    def test_the_schema_refuses_non_finite_numbers_too(self):
        broken = copy.deepcopy(self.document)
        broken['cases'][0]['line_rate_fps'] = float('nan')
        error = self.assertRaises(results.ResultsError, results.validate,
                                  broken, 'r.json')
        self.assertIn('field cases[0].line_rate_fps', str(error))
        broken['cases'][0]['line_rate_fps'] = float('inf')
        self.assertRaises(results.ResultsError, results.validate, broken)

    def test_not_a_document(self):
        for name, data, expected in (
                ('list.json', '[1, 2]', 'a JSON object, not list'),
                ('number.json', '42', 'a JSON object, not int'),
                ('empty.json', '', 'not JSON'),
                ('truncated.json', self.good_text()[:500], 'not JSON'),
                ('binary.json', b'\x00\xff\xfe\x80' * 64, 'not UTF-8'),
                ('utf16.json', self.good_text().encode('utf-16'),
                 'not UTF-8'),
                ('digits.json', '{"schema": %s}' % ('9' * 5000),
                 'not JSON'),
                ('gzip.json.gz', b'\x1f\x8b\x08\x00' + b'\x00' * 20,
                 'gzip-compressed; decompress it first')):
            self.assertRefused(self.file(name, data), expected)

    def test_a_bom_is_accepted(self):
        path = self.file('bom.json', b'\xef\xbb\xbf' +
                         self.good_text().encode('utf-8'))
        self.assertEqual('rfc2544', results.load(path)['method'])

    def test_deep_nesting_is_refused_not_a_crash(self):
        for depth in (results.MAX_DEPTH + 5, 100000):
            text = '{"schema": "epa-chain/results/2", "tags": %s%s}' % (
                '[' * depth, ']' * depth)
            self.assertRefused(self.file('deep.json', text), 'nested')

    def test_what_is_not_a_regular_file_is_refused_without_waiting(self):
        fifo = self.path('fifo.json')
        os.mkfifo(fifo)
        # No writer: reading it would block forever.
        self.assertRefused(fifo, 'not a regular file')
        self.assertRefused(self.directory, 'a directory')
        self.assertRefused(self.path('missing.json'), 'cannot read',
                           'No such file')

    def test_a_huge_file_is_refused_after_reading_the_bound_only(self):
        path = self.file('huge.json', ' ' * 2048 + self.good_text())
        with mock.patch.object(results, 'MAX_BYTES', 1024):
            self.assertRefused(path, 'larger than')

    def test_writing_a_non_finite_value_names_it_and_writes_nothing(self):
        broken = copy.deepcopy(self.document)
        broken['cases'][0]['trials'][1]['loss_ratio'] = float('nan')
        target = self.path('out.json')
        error = self.assertRaises(results.ResultsError, results.write_json,
                                  broken, target, '--json')
        self.assertIn('field cases[0].trials[1].loss_ratio is nan',
                      str(error))
        self.assertEqual([], os.listdir(self.directory))

    def test_writing_never_replaces_what_is_not_a_regular_file(self):
        fifo = self.path('fifo.json')
        os.mkfifo(fifo)
        victim = self.file('victim', 'precious')
        link = self.path('link.json')
        os.symlink(victim, link)
        for target, kind in ((fifo, 'a FIFO'), (link, 'a symbolic link'),
                             (self.directory, 'a directory')):
            error = self.assertRaises(ValueError, campaign.write_json,
                                      self.document, target, '--json')
            self.assertIn('--json %s: exists and is %s' % (target, kind),
                          str(error))
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertTrue(os.path.islink(link))
        with open(victim) as stream:
            self.assertEqual('precious', stream.read())

    def test_round_trip_of_a_written_file(self):
        target = self.path('out.json')
        campaign.write_json(self.document, target)
        self.assertEqual(json.loads(json.dumps(self.document)),
                         results.load(target))


class TestSoak(testtools.TestCase):

    def test_partial_results_are_written_as_it_goes(self):
        directory = tempfile.mkdtemp(prefix='epa-soak-')
        self.addCleanup(_remove_tree, directory)
        seen = []

        class Watching(model.ModelGenerator):
            # Before each soak interval, read what is on disk right now.
            def run_trial(self, spec):
                names = [n for n in os.listdir(directory)
                         if n.endswith('.json') and not n.startswith('.')]
                if spec.measure_latency and names:
                    with open(os.path.join(directory, names[0])) as stream:
                        on_disk = json.load(stream)
                    soak = on_disk['cases'][0]['soak']
                    seen.append((on_disk['complete'],
                                 len(soak['intervals']) if soak else 0))
                return super().run_trial(spec)

        sut = Watching(ndr_fps=2e6)
        plan = campaign.Campaign(frame_sizes=['64'], method='rfc2544',
                                 latency_duration_s=5, soak_duration_s=250,
                                 soak_interval_s=60, results_dir=directory)
        document = campaign.run(sut, plan)
        soak = document['cases'][0]['soak']
        self.assertTrue(soak['complete'])
        self.assertEqual([60, 60, 60, 60, 10],
                         [i['duration_s'] for i in soak['intervals']])
        # Latency trial, then 5 intervals: the file grew one at a time.
        self.assertEqual([(False, 0), (False, 0), (False, 1), (False, 2),
                          (False, 3), (False, 4)], seen)
        names = os.listdir(directory)
        self.assertEqual(1, len(names))
        final = results.load(os.path.join(directory, names[0]))
        self.assertTrue(final['complete'])
        forward = soak['directions']['forward']
        self.assertEqual(5 * sut.latency_samples, forward['count'])

    def test_a_planted_link_in_results_dir_is_refused_not_followed(self):
        directory = tempfile.mkdtemp(prefix='epa-soak-')
        self.addCleanup(_remove_tree, directory)
        victim = os.path.join(directory, 'victim')
        with open(victim, 'w') as stream:
            stream.write('precious')
        plan = campaign.Campaign(frame_sizes=['64'], method='rfc2544',
                                 latency_duration_s=0,
                                 results_dir=directory)
        sut = model.ModelGenerator()
        stamp = '20250101T000000Z'
        os.symlink(victim, os.path.join(
            directory, 'epa-chain-rfc2544-%s.json' % stamp))
        with mock.patch.object(campaign.time, 'strftime',
                               return_value=stamp):
            error = self.assertRaises(ValueError, campaign.run, sut, plan)
        self.assertIn('results_dir', str(error))
        self.assertIn('a symbolic link', str(error))
        self.assertEqual(0, sut.trials_run)   # refused before any trial
        with open(victim) as stream:
            self.assertEqual('precious', stream.read())

    def test_soak_needs_a_results_dir(self):
        error = self.assertRaises(ValueError, campaign.Campaign,
                                  soak_duration_s=3600)
        self.assertIn('results_dir', str(error))


def _bed_run(vnf_count, ndr_fps):
    """A results document as `epa-chain local run` writes one."""
    sut = model.ModelGenerator(ndr_fps=ndr_fps)
    document = campaign.run(sut, campaign.Campaign(
        frame_sizes=['64', '1518'], method='rfc2544', trial_duration_s=5.0,
        latency_duration_s=0, chain_length=vnf_count))
    document['testbed'] = {
        'plan': {'bridges': [], 'ports': [], 'vnfs': [],
                 'directions': ['forward']},
        'proof': {'ok': True, 'problems': [], 'learned': {}, 'hops': [],
                  'delivered': {}, 'flooded_during_probe': 0},
        'end_checks': {'learned': {'a': True}, 'all_learned': True,
                       'flooded_since_proof': 0},
        'vnf_count': vnf_count, 'timings': {'up_s': 1.0}}
    return document


class TestChainLengthsSchema(testtools.TestCase):
    """`epa-chain local run --vnf-counts` has its own schema file."""

    def setUp(self):
        super().setUp()
        self.runs = [_bed_run(0, 2e6), _bed_run(1, 1e6)]

    def test_every_schema_id_has_a_valid_schema_file(self):
        for schema_id, (name, _writer) in results.SCHEMAS.items():
            schema = results.load_schema(schema_id)
            jsonschema.Draft202012Validator.check_schema(schema)
            self.assertEqual(schema_id,
                             schema['properties']['schema']['const'])
            self.assertTrue(schema['$id'].endswith('/' + name))

    def test_the_local_bed_writes_it_atomically_and_it_validates(self):
        from epa_chain.local import runner

        directory = tempfile.mkdtemp(prefix='epa-results-')
        self.addCleanup(_remove_tree, directory)
        path = os.path.join(directory, 'lengths.json')
        out = io.StringIO()
        code = runner.finish(self.runs, path, lambda line: None, out)
        self.assertEqual(0, code)
        self.assertEqual(['lengths.json'], os.listdir(directory))
        with open(path) as stream:
            document = json.load(stream)
        self.assertEqual(results.CHAIN_LENGTHS_SCHEMA_ID, document['schema'])
        results.validate(document, path, results.CHAIN_LENGTHS_SCHEMA_ID)
        self.assertEqual(0, document['reference_vnf_count'])
        self.assertEqual(4, len(document['rows']))

    def test_the_local_bed_plots_each_chain_length_apart(self):
        from epa_chain.local import runner

        directory = tempfile.mkdtemp(prefix='epa-plots-')
        self.addCleanup(_remove_tree, directory)
        said = []
        code = runner.finish(self.runs, None, said.append, io.StringIO(),
                             plots_dir=directory)
        self.assertEqual(0, code)
        self.assertEqual(['vnfs-0', 'vnfs-1'], sorted(os.listdir(directory)))
        plotted = [line for line in said if line.startswith('plot: ')]
        self.assertTrue(plotted)
        for line in plotted:
            self.assertTrue(os.path.isfile(line[len('plot: '):]), line)

    def test_invalid_comparisons_name_the_field(self):
        from epa_chain.local import runner

        good = dict(runner.comparison(self.runs), runs=self.runs)
        results.validate(good, 'c', results.CHAIN_LENGTHS_SCHEMA_ID)
        negative = copy.deepcopy(good)
        negative['rows'][1]['ratio'] = -1
        lonely = dict(good, runs=self.runs[:1])
        broken_run = copy.deepcopy(good)
        del broken_run['runs'][1]['cases'][0]['flows']
        for document, expected in (
                (negative, 'field rows[1].ratio'),
                (lonely, 'field runs'),
                (broken_run, 'c: runs[1]: field cases[0]'),
                (dict(good, schema='epa-chain/results/2'),
                 'epa-chain local run --vnf-counts')):
            error = self.assertRaises(results.ResultsError, results.validate,
                                      document, 'c',
                                      results.CHAIN_LENGTHS_SCHEMA_ID)
            self.assertIn(expected, str(error))


class TestCampaignValidation(testtools.TestCase):

    def test_fields_are_named_with_a_fix(self):
        cases = [
            ({'method': 'fastest'}, 'method', 'mlrsearch'),
            ({'frame_sizes': ['63']}, 'frame_sizes', '64..9018'),
            ({'flow_counts': [0]}, 'flow_counts', 'from 1 to 16777216'),
            ({'directions': ('north',)}, 'directions', 'forward'),
            ({'loss_goals': {'NDR': 1.5}}, 'loss_goals', '[0, 1)'),
            ({'resolution': 0}, 'resolution', '0.005'),
            ({'trial_duration_s': -1}, 'trial_duration_s', 'positive'),
            ({'max_load_fps': 10, 'min_load_fps': 20}, 'min_load_fps',
             'below'),
            ({'latency_load_fraction': 1.5}, 'latency_load_fraction', '(0'),
        ]
        for fields, name, fix in cases:
            error = self.assertRaises(ValueError, campaign.Campaign, **fields)
            self.assertIn('Campaign.%s' % name, str(error))
            self.assertIn(fix, str(error))

    def test_ceilings_refuse_what_would_run_for_ever_or_overflow(self):
        for field, value, fix in (
                ('trial_duration_s', 1e300, 'positive number up to 86400'),
                ('latency_duration_s', 86401, 'up to 86400'),
                ('soak_duration_s', 1e9, 'up to 2.592e+06'),
                ('linear_steps', 10 ** 8, 'up to 10000'),
                ('repetitions', 10 ** 9, 'up to 100'),
                ('chain_length', 10 ** 400, 'up to 100')):
            error = self.assertRaises(ValueError, campaign.Campaign,
                                      **{field: value})
            self.assertIn('Campaign.%s' % field, str(error))
            self.assertIn(fix, str(error))
        campaign.Campaign(trial_duration_s=86400, soak_duration_s=86400,
                          results_dir='/nonexistent')

    def test_frame_sizes_accept_text(self):
        plan = campaign.Campaign(frame_sizes=['64', 'imix', 1518])
        self.assertEqual(['64', 'IMIX(64:7,570:4,1518:1)', '1518'],
                         [f.label for f in plan.frame_sizes])


def _remove_tree(directory):
    import shutil

    shutil.rmtree(directory)
