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
                   'exit 1; }; source %s/state.bash; source %s/secrets.bash; '
                   'state_init; ' % (self.state, LIB, LIB))
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

    def test_the_state_directory_is_checked_before_use(self):
        for bad in ('/', 'relative/dir', '/tmp', '/var/lib/../..', '/a/./b',
                    '/a/b c', '/var/lib/x/'):
            done = subprocess.run(
                ['bash', '-c', 'CLOUD_STATE="$1"; cloud_die() { echo "$*"; '
                 'exit 1; }; source %s/state.bash; state_check_dir' % LIB,
                 '-', bad], capture_output=True, text=True, timeout=30)
            self.assertEqual(1, done.returncode, bad)
            self.assertIn('EPA_CHAIN_CLOUD_STATE=%s: give an absolute path'
                          % bad, done.stdout)
        open_dir = os.path.join(self.tmp, 'open')
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        link = os.path.join(self.tmp, 'link')
        os.symlink(self.tmp, link)
        for bad, why in ((open_dir, 'not group- or world-writable'),
                         (link, 'not a directory (or a symbolic link)')):
            done = subprocess.run(
                ['bash', '-c', 'CLOUD_STATE="$1"; cloud_die() { echo "$*"; '
                 'exit 1; }; source %s/state.bash; state_check_dir' % LIB,
                 '-', bad], capture_output=True, text=True, timeout=30)
            self.assertEqual(1, done.returncode, bad)
            self.assertIn(why, done.stdout)
        done = self.bash('state_check_dir && echo fine')
        self.assertEqual('fine', done.stdout.strip(), done.stderr)

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
            'mysql() { local sql; sql=$(cat); [[ $sql == SHOW* ]] && '
            'printf "glance\\n" || echo "$sql" >> %s/sql; }; '
            'rabbitmqctl() { cat > /dev/null; }; timeout() { shift; "$@"; }; '
            'source %s/openstack.bash; '
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
            'mysql() { local sql; sql=$(cat); [[ $sql == SELECT* ]] || '
            'echo "sql ${sql%%%%;*}"; }; '
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


class SecretsTest(StateTest):
    """Random passwords per account, never on a command line or in SQL."""

    def secret(self, name):
        with open(os.path.join(self.state, 'secrets', name)) as stream:
            return stream.read()

    def test_a_secret_is_random_private_and_kept(self):
        done = self.bash('secret_file admin; secret_file admin; '
                         'secret_file rabbitmq')
        self.assertEqual(0, done.returncode, done.stderr)
        first, again, other = done.stdout.split()
        self.assertEqual(first, again)
        directory = os.path.join(self.state, 'secrets')
        self.assertEqual(0o700, os.stat(directory).st_mode & 0o777)
        for name in ('admin', 'rabbitmq'):
            path = os.path.join(directory, name)
            self.assertEqual(0o600, os.stat(path).st_mode & 0o777)
            self.assertRegex(self.secret(name), r'^[A-Za-z0-9]{32}$')
        self.assertNotEqual(self.secret('admin'), self.secret('rabbitmq'))
        self.assertEqual(['admin', 'rabbitmq'], sorted(os.listdir(directory)))

    def test_a_secret_name_cannot_leave_the_directory(self):
        done = self.bash('secret_file ../../etc/passwd')
        self.assertEqual(1, done.returncode)
        self.assertIn("bad secret name '../../etc/passwd'", done.stderr)

    def test_ini_secret_writes_the_value_not_the_argv(self):
        conf = os.path.join(self.tmp, 'nova.conf')
        with open(conf, 'w') as stream:
            stream.write('[DEFAULT]\n# a comment\ntransport_url = old\n'
                         '[database]\nconnection = old\n')
        os.chmod(conf, 0o640)
        done = self.bash(
            'python3() { printf "%%s\\n" "$*" >> %s/argv; '
            'command python3 "$@"; }; '
            'ini_secret %s DEFAULT transport_url "rabbit://u:{rabbitmq}@h/"; '
            'ini_secret %s api password "{service-nova}"'
            % (self.tmp, conf, conf))
        self.assertEqual(0, done.returncode, done.stderr)
        with open(conf) as stream:
            text = stream.read()
        rabbit, nova = self.secret('rabbitmq'), self.secret('service-nova')
        self.assertEqual(
            '[DEFAULT]\n# a comment\ntransport_url = rabbit://u:%s@h/\n'
            '[database]\nconnection = old\n\n[api]\npassword = %s\n'
            % (rabbit, nova), text)
        self.assertEqual(0o640, os.stat(conf).st_mode & 0o777)
        with open(os.path.join(self.tmp, 'argv')) as stream:
            argv = stream.read()
        self.assertIn('{rabbitmq}', argv)
        self.assertNotIn(rabbit, argv)
        self.assertNotIn(nova, argv)

    def test_databases_and_the_queue_get_passwords_off_argv_and_sql(self):
        done = self.bash(
            'mysql() { printf "%%s\\n" "$*" >> %s/argv; local sql; '
            'sql=$(cat); [[ $sql == SHOW* ]] && return 0; '
            'echo "$sql" >> %s/sql; }; '
            'rabbitmqctl() { printf "%%s\\n" "$*" >> %s/argv; '
            'cat >> %s/stdin; }; timeout() { shift; "$@"; }; '
            'source %s/openstack.bash; os_create_databases'
            % (self.tmp, self.tmp, self.tmp, self.tmp, LIB))
        self.assertEqual(0, done.returncode, done.stderr)
        with open(os.path.join(self.tmp, 'sql')) as stream:
            sql = stream.read()
        with open(os.path.join(self.tmp, 'argv')) as stream:
            argv = stream.read()
        with open(os.path.join(self.tmp, 'stdin')) as stream:
            self.assertEqual(self.secret('rabbitmq'), stream.read().strip())
        for name in ('db-nova', 'db-heat', 'rabbitmq'):
            self.assertNotIn(self.secret(name), sql)
            self.assertNotIn(self.secret(name), argv)
        # The hash MariaDB stores, of the account's own secret.
        import hashlib

        digest = hashlib.sha1(hashlib.sha1(
            self.secret('db-nova').encode()).digest()).hexdigest().upper()
        self.assertIn("ALTER USER 'nova'@'localhost' IDENTIFIED BY "
                      "PASSWORD '*%s';" % digest, sql)
        self.assertIn('lock_wait_timeout = 30', argv)

    def test_uwsgi_defaults_move_every_address_to_loopback(self):
        done = self.bash(
            'CLOUD_HOST=127.0.0.1; source %s/openstack.bash; '
            'uwsgi_loopback_defaults > %s/keystone' % (LIB, self.tmp))
        self.assertEqual(0, done.returncode, done.stderr)
        # As the package's init script (sh) reads it, after its own.
        shown = subprocess.run(
            ['sh', '-c', 'DAEMON_ARGS="--http-socket :5000 --processes 2 '
             '--ini /etc/keystone/keystone-uwsgi.ini"; . %s/keystone; '
             'echo "$DAEMON_ARGS"' % self.tmp],
            capture_output=True, text=True)
        self.assertEqual('--http-socket 127.0.0.1:5000 --processes 2 --ini '
                         '/etc/keystone/keystone-uwsgi.ini\n', shown.stdout)
        done = self.bash('CLOUD_HOST=127.0.0.1; source %s/openstack.bash; '
                         'rabbitmq_loopback_env' % LIB)
        self.assertIn('NODE_IP_ADDRESS=127.0.0.1', done.stdout)
        self.assertIn('export ERL_EPMD_ADDRESS=127.0.0.1', done.stdout)
        self.assertIn('inet_dist_use_interface {127,0,0,1}', done.stdout)


class LibvirtTest(StateTest):
    """libvirt as `up` sets it up: its limits and QEMU's /dev/kvm."""

    def test_qemus_group_gets_dev_kvm_by_an_acl_entry_recorded_first(self):
        if not os.path.exists('/dev/kvm'):
            self.skipTest('no /dev/kvm on this host: nothing to grant')
        stubs = ('source %s/openstack.bash; '
                 'getfacl() { echo "# file: /dev/kvm"; echo "user::rw-"; }; '
                 'setfacl() { state_recall kvm-acl > /dev/null && '
                 'echo "setfacl $*"; }; ' % LIB)
        # QEMU's user may open /dev/kvm: nothing to change.
        done = self.bash(stubs + 'setpriv() { :; }; '
                         'kvm_access_grant libvirt-qemu kvm; '
                         'state_recall kvm-acl || echo none')
        self.assertEqual(['none'], done.stdout.splitlines(), done.stderr)
        # It may not: the ACL as it was is recorded before the change.
        done = self.bash(stubs + 'setpriv() { return 1; }; '
                         'kvm_access_grant libvirt-qemu kvm; '
                         'state_recall kvm-acl')
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual(['setfacl -m g:kvm:rw /dev/kvm'],
                         done.stdout.splitlines()[:1])
        self.assertIn('# file: /dev/kvm', done.stdout)
        # A file system without ACLs: a warning, and nothing to undo.
        done = self.bash(stubs + 'setpriv() { return 1; }; '
                         'setfacl() { return 1; }; '
                         'kvm_access_grant libvirt-qemu kvm; '
                         'state_recall kvm-acl || echo none')
        self.assertEqual(['none'], done.stdout.splitlines(), done.stderr)
        self.assertIn('libvirt will probe QEMU again', done.stderr)

    def test_libvirtd_takes_the_requests_of_four_guest_builds(self):
        # The vE-CPE chain's four guests, built at once over nova-compute's
        # one connection, filled libvirt's default of 5 requests in flight
        # and every build failed ("Connection reset by peer").
        conf = os.path.join(self.tmp, 'libvirtd.conf')
        with open(conf, 'w') as stream:
            stream.write('#max_client_requests = 5\n#max_workers = 20\n'
                         'auth_unix_rw = "polkit"\n')
        done = self.bash(
            'source %s/openstack.bash; while read -r key value; do '
            'flat_set %s "$key" "$value"; done < <(libvirtd_settings)'
            % (LIB, conf))
        self.assertEqual(0, done.returncode, done.stderr)
        with open(conf) as stream:
            lines = stream.read().splitlines()
        self.assertIn('max_client_requests = 20', lines)
        self.assertIn('auth_unix_rw = "none"', lines)
        self.assertNotIn('auth_unix_rw = "polkit"', lines)
        self.assertIn('#max_workers = 20', lines)


class DownTest(StateTest):
    """`down` stops the services before it drops their databases."""

    def down(self, started, stubs):
        """cloud_down with `started` services recorded and bash `stubs`."""
        os.makedirs(os.path.join(self.state, 'records'), exist_ok=True)
        with open(os.path.join(self.state, 'records', 'started'), 'w') as f:
            f.write(''.join(name + '\n' for name in started))
        return self.bash(
            'KEEP_LOGS=True; CLOUD_HOST=127.0.0.1; '
            'OVS_HUGEPAGE_MOUNT=%(t)s/none; '
            'OVS_VHOST_USER_SOCKET_DIR=%(t)s/vhost; '
            'source %(lib)s/services.bash; source %(lib)s/openstack.bash; '
            'source %(lib)s/lifecycle.bash; source %(lib)s/tester.bash; '
            'state_load_plugin() { :; }; clouds_yaml_remove() { :; }; '
            'service_pid() { [[ $1 == mariadb ]]; }; '
            'service_start() { echo "start $1" >&2; }; '
            'ovs-vsctl() { return 1; }; rabbitmqctl() { :; }; '
            'setfacl() { echo "setfacl $*" >&2; }; '
            'timeout() { shift; "$@"; }; %(stubs)s cloud_down'
            % {'t': self.tmp, 'lib': LIB, 'stubs': stubs})

    def test_services_stop_before_the_drop_and_the_infrastructure_after(self):
        calls = os.path.join(self.tmp, 'calls')
        done = self.down(
            ['openvswitch-switch', 'mariadb', 'rabbitmq-server', 'memcached',
             'keystone', 'nova-api', 'nova-compute'],
            'service_stop() { echo "stop $1" >> %(c)s; }; '
            'os_drop_databases() { echo drop >> %(c)s; };' % {'c': calls})
        self.assertEqual(0, done.returncode, done.stderr)
        with open(calls) as stream:
            lines = stream.read().splitlines()
        # The cloud's services at once (in any order), then the drop,
        # then the infrastructure, last started first.
        self.assertEqual({'stop nova-compute', 'stop nova-api',
                          'stop keystone'}, set(lines[:3]))
        self.assertEqual(
            ['drop', 'stop memcached', 'stop rabbitmq-server',
             'stop mariadb', 'stop openvswitch-switch'], lines[3:])
        self.assertFalse(os.path.exists(self.state))

    def test_a_tester_is_removed_first_while_ovs_runs(self):
        calls = os.path.join(self.tmp, 'calls')
        os.makedirs(os.path.join(self.state, 'tester'))
        done = self.down(
            ['openvswitch-switch', 'mariadb', 'nova-api'],
            'service_stop() { echo "stop $1" >> %(c)s; }; '
            'os_drop_databases() { :; }; '
            'epa-chain() { echo "epa-chain $*" >> %(c)s; };' % {'c': calls})
        self.assertEqual(0, done.returncode, done.stderr)
        with open(calls) as stream:
            said = stream.read().splitlines()
        self.assertEqual('epa-chain tester down --state-dir %s/tester'
                         % self.state, said[0])
        self.assertEqual('stop openvswitch-switch', said[-1])

    def test_down_starts_open_vswitch_again_to_remove_its_bridges(self):
        # A run killed before its down lost ovs-vswitchd, not its bridges
        # (in its database) nor their tap devices.
        calls = os.path.join(self.tmp, 'calls')
        stubs = ('service_stop() { :; }; os_drop_databases() { :; }; '
                 'epa_chain_remove_provider_bridges() { echo bridges >> %s; '
                 '}; epa_chain_clean() { :; }; ' % calls)
        done = self.down(['openvswitch-switch', 'nova-api'], stubs)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertIn('start openvswitch-switch', done.stderr)
        # The stub's ovs-vsctl never answers: nothing more to remove.
        self.assertFalse(os.path.exists(calls))
        # Open vSwitch answering: the bridges go, and nothing is started.
        done = self.down(['openvswitch-switch'],
                         stubs + 'ovs-vsctl() { :; }; MANAGEMENT_BRIDGE=m; '
                         'MANAGEMENT_HOST_PORT=p; ')
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertNotIn('start openvswitch-switch', done.stderr)
        with open(calls) as stream:
            self.assertEqual(['bridges'], stream.read().splitlines())
        # Not started by up: not ours to start.
        os.remove(calls)
        done = self.down(['nova-api'], stubs)
        self.assertNotIn('start openvswitch-switch', done.stderr)

    def test_down_puts_back_the_acl_of_dev_kvm_up_recorded(self):
        stubs = 'service_stop() { :; }; os_drop_databases() { :; }; '
        os.makedirs(os.path.join(self.state, 'records'))
        with open(os.path.join(self.state, 'records', 'kvm-acl'), 'w') as f:
            f.write('# file: /dev/kvm\nuser::rw-\ngroup::rw-\nother::---\n')
        done = self.down(['nova-api'], stubs)
        self.assertEqual(0, done.returncode, done.stderr)
        if os.path.exists('/dev/kvm'):
            self.assertIn('setfacl --restore=-', done.stderr)
        self.assertFalse(os.path.exists(self.state))

    def test_what_down_gives_up_on_is_said_and_the_state_kept(self):
        done = self.down(['mariadb', 'nova-api'],
                         'service_stop() { [[ $1 != nova-api ]]; }; '
                         'os_drop_databases() { return 1; };')
        self.assertEqual(1, done.returncode)
        self.assertIn('down: could not undo: nova-api (still running),some '
                      'databases (see above)', done.stderr)
        self.assertTrue(os.path.isdir(self.state))

    def test_the_drop_kills_the_sessions_of_the_clouds_databases_first(self):
        done = self.bash(
            'mysql() { local sql; sql=$(cat); echo "${sql%%%%;*}" | '
            'tr -s " \\n" " " >> %s/sql; echo >> %s/sql; '
            '[[ $sql == SELECT* ]] && printf "41\\n42\\n"; return 0; }; '
            'source %s/openstack.bash; state_record db-neutron created; '
            'state_record db-nova_api created; os_drop_databases; '
            'state_recall db-neutron || echo gone'
            % (self.tmp, self.tmp, LIB))
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual('gone', done.stdout.strip())
        with open(os.path.join(self.tmp, 'sql')) as stream:
            sql = [line.strip() for line in stream if line.strip()]
        self.assertEqual(
            ["SELECT id FROM information_schema.processlist WHERE (db IN "
             "('nova_api','neutron') OR user IN ('nova','neutron')) AND id "
             "<> CONNECTION_ID()", 'KILL 41', 'KILL 42',
             'DROP DATABASE IF EXISTS nova_api',
             'DROP DATABASE IF EXISTS neutron'], sql)


class ImagesTest(StateTest):
    """What `probe` and `up --build-images` hand on."""

    def lifecycle(self, script):
        return self.bash('CLOUD_HOST=127.0.0.1; source %s/lifecycle.bash; %s'
                         % (LIB, script))

    def test_probe_prints_the_virt_type_alone_on_stdout(self):
        # A kernel that boots to nothing under KVM: TCG (qemu).
        cache = os.path.join(self.tmp, 'cache')
        os.makedirs(os.path.join(cache, 'epa-chain', 'kvm-probe'))
        open(os.path.join(cache, 'epa-chain', 'kvm-probe', 'vmlinuz-6'),
             'w').close()
        done = self.lifecycle(
            'CLOUD_VIRT_TYPE=; XDG_CACHE_HOME=%s; '
            'install_packages() { echo installing; }; '
            'timeout() { echo "booting $2 $3" >&2; }; cloud_probe' % cache)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual('qemu\n', done.stdout)
        self.assertIn('installing', done.stderr)
        with open(os.path.join(self.state, 'records', 'virt-type')) as f:
            self.assertEqual('qemu\n', f.read())

    def test_build_images_take_prox_from_epa_chain_prox_source(self):
        tarball = os.path.join(self.tmp, 'samplevnf.tar.gz')
        open(tarball, 'w').close()
        show = ('; echo "${DIB_REPOTYPE_samplevnf:-} '
                '$DIB_REPOLOCATION_samplevnf ${DIB_REPOREF_samplevnf:-}"')
        for source, expected in (
                (tarball, 'file file://%s ' % tarball),
                ('https://git.example/samplevnf.git#c9716490',
                 'git https://git.example/samplevnf.git c9716490'),
                ('/src/samplevnf', 'git /src/samplevnf HEAD')):
            done = self.lifecycle(
                'EPA_CHAIN_PROX_SOURCE=%s; _samplevnf_for_dib%s'
                % (source, show))
            self.assertEqual(0, done.returncode, done.stderr)
            self.assertEqual(expected, done.stdout.strip('\n'), source)
        done = self.lifecycle('DIB_REPOLOCATION_samplevnf=mine; '
                              'EPA_CHAIN_PROX_SOURCE=%s; '
                              '_samplevnf_for_dib%s' % (tarball, show))
        self.assertIn(' mine', done.stdout)
        done = self.lifecycle('EPA_CHAIN_PROX_SOURCE=; _samplevnf_for_dib')
        self.assertEqual(1, done.returncode)
        self.assertIn('--build-images: set EPA_CHAIN_PROX_SOURCE',
                      done.stderr)


class StopTogetherTest(StateTest):

    def test_services_stop_at_once_and_a_stuck_one_is_said(self):
        done = self.bash(
            'CLOUD_HOST=127.0.0.1; source %s/lifecycle.bash; '
            'service_stop() { sleep 1; [[ $1 != stuck ]]; }; '
            'SECONDS=0; _stop_services_together a b stuck c d; '
            'echo "took $SECONDS; left ${DOWN_LEFT[*]}"' % LIB)
        self.assertEqual(0, done.returncode, done.stderr)
        took = int(done.stdout.split('took ')[1].split(';')[0])
        self.assertLess(took, 3, done.stdout)
        self.assertIn('left stuck (still running)', done.stdout)
        self.assertIn('down: giving up on stuck (still running)',
                      done.stderr)


class CommandLineTest(unittest.TestCase):

    def test_usage_errors(self):
        done = subprocess.run([TOOL, 'sideways'], capture_output=True,
                              text=True)
        self.assertEqual(1, done.returncode)
        self.assertIn("unknown action 'sideways': probe, up, down, status, "
                      "tempest or tester", done.stderr)
        done = subprocess.run([TOOL, 'tester', 'up'], capture_output=True,
                              text=True)
        self.assertIn('tester up needs the name of a chain stack',
                      done.stderr)
        done = subprocess.run([TOOL, 'tester', 'sideways'],
                              capture_output=True, text=True)
        self.assertIn("tester: up STACK or down, not 'sideways'",
                      done.stderr)
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
