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

"""Boot an image under QEMU the way Nova would, with nothing leaving the VM.

The guest gets a config drive (an ISO labelled config-2 with
openstack/latest/{meta_data.json,network_data.json,user_data}, on the IDE
CD-ROM as Nova attaches it) and three virtio NICs with the MACs of
network_data.json, in link order on PCI slots 3, 4 and 5 as the runtime's
fixtures assume: the management NIC on QEMU's user network in restricted
mode (no route out of the VM; only a forwarded SSH port on the host's
loopback), each data NIC alone on its own QEMU hub, so frames the engine
sends go nowhere. The console (serial port) is written to a file.

Given a kernel, an initrd and a command line (the files vnf_images/ writes
beside the image), QEMU boots them directly, as Nova does for an image
with kernel_id, ramdisk_id and os_command_line (libvirt's <kernel>,
<initrd> and <cmdline>); without them the guest boots from its disk
through GRUB.
"""

import json
import os
import shutil
import socket
import subprocess
import time

from epa_chain.chain import config_drive

FIRST_NIC_SLOT = 3
DISK_SLOT = 8


def make_config_drive(drive_dir, iso_path):
    """Pack a config-drive tree into an ISO 9660 image labelled config-2."""
    tool = shutil.which('genisoimage') or shutil.which('xorriso')
    if tool is None:
        raise RuntimeError('neither genisoimage nor xorriso is installed')
    argv = [tool]
    if tool.endswith('xorriso'):
        argv += ['-as', 'mkisofs']
    # Nova's own flags (nova/virt/configdrive.py).
    argv += ['-o', iso_path, '-ldots', '-allow-lowercase', '-allow-multidot',
             '-l', '-publisher', 'epa-chain image test', '-quiet', '-J',
             '-r', '-V', 'config-2', drive_dir]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)
    return iso_path


def write_config_drive(drive_dir, files, public_key=None, key_name='test'):
    """Write {relative path: text} and add an SSH key to meta_data.json."""
    for relative, text in files.items():
        if relative == config_drive.META_DATA and public_key:
            meta = json.loads(text)
            # As Nova writes a key pair into the metadata.
            meta['public_keys'] = {key_name: public_key}
            meta['keys'] = [{'name': key_name, 'type': 'ssh',
                             'data': public_key}]
            text = json.dumps(meta, indent=2, sort_keys=True) + '\n'
        path = os.path.join(drive_dir, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as stream:
            stream.write(text)
    return drive_dir


def link_macs(drive_dir):
    """MACs of network_data.json's links, in order."""
    with open(os.path.join(drive_dir, config_drive.NETWORK_DATA)) as stream:
        return [link['ethernet_mac_address']
                for link in json.load(stream)['links']]


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class VM:
    """One QEMU guest; stop() always, even after a failure."""

    def __init__(self, image, iso, macs, workdir, cpus=2, memory_mb=2048,
                 accel='tcg', kernel=None, initrd=None, cmdline=None,
                 cpu_model=None):
        if kernel and cmdline is None:
            raise ValueError('a direct kernel boot needs its command line')
        self.workdir = workdir
        self.console = os.path.join(workdir, 'console.log')
        self.ssh_port = free_port()
        self.direct = bool(kernel)
        self.argv = self._argv(image, iso, macs, cpus, memory_mb, accel,
                               cpu_model)
        if kernel:
            self.argv += ['-kernel', kernel, '-append', cmdline]
            if initrd:
                self.argv += ['-initrd', initrd]
        self.proc = None
        self.started = None

    def _argv(self, image, iso, macs, cpus, memory_mb, accel, cpu_model):
        if accel == 'kvm':
            # "host" as such trips over MSRs some nested set-ups refuse.
            machine, cpu = 'pc,accel=kvm', 'host,-arch-capabilities'
        else:
            machine, cpu = 'pc,accel=tcg', 'max'
        argv = ['qemu-system-x86_64', '-machine', machine,
                '-cpu', cpu_model or cpu,
                '-smp', str(cpus), '-m', str(memory_mb), '-nodefaults',
                '-display', 'none', '-monitor', 'none',
                '-serial', 'file:' + self.console,
                # snapshot=on: the built image stays as built.
                '-drive', 'file=%s,if=none,id=root,format=qcow2,snapshot=on'
                % image,
                '-device', 'virtio-blk-pci,drive=root,addr=%d' % DISK_SLOT,
                '-drive', 'file=%s,if=none,id=cd,format=raw,media=cdrom,'
                          'readonly=on' % iso,
                '-device', 'ide-cd,drive=cd,bus=ide.1']
        for index, mac in enumerate(macs):
            netdev = 'nic%d' % index
            if index == 0:
                backend = ('user,id=%s,restrict=on,hostfwd=tcp:127.0.0.1:%d'
                           '-:22' % (netdev, self.ssh_port))
            else:
                backend = 'hubport,id=%s,hubid=%d' % (netdev, index)
            argv += ['-netdev', backend, '-device',
                     'virtio-net-pci,netdev=%s,mac=%s,addr=%d'
                     % (netdev, mac, FIRST_NIC_SLOT + index)]
        return argv

    def start(self):
        self.started = time.monotonic()
        with open(os.path.join(self.workdir, 'qemu.log'), 'w') as log:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log)

    def console_text(self):
        try:
            with open(self.console, 'rb') as stream:
                return stream.read().decode('utf-8', 'replace')
        except FileNotFoundError:
            return ''

    def wait_for_console(self, patterns, timeout):
        """(pattern, line) for the first pattern seen; TimeoutError if none."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.console_text().splitlines():
                for pattern in patterns:
                    if pattern.search(line):
                        return pattern, line
            if self.proc.poll() is not None:
                raise RuntimeError('QEMU exited with %d; see %s'
                                   % (self.proc.returncode, self.workdir))
            if time.monotonic() > deadline:
                raise TimeoutError('none of %s on the console within %d s'
                                   % ([p.pattern for p in patterns], timeout))
            time.sleep(2)

    def ssh_argv(self, key, user):
        return ['ssh', '-i', key, '-p', str(self.ssh_port),
                '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no',
                '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR',
                '-o', 'ConnectTimeout=10', '%s@127.0.0.1' % user]

    def ssh(self, key, user, command, timeout=60):
        return subprocess.run(self.ssh_argv(key, user) + [command],
                              capture_output=True, text=True,
                              timeout=timeout)

    def wait_for_ssh(self, key, user, timeout):
        deadline = time.monotonic() + timeout
        while True:
            try:
                result = self.ssh(key, user, 'true', timeout=30)
                if result.returncode == 0:
                    return
                last = result.stderr.strip()
            except subprocess.TimeoutExpired:
                last = 'timed out'
            if time.monotonic() > deadline:
                raise TimeoutError('no SSH as %s within %d s: %s'
                                   % (user, timeout, last))
            time.sleep(5)

    def cpu_seconds(self):
        """User + system CPU time QEMU has used so far (None if gone)."""
        try:
            with open('/proc/%d/stat' % self.proc.pid) as stream:
                fields = stream.read().rsplit(')', 1)[1].split()
        except (AttributeError, OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf(
            'SC_CLK_TCK')

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
