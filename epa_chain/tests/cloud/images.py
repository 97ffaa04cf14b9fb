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

"""The VNF image the cloud test uploads: built once per content.

vnf_images/build-vnf-prox through the images test's build harness, kept
under a key made of everything that goes into the image (the elements,
the build scripts, the epa_chain code the image runs, the PROX source), so
that a run whose inputs did not change reuses the last build and any
change rebuilds it.

The build's direct kernel boot files are kept with it: the kernel
(NAME.vmlinuz), the initrd (NAME.initrd) and GRUB's kernel command line
(NAME.cmdline), which Nova boots when the image names them (kernel_id,
ramdisk_id, os_command_line). vnf_build() returns all four paths;
vnf_image() the disk image's only.
"""

import dataclasses
import hashlib
import os
import shutil
import subprocess

from epa_chain.prox import build
from epa_chain.tests.images import dib_build
from epa_chain.tests import repo

BUILD_COMMAND = 'build-vnf-prox'
IMAGE_NAME = 'epa-chain-vnf'
# What the image is made of (vnf_images/common.bash copies epa_chain in).
INPUTS = ('diskimage-elements', 'vnf_images', 'epa_chain', 'setup.cfg',
          'requirements.txt', ':(exclude)epa_chain/tests')
CACHE = os.path.join(os.path.expanduser('~'), '.cache', 'epa-chain',
                     'cloud-images')
# What vnf_images/ writes: NAME.<suffix>, beside one another.
SUFFIXES = ('qcow2', 'vmlinuz', 'initrd', 'cmdline')


@dataclasses.dataclass(frozen=True)
class VnfImage:
    """The cached build: the disk image and its direct-boot files."""

    image: str          # NAME.qcow2
    kernel: str         # NAME.vmlinuz (Glance: aki)
    initrd: str         # NAME.initrd (Glance: ari)
    cmdline_file: str   # NAME.cmdline

    @classmethod
    def in_directory(cls, directory, name=IMAGE_NAME):
        image, kernel, initrd, cmdline = (
            os.path.join(directory, '%s.%s' % (name, suffix))
            for suffix in SUFFIXES)
        return cls(image=image, kernel=kernel, initrd=initrd,
                   cmdline_file=cmdline)

    @property
    def files(self):
        return (self.image, self.kernel, self.initrd, self.cmdline_file)

    @property
    def cmdline(self):
        """The whole kernel command line (Glance: os_command_line)."""
        with open(self.cmdline_file) as stream:
            return stream.read().strip()


def content_key(prox_source, emulated='0'):
    """A digest of the image's inputs: git's blob ids and the source's."""
    listing = subprocess.run(
        ['git', 'ls-files', '-s', '--'] + list(INPUTS), cwd=repo.ROOT,
        check=True, stdout=subprocess.PIPE, text=True).stdout
    digest = hashlib.sha256(listing.encode())
    # Files changed but not committed count too.
    changed = subprocess.run(
        ['git', 'diff', 'HEAD', '--'] + list(INPUTS), cwd=repo.ROOT,
        check=True, stdout=subprocess.PIPE).stdout
    digest.update(changed)
    digest.update(emulated.encode())
    if prox_source and os.path.isfile(prox_source):
        with open(prox_source, 'rb') as stream:
            for block in iter(lambda: stream.read(1 << 20), b''):
                digest.update(block)
    else:
        digest.update((prox_source or '').encode())
    return digest.hexdigest()[:16]


def guest_emulated(virt_type):
    """DIB_EPA_GUEST_EMULATED for the cloud's hypervisor: '1' under TCG.

    The element then gives the guests the kernel arguments emulation
    needs (diskimage-elements/epa-chain-dataplane-kernel/README.rst).
    """
    return '1' if virt_type == 'qemu' else '0'


def vnf_image(log, virt_type):
    """The disk image file, built unless the cache holds this content's."""
    return vnf_build(log, virt_type).image


def vnf_build(log, virt_type):
    """VnfImage, built unless the cache holds this content's four files."""
    prox_source = os.environ.get(build.SOURCE_VARIABLE)
    emulated = guest_emulated(virt_type)
    directory = os.path.join(CACHE, content_key(prox_source, emulated))
    cached = VnfImage.in_directory(directory)
    if all(os.path.isfile(path) for path in cached.files):
        log('image %s: cached with its kernel, initrd and command line '
            '(inputs unchanged)' % cached.image)
        return cached
    env = dib_build.environment()
    env['DIB_EPA_GUEST_EMULATED'] = emulated
    log('building the VNF image with vnf_images/%s (%s DIB cache)...'
        % (BUILD_COMMAND, 'warm' if dib_build.is_warm(env) else 'cold'))
    work = directory + '.build'
    shutil.rmtree(work, ignore_errors=True)
    result = dib_build.build(BUILD_COMMAND, work, env, name=IMAGE_NAME)
    log('built %s (%.0f MiB) in %.0f s' % (
        result.image, result.size_bytes / 2 ** 20, result.seconds))
    # Older builds are stale: keep this one only.
    for entry in os.listdir(CACHE):
        if entry != os.path.basename(work):
            shutil.rmtree(os.path.join(CACHE, entry), ignore_errors=True)
    built = VnfImage(image=result.image, kernel=result.kernel,
                     initrd=result.initrd, cmdline_file=result.cmdline_file)
    missing = [path for path in built.files
               if not path or not os.path.isfile(path)]
    if missing:
        raise dib_build.BuildFailed(
            'vnf_images/%s printed no kernel, initrd or command line (or '
            'they are gone): %s; log %s' % (BUILD_COMMAND, missing,
                                            result.log))
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for source, target in zip(built.files, cached.files):
        shutil.move(source, target)
    shutil.rmtree(work, ignore_errors=True)
    return cached
