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


"""--manage-guest: host name, management NIC and SSH keys from the drive.

What cloud-init did for a chain node, now the runtime's: planned from the
config drive the templates give (fixtures), applied through recorded
commands and a temporary home directory.
"""

import collections
import json
import os
import subprocess

import testtools

from epa_chain.tests.unit import vnf_runtime_fakes as fakes
from epa_chain.tests.unit import vnf_runtime_fixtures as fixtures
from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import devices
from epa_chain.vnf_runtime import errors
from epa_chain.vnf_runtime import guest
from epa_chain.vnf_runtime import sysfs

KEY = ('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0ZXN0a2V5dGVzdGtleXRlc3Rr'
       'ZXl0ZXN0a2V5 epa-chain-test')
Passwd = collections.namedtuple('Passwd', 'pw_dir pw_uid pw_gid')


def _drive(preset='pvp-bidir', node='generator', network=None, meta=None):
    """The fixture drive, its network_data/meta_data edited as given."""
    root = os.path.join(fixtures.FIXTURES, preset, node, 'config-drive')
    drive = config_drive.read(root)
    network_data = json.loads(json.dumps(drive.network_data))
    if network is not None:
        network_data['networks'][0] = dict(network_data['networks'][0],
                                           **network)
    meta_data = dict(drive.meta_data, **(meta or {}))
    return config_drive.ConfigDrive(drive.source, meta_data, network_data,
                                    drive.user_data)


class Recorder:

    def __init__(self, fail=None):
        self.commands = []
        self.fail = fail

    def __call__(self, argv, **_):
        self.commands.append(list(argv))
        code = 1 if self.fail and self.fail in argv else 0
        return subprocess.CompletedProcess(argv, code, '', 'refused')


class PlanTest(testtools.TestCase):

    def _plan(self, drive, user='epa'):
        tmp = self.useFixture(fakes.TempDir()).path
        fake = fixtures.standard_guest(tmp, drive.source, 'generator')
        nics = devices.scan(sysfs.Sysfs(fake.root))
        return guest.plan(drive, drive.node_config(), drive.links(), nics,
                          user)

    def test_dhcp_management_nic_goes_to_networkd(self):
        planned = self._plan(_drive())
        self.assertEqual('epa-chain-generator', planned.hostname)
        self.assertEqual(('ipv4',), planned.dhcp)
        self.assertEqual((), planned.addresses)
        self.assertEqual('eth0', planned.interface)

    def test_a_fixed_address_with_its_routes(self):
        planned = self._plan(_drive(network={
            'type': 'ipv4', 'ip_address': '10.0.0.7',
            'netmask': '255.255.255.0',
            'routes': [{'network': '0.0.0.0', 'netmask': '0.0.0.0',
                        'gateway': '10.0.0.1'},
                       {'network': '192.0.2.0', 'netmask': '24',
                        'gateway': '10.0.0.2'}]}))
        (address,) = planned.addresses
        self.assertEqual('10.0.0.7/24', address.cidr)
        self.assertEqual((('default', '10.0.0.1'),
                          ('192.0.2.0/24', '10.0.0.2')), address.routes)
        self.assertEqual((), planned.dhcp)

    def test_a_netmask_with_holes_names_the_field(self):
        error = self.assertRaises(
            errors.MetadataError, self._plan, _drive(network={
                'type': 'ipv4', 'ip_address': '10.0.0.7',
                'netmask': '255.0.255.0'}))
        self.assertIn('network_data.json: networks[0]', error.reason)
        self.assertIn('not contiguous', error.reason)

    def test_a_key_with_options_or_two_lines_is_refused(self):
        for bad in ('command="sh" ' + KEY, KEY + '\n' + KEY,
                    'ssh-ed25519 AAAA\x1b[2J'):
            error = self.assertRaises(
                errors.MetadataError, self._plan,
                _drive(meta={'public_keys': {'k': bad}}))
            self.assertIn('meta_data.json: public_keys', error.reason)

    def test_a_hostile_host_name_is_refused(self):
        error = self.assertRaises(
            errors.MetadataError, self._plan,
            _drive(meta={'hostname': 'a;reboot'}))
        self.assertIn('meta_data.json: hostname', error.reason)

    def test_keys_from_both_metadata_forms_once(self):
        planned = self._plan(_drive(meta={
            'public_keys': {'k': KEY},
            'keys': [{'name': 'k', 'type': 'ssh', 'data': KEY}]}))
        self.assertEqual((KEY,), planned.keys)


class ManagerTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fakes.TempDir()).path
        self.home = os.path.join(self.tmp, 'home')
        os.makedirs(self.home)
        self.run = Recorder()
        self.names = []
        self.manager = guest.Manager(
            run=self.run, sethostname=self.names.append,
            networkd_dir=os.path.join(self.tmp, 'network'),
            getpwnam=self._getpwnam, chown=lambda *_: None)

    def _getpwnam(self, user):
        if user != 'epa':
            raise KeyError(user)
        return Passwd(self.home, 1000, 1000)

    def _plan(self, **fields):
        values = dict(hostname='vnf1', interface='eth0',
                      mac='fa:16:3e:00:00:05', mtu=1450, addresses=(),
                      dhcp=(), keys=(KEY,), login_user='epa')
        values.update(fields)
        return guest.Plan(**values)

    def test_fixed_address_through_ip(self):
        self.manager.apply(self._plan(addresses=(guest.Address(
            'eth0', '10.0.0.7/24', (('default', '10.0.0.1'),)),)))
        self.assertEqual(['vnf1'], self.names)
        self.assertEqual([
            ['ip', 'link', 'set', 'dev', 'eth0', 'mtu', '1450', 'up'],
            ['ip', 'address', 'replace', '10.0.0.7/24', 'dev', 'eth0'],
            ['ip', 'route', 'replace', 'default', 'via', '10.0.0.1',
             'dev', 'eth0']], self.run.commands)

    def test_dhcp_writes_a_network_file_for_that_nic_only(self):
        self.manager.apply(self._plan(dhcp=('ipv4',)))
        with open(os.path.join(self.tmp, 'network',
                               guest.NETWORKD_FILE)) as stream:
            text = stream.read()
        self.assertIn('MACAddress=fa:16:3e:00:00:05', text)
        self.assertIn('DHCP=ipv4', text)
        self.assertIn(['systemctl', 'restart', '--no-block',
                       'systemd-networkd.service'], self.run.commands)

    def test_keys_are_added_and_never_duplicated_or_removed(self):
        ssh = os.path.join(self.home, '.ssh')
        os.makedirs(ssh)
        path = os.path.join(ssh, 'authorized_keys')
        with open(path, 'w') as stream:
            stream.write('ssh-rsa AAAAB3 by-hand\n')
        self.manager.apply(self._plan())
        self.manager.apply(self._plan())
        with open(path) as stream:
            self.assertEqual(['ssh-rsa AAAAB3 by-hand', KEY],
                             stream.read().splitlines())
        self.assertEqual(0o600, os.stat(path).st_mode & 0o777)
        self.assertEqual(0o700, os.stat(ssh).st_mode & 0o777)

    def test_keys_are_not_written_through_a_symbolic_link(self):
        os.symlink(self.tmp, os.path.join(self.home, '.ssh'))
        error = self.assertRaises(errors.SystemSetupError,
                                  self.manager.apply, self._plan())
        self.assertIn('symbolic link', error.reason)
        self.assertFalse(os.path.exists(os.path.join(self.tmp,
                                                     'authorized_keys')))

    def test_an_unknown_login_user_says_which_element_makes_it(self):
        error = self.assertRaises(errors.SystemSetupError,
                                  self.manager.apply,
                                  self._plan(login_user='nobody-here'))
        self.assertIn('--login-user nobody-here', error.reason)

    def test_a_failing_command_fails_the_node_with_its_words(self):
        self.run.fail = 'address'
        error = self.assertRaises(
            errors.SystemSetupError, self.manager.apply, self._plan(
                addresses=(guest.Address('eth0', '10.0.0.7/24', ()),)))
        self.assertIn('ip address replace 10.0.0.7/24 dev eth0 exited 1',
                      error.reason)
