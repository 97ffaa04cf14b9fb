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

"""Build VNF images with diskimage-builder and boot them under QEMU.

A real build with the shipped command (debootstrap and apt from this
machine's Debian mirror) and a boot with the config drive Nova would give
the VNF of a PVP preset, its user_data rendered by Heat's own engine from
the shipped templates with the image's engine. The guest boots the
kernel, initrd and command line the build wrote beside the image directly,
as Nova boots an image with kernel_id, ramdisk_id and os_command_line
(EPA_CHAIN_IMAGE_BOOT=disk boots the disk through GRUB instead). The
runtime in the image must find its data NICs by MAC, start the engine with
exactly the configuration of the runtime's golden fixture (testpmd
arguments, PROX .cfg) and print EPA-CHAIN READY on the serial console;
there is no cloud-init: the runtime (--manage-guest) must have put the
metadata's key in the login user's authorized_keys, and that key must let
us in over SSH, and nothing else.

Slow (minutes) and needs root, debootstrap and QEMU: built only with
EPA_CHAIN_IMAGE_TEST=1, which `tox -e images` sets. The PROX images (the
VNF image with the PROX engine and the generator image; PROX built in the
image by epa_chain.prox.build against the distribution's DPDK) need the
samplevnf source: EPA_CHAIN_PROX_SOURCE (a tarball, git URL or git
checkout, passed to DIB's source-repositories) or DIB_REPOLOCATION_samplevnf
itself. Settings: EPA_CHAIN_IMAGE_TEST_DIR (work directory, default
/tmp/epa-chain-image-test), EPA_CHAIN_IMAGE_ACCEL (tcg or kvm, default
tcg), EPA_CHAIN_IMAGE_BOOT (direct or disk, default direct),
DIB_IMAGE_CACHE (default ~/.cache/image-create) and any other DIB_*
variable. The timings and sizes measured are printed and written to
summary.json in each image's work directory.
"""

import json
import os
import shutil
import subprocess
import sys
import time
import unittest

from epa_chain.chain import readiness
from epa_chain.prox import build
from epa_chain.tests.images import dib_build
from epa_chain.tests.images import qemu_vm
from epa_chain.tests.unit import vnf_runtime_fixtures
from epa_chain.vnf_runtime import hugepages

NODE = 'vnf1'
LOGIN_USER = 'epa'   # epa-chain-guest-access's default user
READY_RE = readiness.READY_RE
FAILED_RE = readiness.FAILED_RE
FIXTURES = os.path.join(dib_build.TOP, 'epa_chain', 'tests', 'fixtures',
                        'vnf_runtime')
IMAGE_SIZE_LIMIT = 1024 ** 3
BOOT_TIMEOUT = int(os.environ.get('EPA_CHAIN_IMAGE_BOOT_TIMEOUT', '900'))
LEAN_BOOT_ENV = os.path.join(dib_build.TOP, 'diskimage-elements',
                             'epa-chain-lean-boot', 'environment.d',
                             '10-epa-chain-lean-boot.bash')


def _lean_boot_setting(name):
    """A setting of epa-chain-lean-boot as the build saw it.

    Its default, or this environment's DIB_* override.
    """
    return subprocess.run(
        ['bash', '-c', 'source "$1" && printf %s "${!2}"', 'env',
         LEAN_BOOT_ENV, name], check=True, capture_output=True,
        text=True).stdout


def _skip_reason(needs_prox=False):
    if os.environ.get('EPA_CHAIN_IMAGE_TEST') != '1':
        return ('image build+boot test: set EPA_CHAIN_IMAGE_TEST=1 or run '
                '`tox -e images` (takes minutes, needs root and QEMU)')
    if needs_prox and not (os.environ.get('DIB_REPOLOCATION_samplevnf') or
                           os.environ.get(build.SOURCE_VARIABLE)):
        return ('the PROX images build PROX from samplevnf: set '
                'EPA_CHAIN_PROX_SOURCE to a samplevnf tarball, git URL or '
                'git checkout (CI passes ../shared/third_party/'
                'samplevnf-*.tar.gz), or DIB_REPOLOCATION_samplevnf')
    if os.geteuid() != 0 and subprocess.run(
            ['sudo', '-n', 'true'], capture_output=True).returncode != 0:
        return 'diskimage-builder needs root or passwordless sudo'
    missing = dib_build.missing_tools()
    if missing:
        return ('missing host tools: %s (apt-get install debootstrap '
                'qemu-system-x86 qemu-utils xorriso openssh-client; pip '
                'install diskimage-builder)' % ', '.join(missing))
    return None


def _log(message):
    sys.stderr.write('[images] %s\n' % message)
    sys.stderr.flush()


class ImageBuildAndBootChecks:
    """One build and one boot per image, shared by the checks below."""

    BUILD_COMMAND = None
    ENGINE = None
    HUGEPAGES_MB = hugepages.VNF_MB     # what the engine needs
    BOOT_PAGES = 256    # epa-chain-dataplane-kernel's DIB_EPA_HUGEPAGES
    PRESET = None
    NODE = NODE
    CPUS = vnf_runtime_fixtures.VNF_CPUS
    NEEDS_PROX = False

    @classmethod
    def setUpClass(cls):
        reason = _skip_reason(cls.NEEDS_PROX)
        if reason:
            raise unittest.SkipTest(reason)
        cls.workdir = os.path.join(
            os.environ.get('EPA_CHAIN_IMAGE_TEST_DIR',
                           '/tmp/epa-chain-image-test'), cls.BUILD_COMMAND)
        shutil.rmtree(cls.workdir, ignore_errors=True)
        os.makedirs(cls.workdir)
        cls.summary = {'preset': cls.PRESET, 'node': cls.NODE,
                       'engine': cls.ENGINE,
                       'command': 'vnf_images/' + cls.BUILD_COMMAND}
        cls.vm = None
        try:
            cls._build()
            cls._boot()
        except BaseException:
            cls._stop_vm()
            raise

    @classmethod
    def tearDownClass(cls):
        cls._stop_vm()
        with open(os.path.join(cls.workdir, 'summary.json'), 'w') as stream:
            json.dump(cls.summary, stream, indent=2, sort_keys=True)
            stream.write('\n')
        _log('summary: %s' % json.dumps(cls.summary, sort_keys=True))

    @classmethod
    def _stop_vm(cls):
        if cls.vm is not None:
            cls.vm.stop()

    @classmethod
    def _build(cls):
        env = dib_build.environment()
        _log('building with vnf_images/%s (%s cache %s)...'
             % (cls.BUILD_COMMAND,
                'warm' if dib_build.is_warm(env) else 'cold',
                env['DIB_IMAGE_CACHE']))
        cls.build = dib_build.build(cls.BUILD_COMMAND,
                                    os.path.join(cls.workdir, 'image'), env)
        cls.summary.update(
            build_seconds=round(cls.build.seconds, 1),
            build_cache='warm' if cls.build.warm else 'cold',
            image_bytes=cls.build.size_bytes, image=cls.build.image,
            kernel=cls.build.kernel, initrd=cls.build.initrd,
            cmdline_file=cls.build.cmdline_file,
            mirror=env.get('DIB_DISTRIBUTION_MIRROR'))
        _log('built %s: %.1f MiB in %.0f s'
             % (cls.build.image, cls.build.size_bytes / 2 ** 20,
                cls.build.seconds))

    @classmethod
    def _boot(cls):
        # What Heat renders for the preset's node with this engine, laid
        # out as Nova's config drive (the runtime fixtures' code).
        files = vnf_runtime_fixtures.realise(
            cls.PRESET, engine=cls.ENGINE)[cls.NODE]
        cls.key = os.path.join(cls.workdir, 'id_ed25519')
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '',
                        '-C', 'epa-chain-image-test', '-f', cls.key],
                       check=True)
        with open(cls.key + '.pub') as stream:
            public_key = stream.read().strip()
        drive = qemu_vm.write_config_drive(
            os.path.join(cls.workdir, 'config-drive'), files, public_key)
        cls.user_data = files[vnf_runtime_fixtures.config_drive.USER_DATA]
        iso = qemu_vm.make_config_drive(
            drive, os.path.join(cls.workdir, 'config-drive.iso'))
        cls.macs = qemu_vm.link_macs(drive)
        accel = os.environ.get('EPA_CHAIN_IMAGE_ACCEL', 'tcg')
        cls.boot = os.environ.get('EPA_CHAIN_IMAGE_BOOT', 'direct')
        if cls.boot not in ('direct', 'disk'):
            raise ValueError('EPA_CHAIN_IMAGE_BOOT: direct or disk, not %r'
                             % cls.boot)
        direct = {}
        if cls.boot == 'direct':
            # As Nova boots an image with kernel_id, ramdisk_id and
            # os_command_line: the files the build wrote beside it.
            direct = dict(kernel=cls.build.kernel, initrd=cls.build.initrd,
                          cmdline=cls.build.cmdline)
        # The fixtures' standard guest: the flavor's vCPUs, NICs on slots
        # 3-5.
        cls.vm = qemu_vm.VM(cls.build.image, iso, cls.macs, cls.workdir,
                            cpus=cls.CPUS, accel=accel, **direct)
        _log('booting under QEMU (%s, %s boot), console %s'
             % (accel, cls.boot, cls.vm.console))
        cls.vm.start()
        pattern, line = cls.vm.wait_for_console([READY_RE, FAILED_RE],
                                                BOOT_TIMEOUT)
        cls.ready_seconds = time.monotonic() - cls.vm.started
        cls.console_line = line
        cpu = cls.vm.cpu_seconds()
        cls.summary.update(boot_to_readiness_seconds=round(
            cls.ready_seconds, 1), console_line=line.strip(), accel=accel,
            boot=cls.boot, qemu_cpu_seconds_at_readiness=cpu)
        _log('console after %.0f s (QEMU CPU %s s): %s'
             % (cls.ready_seconds, cpu, line.strip()))
        if pattern is FAILED_RE:
            # Nothing else is worth checking; every test says why.
            return
        cls.vm.wait_for_ssh(cls.key, LOGIN_USER, timeout=300)
        analyze = cls.vm.ssh(cls.key, LOGIN_USER, 'systemd-analyze')
        cls.summary['systemd_analyze'] = analyze.stdout.strip()

    def _ssh(self, command, timeout=60):
        result = self.vm.ssh(self.key, LOGIN_USER, command, timeout=timeout)
        self.assertEqual(0, result.returncode,
                         '%s: %s' % (command, result.stderr))
        return result.stdout

    def _status(self):
        return json.loads(self._ssh('cat /run/epa-chain/status.json'))

    def _golden(self, name):
        with open(os.path.join(FIXTURES, self.PRESET, self.NODE,
                               name)) as stream:
            return stream.read()

    def _require_ready(self):
        if not READY_RE.search(self.console_line):
            self.fail('the runtime did not come up: %s' % self.console_line)

    def test_image_is_under_a_gigabyte(self):
        self.assertLess(self.build.size_bytes, IMAGE_SIZE_LIMIT)

    def test_build_printed_the_upload_command(self):
        self.assertIn('openstack image create', self.build.output)
        for prop in ('hw_vif_multiqueue_enabled=true',
                     'img_config_drive=mandatory',
                     # The kernel and ramdisk images the root image names,
                     # with the whole command line GRUB would give.
                     '--disk-format aki --container-format aki',
                     '--disk-format ari --container-format ari',
                     'kernel_id=', 'ramdisk_id=', 'os_command_line=',
                     self.build.cmdline_file):
            self.assertIn(prop, self.build.output)

    def test_build_wrote_the_direct_boot_files(self):
        for path in (self.build.kernel, self.build.initrd,
                     self.build.cmdline_file):
            self.assertIsNotNone(path, 'the build printed no such file')
            self.assertGreater(os.path.getsize(path), 0, path)
        words = self.build.cmdline.split()
        self.assertIn('root=LABEL=cloudimg-rootfs', words)
        self.assertIn('hugepages=%d' % self.BOOT_PAGES, words)

    def test_cmdline_file_is_grubs_default_entry(self):
        self._require_ready()
        linux = self._ssh("sudo grep -m1 -E '^[[:space:]]*linux[[:space:]]' "
                          "/boot/grub/grub.cfg").split()
        self.assertEqual(linux[2:], self.build.cmdline.split())
        running = [word for word in self._ssh('cat /proc/cmdline').split()
                   if not word.startswith('BOOT_IMAGE=')]
        self.assertEqual(self.build.cmdline.split(), running)

    def test_runtime_reported_ready_on_the_console(self):
        match = READY_RE.search(self.console_line)
        self.assertIsNotNone(match, 'console says: %s' % self.console_line)
        self.assertEqual(('epa-chain-' + self.NODE, self.ENGINE),
                         match.groups())

    def test_engine_runs_with_the_golden_configuration(self):
        self._require_ready()
        status = self._status()
        self.assertEqual('ready', status['state'])
        self.check_engine(status)

    def test_data_ports_matched_by_mac(self):
        self._require_ready()
        ports = self._status()['ports']
        self.assertEqual(self.macs[1], ports['left']['mac'])
        self.assertEqual(self.macs[2], ports['right']['mac'])
        self.assertEqual('0000:00:%02x.0' % (qemu_vm.FIRST_NIC_SLOT + 1),
                         ports['left']['pci'])
        self.assertEqual('0000:00:%02x.0' % (qemu_vm.FIRST_NIC_SLOT + 2),
                         ports['right']['pci'])

    def test_data_ports_bound_to_the_dpdk_driver_the_kernel_has(self):
        self._require_ready()
        status = self._status()
        noiommu = self._ssh(
            'grep -c "^CONFIG_VFIO_NOIOMMU=y" /boot/config-$(uname -r) '
            '|| true').strip() == '1'
        expected = 'vfio-pci' if noiommu else 'uio_pci_generic'
        self.assertEqual(expected, status['driver'])
        for name in ('left', 'right'):
            pci = status['ports'][name]['pci']
            driver = self._ssh('basename $(readlink /sys/bus/pci/devices/%s'
                               '/driver)' % pci).strip()
            self.assertEqual(expected, driver, '%s port %s' % (name, pci))

    def test_kernel_reserves_pages_and_isolates_cores(self):
        self._require_ready()
        cmdline = self._ssh('cat /proc/cmdline')
        for argument in ('hugepages=%d' % self.BOOT_PAGES, 'isolcpus=1-N'):
            self.assertIn(argument, cmdline.split())
        isolated = '1' if self.CPUS == 2 else '1-%d' % (self.CPUS - 1)
        self.assertEqual(isolated, self._ssh(
            'cat /sys/devices/system/cpu/isolated').strip())
        # The boot reserves what a VNF's engine needs; the runtime adds
        # what the generator needs on top at run time.
        pages = int(self._ssh(
            'cat /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'))
        self.assertGreaterEqual(pages, self.BOOT_PAGES)
        self.assertGreaterEqual(pages * 2, self.HUGEPAGES_MB)

    def test_no_passwords_keys_only(self):
        self._require_ready()
        sshd = self._ssh('sudo sshd -T').lower().splitlines()
        self.assertIn('passwordauthentication no', sshd)
        self.assertIn('permitrootlogin no', sshd)
        for user in ('root', LOGIN_USER):
            fields = self._ssh('sudo passwd -S %s' % user).split()
            self.assertEqual('L', fields[1], 'password of %s' % user)

    def test_sshd_has_one_ed25519_host_key_made_at_boot(self):
        self._require_ready()
        sshd = self._ssh('sudo sshd -T').lower().splitlines()
        self.assertEqual(['hostkey /etc/ssh/ssh_host_ed25519_key'],
                         [line for line in sshd
                          if line.startswith('hostkey ')])
        self.assertEqual(['/etc/ssh/ssh_host_ed25519_key',
                          '/etc/ssh/ssh_host_ed25519_key.pub'],
                         self._ssh('ls /etc/ssh/ssh_host_*').split())

    def test_runtime_installed_the_key_without_cloud_init(self):
        self._require_ready()
        self.assertIn('epa_chain:', self.user_data)
        self.assertEqual('absent', self._ssh(
            'command -v cloud-init || echo absent').strip())
        # We are in with the metadata's key: the runtime put it there.
        with open(self.key + '.pub') as stream:
            public_key = stream.read().strip()
        self.assertIn(public_key,
                      self._ssh('cat .ssh/authorized_keys').splitlines())
        self.assertIn('guest', self._status())
        # The host name from the metadata, resolved by libnss-myhostname
        # (sudo says "unable to resolve host" otherwise).
        with open(os.path.join(self.workdir, 'config-drive',
                               vnf_runtime_fixtures.config_drive.META_DATA)
                  ) as stream:
            meta = json.load(stream)
        expected = meta.get('hostname') or meta.get('name')
        self.assertEqual(expected, self._ssh('hostname').strip())
        result = self.vm.ssh(self.key, LOGIN_USER, 'sudo true')
        self.assertEqual('', result.stderr.strip())
        # Installed for DHCP management subnets, never started by the boot.
        self.assertEqual('disabled', self.vm.ssh(
            self.key, LOGIN_USER,
            'systemctl is-enabled systemd-networkd.service').stdout.strip())

    def test_lean_boot(self):
        self._require_ready()
        self.assertEqual('', self._ssh(
            'systemctl list-units --failed --plain --no-legend').strip())
        units = _lean_boot_setting('DIB_EPA_MASKED_UNITS').split()
        keep = _lean_boot_setting('DIB_EPA_KEEP_UNITS').split()
        units = [unit for unit in units if unit not in keep]
        state = self.vm.ssh(self.key, LOGIN_USER,
                            'systemctl is-enabled %s' % ' '.join(units))
        self.assertEqual(dict((unit, 'masked') for unit in units),
                         dict(zip(units, state.stdout.split())))
        # An empty /etc/machine-id in the image: systemd mounts a
        # transient ID over it at each boot.
        self.assertRegex(self._ssh('cat /etc/machine-id').strip(),
                         r'^[0-9a-f]{32}$')
        self.assertNotEqual('', self._ssh(
            'findmnt -n /etc/machine-id || true').strip())
        if _lean_boot_setting('DIB_EPA_INITRAMFS_UDEV') == '0':
            self.assertEqual('', self._ssh(
                'lsinitramfs /boot/initrd.img-$(uname -r) | '
                'grep udevadm || true').strip())


class TestTestpmdImage(ImageBuildAndBootChecks, unittest.TestCase):
    """vnf_images/build-vnf-testpmd: distribution DPDK, no compiler."""

    BUILD_COMMAND = 'build-vnf-testpmd'
    ENGINE = 'testpmd'
    PRESET = 'pvp-unidir'

    def check_engine(self, status):
        golden = self._golden('testpmd.argv').split('\n')[:-1]
        command = status['command']
        self.assertEqual(os.path.basename(golden[0]),
                         os.path.basename(command[0]))
        self.assertEqual(golden[1:], command[1:])
        self._ssh('pgrep -x dpdk-testpmd')


class TestProxImage(ImageBuildAndBootChecks, unittest.TestCase):
    """vnf_images/build-vnf-prox: distribution DPDK, PROX built in it."""

    BUILD_COMMAND = 'build-vnf-prox'
    ENGINE = 'prox'
    # Unidirectional on purpose: the send-only port needs the drain task
    # of prox_l2fwd, or PROX panics on virtio (dummy RX mempool).
    PRESET = 'pvp-unidir'
    NEEDS_PROX = True

    def check_engine(self, status):
        self.assertEqual(self._golden('prox.cfg'),
                         self._ssh('cat %s' % status['config_file']))
        self.assertEqual('prox', os.path.basename(status['command'][0]))
        self._ssh('pgrep -x prox')


class TestGeneratorImage(ImageBuildAndBootChecks, unittest.TestCase):
    """vnf_images/build-generator: PROX with the gen and lat tasks."""

    BUILD_COMMAND = 'build-generator'
    ENGINE = 'prox'
    PRESET = 'pvp-unidir'
    NODE = 'generator'
    CPUS = vnf_runtime_fixtures.GENERATOR_CPUS
    HUGEPAGES_MB = hugepages.GENERATOR_MB   # the runtime raises the 256
    NEEDS_PROX = True

    def check_engine(self, status):
        self.assertEqual('prox', os.path.basename(status['command'][0]))
        config = self._ssh('cat %s' % status['config_file'])
        # The generator's configuration (epa_chain.prox.gen_config), not
        # the VNF's l2fwd.
        for task in ('mode=gen', 'mode=lat'):
            self.assertIn(task, config)
        self._ssh('pgrep -x prox')
        # The measurement engine's way in: the relay on the management
        # address (status) to PROX's UNIX socket, whose protocol answers.
        self.assertEqual(8474, status['control']['port'])
        reply = self._ssh(
            'sudo python3 -c "import socket; s = socket.socket('
            'socket.AF_UNIX); s.connect(\'/tmp/prox.sock\'); '
            's.sendall(b\'version\\n\'); print(s.recv(200).decode())"')
        self.assertRegex(reply.strip(), r'^\d+,\d+$')


if __name__ == '__main__':
    unittest.main()
