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

"""The chain on a real OpenStack on this host, as its users create it.

tools/single-host-cloud up (the distribution's OpenStack packages, OVS-DPDK
set up by the devstack plugin's code), the VNF image built by vnf_images/
and uploaded, then exactly the user's commands: `epa-chain preflight`
of the pinned PVP preset (refused: no host reports PCPU) and with
small-host.yaml (passing), then seed 000's vE-CPE chain as shipped,
ending at its tester on the provider VLANs,

    openstack stack create -t templates/chain.yaml \\
        -e templates/presets/vecpe-bidir.yaml \\
        -e templates/environments/small-host.yaml \\
        -e templates/environments/intra-node.yaml --wait vecpe
    tools/single-host-cloud tester up vecpe
    epa-chain prove --os-cloud epa-chain vecpe \\
        --generator-endpoint 127.0.0.1:8474 --json proof.json
    epa-chain audit --os-cloud epa-chain vecpe
    epa-chain measure --generator prox --prox-endpoint 127.0.0.1:8474 \\
        --loss-by-hop proof.json ...
    tools/single-host-cloud tester down
    openstack stack delete --wait vecpe

a PVVP stack created and proven (its parked VNFs' CPU use sampled), two
PVP chains in one stack (chain_count 2, after preflight's N_max for them
was printed and one more chain refused) created, proven chain by chain
and audited, the
TOSCA PVP chain translated twice side by side (`epa-chain translate
tosca/pvp.yaml -i` tosca/presets/pvp-bidir.yaml with chain_count 2),
created unedited beside small-host.yaml and proven chain by chain, the
Tempest scenarios of every chain length (the 1-VNF bidirectional one
with two chains and the density sweep), and
tools/single-host-cloud down, after which nothing it started or made may
be left. Every proof and result must say where each guest's boot went
and that the parked VNFs were started for the traffic only. The cloud
comes down however the run ends: a failure in set-up (a class cleanup),
or SIGTERM, SIGHUP or SIGINT (the running command is stopped, then
`down`). Needs root, and takes tens of minutes: run only with
EPA_CHAIN_CLOUD_TEST=1 (`tox -e cloud` sets it),
EPA_CHAIN_DEVSTACK_SOURCE (the devstack tarball whose functions the
plugin's code runs with) and EPA_CHAIN_PROX_SOURCE (PROX for the image).
Progress goes to stderr.
"""

import configparser
import glob
import io
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import unittest

from epa_chain.cloud import placement
from epa_chain.cloud import readiness
from epa_chain.measurement import readers as measurement_readers
from epa_chain.measurement import results as measurement_results
from epa_chain.tests.cloud import host
from epa_chain.tests.cloud import images
from epa_chain.tests import repo

CLOUD = 'epa-chain'
TOOL = os.path.join(repo.ROOT, 'tools', 'single-host-cloud')
STACK = 'epa-chain-cloud-test'
PRESET = os.path.join(repo.TEMPLATES, 'presets', 'pvp-bidir.yaml')
# chain_count of the stack that shows several chains (issue 33): two PVP
# chains, four guests, what the host's huge pages hold.
TWO_CHAINS = 2
# The longest chain, seed 000's vE-CPE, as shipped: three VNFs between
# the two ends of its external tester (tools/single-host-cloud tester).
VECPE = os.path.join(repo.TEMPLATES, 'presets', 'vecpe-bidir.yaml')
VECPE_VNFS = 3
# Seed 000's Ixia MACs (Table 8-3, Figure 8-11), the preset's.
TESTER_MACS = ('00:11:00:00:00:10', '00:22:00:00:00:10')
# The tester's measurement: both directions, the smallest tagged frame
# (68 bytes: seed 000's Ixia sent 70 for VLAN traffic), the Tempest
# workspace's rate tolerance for TCG guests. By hand the three TCG VNFs
# lost no frame up to 1,151 frames/s per direction and some at 1,176;
# in a test run none at 2,000. TCG makes the knee wander: a ceiling of
# 2,000 finds it on a slow run and says '>= 2,000' on a fast one, in a few
# trials (a 5,000 one took 13 trials by hand). Delays through
# them were 0.4-77 ms (P50 20 ms): PROX's histogram in 2^21-cycle buckets
# (0.8 ms at 2.6 GHz, up to 103 ms), the stack's
# generator_latency_bucket_shift, which the tester takes.
TESTER_MEASURE = ['--frame-sizes', '68', '--direction', 'bi',
                  '--chain-length', str(VECPE_VNFS), '--method', 'rfc2544',
                  # 2 %: TCG's knee moves more than that between trials,
                  # and a finer search took 20 trials (234 s) in CI.
                  '--resolution', '0.02',
                  '--trial-duration', '5', '--max-load', '2000',
                  '--latency-duration', '5', '--invalid-trial-retries', '3',
                  '--generator-option', 'rate_tolerance=0.1',
                  # TCG is a noisy system under test: a narrowly lossy
                  # trial is verified before its load counts as failed.
                  '--search-profile', 'noise-robust']
LATENCY_BUCKET_SHIFT = '21'
# A TOSCA chain on the real Heat: the PVP service template and its preset
# (the vE-CPE one was proven the same way by hand).
TOSCA_PVP = os.path.join(repo.TOSCA, 'pvp.yaml')
TOSCA_PVP_PRESET = os.path.join(repo.TOSCA, 'presets', 'pvp-bidir.yaml')
IN_STACK_GENERATOR = os.path.join(repo.TEMPLATES, 'environments',
                                  'in-stack-generator.yaml')
SMALL_HOST = os.path.join(repo.TEMPLATES, 'environments', 'small-host.yaml')
# Placement rides on stacks that run anyway: affinity on the vE-CPE one is
# created and recorded; anti-affinity over the PVP preset's two servers
# needs a second host this cloud lacks.
INTRA_NODE = os.path.join(repo.TEMPLATES, 'environments', 'intra-node.yaml')
INTER_NODE = os.path.join(repo.TEMPLATES, 'environments', 'inter-node.yaml')
READY_TIMEOUT = int(os.environ.get('EPA_CHAIN_CLOUD_READY_TIMEOUT', '1200'))
# What a stack's guests should take, create to the last READY, on this
# host (issue 30); a slower stack is said in the log, not failed: TCG on
# two shared cores is noisy.
READY_GOAL_S = 150
PVVP = os.path.join(repo.TEMPLATES, 'presets', 'pvvp-bidir.yaml')
# A low-rate trial: the generator under QEMU's TCG offers about 1,450
# frames/s at most beside one VNF, not millions, and fell short of 744
# (0.005 % of 10 GbE) beside three; 0.002 % is 298 frames/s at 64 bytes,
# the Tempest workspace's hop check (the proof's JSON records the rate).
PROOF_LOAD_FRACTION = os.environ.get('EPA_CHAIN_CLOUD_LOAD_FRACTION',
                                     '0.00002')
# Four guests just booted can drop a trial's frames (as the Tempest hop
# check saw); the proof keeps every failed attempt.
PROOF_ATTEMPTS = '5'
# What the openstack client prints when heat-api drops its connection.
LOST_CONNECTION = 'Unable to establish connection to'
# The Tempest scenarios, serially, each under Tempest's test timeout:
# one VNF both ways, two and three VNFs bidirectional (every chain
# length). Before the images' boot was cut (diskimage-elements/
# epa-chain-lean-boot) and their VNFs parked until measured, the 3-VNF
# one alone took 18 minutes of guest boots under TCG, and only the 1-VNF
# ones fitted CI. The ceiling, rate tolerance and hop-check load
# tools/single-host-cloud tempest chose for this host are read back from
# the workspace's tempest.conf, not repeated here.
TEMPEST_SCENARIOS = {'test_chain_1vnf_unidirectional': (1, 'unidirectional'),
                     'test_chain_1vnf_bidirectional': (1, 'bidirectional'),
                     'test_chain_2vnf_bidirectional': (2, 'bidirectional'),
                     'test_chain_3vnf_bidirectional': (3, 'bidirectional')}
# Run last, in the same workspace with two chains side by side and the
# density sweep ([epa_chain] chain_count, density_sweep): both chains
# hop-checked, measured alone and together, the density curve written.
# Its guests' boots no longer decide the time: this one scenario costs
# some 80 s more than its one-chain run.
DENSITY_SCENARIO = 'test_chain_1vnf_bidirectional'
DENSITY_CHAINS = 2
TEMPEST_TEST_TIMEOUT = 2400
# [epa_chain] kpi_file of the workspace: KPIs every scenario meets even
# under TCG (a forwarding chain, delays under 10 s), so each result carries
# met verdicts; the report then fails a ceiling no emulated chain meets. A
# maximum delay is known exactly: over 1 us it is MISSED, where a
# throughput floor above the search's ceiling is only 'unknown' (CI saw
# that: the 1-VNF unidirectional NDR is '>= 1,000', the ceiling then).
# TCG guests contradict their own searches often (a load passes, then
# fails): those figures are marked inconsistent in every table, and the
# workspace accepts them so that the verdicts still show the KPI path.
KPIS_MET = ('throughput:\n  - {goal: NDR, min_fps: 10}\n'
            'latency:\n  - {percentile: max, max_us: 10000000}\n'
            'allow_inconsistent: true\n')
KPIS_MISSED = 'latency:\n  - {percentile: max, max_us: 1}\n'
# Where `up` keeps what `down` needs to give the host back.
CLOUD_STATE = os.environ.get('EPA_CHAIN_CLOUD_STATE',
                             '/var/lib/epa-chain-cloud')
# `down` on a cloud whose services run and hold database sessions.
DOWN_BUDGET_S = 180
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _log(text):
    sys.stderr.write('[cloud %s] %s\n' % (time.strftime('%H:%M:%S'), text))
    sys.stderr.flush()


def _skip_reason():
    if os.environ.get('EPA_CHAIN_CLOUD_TEST') != '1':
        return ('the single-host cloud test installs and runs OpenStack '
                'on this host: set EPA_CHAIN_CLOUD_TEST=1 (tox -e cloud)')
    if os.geteuid() != 0:
        return 'the single-host cloud needs root'
    for name in ('EPA_CHAIN_DEVSTACK_SOURCE', 'EPA_CHAIN_PROX_SOURCE'):
        if not os.environ.get(name):
            return '%s is not set (see doc/source/single-host-cloud.rst)' % (
                name)
    return None


def _run(argv, check=True, timeout=3600):
    _log('$ ' + ' '.join(argv))
    done = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError('%s exited %d:\n%s' % (
            ' '.join(argv), done.returncode, done.stdout[-6000:]))
    return done


def _openstack_json(*args):
    # stdout only: the client warns on stderr (deprecations).
    argv = ['openstack', '--os-cloud', CLOUD] + list(args) + ['-f', 'json']
    done = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError('%s exited %d: %s' % (
            ' '.join(argv), done.returncode, done.stderr[-3000:]))
    return json.loads(done.stdout)


def _kvm_acl():
    """/dev/kvm's extended ACL (up may add an entry), None without one."""
    try:
        return os.getxattr('/dev/kvm', 'system.posix_acl_access')
    except OSError:     # no /dev/kvm, or no extended ACL
        return None


def _host_state():
    """What down must give back.

    Huge pages, network devices (the bridges' tap devices), namespaces,
    /dev/kvm's ACL.
    """
    with open('/proc/sys/vm/nr_hugepages') as stream:
        pages = int(stream.read())
    namespaces = sorted(os.listdir('/run/netns')) if os.path.isdir(
        '/run/netns') else []
    return {'nr_hugepages': pages, 'namespaces': namespaces,
            'links': sorted(os.listdir('/sys/class/net')),
            'kvm_acl': _kvm_acl()}


class SingleHostCloudTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        reason = _skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        if os.path.isdir(CLOUD_STATE):
            # An earlier run was cut off before its `down`: its huge pages,
            # bridges and services are not this host's own state. `down`
            # gives back what that run recorded before it changed anything.
            _log('%s is left by an interrupted run: taking it down first'
                 % CLOUD_STATE)
            if cls._down() != 0:
                raise AssertionError('tools/single-host-cloud down could not '
                                     'clean up the interrupted run')
        cls.before = _host_state()
        cls.timings = {}
        # From here on the cloud comes down however the class ends:
        # unittest runs class cleanups after a failed setUpClass too.
        cls.addClassCleanup(cls._down_if_up)
        cls._previous_handlers = {
            number: signal.signal(number, cls._stopped)
            for number in STOP_SIGNALS}
        cls.addClassCleanup(cls._restore_signals)
        # The image depends on the hypervisor (probed once, as `up` would),
        # then the one `up` uploads it.
        started = time.monotonic()
        virt_type = cls.virt_type = cls._probe()
        cls.timings['probe_s'] = round(time.monotonic() - started)
        started = time.monotonic()
        image = images.vnf_image(_log, virt_type)
        cls.timings['image_s'] = round(time.monotonic() - started)
        cls._up('up_s', '--vnf-image', image)
        status = _run([TOOL, 'status']).stdout
        _log('status:\n' + status)
        cls.pids = [int(line.split()[1]) for line in status.splitlines()[2:]
                    if line.split()[1].isdigit()]

    @staticmethod
    def _probe():
        """The virt_type `tools/single-host-cloud probe` prints."""
        _log('$ %s probe' % TOOL)
        # Its progress on stderr, shown as it goes; the answer on stdout.
        probed = subprocess.run([TOOL, 'probe'], stdout=subprocess.PIPE,
                                text=True, timeout=1800)
        virt_type = probed.stdout.strip()
        if probed.returncode != 0 or virt_type not in ('kvm', 'qemu'):
            raise AssertionError('tools/single-host-cloud probe exited %d '
                                 'printing %r, not kvm or qemu'
                                 % (probed.returncode, probed.stdout))
        return virt_type

    @classmethod
    def _up(cls, timing, *args):
        started = time.monotonic()
        up = subprocess.run([TOOL, 'up'] + list(args),
                            stderr=subprocess.STDOUT)
        cls.timings[timing] = round(time.monotonic() - started)
        if up.returncode != 0:
            # The class cleanup takes the half-built cloud down.
            raise AssertionError('tools/single-host-cloud up exited %d'
                                 % up.returncode)

    @classmethod
    def _down_if_up(cls):
        if os.path.isdir(CLOUD_STATE):
            _log('taking the cloud down (class cleanup)')
            cls._down()

    @classmethod
    def _stopped(cls, number, frame):
        """A stop signal: end what runs, take the cloud down, exit."""
        _log('signal %d: stopping the running command, then down' % number)
        for number_ in STOP_SIGNALS:
            signal.signal(number_, signal.SIG_IGN)
        host.stop_descendants(os.getpid())
        if os.path.isdir(CLOUD_STATE):
            cls._down()
        os._exit(128 + number)

    @classmethod
    def _restore_signals(cls):
        for number, handler in cls._previous_handlers.items():
            signal.signal(number, handler)

    @classmethod
    def tearDownClass(cls):
        _log('timings: %s' % json.dumps(cls.timings, sort_keys=True))

    @classmethod
    def _down(cls):
        # Bounded: `down` bounds its own waits, this bounds `down`.
        try:
            return subprocess.run([TOOL, 'down', '--keep-logs'],
                                  stderr=subprocess.STDOUT,
                                  timeout=2 * DOWN_BUDGET_S).returncode
        except subprocess.TimeoutExpired:
            _log('down did not finish in %d s' % (2 * DOWN_BUDGET_S))
            return -1

    def test_0_private_to_this_host(self):
        """Loopback listeners, 0600 secrets, guarded libvirt sockets."""
        listening = _run(['ss', '-H', '-l', '-t', '-u', '-n', '-p']).stdout
        self.assertEqual([], host.exposed(listening), listening)
        secrets = os.path.join(CLOUD_STATE, 'secrets')
        self.assertEqual(0o700, os.stat(secrets).st_mode & 0o777)
        names = sorted(os.listdir(secrets))
        self.assertIn('admin', names)
        self.assertIn('db-nova', names)
        self.assertIn('rabbitmq', names)
        passwords = set()
        for name in names:
            path = os.path.join(secrets, name)
            self.assertEqual(0o600, os.stat(path).st_mode & 0o777, path)
            with open(path) as stream:
                passwords.add(stream.read().strip())
        # One random password per account.
        self.assertEqual(len(names), len(passwords))
        self.assertTrue(all(len(word) >= 32 for word in passwords))
        self.assertEqual([], host.readable_by_others([
            '/etc/openstack/clouds.yaml', '/run/libvirt/libvirt-sock',
            '/run/libvirt/libvirt-sock-ro', secrets]))
        # No password on any command line of the host.
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                with open('/proc/%s/cmdline' % pid, 'rb') as stream:
                    argv = stream.read().decode(errors='replace')
            except OSError:
                continue
            for password in passwords:
                self.assertNotIn(password, argv, 'pid %s' % pid)

    def _stack_resources(self):
        """Servers, ports, networks and flavors named after the stack."""
        left = {}
        for kind in ('server', 'port', 'network', 'flavor', 'server group'):
            names = [item.get('Name') or item.get('name') or ''
                     for item in _openstack_json(*kind.split(), 'list')]
            left[kind] = [name for name in names if STACK in name or
                          name.startswith(('net-phys',))]
        return left

    def _delete_stack(self, stack):
        """`openstack stack delete --wait`; its CompletedProcess."""
        deleted = _run(['openstack', '--os-cloud', CLOUD, 'stack', 'delete',
                        '-y', '--wait', stack], check=False, timeout=900)
        if deleted.returncode != 0 and LOST_CONNECTION in deleted.stdout:
            # Seen once in CI: Heat accepted the delete (204), then the
            # client's event polling had its connection reset.
            _log('the client lost heat-api while waiting; waiting for the '
                 'stack itself')
            deleted = self._wait_until_gone(stack, 900)
        return deleted

    def _assert_nothing_left(self):
        self.assertEqual({'server': [], 'port': [], 'network': [],
                          'flavor': [], 'server group': []},
                         self._stack_resources())

    def test_1_environment_files_win_as_heat_merges_them(self):
        # The README's in-stack generator for vE-CPE: a third -e file
        # beats the preset's endpoints (Heat's merge_environments), where
        # --parameter would not. Heat's own preview, nothing created.
        def endpoints(*files):
            argv = ['stack', 'create', '--dry-run', '-t', repo.CHAIN]
            for name in files:
                argv += ['-e', name]
            preview = _openstack_json(*argv, STACK + '-preview')
            return preview['parameters']['endpoints']

        self.assertEqual('external', endpoints(VECPE, SMALL_HOST))
        self.assertEqual('generator', endpoints(
            VECPE, IN_STACK_GENERATOR, SMALL_HOST, INTRA_NODE))

    def _preflight(self, *environments, chain_count=1):
        """`epa-chain preflight` of chain.yaml; (exit status, findings)."""
        found = os.path.join(os.environ.get('TMPDIR', '/tmp'),
                             'epa-chain-cloud-preflight.json')
        argv = [sys.executable, '-m', 'epa_chain.cli', 'preflight',
                '--os-cloud', CLOUD, repo.CHAIN, '--json', found,
                '--parameter', 'chain_count=%d' % chain_count]
        for name in environments:
            argv += ['-e', name]
        done = _run(argv, check=False, timeout=600)
        _log(done.stdout[-4000:])
        with open(found) as stream:
            return done.returncode, json.load(stream)['findings']

    def test_1_preflight_says_why_before_create(self):
        # The pinned preset as shipped on a host without cpu_dedicated_set:
        # `stack create` would fail after minutes with "No valid host";
        # preflight says PCPU and the environment that fits.
        started = time.monotonic()
        status, findings = self._preflight(PRESET)
        self.assertEqual(1, status, findings)
        blockers = [f for f in findings if f['verdict'] == 'blocks']
        self.assertEqual([('capacity', 'hw:cpu_policy')],
                         [(f['check'], f['key']) for f in blockers])
        self.assertIn('no compute host reports PCPU', blockers[0]['message'])
        self.assertIn('small-host.yaml', blockers[0]['fix'])
        # With it nothing blocks two chains: images, flavors (admin), the
        # physnets inside Neutron's segment ranges, VLANs free, room,
        # Nova's and Neutron's quotas, and how many chains fit (N_max).
        status, findings = self._preflight(PRESET, SMALL_HOST,
                                           chain_count=TWO_CHAINS)
        self.assertEqual(0, status, findings)
        n_max = self._n_max(findings)
        self.assertGreaterEqual(n_max, TWO_CHAINS)
        # One more than N_max is refused, naming what limits it.
        status, refused = self._preflight(PRESET, SMALL_HOST,
                                          chain_count=n_max + 1)
        self.assertEqual(1, status, refused)
        (blocker,) = [f for f in refused if f['verdict'] == 'blocks' and
                      f['check'] == 'density']
        self.assertIn('limited by', blocker['message'])
        self.assertIn('chain_count %d or less' % n_max, blocker['fix'])
        verdicts = {(f['check'], f['resource'], f['key']): f['verdict']
                    for f in findings}
        for key in (('images', 'chains.0.vnf1.server', 'vnf_image'),
                    ('images', 'chains.0.generator.server', 'generator_image'),
                    ('networks', 'chains.0.net0.network', 'segmentation_id'),
                    ('networks', 'chains.0.net1.network', 'segmentation_id'),
                    ('quotas', 'compute', 'cores'),
                    ('quotas', 'network', 'port')):
            self.assertEqual('ok', verdicts.get(key), (key, findings))
        ranged = [f['message'] for f in findings
                  if f['key'] == 'segmentation_id']
        self.assertTrue(all("in Neutron's range" in m for m in ranged),
                        ranged)
        capacity = [f for f in findings if f['check'] == 'capacity' and
                    f['key'] == 'PCPU, VCPU, MEMORY_MB']
        self.assertEqual('ok', capacity[0]['verdict'], capacity)
        self.timings['preflight_s'] = round(time.monotonic() - started)

    def _n_max(self, findings):
        """N_max from preflight's density finding, logged and timed."""
        (density,) = [f for f in findings if f['check'] == 'density']
        self.assertEqual('ok', density['verdict'], density)
        found = re.search(r'room for (\d+) chain', density['message'])
        self.assertIsNotNone(found, density['message'])
        _log('preflight N_max: %s' % density['message'])
        self.timings['preflight_n_max'] = int(found.group(1))
        return int(found.group(1))

    def _tester(self, action, *args):
        started = time.monotonic()
        done = _run([TOOL, 'tester', action] + list(args), check=False,
                    timeout=600)
        self.timings['tester_%s_s' % action] = round(
            time.monotonic() - started)
        return done

    def test_1_stack_create_prove_measure_delete(self):
        argv = ['openstack', '--os-cloud', CLOUD, 'stack', 'create',
                '-t', repo.CHAIN, '-e', VECPE, '-e', SMALL_HOST,
                '-e', INTRA_NODE, '--parameter',
                'generator_latency_bucket_shift=%s' % LATENCY_BUCKET_SHIFT,
                '--wait', STACK]
        started = self.created_at = time.monotonic()
        created = _run(argv, check=False, timeout=1800)
        self.timings['stack_create_s'] = round(time.monotonic() - started)
        try:
            self.assertEqual(0, created.returncode, created.stdout[-4000:])
            status = _openstack_json('stack', 'show', STACK)
            self.assertEqual('CREATE_COMPLETE', status['stack_status'])
            self.assertEqual('external', status['parameters']['endpoints'])

            # vhost-user data ports on OVS-DPDK, as the cloud promises.
            interfaces = _run(['ovs-vsctl', '--columns=type', 'list',
                               'Interface']).stdout
            self.assertGreaterEqual(
                interfaces.count('dpdkvhostuserclient'), 2 * VECPE_VNFS,
                interfaces)
            # The guests' QEMU is not root's.
            users = host.process_users('qemu-system-x86')
            self.assertTrue(users, 'no QEMU process found')
            self.assertNotIn('root', users)

            tester = self._tester('up', STACK)
            self.assertEqual(0, tester.returncode, tester.stdout[-4000:])
            endpoint = tester.stdout.strip().splitlines()[-1]
            self.assertEqual('127.0.0.1:8474', endpoint)
            # Trunk ports of the provider bridges, where the Ixia was,
            # allowing each end's VLAN.
            for bridge, port, vlan in (('br-physnet1', 'epa-tester-l', 1001),
                                       ('br-physnet2', 'epa-tester-r', 2002)):
                self.assertIn(port, _run(['ovs-vsctl', 'list-ports',
                                          bridge]).stdout.split())
                self.assertEqual('[]\n[%d]' % vlan, _run([
                    'ovs-vsctl', 'get', 'Port', port, 'tag',
                    'trunks']).stdout.strip())
            proof_file = self._prove_through_the_tester(endpoint)
            self._audit(STACK, VECPE_VNFS)
            self._measure_through_the_tester(endpoint, proof_file)
        finally:
            down = self._tester('down')
            started = time.monotonic()
            deleted = self._delete_stack(STACK)
            self.timings['stack_delete_s'] = round(time.monotonic() - started)
        self.assertEqual(0, down.returncode, down.stdout[-3000:])
        for bridge, port in (('br-physnet1', 'epa-tester-l'),
                             ('br-physnet2', 'epa-tester-r')):
            # Neutron's patch port to br-int stays.
            self.assertNotIn(port, _run(['ovs-vsctl', 'list-ports',
                                         bridge]).stdout.split())
        self.assertFalse(os.path.exists(os.path.join(CLOUD_STATE,
                                                     'tester')))
        self.assertEqual(0, deleted.returncode, deleted.stdout[-3000:])
        self._assert_nothing_left()

    def _ready_timing(self, name, created, proved, proof):
        """Create to the last READY, and where each guest's boot went.

        `created` and `proved`: time.monotonic() when the create and the
        prove began; the proof says how long after the latter the last
        guest was READY.
        """
        ready_s = round(proved - created + proof['ready_after_s'])
        self.timings['%s_ready_s' % name] = ready_s
        _log('%s: guests READY %d s after the create began%s' % (
            name, ready_s, '' if ready_s <= READY_GOAL_S else
            ' (over the %d s goal)' % READY_GOAL_S))
        for line in readiness.describe_boot(proof.get('boot') or {}):
            _log('%s boot: %s' % (name, line))
        # Every guest printed its timeline; parked VNFs were started for
        # the proof and parked again.
        self.assertEqual(sorted(proof['servers']), sorted(proof['boot']))
        for phases in proof['boot'].values():
            self.assertGreater(phases['ready_s'], 0, phases)
        vnfs = [name for name in proof['servers'] if '-vnf' in name]
        parked = 0
        for chain in proof['chains']:
            tasks = chain['vnf_tasks']
            parked += len(tasks['parked_at_ready'])
            self.assertEqual(
                ['started'] * len(tasks['parked_at_ready']) +
                ['parked'] * len(tasks['parked_at_ready']),
                [event['action'] for event in tasks['events']])
            self.assertEqual([None] * len(tasks['events']),
                             [event['error'] for event in tasks['events']])
        self.assertEqual(len(vnfs), parked, proof['chains'])

    def _audit(self, stack, servers):
        """`epa-chain audit`: what small-host.yaml asked, each given."""
        audited = os.path.join(os.environ.get('TMPDIR', '/tmp'),
                               'epa-chain-cloud-audit.json')
        started = time.monotonic()
        done = _run([sys.executable, '-m', 'epa_chain.cli', 'audit',
                     '--os-cloud', CLOUD, stack, '--json', audited],
                    check=False, timeout=600)
        self.timings['audit_s'] = round(time.monotonic() - started)
        _log(done.stdout[-6000:])
        self.assertEqual(0, done.returncode, done.stdout[-3000:])
        with open(audited) as stream:
            document = json.load(stream)
        self.assertTrue(document['valid'])
        # The servers run here: libvirt and OVS were read for each.
        self.assertEqual(servers, len(document['host_checked']))
        findings = document['findings']
        by_aspect = {}
        for finding in findings:
            by_aspect.setdefault(finding['aspect'], []).append(finding)
        self.assertEqual(servers, len(by_aspect['cpu']))
        for finding in by_aspect['cpu']:
            # Shared CPUs, as small-host.yaml asked.
            self.assertEqual('shared', finding['asked'])
            self.assertEqual('info', finding['severity'], finding)
            self.assertIn('as the flavor asked', finding['message'])
        for finding in by_aspect['pages']:
            self.assertEqual(('large', '2 MB', 'info'), (
                finding['asked'], finding['given'], finding['severity']))
        for finding in by_aspect['numa']:
            self.assertEqual(('1', 'info'), (finding['asked'],
                                             finding['severity']))
        # Each server's vhost-user ports (two data, one management), each
        # polled by a PMD thread.
        self.assertEqual(3 * servers, len(by_aspect['pmd']))
        for finding in by_aspect['pmd']:
            self.assertTrue(finding['given'].startswith('core '), finding)
        self.assertIn('EPA: asked vs given', done.stdout)

    def _prove_through_the_tester(self, endpoint):
        proof_file = os.path.join(os.environ.get('TMPDIR', '/tmp'),
                                  'epa-chain-cloud-proof.json')
        started = time.monotonic()
        proved = _run([sys.executable, '-m', 'epa_chain.cli', 'prove',
                       '--os-cloud', CLOUD, STACK, '--generator-endpoint',
                       endpoint, '--ready-timeout', str(READY_TIMEOUT),
                       '--load-fraction', PROOF_LOAD_FRACTION,
                       '--attempts', PROOF_ATTEMPTS, '--json', proof_file],
                      check=False, timeout=READY_TIMEOUT + 600)
        self.timings['prove_s'] = round(time.monotonic() - started)
        _log(proved.stdout[-3000:])
        with open(proof_file) as stream:
            proof = json.load(stream)
        self.assertTrue(proof['proven'], proof.get('error'))
        # What the readiness budget is sized from: three TCG guests
        # booting on two CPUs.
        self.timings['ready_after_s'] = proof['ready_after_s']
        self._ready_timing('vecpe', self.created_at, started, proof)
        self.assertEqual(['forward', 'reverse'],
                         [d['direction'] for d in proof['directions']])
        ends = {'forward': TESTER_MACS, 'reverse': TESTER_MACS[::-1]}
        for direction in proof['directions']:
            # 68 bytes: the tester's frames carry the 802.1Q tag.
            self.assertEqual(68, direction['frame_size'])
            self.assertGreater(direction['rx_frames'], 0)
            # From one Ixia port to the other, over the provider VLANs.
            self.assertTrue(direction['hops'].startswith(
                'external-tester:%s (%s, ' % (
                    'left' if direction['direction'] == 'forward'
                    else 'right', ends[direction['direction']][0])),
                direction['hops'])
            self.assertIn(ends[direction['direction']][1],
                          direction['hops'].rsplit(' -> ', 1)[1])
            # each VNF in and out; the tester counts its own ends
            self.assertEqual(2 * VECPE_VNFS, len(direction['hop_counts']))
            for hop in direction['hop_counts']:
                self.assertGreaterEqual(
                    hop['frames'], direction['tx_frames'] * 0.99, hop)
        self.assertEqual(VECPE_VNFS, len(proof['servers']), proof['servers'])
        # intra-node.yaml's affinity, and where Nova put each server.
        placed = proof['placement']
        _log('placement: %s' % json.dumps(placed, sort_keys=True))
        self.assertEqual('affinity', placed['server_group_policy'])
        self.assertEqual(1, placed['hosts'], placed)
        self.assertEqual(VECPE_VNFS, len(placed['servers']), placed)
        return proof_file

    def _measure_through_the_tester(self, endpoint, proof_file):
        results_file = os.path.join(os.environ.get('TMPDIR', '/tmp'),
                                    'epa-chain-cloud-tester-results.json')
        started = time.monotonic()
        measured = _run([sys.executable, '-m', 'epa_chain.cli', 'measure',
                         '--generator', 'prox', '--prox-endpoint', endpoint,
                         '--json', results_file, '--tables',
                         # every lossy trial split hop by hop along the
                         # path the proof counted
                         '--loss-by-hop', proof_file] +
                        TESTER_MEASURE, check=False, timeout=1800)
        self.timings['measure_s'] = round(time.monotonic() - started)
        _log(measured.stdout[-6000:])
        self.assertEqual(0, measured.returncode, measured.stdout[-4000:])
        document = measurement_results.load(results_file)
        (case,) = document['cases']
        self.assertIsNone(case['error'])
        # The proof's parked VNFs ran their tasks for the campaign only.
        self.assertEqual(['started'] * VECPE_VNFS + ['parked'] * VECPE_VNFS,
                         [event['action'] for event in document['cloud'][
                             'vnf_tasks']['events']])
        # The tester's frames carry the provider VLAN's tag, and its
        # histogram the stack's bucket width.
        layout = document['generator']['layout']
        self.assertEqual(4, layout['tag_bytes'])
        self.assertEqual(int(LATENCY_BUCKET_SHIFT),
                         layout['latency_bucket_shift'])
        self.assertEqual(2000.0, case['max_load_fps'])
        goals = {goal['name']: goal for goal in case['search']['goals']}
        for name in ('NDR', 'PDR'):
            self.assertGreater(goals[name]['throughput_fps'], 0, goals)
        latency = case['latency']
        trial = case['trials'][latency['trial']]
        self.assertGreater(trial['tx_frames'], 0)
        self.assertEqual(['forward', 'reverse'],
                         sorted(latency['directions']))
        for name, record in latency['directions'].items():
            self.assertIsNotNone(record, '%s: %s' % (name, trial['notes']))
            self.assertGreater(record['count'], 0, name)
        self.assertGreater(case['totals']['trials'], 0)
        _log('tester: NDR %s, PDR %s frames/s per direction; %d trials, '
             '%d invalid' % (goals['NDR']['throughput_fps'],
                             goals['PDR']['throughput_fps'],
                             case['totals']['trials'],
                             len(case['totals']['invalid_trials'])))
        # Consistent, or the contradiction said (and recorded).
        issues = case['consistency']['issues']
        _log('tester consistency: %s' % ('; '.join(
            issue['message'] for issue in issues) or 'consistent'))
        self.assertEqual('noise-robust',
                         document['parameters']['search_profile'])
        # Seed 000's tables, as the report prints them.
        self.assertIn('68', measured.stdout)
        self.assertIn('NDR', measured.stdout)
        self._assert_loss_split(case, measured.stdout)

    def _assert_loss_split(self, case, stdout):
        """Each lossy trial direction's loss, split along the chain.

        TCG guests make the knee wander: a fast run loses nothing up to
        the ceiling and has nothing to split, which is said.
        """
        owners = {}
        split = 0
        for record in case['trials']:
            for found in record['directions']:
                lost = found['tx_frames'] - found['rx_frames']
                if lost <= 0:
                    self.assertNotIn('loss_by_hop', found)
                    continue
                self.assertIn('loss_by_hop', found, record['notes'])
                by_hop = found['loss_by_hop']
                self.assertEqual(lost, by_hop['lost_frames'])
                self.assertEqual(lost, sum(s['lost']
                                           for s in by_hop['segments']))
                for owner, frames in by_hop['by_owner'].items():
                    owners[owner] = owners.get(owner, 0) + frames
                split += 1
        _log('loss split by hop: %d lossy trial direction(s), frames by '
             'owner %s' % (split, json.dumps(owners, sort_keys=True)))
        if measurement_readers.knee_trial(case) is not None:
            self.assertIn('Where frames were lost at the knee', stdout)

    def test_1_inter_node_is_refused_with_novas_reason(self):
        # anti-affinity over two servers on a one-host cloud: the create
        # fails at scheduling, and prove says why in one line.
        stack = STACK + '-inter-node'
        started = time.monotonic()
        try:
            created = _run(['openstack', '--os-cloud', CLOUD, 'stack',
                            'create', '-t', repo.CHAIN, '-e', PRESET,
                            '-e', SMALL_HOST, '-e', INTER_NODE, '--wait',
                            stack], check=False, timeout=1800)
            self.timings['inter_node_refused_s'] = round(
                time.monotonic() - started)
            self.assertNotEqual(0, created.returncode, created.stdout[-2000:])
            status = _openstack_json('stack', 'show', stack)
            self.assertEqual('CREATE_FAILED', status['stack_status'])
            # The scheduler's refusal, or, when both servers were scheduled
            # at once (seen here), the compute host's own policy check
            # refusing the later one until its retries ran out.
            reason = status['stack_status_reason']
            self.assertTrue(any(message in reason for message in
                                placement.NOVA_NO_HOST), reason)
            proved = _run([sys.executable, '-m', 'epa_chain.cli', 'prove',
                           '--os-cloud', CLOUD, stack], check=False,
                          timeout=300)
            _log(proved.stdout[-2000:])
            self.assertEqual(1, proved.returncode, proved.stdout[-2000:])
            said = [line for line in proved.stdout.splitlines()
                    if 'is CREATE_FAILED: ' in line]
            self.assertEqual(1, len(said), proved.stdout[-2000:])
            self.assertIn('server_group_policy anti-affinity needs a compute '
                          'host per server', said[0])
        finally:
            deleted = self._delete_stack(stack)
        self.assertEqual(0, deleted.returncode, deleted.stdout[-3000:])
        self._assert_nothing_left()

    def _create_and_prove(self, name, stack, template, proof_file):
        """`openstack stack create` of `template` (-t/-e words), `prove`.

        The proof, proven; its timings as `name`_create_s, _prove_s and
        _ready_s, and every guest's boot in the log.
        """
        created_at = time.monotonic()
        created = _run(['openstack', '--os-cloud', CLOUD, 'stack', 'create'] +
                       template + ['--wait', stack], check=False,
                       timeout=1800)
        self.timings['%s_create_s' % name] = round(
            time.monotonic() - created_at)
        self.assertEqual(0, created.returncode, created.stdout[-4000:])
        proved_at = time.monotonic()
        proved = _run([sys.executable, '-m', 'epa_chain.cli', 'prove',
                       '--os-cloud', CLOUD, stack, '--ready-timeout',
                       str(READY_TIMEOUT), '--load-fraction',
                       PROOF_LOAD_FRACTION, '--attempts', PROOF_ATTEMPTS,
                       '--json', proof_file], check=False,
                      timeout=READY_TIMEOUT + 600)
        self.timings['%s_prove_s' % name] = round(
            time.monotonic() - proved_at)
        _log(proved.stdout[-3000:])
        with open(proof_file) as stream:
            proof = json.load(stream)
        self.assertTrue(proof['proven'], proof.get('error'))
        self.assertEqual(0, proved.returncode, proved.stdout[-3000:])
        self._ready_timing(name, created_at, proved_at, proof)
        return proof

    def test_1_pvvp_created_and_proven(self):
        # Two VNFs and the in-stack generator: four guests booting at once.
        stack = STACK + '-pvvp'
        proof_file = os.path.join(os.environ.get('TMPDIR', '/tmp'),
                                  'epa-chain-cloud-pvvp-proof.json')
        try:
            proof = self._create_and_prove(
                'pvvp', stack, ['-t', repo.CHAIN, '-e', PVVP,
                                '-e', SMALL_HOST], proof_file)
            self.assertEqual(3, len(proof['servers']), proof['servers'])
            self._parked_vnfs_idle(stack)
            for direction in proof['directions']:
                # generator out, each VNF in and out, generator in
                self.assertEqual(6, len(direction['hop_counts']),
                                 direction['hops'])
                for hop in direction['hop_counts']:
                    self.assertGreaterEqual(
                        hop['frames'], direction['tx_frames'] * 0.99, hop)
        finally:
            deleted = self._delete_stack(stack)
        self.assertEqual(0, deleted.returncode, deleted.stdout[-3000:])
        self._assert_nothing_left()

    def test_1_a_guest_stalled_in_its_boot_is_rebooted_once(self):
        # The rare hang under emulation, for real: vnf1's second vCPU
        # held still a second into its kernel (host.VcpuStall) hangs the
        # guest; prove's readiness wait reads the kernel's stall report,
        # hard-reboots that server once, and proves the chain through it.
        stack = STACK + '-stalled'
        vnf1 = stack + '-vnf1'
        proof_file = os.path.join(os.environ.get('TMPDIR', '/tmp'),
                                  'epa-chain-cloud-stalled-proof.json')
        stall = host.VcpuStall(vnf1, timeout_s=READY_TIMEOUT + 900)
        stall.start()
        try:
            proof = self._create_and_prove(
                'stall_recovered', stack,
                ['-t', repo.CHAIN, '-e', PRESET, '-e', SMALL_HOST],
                proof_file)
        finally:
            stall.release()
            deleted = self._delete_stack(stack)
        self.assertIsNotNone(stall.stopped_at, stall.error)
        restart = proof['boot'][vnf1].get('restart')
        self.assertIsNotNone(restart, proof['boot'])
        self.assertRegex(restart['reason'], 'soft lockup|detected stall')
        self.assertNotIn('restart', proof['boot'][stack + '-generator'])
        self.assertEqual(0, deleted.returncode, deleted.stdout[-3000:])
        self._assert_nothing_left()

    @unittest.skipUnless(
        os.environ.get('EPA_CHAIN_CLOUD_TWO_CHAINS') == '1',
        'the TOSCA test and the Tempest density scenario deploy two chains '
        'every run; this HOT two-chain create, prove and audit repeats '
        'them (some 4 minutes). EPA_CHAIN_CLOUD_TWO_CHAINS=1 runs it '
        '(doc/source/single-host-cloud.rst has its last times)')
    def test_1_two_chains_created_and_proven(self):
        # PVP twice in one stack (chain_count 2): four guests, each chain
        # on its own VLANs, each proven hop by hop through its own
        # generator, every server audited.
        stack = STACK + '-two-chains'
        proof_file = os.path.join(os.environ.get('TMPDIR', '/tmp'),
                                  'epa-chain-cloud-two-chains-proof.json')
        try:
            proof = self._create_and_prove(
                'two_chains', stack,
                ['-t', repo.CHAIN, '-e', PRESET, '-e', SMALL_HOST,
                 '--parameter', 'chain_count=%d' % TWO_CHAINS], proof_file)
            self.assertEqual(2 * TWO_CHAINS, len(proof['servers']),
                             proof['servers'])
            self.assertEqual(list(range(TWO_CHAINS)),
                             [chain['index'] for chain in proof['chains']])
            vlans = []
            for chain in proof['chains']:
                for direction in chain['directions']:
                    self.assertEqual(direction['tx_frames'],
                                     direction['rx_frames'], direction)
                    # hops: 'server:role (mac, network/vlan) -> ...'
                    vlans.append(sorted({int(vlan) for vlan in re.findall(
                        r'/(\d+)\)', direction['hops'])}))
            # Chain 1 two VLANs past chain 0 on each physnet, in both
            # directions (pvp-bidir: 1001 and 2001).
            self.assertEqual([[1001, 2001]] * 2 + [[1003, 2003]] * 2, vlans)
            self._audit(stack, 2 * TWO_CHAINS)
        finally:
            deleted = self._delete_stack(stack)
        self.assertEqual(0, deleted.returncode, deleted.stdout[-3000:])
        self._assert_nothing_left()

    def _parked_vnfs_idle(self, stack):
        """READY VNFs whose tasks are parked leave the host's CPUs alone.

        Polling, a VNF's PROX takes a whole host CPU (91-117 % measured
        here); parked, 2 % once booted (doc/source/images.rst). Sampled
        over 10 s after prove parked them again, against issue 30's
        bound: under 10 % of a host CPU.
        """
        pids = host.qemu_pids()
        vnfs = {}
        for server in _openstack_json('server', 'list', '--name',
                                      '^%s-vnf' % stack):
            shown = _openstack_json('server', 'show', server['ID'])
            vnfs[server['Name']] = pids[shown[
                'OS-EXT-SRV-ATTR:instance_name']]
        self.assertEqual(2, len(vnfs), vnfs)
        if self.virt_type == 'qemu':
            # The element's arguments for TCG guests reached the kernels
            # booted (DIB_EPA_GUEST_EMULATED).
            for name, pid in vnfs.items():
                cmdline = host.kernel_cmdline(pid) or ''
                self.assertIn(' pci=nomsi mitigations=off', cmdline, name)
                self.assertNotIn('nohz_full', cmdline, name)
        shares = host.cpu_share(list(vnfs.values()))
        used = {name: shares[pid] for name, pid in vnfs.items()}
        _log('parked VNFs, share of a host CPU each over 10 s: %s'
             % json.dumps(used, sort_keys=True))
        self.timings['parked_vnf_cpu_max'] = max(used.values())
        for name, share in used.items():
            self.assertLess(share, 0.10, name)

    def test_1_tosca_translated_is_created_unedited_and_proven(self):
        # The TOSCA PVP service template with its preset and two chains
        # side by side (chain_count 2, unrolled by the translation), then
        # created as written with small-host.yaml beside it (the TOSCA
        # chains declare no small-host variant: the HOT environment's
        # parameters are the translated template's), each chain proven
        # through its own generator.
        stack = STACK + '-tosca-pvp'
        base = os.environ.get('TMPDIR', '/tmp')
        translated = os.path.join(base, 'epa-chain-cloud-tosca-pvp.yaml')
        inputs = os.path.join(base, 'epa-chain-cloud-tosca-inputs.yaml')
        with open(TOSCA_PVP_PRESET) as preset, open(inputs, 'w') as stream:
            stream.write(preset.read() + '\nchain_count: 2\n')
        started = time.monotonic()
        _run([sys.executable, '-m', 'epa_chain.cli', 'translate',
              TOSCA_PVP, '-i', inputs, '-o', translated], timeout=600)
        self.timings['tosca_translate_s'] = round(time.monotonic() - started)
        proof_file = os.path.join(base, 'epa-chain-cloud-tosca-proof.json')
        try:
            proof = self._create_and_prove(
                'tosca_pvp', stack, ['-t', translated, '-e', SMALL_HOST],
                proof_file)
            self.assertEqual([0, 1], [c['index'] for c in proof['chains']])
            for index, chain in enumerate(proof['chains']):
                self._check_tosca_chain(
                    chain, stack + ('-chain%d' % index if index else ''))
            self.assertEqual(4, len(proof['servers']), proof['servers'])
        finally:
            deleted = self._delete_stack(stack)
        self.assertEqual(0, deleted.returncode, deleted.stdout[-3000:])
        self._assert_nothing_left()

    def _check_tosca_chain(self, chain, prefix):
        """One chain of the TOSCA stack, proven hop by hop both ways."""
        self.assertEqual(['forward', 'reverse'],
                         [d['direction'] for d in chain['directions']])
        for direction in chain['directions']:
            # The chain's own generator's two ends around its one VNF.
            self.assertEqual(2, direction['hops'].count(
                prefix + '-generator:'), direction['hops'])
            self.assertEqual(2, direction['hops'].count(
                prefix + '-vnf1:'), direction['hops'])
            self.assertGreater(direction['rx_frames'], 0)
            for hop in direction['hop_counts']:
                self.assertGreaterEqual(
                    hop['frames'], direction['tx_frames'] * 0.99, hop)

    def _wait_until_gone(self, stack, timeout):
        """`openstack stack show` until the stack is gone (returncode 0)."""
        deadline = time.monotonic() + timeout
        while True:
            shown = subprocess.run(
                ['openstack', '--os-cloud', CLOUD, 'stack', 'show', stack,
                 '-f', 'value', '-c', 'stack_status'],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                timeout=300)
            status = shown.stdout.strip().splitlines()[-1:] or ['']
            if shown.returncode != 0 and 'not found' in shown.stdout.lower():
                return subprocess.CompletedProcess(shown.args, 0, '')
            if status[0] in ('DELETE_FAILED', 'DELETE_COMPLETE'):
                return subprocess.CompletedProcess(
                    shown.args, 0 if status[0] == 'DELETE_COMPLETE' else 1,
                    shown.stdout)
            if time.monotonic() > deadline:
                return subprocess.CompletedProcess(shown.args, 1, shown.stdout)
            time.sleep(5)

    def _tempest_statuses(self, workspace, env):
        """The statuses of the workspace's last Tempest run, and reasons.

        {test id: status}, and {test id: the end of its traceback} of the
        tests that failed: the CI log then says why, not only that.
        """
        import subunit
        import testtools

        stream = subprocess.run(['stestr', 'last', '--subunit'],
                                cwd=workspace, env=env,
                                stdout=subprocess.PIPE, check=True).stdout
        statuses, reasons = {}, {}

        def collect(test):
            statuses[test['id']] = test['status']
            traceback = test['details'].get('traceback')
            if traceback is not None and test['status'] == 'fail':
                reasons[test['id']] = traceback.as_text()[-2000:]

        collector = testtools.StreamToDict(collect)
        collector.startTestRun()
        subunit.ByteStreamToStreamResult(
            io.BytesIO(stream), non_subunit_name='stdout').run(collector)
        collector.stopTestRun()
        return statuses, reasons

    def _check_results(self, workspace, chain_length, direction, chains):
        """The scenario's results: schema-valid, measured, plotted.

        Several chains: the case of all of them together (chains-N/),
        and the density curve over 1..N.
        """
        (run_dir,) = glob.glob(os.path.join(
            workspace, 'results', '*-%dvnf-%s' % (chain_length, direction)))
        case_dir = run_dir
        if chains > 1:
            self._check_density(run_dir, chains)
            case_dir = os.path.join(run_dir, 'chains-%d' % chains)
        path = os.path.join(case_dir, '64B-1flows.json')
        document = measurement_results.load(path)
        (case,) = document['cases']
        self.assertIsNone(case['error'])
        conf = configparser.ConfigParser()
        conf.read(os.path.join(workspace, 'etc', 'tempest.conf'))
        chosen = conf['epa_chain']
        self._check_case(case, document, chosen, chain_length, direction)
        self._check_cloud(document, chosen, (chain_length, chains),
                          direction)
        self._check_loss_split(case, chain_length, direction)
        self._check_audit_and_kpis(document, workspace, case_dir, path,
                                   (chain_length, chains), direction)

    def _check_density(self, run_dir, chains):
        """The density sweep's curve: every count measured, valid."""
        path = os.path.join(run_dir, 'density.json')
        with open(path) as stream:
            table = json.load(stream)
        measurement_results.validate(table, path,
                                     measurement_results.DENSITY_SCHEMA_ID)
        self.assertEqual(list(range(1, chains + 1)),
                         [row['chain_count'] for row in table['rows']])
        for row in table['rows']:
            self.assertGreater(row['aggregate_fps'] or 0, 0, row)
        self.assertTrue(os.path.isfile(os.path.join(run_dir,
                                                    'density.png')))
        with open(os.path.join(run_dir, 'density.txt')) as stream:
            _log(stream.read())

    def _check_case(self, case, document, chosen, chain_length, direction):
        """The case as the workspace's options chose it, and measured."""
        self.assertEqual(chosen.getfloat('max_load_fps',
                                         case['line_rate_fps']),
                         case['max_load_fps'])
        self.assertEqual(chosen.getfloat('generator_rate_tolerance', 0.01),
                         document['generator']['rate_tolerance'])
        # The stack's parameter reached PROX in every chain's guest (its
        # layout, as each generator reports it).
        for generator in (document['generator'].get('chains') or
                          [document['generator']]):
            self.assertEqual(
                chosen.getint('generator_latency_bucket_shift', 12),
                generator['layout']['latency_bucket_shift'])
        goals = {goal['name']: goal for goal in case['search']['goals']}
        for name in ('NDR', 'PDR'):
            self.assertGreater(goals[name]['throughput_fps'], 0, goals)
        # The latency test ran at its fraction of the NDR and timed frames
        # in every direction (sending PROX's accuracy window longer).
        latency = case['latency']
        self.assertAlmostEqual(0.9 * goals['NDR']['throughput_fps'],
                               latency['load_fps'])
        trial = case['trials'][latency['trial']]
        self.assertEqual('latency', trial['phase'])
        self.assertGreater(trial['tx_frames'], 0)
        self.assertEqual(['forward', 'reverse'] if direction ==
                         'bidirectional' else ['forward'],
                         sorted(latency['directions']))
        for name, record in latency['directions'].items():
            self.assertIsNotNone(record, '%s: %s' % (name, trial['notes']))
            self.assertGreater(record['count'], 0, name)
            self.assertGreater(record['max_ns'], 0, name)
        self.assertGreater(case['totals']['trials'], 0)
        self.assertLessEqual(len(case['totals']['invalid_trials']),
                             chosen.getint('invalid_trial_retries', 0) *
                             case['totals']['trials'])
        _log('%dvnf %s: %d trials, %d invalid (run again): %s' % (
            chain_length, direction, case['totals']['trials'],
            len(case['totals']['invalid_trials']),
            case['totals']['invalid_trials']))

    def _check_cloud(self, document, chosen, shape, direction):
        """Placement, hop check, boot and VNF tasks of the results.

        shape: (chain length, chains side by side).
        """
        chain_length, chains = shape
        servers = (chain_length + 1) * chains
        # The workspace's server-group policy, applied on one host.
        placed = document['cloud']['placement']
        self.assertEqual(chosen.get('server_group_policy') or None,
                         placed['server_group_policy'])
        self.assertEqual(1, placed['hosts'], placed)
        self.assertEqual(servers, len(placed['servers']), placed)
        checked = document['cloud']['hop_check']
        if chains > 1:
            # Each chain hop-checked through its own generator.
            self.assertEqual(list(range(chains)), [
                c['chain'] for c in checked['chains']])
        self.assertEqual(chosen.getfloat('hop_check_load_fraction', 0.01),
                         checked['load_fraction'])
        self.assertEqual(chosen.getint('hop_check_attempts', 3),
                         checked['attempts'])
        _log('%dvnf %s hop check: %s' % (chain_length, direction, json.dumps(
            checked['directions'], sort_keys=True)))
        # Where each guest's boot went, and the parked VNFs started for
        # the traffic (cloud.boot, cloud.vnf_tasks).
        boot = document['cloud']['boot']
        self.assertEqual(servers, len(boot), boot)
        for line in readiness.describe_boot(boot):
            _log('%dvnf %s boot: %s' % (chain_length, direction, line))
        started = [event['node'] for event in document['cloud'][
            'vnf_tasks']['events'] if event['action'] == 'started']
        self.assertEqual(['%svnf%d' % ('chain%d-' % k if k else '', n)
                          for k in range(chains)
                          for n in range(1, chain_length + 1)], started)

    def _check_loss_split(self, case, chain_length, direction):
        """Every lossy trial split by hop from this host's Open vSwitch."""
        # Tempest runs on the chain's host: every lossy trial is split
        # hop by hop from its Open vSwitch; chains measured together,
        # each chain's part along its own path.
        split = 0
        for record in case['trials']:
            for found in record['directions']:
                for part in found.get('chains') or [found]:
                    lost = part['tx_frames'] - part['rx_frames']
                    if lost <= 0:
                        continue
                    self.assertIn('loss_by_hop', part, record['notes'])
                    self.assertEqual(lost, sum(
                        s['lost'] for s in part['loss_by_hop']['segments']))
                    split += 1
        _log('%dvnf %s: %d lossy trial direction(s) split by hop' % (
            chain_length, direction, split))

    def _check_audit_and_kpis(self, document, workspace, run_dir, path,
                              shape, direction):
        """The EPA audit, the plots, the KPIs and the report's verdict."""
        chain_length, chains = shape
        # The EPA audit of every server, Nova's view and this host's
        # libvirt and OVS: what the workspace's flavors asked, given.
        audit = document['cloud']['epa_audit']
        self.assertTrue(audit['valid'], audit['findings'])
        self.assertEqual((chain_length + 1) * chains,
                         len(audit['host_checked']), audit)
        self.assertLessEqual({'cpu', 'pages', 'numa', 'pmd'}, {
            f['aspect'] for f in audit['findings']})
        if chains > 1:
            # What the chains share on this one host, said once a pair.
            self.assertIn('chains 0,1', [f['server'] for f in
                                         audit['findings']
                                         if f['aspect'] == 'shared'])
        self.assertTrue(os.path.isfile(os.path.join(
            run_dir, '64B-1flows-plots', 'throughput.png')))
        # The workspace's KPIs, met and recorded; a ceiling no emulated
        # chain meets fails the report of the same results.
        self.assertTrue(document['kpi']['passed'], document['kpi'])
        self.assertEqual({'met'}, {v['verdict'] for v in
                                   document['kpi']['findings']})
        strict = os.path.join(os.path.dirname(workspace),
                              'epa-chain-kpi-missed.yaml')
        with open(strict, 'w') as stream:
            stream.write(KPIS_MISSED)
        judged = _run([sys.executable, '-m', 'epa_chain.cli', 'report',
                       path, '--kpi', strict], check=False, timeout=300)
        self.assertEqual(1, judged.returncode, judged.stdout[-3000:])
        self.assertIn('MISSED', judged.stdout)
        with open(os.path.join(run_dir, 'tables.txt')) as stream:
            _log('%dvnf %s tables:\n%s' % (chain_length, direction,
                                           stream.read()))

    def test_2_tempest_scenarios(self):
        """tempest run of the chosen scenarios in the tool's workspace."""
        base = os.environ.get('TMPDIR', '/tmp')
        workspace = os.path.join(base, 'epa-chain-tempest')
        # Tempest registers workspaces in ~/.tempest: a HOME of the test's,
        # fresh like the workspace (an earlier run may have left both).
        home = os.path.join(base, 'epa-chain-tempest-home')
        for path in (workspace, home):
            shutil.rmtree(path, ignore_errors=True)
        os.makedirs(home)
        # The scenarios' chain lengths, asked for as a user would
        # (devstack/settings' EPA_CHAIN_TEMPEST_*).
        lengths = sorted({length for length, _ in TEMPEST_SCENARIOS.values()})
        kpi_file = os.path.join(base, 'epa-chain-kpi.yaml')
        with open(kpi_file, 'w') as stream:
            stream.write(KPIS_MET)
        env = dict(os.environ, HOME=home,
                   OS_TEST_TIMEOUT=str(TEMPEST_TEST_TIMEOUT),
                   EPA_CHAIN_TEMPEST_CHAIN_LENGTHS=','.join(
                       str(length) for length in lengths),
                   EPA_CHAIN_TEMPEST_KPI_FILE=kpi_file)
        done = subprocess.run([TOOL, 'tempest', workspace], env=env,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        self.assertEqual(0, done.returncode, done.stdout[-4000:])
        self._tempest_run(workspace, env, sorted(
            set(TEMPEST_SCENARIOS) - {DENSITY_SCENARIO}), 'tempest_s')
        self._set_options(workspace, chain_count=DENSITY_CHAINS,
                          density_sweep=True)
        self._tempest_run(workspace, env, [DENSITY_SCENARIO],
                          'tempest_density_s')
        for name, (chain_length, direction) in TEMPEST_SCENARIOS.items():
            self._check_results(workspace, chain_length, direction,
                                DENSITY_CHAINS if name == DENSITY_SCENARIO
                                else 1)
        # Every stack deleted by the scenarios' cleanups.
        self.assertEqual([], _openstack_json('stack', 'list'))

    def _tempest_run(self, workspace, env, names, timing):
        """`tempest run` of the scenarios `names`; each must succeed."""
        regex = r'epa_chain_tempest_plugin\.tests\.scenario\..*(%s)' % (
            '|'.join(names))
        started = time.monotonic()
        _log('$ tempest run --serial --regex %s' % regex)
        # Tempest's progress goes to this test's stderr as it runs.
        subprocess.run(['tempest', 'run', '--serial', '--regex', regex],
                       cwd=workspace, env=env, stdout=sys.stderr,
                       stderr=subprocess.STDOUT,
                       timeout=len(names) * TEMPEST_TEST_TIMEOUT + 600)
        self.timings[timing] = round(time.monotonic() - started)
        statuses, reasons = self._tempest_statuses(workspace, env)
        scenarios = {test_id.split('[')[0].rsplit('.', 1)[1]: status
                     for test_id, status in statuses.items()
                     if '.test_chain_' in test_id}
        self.assertEqual(dict.fromkeys(names, 'success'),
                         scenarios, '\n\n'.join(
                             ['%s' % statuses] + ['%s:\n%s' % item
                                                  for item in
                                                  reasons.items()]))

    @staticmethod
    def _set_options(workspace, **options):
        """[epa_chain] options of the workspace's tempest.conf (0600)."""
        path = os.path.join(workspace, 'etc', 'tempest.conf')
        conf = configparser.RawConfigParser()
        conf.read(path)
        for name, value in options.items():
            conf.set('epa_chain', name, str(value))
        # Rewritten in place: the file keeps its owner and mode.
        with open(path, 'r+') as stream:
            conf.write(stream)
            stream.truncate()

    def _hold_a_transaction(self):
        # A neutron session idle inside a transaction, as CI once saw:
        # its metadata lock made `DROP DATABASE neutron` wait for a day.
        options = os.path.join(CLOUD_STATE, 'run', 'holder.cnf')
        with open(os.path.join(CLOUD_STATE, 'secrets', 'db-neutron')) as s:
            password = s.read().strip()
        with open(os.open(options, os.O_WRONLY | os.O_CREAT, 0o600),
                  'w') as stream:
            stream.write('[client]\nuser=neutron\npassword=%s\n' % password)
        holder = subprocess.Popen(
            ['mysql', '--defaults-extra-file=' + options, '--unbuffered',
             '-N', 'neutron'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        holder.stdin.write('BEGIN; SELECT COUNT(*) FROM networks;\n')
        holder.stdin.flush()
        # The count comes back once the transaction holds its lock.
        ready, _, _ = select.select([holder.stdout], [], [], 60)
        self.assertTrue(ready, 'the holding session did not answer')
        self.assertTrue(holder.stdout.readline().strip().isdigit())
        return holder

    def test_9_down_leaves_nothing(self):
        holder = self._hold_a_transaction()
        self.addCleanup(holder.kill)
        started = time.monotonic()
        self.assertEqual(0, self._down())
        self.timings['down_s'] = round(time.monotonic() - started)
        self.assertLess(self.timings['down_s'], DOWN_BUDGET_S)
        alive = [pid for pid in self.pids if os.path.exists('/proc/%d' % pid)]
        self.assertEqual([], alive, 'processes up started are still alive')
        self.assertEqual(self.before, _host_state())
        bridges = subprocess.run(['ovs-vsctl', '--timeout=5', 'list-br'],
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        # Open vSwitch is stopped (the command fails) or has no bridge.
        self.assertEqual('', bridges.stdout.strip())
        self.assertFalse(os.path.exists(CLOUD_STATE))
