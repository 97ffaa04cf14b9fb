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

"""The devstack plugin's shell library without a host: parsing, CPU sets,
checks and their error messages, NIC resolution on a fake sysfs, the ini
files written for Tempest, and shellcheck over every shell file.

The functional test (epa_chain/tests/functional) runs the same functions
against a real Open vSwitch.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import testtools
import yaml

from epa_chain.cloud import options as cloud_options
from epa_chain.tests import repo

_REPO = repo.ROOT
_STANDINS = os.path.join(_REPO, 'epa_chain', 'tests', 'fixtures', 'devstack',
                         'devstack_standins.sh')
_SAMPLE = os.path.join(_REPO, 'devstack', 'local.conf.sample')

# Seed 000 section 8.2.1.
_PLUGIN_CONFIG = os.path.join(_REPO, 'tempest_plugin',
                              'epa_chain_tempest_plugin', 'config.py')


def _plugin_option_names():
    """Every [epa_chain] option, from where each is declared.

    epa-chain's (epa_chain.cloud.options) and the few the Tempest plugin
    declares for itself, read from its config.py without Tempest.
    """
    with open(_PLUGIN_CONFIG) as stream:
        text = stream.read()
    own = text[text.index('PLUGIN_OPTS = ['):]
    return ([opt.dest for opt in cloud_options.list_opts()] +
            re.findall(r"cfg\.\w+Opt\('(\w+)'", own))


_SEED_BRIDGE_MAPPINGS = 'physnet1:br-eth0,physnet2:br-eth1'
_SEED_VLAN_RANGES = 'physnet1:1000:1010,physnet2:2000:2010'


class ShellLibraryTest(testtools.TestCase):
    """lib/epa_chain functions, sourced with devstack's stand-ins."""

    def setUp(self):
        super().setUp()
        if not shutil.which('bash'):
            self.skipTest('bash is not installed')
        self.tmp = tempfile.mkdtemp(prefix='epa-ds-unit-')
        self.addCleanup(shutil.rmtree, self.tmp)
        self.sysfs = os.path.join(self.tmp, 'sys')
        self.fake_host(cpus='0-7', nodes=1)

    def fake_host(self, cpus, nodes):
        """A sysfs with CPUS online and NODES NUMA nodes."""
        shutil.rmtree(self.sysfs, ignore_errors=True)
        cpu_dir = os.path.join(self.sysfs, 'devices', 'system', 'cpu')
        os.makedirs(cpu_dir)
        with open(os.path.join(cpu_dir, 'online'), 'w') as f:
            f.write(cpus + '\n')
        for node in range(nodes):
            os.makedirs(os.path.join(self.sysfs, 'devices', 'system',
                                     'node', 'node%d' % node))

    def fake_nic(self, name, pci):
        """NIC NAME on PCI function PCI (pci None: a virtual NIC)."""
        net = os.path.join(self.sysfs, 'class', 'net', name)
        os.makedirs(net)
        if pci:
            device = os.path.join(self.sysfs, 'devices', 'pci0000:00', pci)
            os.makedirs(device)
            os.symlink(os.path.relpath(device, net),
                       os.path.join(net, 'device'))

    def bash(self, script, **knobs):
        """Run SCRIPT after devstack/settings and lib/epa_chain."""
        env = {
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
            'EPA_CHAIN_SYSFS': self.sysfs,
            'ENABLED_SERVICES': 'n-api,n-cpu,n-sch,g-api,q-svc,q-agt,tempest',
            'Q_AGENT': 'openvswitch',
            'OVS_DATAPATH_TYPE': 'netdev',
            'OVS_BRIDGE_MAPPINGS': _SEED_BRIDGE_MAPPINGS,
            'ML2_VLAN_RANGES': _SEED_VLAN_RANGES,
            'OVS_HUGEPAGE_MOUNT_PAGESIZE': '2M',
        }
        env.update(knobs)
        prelude = ('set -e; source %s; source %s/devstack/settings; '
                   'source %s/devstack/lib/epa_chain; '
                   % (_STANDINS, _REPO, _REPO))
        return subprocess.run(['bash', '-c', prelude + script], env=env,
                              capture_output=True, text=True, timeout=30)

    def output(self, script, **knobs):
        result = self.bash(script, **knobs)
        self.assertEqual(0, result.returncode, result.stderr)
        return result.stdout.strip()

    def error(self, script, **knobs):
        result = self.bash(script, **knobs)
        self.assertEqual(1, result.returncode, result.stdout)
        return result.stderr

    # ---- CPU arithmetic -----------------------------------------------------

    def test_masks(self):
        self.assertEqual('1 2 4', self.output('epa_chain_mask_to_cpus 0x16'))
        self.assertEqual('0 64', self.output(
            'epa_chain_mask_to_cpus 0x10000000000000001'))
        self.assertEqual('bad', self.output(
            'epa_chain_mask_to_cpus 0xg || echo bad'))

    def test_cpu_lists(self):
        self.assertEqual('0 1 2 3 6', self.output(
            'epa_chain_expand_cpu_list 3,0-3,6'))
        self.assertEqual('bad', self.output(
            'epa_chain_expand_cpu_list 4-2 || echo bad'))
        self.assertEqual('0-3,6,8-9', self.output(
            'epa_chain_compress_cpu_list "9 8 6 3 2 1 0"'))

    def test_nova_sets_follow_seed_masks(self):
        # Seed 000: lcores on CPU 1 (0x2), PMD on CPU 2 (0x4).
        self.assertEqual('0,3-7;1', self.output(
            'epa_chain_nova_cpu_sets "$(epa_chain_online_cpus)"',
            OVS_CORE_MASK='0x2', OVS_PMD_CORE_MASK='0x4'))
        self.assertEqual('4-7;', self.output(
            'epa_chain_nova_cpu_sets "$(epa_chain_online_cpus)"',
            NOVA_CPU_DEDICATED_SET='4-7', NOVA_CPU_SHARED_SET='none'))

    def test_no_cpu_left_for_pinned_guests(self):
        self.fake_host(cpus='0-1', nodes=1)
        stderr = self.error('epa_chain_check_config', OVS_CORE_MASK='0x1',
                            OVS_PMD_CORE_MASK='0x2')
        self.assertIn('No CPU is left for pinned guests', stderr)
        self.assertIn('NOVA_CPU_DEDICATED_SET', stderr)

    def test_scheduler_filters_start_from_novas_own_default(self):
        # A distribution's nova.conf leaves enabled_filters unset: the
        # plugin adds to what Nova runs then, keeping the server-group
        # filters; a list already written is kept as it is.
        # Nova's default, asked of Nova in a process of its own (its
        # options would clash with Heat's in this one).
        default = subprocess.run(
            [sys.executable, '-c',
             'from nova.conf import scheduler\n'
             'print(",".join(next(o.default for o in '
             'scheduler.filter_scheduler_opts\n'
             '    if o.name == "enabled_filters")))'],
            capture_output=True, text=True, check=True,
            timeout=60).stdout.strip().split(',')
        conf = os.path.join(self.tmp, 'nova.conf')
        script = ('epa_chain_configure_nova; '
                  'iniget "$NOVA_CONF" filter_scheduler enabled_filters')
        self.assertEqual(','.join(default + ['NUMATopologyFilter']),
                         self.output(script, NOVA_CONF=conf,
                                     ENABLED_SERVICES='n-sch'))
        with open(conf, 'w') as stream:
            stream.write('[filter_scheduler]\n'
                         'enabled_filters = ComputeFilter\n')
        self.assertEqual('ComputeFilter,NUMATopologyFilter', self.output(
            script, NOVA_CONF=conf, ENABLED_SERVICES='n-sch'))

    def test_small_host_shares_every_cpu(self):
        # tools/single-host-cloud on 2 CPUs: no pinned guests, by choice.
        self.fake_host(cpus='0-1', nodes=1)
        knobs = dict(OVS_CORE_MASK='0x1', OVS_PMD_CORE_MASK='0x2',
                     NOVA_CPU_DEDICATED_SET='none', NOVA_CPU_SHARED_SET='0-1')
        self.assertEqual(';0-1', self.output(
            'epa_chain_nova_cpu_sets "$(epa_chain_online_cpus)"', **knobs))
        checked = self.bash('epa_chain_check_config', **knobs)
        self.assertEqual(0, checked.returncode, checked.stderr)
        self.assertIn('hw:cpu_policy=shared', checked.stdout + checked.stderr)

    def test_overlapping_nova_sets(self):
        stderr = self.error('epa_chain_check_config',
                            NOVA_CPU_DEDICATED_SET='2-5',
                            NOVA_CPU_SHARED_SET='5-6')
        self.assertIn('overlap', stderr)

    # ---- huge pages and socket memory ---------------------------------------

    def test_socket_mem_auto_covers_every_node(self):
        self.fake_host(cpus='0-7', nodes=2)
        self.assertEqual('1024,1024', self.output('epa_chain_socket_mem'))
        self.assertEqual(
            'node:0,size:2048,count:512 node:1,size:2048,count:512',
            self.output('epa_chain_reserved_huge_pages '
                        '"$(epa_chain_socket_mem)" 2048'))
        self.assertEqual('node:1,size:1048576,count:2', self.output(
            'epa_chain_reserved_huge_pages 0,2048 1048576'))

    # ---- configuration checks -----------------------------------------------

    def test_sample_is_seed_000_and_passes_the_checks(self):
        localrc = os.path.join(self.tmp, 'localrc')
        with open(_SAMPLE) as sample, open(localrc, 'w') as out:
            inside = False
            for line in sample:
                if line.startswith('[['):
                    inside = line.strip() == '[[local|localrc]]'
                elif inside:
                    out.write(line)
        script = ('source %s; epa_chain_check_config; '
                  'echo "$OVS_BRIDGE_MAPPINGS|$ML2_VLAN_RANGES|'
                  '${EPA_CHAIN_BRIDGES[*]}|${#EPA_CHAIN_DPDK_PORTS[@]}"'
                  % localrc)
        stdout = self.output(script, ENABLED_SERVICES='n-cpu,q-svc,q-agt')
        mappings, ranges, bridges, ports = stdout.splitlines()[-1].split('|')
        self.assertEqual(_SEED_BRIDGE_MAPPINGS, mappings)
        self.assertEqual(_SEED_VLAN_RANGES, ranges)
        self.assertEqual('br-eth0 br-eth1', bridges)
        self.assertEqual('0', ports)

    def test_ovn_agent_refused(self):
        self.assertIn('Q_AGENT=openvswitch', self.error(
            'epa_chain_check_config', Q_AGENT='ovn'))

    def test_kernel_datapath_refused_with_dpdk(self):
        self.assertIn('OVS_DATAPATH_TYPE=netdev', self.error(
            'epa_chain_check_config', OVS_DATAPATH_TYPE='system'))

    def test_bad_knobs_are_named(self):
        cases = {
            'OVS_PMD_CORE_MASK': ({'OVS_PMD_CORE_MASK': 'four'},
                                  'not a hex CPU mask'),
            'OVS_DPDK_MODE': ({'OVS_DPDK_MODE': 'dpdk'}, 'controller_ovs'),
            'OVS_SOCKET_MEM': ({'OVS_SOCKET_MEM': '1G'}, 'MB per NUMA'),
            'OVS_HUGEPAGE_MOUNT_PAGESIZE': (
                {'OVS_HUGEPAGE_MOUNT_PAGESIZE': '4K'}, '2M, 1G'),
            'OVS_BRIDGE_MAPPINGS': ({'OVS_BRIDGE_MAPPINGS': 'br-eth0'},
                                    'physnet:bridge'),
        }
        for knob, (knobs, fix) in cases.items():
            stderr = self.error('epa_chain_check_config', **knobs)
            self.assertIn(knob, stderr)
            self.assertIn(fix, stderr)

    def test_bridge_mapping_errors(self):
        for mappings, reason in (
                ('physnet1:br-eth0,physnet1:br-eth1', 'twice'),
                ('physnet1:br-eth0,physnet2:br-eth0', 'twice'),
                ('physnet1:br-int', "Neutron's own bridge"),
                ('physnet1:br-a-very-long-name', '15 characters')):
            stderr = self.error('epa_chain_parse_bridge_mappings',
                                OVS_BRIDGE_MAPPINGS=mappings)
            self.assertIn(reason, stderr, mappings)

    def test_vlan_ranges_must_cover_every_physnet(self):
        stderr = self.error(
            'epa_chain_parse_bridge_mappings; epa_chain_parse_vlan_ranges; '
            'epa_chain_check_vlan_coverage',
            ML2_VLAN_RANGES='physnet1:1000:1010')
        self.assertIn("lacks physnet 'physnet2'", stderr)
        stderr = self.error('epa_chain_parse_vlan_ranges',
                            ML2_VLAN_RANGES='physnet1:1010:1000')
        self.assertIn('min <= max', stderr)

    # ---- DPDK ports ---------------------------------------------------------

    def resolve(self, mappings):
        return self.output(
            'epa_chain_parse_bridge_mappings; '
            'epa_chain_resolve_port_mappings; '
            'printf "%s\\n" "${EPA_CHAIN_DPDK_PORTS[@]}"',
            OVS_DPDK_PORT_MAPPINGS=mappings).splitlines()

    def test_ports_by_pci_address_and_by_nic(self):
        self.fake_nic('ens5f1', '0000:05:00.1')
        self.assertEqual(['br-eth0 dpdk0 0000:05:00.0',
                          'br-eth1 dpdk1 0000:05:00.1'],
                         self.resolve('0000:05:00.0:br-eth0,ens5f1:br-eth1'))

    def test_port_mapping_errors(self):
        self.fake_nic('veth0', None)
        for mappings, reason in (
                ('0000:05:00.0:br-eth9', 'not in OVS_BRIDGE_MAPPINGS'),
                ('05:00.0:br-eth0', 'not a PCI address'),
                ('veth0:br-eth0', 'has no PCI device'),
                ('eth7:br-eth0', 'has no PCI device'),
                ('0000:05:00.0:br-eth0,0000:05:00.0:br-eth1',
                 'already mapped'),
                ('0000:05:00.0:br-eth0,0000:05:00.1:br-eth0',
                 'already has a DPDK port'),
                ('br-eth0', '<pci-address-or-nic>:<bridge>')):
            stderr = self.error(
                'epa_chain_parse_bridge_mappings; '
                'epa_chain_resolve_port_mappings',
                OVS_DPDK_PORT_MAPPINGS=mappings)
            self.assertIn('OVS_DPDK_PORT_MAPPINGS', stderr, mappings)
            self.assertIn(reason, stderr, mappings)

    # ---- Tempest ------------------------------------------------------------

    def tempest_conf(self, **knobs):
        conf = os.path.join(self.tmp, 'tempest.conf')
        self.output('TEMPEST_CONFIG=%s; epa_chain_configure_tempest' % conf,
                    **knobs)
        options = {}
        section = None
        with open(conf) as f:
            for line in f:
                line = line.strip()
                if line.startswith('['):
                    section = line.strip('[]')
                elif '=' in line:
                    key, value = (s.strip() for s in line.split('=', 1))
                    options[section, key] = value
        os.unlink(conf)
        return options

    def test_tempest_segments(self):
        self.assertEqual(
            'physnet1:1001,physnet1:1002,physnet2:2001,physnet2:2002',
            self.tempest_conf()['epa_chain', 'segments'])
        self.assertEqual(
            'physnet1:101,physnet1:102,physnet1:103,physnet1:104',
            self.tempest_conf(ML2_VLAN_RANGES='physnet1:100:199')[
                'epa_chain', 'segments'])
        self.assertEqual('', self.tempest_conf(ML2_VLAN_RANGES='physnet1')[
            'epa_chain', 'segments'])
        self.assertIn('too small', self.error(
            'TEMPEST_CONFIG=%s/t.conf; epa_chain_configure_tempest'
            % self.tmp, ML2_VLAN_RANGES='physnet1:100:102'))

    def test_tempest_service_available_follows_images(self):
        self.assertEqual('False', self.tempest_conf()[
            'service_available', 'epa_chain'])
        options = self.tempest_conf(
            EPA_CHAIN_VNF_IMAGE_URL='file:///images/vnf.qcow2',
            EPA_CHAIN_CREATE_FLAVORS='True',
            EPA_CHAIN_TEMPEST_SEARCH_METHOD='rfc2544',
            EPA_CHAIN_TEMPEST_SEGMENTS='physnet3:7,physnet3:8')
        self.assertEqual('True', options['service_available', 'epa_chain'])
        self.assertEqual('epa-chain-vnf', options['epa_chain', 'vnf_flavor'])
        self.assertEqual('epa-chain-generator',
                         options['epa_chain', 'generator_flavor'])
        self.assertEqual('rfc2544', options['epa_chain', 'search_method'])
        self.assertEqual('physnet3:7,physnet3:8',
                         options['epa_chain', 'segments'])
        self.assertNotIn(('epa_chain', 'trial_duration'), options)

    def test_tempest_reaches_the_control_port_from_the_public_range(self):
        # devstack's Tempest host talks to the private network through
        # the router: its source is in FLOATING_RANGE.
        options = self.tempest_conf(FLOATING_RANGE='172.24.4.0/24')
        self.assertEqual('172.24.4.0/24', options[
            'epa_chain', 'management_allowed_cidr'])
        options = self.tempest_conf(
            EPA_CHAIN_TEMPEST_MANAGEMENT_ALLOWED_CIDR='10.0.0.0/24',
            EPA_CHAIN_TEMPEST_HOP_CHECK_LOAD_FRACTION='0.0002')
        self.assertEqual('10.0.0.0/24', options[
            'epa_chain', 'management_allowed_cidr'])
        self.assertEqual('0.0002', options[
            'epa_chain', 'hop_check_load_fraction'])

    def test_the_short_campaign_is_the_gates_and_an_option_set_wins(self):
        options = self.tempest_conf(EPA_CHAIN_TEMPEST_CAMPAIGN='short',
                                    EPA_CHAIN_TEMPEST_TRIAL_DURATION='2',
                                    EPA_CHAIN_TEMPEST_MAX_LOAD_FPS='700')
        self.assertEqual(
            {'chain_lengths': '1', 'frame_sizes': '64', 'repetitions': '1',
             'trial_duration': '2', 'latency_duration': '5',
             'max_load_fps': '700'},
            {key: options['epa_chain', key] for key in (
                'chain_lengths', 'frame_sizes', 'repetitions',
                'trial_duration', 'latency_duration', 'max_load_fps')})
        full = self.tempest_conf()
        self.assertNotIn(('epa_chain', 'frame_sizes'), full)
        self.assertIn('EPA_CHAIN_TEMPEST_CAMPAIGN', self.error(
            'epa_chain_check_config', EPA_CHAIN_TEMPEST_CAMPAIGN='quick'))

    def test_every_plugin_option_can_be_set_from_local_conf(self):
        # No list of options in the plugin: each one declared reaches
        # tempest.conf from EPA_CHAIN_TEMPEST_<OPTION>.
        names = _plugin_option_names()
        self.assertIn('generator_latency_bucket_shift', names)
        self.assertIn('heat_region', names)
        knobs = {'EPA_CHAIN_TEMPEST_%s' % name.upper(): 'set-%s' % name
                 for name in names}
        knobs['EPA_CHAIN_TEMPEST_SEGMENTS'] = 'physnet1:5,physnet2:6'
        options = self.tempest_conf(**knobs)
        for name in names:
            self.assertEqual(knobs['EPA_CHAIN_TEMPEST_%s' % name.upper()],
                             options['epa_chain', name], name)
        # and nothing else: the plugin's own variables are no options.
        self.assertEqual(set(), {key for section, key in options
                                 if section == 'epa_chain'} - set(names))
        # The plugin's own knobs are no options, but every option it
        # writes itself is one.
        own = self.output('echo $EPA_CHAIN_OWN_TEMPEST_KNOBS').lower().split()
        self.assertEqual({'service_available', 'campaign'},
                         set(own) - set(names))
        self.assertNotIn(('epa_chain', 'campaign'), self.tempest_conf(
            EPA_CHAIN_TEMPEST_CAMPAIGN='short'))

    # ---- images -------------------------------------------------------------

    @staticmethod
    def _fake_commands(bin_dir, scripts):
        """{name: bash body} as executables in bin_dir."""
        os.makedirs(bin_dir, exist_ok=True)
        for name, body in scripts.items():
            path = os.path.join(bin_dir, name)
            with open(path, 'w') as f:
                f.write('#!/bin/bash\n%s\n' % body)
            os.chmod(path, 0o755)

    def test_images_built_once_and_uploaded_under_both_names(self):
        # Fakes of the external commands: the vnf_images/ build (writes
        # NAME.qcow2 into -o DIR) and the openstack client (records calls).
        bin_dir = os.path.join(self.tmp, 'bin')
        calls = os.path.join(self.tmp, 'calls')
        scripts = {
            'build-vnf': 'while getopts o:n: f; do case $f in o) d=$OPTARG;;'
                         ' n) n=$OPTARG;; esac; done; '
                         'echo "build $*" >> %s; echo image > "$d/$n.qcow2"'
                         % calls,
            'openstack': 'echo "openstack $*" >> %s' % calls,
            'disk-image-create': 'exit 1',
        }
        self._fake_commands(bin_dir, scripts)
        images = os.path.join(self.tmp, 'images')
        self.output(
            'install_package() { echo "install_package $*" >> %s; }; '
            'epa_chain_upload_images' % calls,
            PATH=bin_dir + os.pathsep + os.environ['PATH'],
            EPA_CHAIN_BUILD_IMAGES='True', EPA_CHAIN_IMAGE_DIR=images,
            EPA_CHAIN_VNF_IMAGE_BUILD_CMD=os.path.join(bin_dir, 'build-vnf'),
            EPA_CHAIN_GENERATOR_IMAGE_BUILD_CMD='',
            EPA_CHAIN_IMAGE_PROPERTIES='img_config_drive=mandatory')
        with open(calls) as f:
            lines = f.read().splitlines()
        image = os.path.join(images, 'epa-chain-vnf.qcow2')
        upload = ('openstack --os-cloud devstack-admin image create --public '
                  '--disk-format qcow2 --container-format bare --file %s '
                  '--property img_config_drive=mandatory ' % image)
        self.assertEqual([
            'install_package qemu-utils debootstrap kpartx squashfs-tools',
            'build -o %s -n epa-chain-vnf' % images,
            upload + 'epa-chain-vnf',
            upload + 'epa-chain-generator',
        ], lines)

    def test_an_image_built_for_tcg_guests_says_so_to_the_element(self):
        # The build sees DIB_EPA_GUEST_EMULATED: 1 on a LIBVIRT_TYPE=qemu
        # cloud, 0 under KVM, and the caller's own value wins.
        bin_dir = os.path.join(self.tmp, 'bin')
        seen = os.path.join(self.tmp, 'seen')
        self._fake_commands(bin_dir, {
            'build-vnf': 'while getopts o:n: f; do case $f in o) d=$OPTARG;;'
                         ' n) n=$OPTARG;; esac; done; '
                         'echo "$DIB_EPA_GUEST_EMULATED" >> %s; '
                         'echo image > "$d/$n.qcow2"' % seen})
        build = os.path.join(bin_dir, 'build-vnf')
        images = os.path.join(self.tmp, 'images')
        for knobs in ({'LIBVIRT_TYPE': 'qemu'}, {'LIBVIRT_TYPE': 'kvm'}, {},
                      {'LIBVIRT_TYPE': 'qemu', 'DIB_EPA_GUEST_EMULATED': '0'}):
            self.assertEqual(
                os.path.join(images, 'vnf.qcow2'),
                self.output('_epa_chain_image_file vnf vnf "" %s' % build,
                            EPA_CHAIN_BUILD_IMAGES='True',
                            EPA_CHAIN_IMAGE_DIR=images, **knobs))
        with open(seen) as f:
            self.assertEqual(['1', '0', '0', '0'], f.read().split())

    def test_the_builds_kernel_and_initrd_are_booted_directly(self):
        # A build that writes the boot files beside the image, as
        # vnf_images/ does; the client answers an image id for -c id.
        bin_dir = os.path.join(self.tmp, 'bin')
        calls = os.path.join(self.tmp, 'calls')
        cmdline = 'root=LABEL=cloudimg-rootfs ro console=ttyS0,115200'
        scripts = {
            'build-vnf': 'while getopts o:n: f; do case $f in o) d=$OPTARG;;'
                         ' n) n=$OPTARG;; esac; done; '
                         'for e in qcow2 vmlinuz initrd; do echo x > '
                         '"$d/$n.$e"; done; echo "%s" > "$d/$n.cmdline"'
                         % cmdline,
            'openstack': 'echo "openstack $*" >> %s; '
                         '[[ " $* " == *" -c id "* ]] && echo "id-${@: -1}"; '
                         'true' % calls,
        }
        self._fake_commands(bin_dir, scripts)
        images = os.path.join(self.tmp, 'images')

        def upload(**env):
            self.output(
                'epa_chain_install_image_builder() { :; }; '
                'epa_chain_upload_images',
                PATH=bin_dir + os.pathsep + os.environ['PATH'],
                EPA_CHAIN_BUILD_IMAGES='True', EPA_CHAIN_IMAGE_DIR=images,
                EPA_CHAIN_VNF_IMAGE_BUILD_CMD=os.path.join(bin_dir,
                                                           'build-vnf'),
                EPA_CHAIN_GENERATOR_IMAGE_BUILD_CMD='',
                EPA_CHAIN_IMAGE_PROPERTIES='img_config_drive=mandatory',
                **env)
            with open(calls) as f:
                return f.read().splitlines()

        lines = upload()
        base = os.path.join(images, 'epa-chain-vnf')
        self.assertIn('openstack --os-cloud devstack-admin image create '
                      '--public --disk-format aki --container-format aki '
                      '--file %s.vmlinuz -f value -c id epa-chain-vnf-kernel'
                      % base, lines)
        self.assertIn('openstack --os-cloud devstack-admin image create '
                      '--public --disk-format ari --container-format ari '
                      '--file %s.initrd -f value -c id epa-chain-vnf-ramdisk'
                      % base, lines)
        root = [line for line in lines if line.endswith(' epa-chain-vnf')]
        self.assertEqual(1, len(root), lines)
        self.assertIn('--property kernel_id=id-epa-chain-vnf-kernel '
                      '--property ramdisk_id=id-epa-chain-vnf-ramdisk '
                      '--property os_command_line=%s' % cmdline, root[0])
        # Off: the disk (GRUB) boot, and no kernel image uploaded.
        os.remove(calls)
        text = '\n'.join(upload(EPA_CHAIN_DIRECT_KERNEL_BOOT='False'))
        self.assertNotIn('aki', text)
        self.assertNotIn('kernel_id', text)

    def test_missing_build_command_is_named(self):
        stderr = self.error(
            'install_package() { :; }; pip_install() { :; }; '
            'epa_chain_upload_images',
            EPA_CHAIN_BUILD_IMAGES='True',
            EPA_CHAIN_IMAGE_DIR=os.path.join(self.tmp, 'images'),
            EPA_CHAIN_VNF_IMAGE_BUILD_CMD='/nonexistent/build-vnf-prox')
        self.assertIn('EPA_CHAIN_VNF_IMAGE_BUILD_CMD', stderr)

    # ---- devstack contract --------------------------------------------------

    def test_override_defaults_pick_the_userspace_datapath(self):
        override = os.path.join(_REPO, 'devstack', 'override-defaults')
        for knobs, expected in (({}, 'netdev'),
                                ({'OVS_DATAPATH_TYPE': 'system'}, 'system'),
                                ({'OVS_DPDK_MODE': 'controller_ovs'}, '')):
            result = subprocess.run(
                ['bash', '-c', 'source %s; echo "$OVS_DATAPATH_TYPE"'
                 % override], env=dict(knobs, PATH=os.environ['PATH']),
                capture_output=True, text=True, check=True)
            self.assertEqual(expected, result.stdout.strip(), knobs)

    def test_tempest_plugin_goes_into_tempests_virtualenv(self):
        ours = '%s[validation] %s/tempest_plugin' % (_REPO, _REPO)
        self.assertEqual(ours, self.output('echo "$TEMPEST_PLUGINS"'))
        # lib/tempest's "none".
        self.assertEqual(ours, self.output('echo "$TEMPEST_PLUGINS"',
                                           TEMPEST_PLUGINS='0'))
        self.assertEqual('/opt/stack/heat-tempest-plugin ' + ours,
                         self.output('echo "$TEMPEST_PLUGINS"',
                                     TEMPEST_PLUGINS='/opt/stack/'
                                     'heat-tempest-plugin'))
        listed = '/x[validation] %s/tempest_plugin' % _REPO
        self.assertEqual(listed, self.output('echo "$TEMPEST_PLUGINS"',
                                             TEMPEST_PLUGINS=listed))
        self.assertEqual('0', self.output(
            'echo "$TEMPEST_PLUGINS"', TEMPEST_PLUGINS='0',
            EPA_CHAIN_INSTALL_TEMPEST_PLUGIN='False'))

    def test_zuul_job_runs_the_chain_scenarios(self):
        with open(os.path.join(_REPO, '.zuul.yaml')) as f:
            config = yaml.safe_load(f)
        jobs = {item['job']['name']: item['job'] for item in config
                if 'job' in item}
        job = jobs['epa-chain-devstack-tempest']
        self.assertEqual('devstack-tempest', job['parent'])
        variables = job['vars']
        self.assertIn('epa-chain', variables['devstack_plugins'])
        localrc = variables['devstack_localrc']
        # The Tempest plugin and epa-chain with Heat's engine, in one pip
        # command (devstack's TEMPEST_PLUGINS; tempest_plugins would win
        # nothing here: its paths cannot carry the extra).
        self.assertNotIn('tempest_plugins', variables)
        self.assertEqual(['/opt/stack/epa-chain[validation]',
                          '/opt/stack/epa-chain/tempest_plugin'],
                         localrc['TEMPEST_PLUGINS'].split())
        self.assertRegex(
            'epa_chain_tempest_plugin.tests.scenario.test_chain_benchmark',
            variables['tempest_test_regex'])
        self.assertEqual('openvswitch', localrc['Q_AGENT'])
        self.assertIn('physnet1', localrc['ML2_VLAN_RANGES'])
        # The campaign comes from devstack/settings, as for the single-host
        # tool, not from values repeated here.
        self.assertEqual('short', localrc['EPA_CHAIN_TEMPEST_CAMPAIGN'])
        self.assertEqual([], [name for name in localrc if name in (
            'EPA_CHAIN_TEMPEST_FRAME_SIZES', 'EPA_CHAIN_TEMPEST_CHAIN_LENGTHS',
            'EPA_CHAIN_TEMPEST_TRIAL_DURATION')])
        with open(os.path.join(_REPO, 'tools', 'lib', 'single-host-cloud',
                               'tempest.bash')) as f:
            self.assertIn('EPA_CHAIN_TEMPEST_CAMPAIGN:-short', f.read())

    def test_shellcheck(self):
        if not shutil.which('shellcheck'):
            self.skipTest('shellcheck is not installed')
        files = [os.path.join('devstack', name) for name in (
            'plugin.sh', 'settings', 'override-defaults',
            os.path.join('lib', 'epa_chain'))]
        fixtures = os.path.join('epa_chain', 'tests', 'fixtures', 'devstack')
        files += [os.path.join(fixtures, name)
                  for name in sorted(os.listdir(os.path.join(_REPO,
                                                             fixtures)))
                  if name.endswith('.sh')]
        result = subprocess.run(['shellcheck', '-x'] + files, cwd=_REPO,
                                capture_output=True, text=True)
        self.assertEqual(0, result.returncode, result.stdout)
