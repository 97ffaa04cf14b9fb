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

"""The devstack plugin against a real Open vSwitch with DPDK.

Each test starts a private ovsdb-server and the DPDK build of ovs-vswitchd
(userspace datapath; database, sockets and logs in a temporary directory,
vswitchd in a network namespace of its own), then runs the plugin's phases
for devstack/local.conf.sample the way stack.sh does, with stand-ins only
for devstack's own helpers (fixtures/devstack/devstack_standins.sh).

The host has no spare NIC, so the sample runs with the documented no-NIC
fallback (provider bridges without a physical port); a DPDK port by PCI
address is exercised separately and must fail with the plugin's error.
A few knobs are set for this host (2 CPUs, no PCI probing, huge pages next
to whatever other users hold): see _HOST_OVERRIDES.

Needs root, Open vSwitch (openvswitch-switch, openvswitch-switch-dpdk) and
EPA_CHAIN_FUNCTIONAL=1 (set by ``tox -e functional``). Set
EPA_CHAIN_FUNCTIONAL_OUTPUT=DIR to keep `ovs-vsctl show` and the written
configuration files there.
"""

import glob
import json
import os
import shutil
import subprocess
import tempfile
import uuid

import testtools

from epa_chain.tests import repo

_REPO = repo.ROOT
_FIXTURES = os.path.join(_REPO, 'epa_chain', 'tests', 'fixtures', 'devstack')
_RUN_PLUGIN = os.path.join(_FIXTURES, 'run_plugin.sh')
_SANDBOX = os.path.join(_FIXTURES, 'ovs_sandbox.sh')
_SAMPLE = os.path.join(_REPO, 'devstack', 'local.conf.sample')
_DPDK_VSWITCHD = '/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk'
_PAGE_KB = 2048
# Memory OVS takes from huge pages (MB); 512 was too little for vhost-user
# devices on these machines.
_SOCKET_MEM_MB = 1024
_SOCKET_PAGES = _SOCKET_MEM_MB * 1024 // _PAGE_KB

# Knobs set for this host on top of the sample: 2 CPUs (lcores on CPU 0,
# the PMD on CPU 1 and sleeping when idle), no spare NIC (no PCI probing),
# no systemd (OVS is already installed and is restarted by the test),
# private directories, no image build (no cloud), two Tempest options
# passed through.
_HOST_OVERRIDES = """
# ---- functional test host overrides ----
OVS_DPDK_INSTALL=False
OVS_CORE_MASK=0x1
OVS_PMD_CORE_MASK=0x2
OVS_PMD_MAXSLEEP=500
OVS_SOCKET_MEM={socket_mem}
OVS_NUM_HUGEPAGES={pages}
OVS_HUGEPAGE_MOUNT={tmp}/hugepages
OVS_HUGEPAGE_MOUNT_PAGESIZE=2M
OVS_DPDK_EXTRA="--no-pci --in-memory --file-prefix={prefix}"
OVS_VHOST_USER_SOCKET_DIR={tmp}/vhost_sockets
NOVA_CPU_SHARED_SET=0
NOVA_CPU_DEDICATED_SET=1
EPA_CHAIN_BUILD_IMAGES=False
EPA_CHAIN_TEMPEST_TRIAL_DURATION=10
EPA_CHAIN_TEMPEST_CHAIN_LENGTHS=1,2
"""

# The ML2 drivers and scheduler filters devstack writes before the plugin's
# post-config phase (stand-in in run_plugin.sh).
_DEVSTACK_NOVA_FILTERS = (
    'ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,'
    'ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,'
    'SameHostFilter,DifferentHostFilter')


def localrc_section(path):
    """The [[local|localrc]] lines of a local.conf."""
    lines, inside = [], False
    with open(path) as conf:
        for line in conf:
            if line.startswith('[['):
                inside = line.strip() == '[[local|localrc]]'
                continue
            if inside:
                lines.append(line)
    return ''.join(lines)


def read_ini(path):
    """{section: {option: [values]}}, keeping repeated options."""
    sections, current = {}, None
    with open(path) as conf:
        for line in conf:
            line = line.strip()
            if not line or line.startswith(('#', ';')):
                continue
            if line.startswith('[') and line.endswith(']'):
                current = sections.setdefault(line[1:-1], {})
            elif '=' in line and current is not None:
                option, value = line.split('=', 1)
                current.setdefault(option.strip(), []).append(value.strip())
    return sections


def ovsdb_value(value):
    """An OVSDB JSON datum as Python (map -> dict, set -> list)."""
    if isinstance(value, list) and len(value) == 2:
        kind, data = value
        if kind == 'map':
            return {k: ovsdb_value(v) for k, v in data}
        if kind == 'set':
            return [ovsdb_value(v) for v in data]
        if kind == 'uuid':
            return data
    return value


def _hugepage_counters():
    """nr_hugepages files of 2 MB pages: per NUMA node, else global."""
    files = sorted(glob.glob(
        '/sys/devices/system/node/node[0-9]*/hugepages/'
        'hugepages-%dkB/nr_hugepages' % _PAGE_KB))
    return files or ['/sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages'
                     % _PAGE_KB]


def _read_int(path):
    with open(path) as f:
        return int(f.read())


class DevstackPluginTest(testtools.TestCase):
    """Plugin phases for the sample local.conf, on a private OVS-DPDK."""

    def setUp(self):
        super().setUp()
        if os.environ.get('EPA_CHAIN_FUNCTIONAL') != '1':
            self.skipTest('functional test: run it with tox -e functional '
                          '(EPA_CHAIN_FUNCTIONAL=1); it starts Open vSwitch')
        if os.geteuid() != 0:
            self.skipTest('needs root: starts ovs-vswitchd, reserves huge '
                          'pages, creates a network namespace')
        missing = [tool for tool in ('ovsdb-tool', 'ovsdb-server',
                                     'ovs-vsctl', 'ip', 'mountpoint')
                   if not shutil.which(tool)]
        if missing:
            self.skipTest('Open vSwitch is not installed (missing %s): '
                          'apt-get install openvswitch-switch '
                          'openvswitch-switch-dpdk' % ', '.join(missing))
        if not os.access(_DPDK_VSWITCHD, os.X_OK):
            self.skipTest('no DPDK build of ovs-vswitchd (%s): apt-get '
                          'install openvswitch-switch-dpdk' % _DPDK_VSWITCHD)
        counters = _hugepage_counters()
        if not all(os.access(c, os.W_OK) for c in counters):
            self.skipTest('cannot reserve huge pages here (%s is read-only)'
                          % counters[0])

        # Short path: unix socket names are limited to 108 bytes.
        self.tmp = tempfile.mkdtemp(prefix='epa-ds-', dir='/tmp')
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.ovs_dir = os.path.join(self.tmp, 'ovs')
        self.root = os.path.join(self.tmp, 'root')
        self.env = dict(os.environ,
                        OVS_RUNDIR=os.path.join(self.ovs_dir, 'run'),
                        EPA_TEST_ROOT=self.root,
                        EPA_TEST_LOCALRC=os.path.join(self.tmp, 'localrc'),
                        EPA_TEST_OVS_SANDBOX=_SANDBOX,
                        EPA_TEST_OVS_DIR=self.ovs_dir)

        # Cleanups run last-registered first: OVS stops, then the
        # namespace (and its taps) goes, then the huge pages come back.
        self._reserve_hugepage_budget(counters)
        self.addCleanup(self._unmount, os.path.join(self.tmp, 'hugepages'))
        self.netns = 'epa-ds-%s' % uuid.uuid4().hex[:8]
        netns = subprocess.run(['ip', 'netns', 'add', self.netns],
                               capture_output=True, text=True)
        if netns.returncode:
            self.skipTest('cannot create a network namespace here (%s)'
                          % netns.stderr.strip())
        self.addCleanup(subprocess.run, ['ip', 'netns', 'del', self.netns],
                        check=False)
        self.addCleanup(subprocess.run, [_SANDBOX, 'stop', self.ovs_dir],
                        check=False, capture_output=True)
        subprocess.run([_SANDBOX, 'start', self.ovs_dir, self.netns,
                        _DPDK_VSWITCHD], check=True, capture_output=True)

        with open(self.env['EPA_TEST_LOCALRC'], 'w') as localrc:
            localrc.write(localrc_section(_SAMPLE))
            localrc.write(_HOST_OVERRIDES.format(
                tmp=self.tmp, pages=self.pages, socket_mem=_SOCKET_MEM_MB,
                prefix=self.netns))

    def _reserve_hugepage_budget(self, counters):
        """Ask for what others hold plus OVS's share; restore afterwards."""
        before = {c: _read_int(c) for c in counters}
        free_file = counters[0].replace('nr_hugepages', 'free_hugepages')
        held = before[counters[0]] - _read_int(free_file)
        self.pages = held + _SOCKET_PAGES + 64

        def restore():
            for counter, count in before.items():
                # Leave the count alone if someone else changed it since.
                if _read_int(counter) == max(count, self.pages):
                    with open(counter, 'w') as f:
                        f.write(str(count))
        self.addCleanup(restore)

    @staticmethod
    def _unmount(path):
        if subprocess.run(['mountpoint', '-q', path]).returncode == 0:
            subprocess.run(['umount', path], check=False)

    def run_plugin(self, *steps, expect_failure=False):
        result = subprocess.run([_RUN_PLUGIN] + list(steps), env=self.env,
                                capture_output=True, text=True, timeout=300)
        output = 'stdout:\n%s\nstderr:\n%s' % (result.stdout, result.stderr)
        if expect_failure:
            self.assertNotEqual(0, result.returncode, output)
        else:
            self.assertEqual(0, result.returncode, output)
        return result

    def vsctl(self, *args):
        result = subprocess.run(['ovs-vsctl', '--timeout=10'] + list(args),
                                env=self.env, capture_output=True, text=True)
        self.assertEqual(0, result.returncode, 'ovs-vsctl %s: %s'
                         % (' '.join(args), result.stderr))
        return result.stdout.strip()

    def rows(self, table, *columns, key='name'):
        """{key: {column: value}} of an OVSDB table."""
        listing = json.loads(self.vsctl(
            '--format=json', '--columns=' + ','.join((key,) + columns),
            'list', table))
        rows = {}
        for row in listing['data']:
            values = [ovsdb_value(v) for v in row]
            rows[values[0]] = dict(zip(columns, values[1:]))
        return rows

    def sample_knobs(self, *names):
        """Knob values as bash sees the localrc (the sample's values)."""
        script = 'source "$EPA_TEST_LOCALRC" >/dev/null 2>&1; ' + '; '.join(
            'printf "%%s\\n" "$%s"' % name for name in names)
        stub = ('enable_plugin() { :; }; enable_service() { :; }; '
                'disable_service() { :; }; ')
        out = subprocess.run(['bash', '-c', stub + script], env=self.env,
                             check=True, capture_output=True, text=True)
        return out.stdout.splitlines()

    def keep_output(self, show, other_config):
        keep = os.environ.get('EPA_CHAIN_FUNCTIONAL_OUTPUT')
        if not keep:
            return
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, 'ovs-vsctl-show.txt'), 'w') as f:
            f.write(show + '\n')
        with open(os.path.join(keep, 'other_config.json'), 'w') as f:
            json.dump(other_config, f, indent=2, sort_keys=True)
        for path in glob.glob(os.path.join(self.root, '**', '*.conf'),
                              recursive=True) + glob.glob(
                os.path.join(self.root, '**', '*.ini'), recursive=True):
            shutil.copy(path, keep)

    def test_sample_local_conf(self):
        self.run_plugin('stack:pre-install', 'stack:install',
                        'devstack-configure', 'stack:post-config',
                        'stack:test-config')
        bridge_mappings, vlan_ranges = self.sample_knobs(
            'OVS_BRIDGE_MAPPINGS', 'ML2_VLAN_RANGES')
        physnet_bridges = dict(m.split(':') for m in
                               bridge_mappings.split(','))
        other_config = self._check_ovs_dpdk()
        self._check_bridges(physnet_bridges)
        self.keep_output(self.vsctl('show'), other_config)
        self._check_neutron(bridge_mappings, vlan_ranges)
        self._check_nova()
        self._check_tempest(vlan_ranges)
        # unstack removes the provider bridges, not devstack's br-int.
        self.run_plugin('unstack')
        self.assertEqual({'br-int'}, set(self.rows('Bridge')))

    def _check_ovs_dpdk(self):
        """Open vSwitch: DPDK initialised with the knobs' values."""
        system = self.rows('Open_vSwitch', 'other_config',
                           'dpdk_initialized', key='_uuid')
        self.assertEqual(1, len(system))
        system = next(iter(system.values()))
        other_config = system['other_config']
        self.assertTrue(system['dpdk_initialized'])
        self.assertEqual({
            'dpdk-init': 'true',
            'dpdk-socket-mem': str(_SOCKET_MEM_MB),
            'dpdk-lcore-mask': '0x1',
            'pmd-cpu-mask': '0x2',
            'pmd-maxsleep': '500',
            'dpdk-hugepage-dir': os.path.join(self.tmp, 'hugepages'),
            'dpdk-extra': '--no-pci --in-memory --file-prefix=%s'
                          % self.netns,
        }, other_config)
        self.assertEqual(
            0, subprocess.run(['mountpoint', '-q', os.path.join(
                self.tmp, 'hugepages')]).returncode)
        return other_config

    def _check_bridges(self, physnet_bridges):
        """br-int and one bridge per physnet, all userspace.

        The no-NIC fallback leaves the provider bridges with their own
        port only.
        """
        bridges = self.rows('Bridge', 'datapath_type', 'external_ids')
        self.assertEqual({'br-int'} | set(physnet_bridges.values()),
                         set(bridges))
        for name, bridge in bridges.items():
            self.assertEqual('netdev', bridge['datapath_type'], name)
        ports = self.rows('Port', 'interfaces')
        interfaces = self.rows('Interface', 'type', 'ofport', 'error')
        self.assertEqual(set(bridges), set(ports))
        for bridge in physnet_bridges.values():
            self.assertEqual({'bridge-id': bridge},
                             bridges[bridge]['external_ids'])
            # No port but the bridge's own internal one, opened by vswitchd.
            self.assertEqual('', self.vsctl('list-ports', bridge))
            self.assertEqual('internal', interfaces[bridge]['type'])
            self.assertGreater(interfaces[bridge]['ofport'], 0)
            self.assertEqual([], interfaces[bridge]['error'])

    def _check_neutron(self, bridge_mappings, vlan_ranges):
        """ML2 VLAN ranges per physnet; the agent's bridges and datapath.

        And the vhost-user socket directory (q-agt reads ml2_conf.ini in
        devstack).
        """
        ml2 = read_ini(os.path.join(self.root, 'etc', 'neutron', 'plugins',
                                    'ml2', 'ml2_conf.ini'))
        self.assertEqual([vlan_ranges],
                         ml2['ml2_type_vlan']['network_vlan_ranges'])
        self.assertIn('vlan', ml2['ml2']['type_drivers'][0].split(','))
        self.assertEqual(['openvswitch'], ml2['ml2']['mechanism_drivers'])
        self.assertEqual([bridge_mappings], ml2['ovs']['bridge_mappings'])
        self.assertEqual(['netdev'], ml2['ovs']['datapath_type'])
        socket_dir = os.path.join(self.tmp, 'vhost_sockets')
        self.assertEqual([socket_dir], ml2['ovs']['vhostuser_socket_dir'])
        self.assertTrue(os.path.isdir(socket_dir))

    def _check_nova(self):
        """NUMATopologyFilter added, pinning, OVS's huge pages reserved."""
        nova = read_ini(os.path.join(self.root, 'etc', 'nova', 'nova.conf'))
        self.assertEqual([_DEVSTACK_NOVA_FILTERS + ',NUMATopologyFilter'],
                         nova['filter_scheduler']['enabled_filters'])
        self.assertEqual(['1'], nova['compute']['cpu_dedicated_set'])
        self.assertEqual(['0'], nova['compute']['cpu_shared_set'])
        self.assertEqual(['node:0,size:%d,count:%d' % (_PAGE_KB,
                                                       _SOCKET_PAGES)],
                         nova['DEFAULT']['reserved_huge_pages'])

    def _check_tempest(self, vlan_ranges):
        """The plugin's options; segments from the VLAN ranges."""
        tempest = read_ini(os.path.join(self.root, 'opt', 'stack', 'tempest',
                                        'etc', 'tempest.conf'))
        self.assertEqual(['False'],
                         tempest['service_available']['epa_chain'])
        options = tempest['epa_chain']
        lows = [(r.split(':')[0], int(r.split(':')[1]))
                for r in vlan_ranges.split(',')]
        segments = ','.join('%s:%d' % (physnet, low + n)
                            for physnet, low in lows for n in (1, 2))
        self.assertEqual({
            'template_dir': [os.path.join(_REPO, 'templates')],
            'vnf_image': ['epa-chain-vnf'],
            'generator_image': ['epa-chain-generator'],
            'management_network': ['private'],
            # No FLOATING_RANGE outside a devstack: the template's range.
            'management_allowed_cidr': ['10.0.0.0/8'],
            'segments': [segments],
            'trial_duration': ['10'],
            'chain_lengths': ['1,2'],
        }, options)

    def test_dpdk_port_by_pci_address(self):
        # No NIC to give: OVS must record the port as the plugin asked
        # (type dpdk, devargs = PCI address) and the plugin must stop with
        # its own error when vswitchd cannot attach the device.
        self.run_plugin('stack:pre-install', 'stack:install',
                        'devstack-configure', 'stack:post-config')
        pci = '0000:05:00.0'
        result = self.run_plugin('call', 'epa_chain_add_dpdk_port',
                                 'br-eth0', 'dpdk0', pci,
                                 expect_failure=True)
        self.assertIn('could not open DPDK port dpdk0 (%s) on br-eth0' % pci,
                      result.stderr)
        port = self.rows('Interface', 'type', 'options', 'error')['dpdk0']
        self.assertEqual('dpdk', port['type'])
        self.assertEqual({'dpdk-devargs': pci}, port['options'])
        self.assertIn(pci, port['error'])
        self.assertIn('dpdk0', self.vsctl('list-ports', 'br-eth0').split())
