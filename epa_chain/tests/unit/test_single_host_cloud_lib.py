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

"""tools/single-host-cloud's bookkeeping without a host: what `down`
restores, and the command line. The cloud test (epa_chain/tests/cloud) runs
the whole tool."""

import os
import shutil
import subprocess
import tempfile
import unittest

from epa_chain.tests import repo

TOOL = os.path.join(repo.ROOT, 'tools', 'single-host-cloud')
LIB = os.path.join(repo.ROOT, 'tools', 'lib', 'single-host-cloud')


class StateTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='epa-shc-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.state = os.path.join(self.tmp, 'state')

    def bash(self, script):
        prelude = ('set -eu; CLOUD_STATE=%s; cloud_die() { echo "$*" >&2; '
                   'exit 1; }; source %s/state.bash; state_init; '
                   % (self.state, LIB))
        return subprocess.run(['bash', '-c', prelude + script],
                              capture_output=True, text=True, timeout=30)

    def test_down_restores_edited_and_removes_created_files(self):
        edited = os.path.join(self.tmp, 'nova.conf')
        created = os.path.join(self.tmp, 'clouds.yaml')
        with open(edited, 'w') as stream:
            stream.write('[DEFAULT]\n')
        done = self.bash(
            'state_keep_original {e} {c}; echo changed > {e}; '
            'echo new > {c}; state_keep_original {e}; echo again > {e}; '
            'state_restore_originals'.format(e=edited, c=created))
        self.assertEqual(0, done.returncode, done.stderr)
        with open(edited) as stream:
            self.assertEqual('[DEFAULT]\n', stream.read())
        self.assertFalse(os.path.exists(created))

    def test_the_first_recorded_value_wins(self):
        done = self.bash('state_record pages 0; state_record pages 5120; '
                         'state_recall pages; state_forget pages; '
                         'state_recall pages || echo none')
        self.assertEqual(['0', 'none'], done.stdout.split())

    def test_a_missing_devstack_source_says_what_to_give(self):
        done = self.bash('DEVSTACK_SOURCE=; state_devstack_dir')
        self.assertEqual(1, done.returncode)
        self.assertIn('--devstack-source', done.stderr)
        done = self.bash('DEVSTACK_SOURCE=%s; state_devstack_dir' % self.tmp)
        self.assertIn('neither a devstack checkout', done.stderr)

    def test_a_new_database_voids_what_was_recorded_inside_it(self):
        # An interrupted down dropped the databases but kept the records:
        # the next up must bootstrap Keystone again, not trust the record.
        done = self.bash(
            'CLOUD_PASSWORD=pw; mysql() { [[ $* == *SHOW* ]] && '
            'printf "glance\\n" || echo "$*" >> %s/sql; }; '
            'rabbitmqctl() { :; }; source %s/openstack.bash; '
            'state_record keystone-bootstrapped yes; '
            'state_record services-registered yes; os_create_databases; '
            'state_recall keystone-bootstrapped || echo void; '
            'state_recall db-keystone; state_recall db-glance || echo ours-not'
            % (self.tmp, LIB))
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual(['void', 'created', 'ours-not'], done.stdout.split())
        with open(os.path.join(self.tmp, 'sql')) as stream:
            sql = stream.read()
        self.assertIn('CREATE DATABASE keystone;', sql)
        self.assertNotIn('CREATE DATABASE glance;', sql)

    def test_an_exited_service_is_started_again_twice_at_most(self):
        done = self.bash(
            'source %s/services.bash; service_pid() { return 1; }; '
            'service_start() { echo "start $1"; }; '
            'service_fail() { echo "fail $1 $2"; exit 3; }; '
            'service_revive nova-compute; service_revive nova-compute; '
            'service_revive nova-compute' % LIB)
        self.assertEqual(3, done.returncode, done.stderr)
        self.assertEqual(['start nova-compute', 'start nova-compute',
                          'fail nova-compute exited again after 2 restarts'],
                         done.stdout.splitlines())
        self.assertIn('as its systemd unit would', done.stderr)

    def test_down_starts_mariadb_again_to_drop_its_databases(self):
        # A run cut off before its down lost MariaDB, not its databases.
        script = (
            'CLOUD_HOST=127.0.0.1; source %s/openstack.bash; '
            'source %s/lifecycle.bash; '
            'service_pid() { [[ -e %s/running ]]; }; '
            'service_start() { echo "start $1"; touch %s/running; }; '
            'mysql() { echo "sql ${2%%%%;*}"; }; '
            % (LIB, LIB, self.tmp, self.tmp))
        done = self.bash(script + 'state_record db-nova created; '
                         '_drop_databases; state_recall db-nova || echo gone')
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual(['start mariadb', 'sql DROP DATABASE IF EXISTS nova',
                          'gone'], done.stdout.splitlines())
        # Nothing recorded: nothing to start.
        os.remove(os.path.join(self.tmp, 'running'))
        done = self.bash(script + '_drop_databases; echo done')
        self.assertEqual(['done'], done.stdout.splitlines(), done.stderr)


class CommandLineTest(unittest.TestCase):

    def test_usage_errors(self):
        done = subprocess.run([TOOL, 'sideways'], capture_output=True,
                              text=True)
        self.assertEqual(1, done.returncode)
        self.assertIn("unknown action 'sideways': up, down, status or "
                      "tempest", done.stderr)
        done = subprocess.run([TOOL, 'up', '--colour'], capture_output=True,
                              text=True)
        self.assertIn('unknown argument: --colour', done.stderr)

    def test_help(self):
        done = subprocess.run([TOOL, '--help'], capture_output=True,
                              text=True)
        self.assertEqual(0, done.returncode)
        for word in ('up', 'down', 'status', 'tempest DIR',
                     '--devstack-source', '--vnf-image'):
            self.assertIn(word, done.stdout)
