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

"""The bed's record: written before each step, read back by `down`."""

import json
import os

import fixtures
import testtools

from epa_chain.local import bed
from epa_chain.local import names
from epa_chain.local import state
from epa_chain.tests.unit import test_local_plan


class TestBedState(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def test_record_survives_a_new_process(self):
        record = state.BedState(self.root, 'ab')
        record.begin({'prefix': 'ab'})
        record.add_namespace('ab-ovs')
        record.set(hugepages={'intent': 800})
        record.add_process('ab-vnf1', 1234, ['/usr/bin/python3', '-m'],
                           '/x/status.json')
        again = state.BedState(self.root, 'ab').load()
        self.assertEqual('starting', again.data['phase'])
        self.assertEqual({'intent': 800}, again.data['hugepages'])
        self.assertEqual([{'name': 'ab-vnf1', 'pid': 1234,
                           'argv0': '/usr/bin/python3',
                           'status': '/x/status.json'}],
                         again.data['processes'])
        self.assertEqual([], [n for n in os.listdir(record.directory)
                              if n.endswith('.tmp')])

    def test_namespaces_the_names_imply_are_always_cleaned(self):
        # Killed between recording intent and creating: down still knows.
        record = state.BedState(self.root, 'cd')
        chains = ['cd-g%d' % k for k in range(1, names.MAX_CHAINS)]
        self.assertEqual(['cd-ovs', 'cd-gen'] + chains, record.namespaces)
        record.data['namespaces'] = ['cd-extra']
        self.assertEqual(['cd-extra', 'cd-ovs', 'cd-gen'] + chains,
                         record.namespaces)

    def test_a_record_of_another_version_is_refused_by_path(self):
        record = state.BedState(self.root, 'ef')
        os.makedirs(record.directory)
        with open(record.path, 'w') as stream:
            json.dump({'schema': 'epa-chain/local-state/0'}, stream)
        error = self.assertRaises(ValueError, record.load)
        self.assertIn(record.path, str(error))

    def test_layout_is_under_the_prefix(self):
        record = state.BedState(self.root, 'gh')
        for path in (record.switch_dir, record.hugepage_mount,
                     record.socket_dir, record.vnf_dir('gh-vnf1')):
            self.assertTrue(path.startswith(record.directory + os.sep))


class TestSummary(testtools.TestCase):

    def test_plan_summary_is_json_and_names_every_port(self):
        plan = test_local_plan._plan('vecpe')
        summary = json.loads(json.dumps(bed.summary(plan)))
        self.assertEqual(8, len(summary['ports']))
        self.assertEqual(['forward', 'reverse'], summary['directions'])
        self.assertEqual(plan.hugepages, summary['hugepages_2mb'])


class FakeProcess:
    def __init__(self, returncode=None):
        self.returncode = returncode

    def poll(self):
        return self.returncode


class TestWaitReady(testtools.TestCase):
    """The bed waits with chain/readiness.py on its console files."""

    def setUp(self):
        super().setUp()
        self.plan = test_local_plan._plan('pvvp')
        self.record = state.BedState(
            self.useFixture(fixtures.TempDir()).path, 'epa')
        self.lines = []
        self.bed = bed.Bed(self.plan, self.record, self.lines.append,
                           ready_timeout_s=1)
        self.bed._processes = {v.name: FakeProcess()
                               for v in self.plan.vnfs}

    def console(self, vnf, text):
        directory = self.record.vnf_dir(vnf.name)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, 'console.log'), 'w') as stream:
            stream.write(text)

    def test_every_vnf_ready(self):
        for vnf in self.plan.vnfs:
            self.console(vnf, 'boot\nEPA-CHAIN READY %s %s\n' % (
                vnf.name, vnf.config.engine))
        self.bed._wait_ready()
        self.assertEqual(['%s: EPA-CHAIN READY %s %s' % (
            v.name, v.name, v.config.engine) for v in self.plan.vnfs],
            self.lines)

    def test_a_runtime_that_exited_names_its_logs(self):
        first, second = self.plan.vnfs
        self.console(first, 'EPA-CHAIN READY %s %s\n' % (
            first.name, first.config.engine))
        self.bed._processes[second.name] = FakeProcess(returncode=3)
        error = self.assertRaises(bed.BedError, self.bed._wait_ready)
        self.assertIn('%s runtime exited with 3' % second.name, str(error))
        self.assertIn(os.path.join(self.record.vnf_dir(second.name),
                                   'runtime.log'), str(error))
        self.assertNotIn(self.record.vnf_dir(first.name), str(error))

    def test_timeout_lists_the_silent_consoles(self):
        error = self.assertRaises(bed.BedError, self.bed._wait_ready)
        self.assertIn('not ready after 1 s', str(error))
        for vnf in self.plan.vnfs:
            self.assertIn(os.path.join(self.record.vnf_dir(vnf.name),
                                       'console.log'), str(error))
