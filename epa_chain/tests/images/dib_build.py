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

"""Build an epa-chain image with vnf_images/ on this machine, for the tests.

The build runs the shipped command (vnf_images/build-*) exactly as a user
would, with diskimage-builder's settings taken from this machine: the apt
mirror its /etc/apt sources use (so debootstrap and apt reach the same
registry), and a fixed cache directory so that later builds are warm.

Kernels without device-mapper (some VMs and containers) cannot run kpartx,
which diskimage-builder uses to reach the image's partitions; when the
build runs as root on such a kernel, no_device_mapper/ puts small stand-ins
for sudo, kpartx and dmsetup first on PATH that use the loop driver's own
partitions instead.
"""

import dataclasses
import glob
import os
import re
import shutil
import subprocess
import sys
import time
import typing

from epa_chain.prox import build as prox_build
from epa_chain.tests import repo

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = repo.ROOT
VNF_IMAGES = os.path.join(TOP, 'vnf_images')
SHIMS = os.path.join(HERE, 'no_device_mapper')
DEFAULT_CACHE = os.path.expanduser('~/.cache/image-create')
APT_SOURCES = ('/etc/apt/sources.list', '/etc/apt/sources.list.d')


class BuildFailed(Exception):
    """disk-image-create failed; the message ends with its log's tail."""


@dataclasses.dataclass
class BuildResult:
    image: str
    seconds: float
    size_bytes: int
    warm: bool
    log: str
    output: str
    # The direct kernel boot's files the build printed (NAME.vmlinuz,
    # NAME.initrd, NAME.cmdline beside the image), None if it printed none.
    kernel: typing.Optional[str] = None
    initrd: typing.Optional[str] = None
    cmdline_file: typing.Optional[str] = None

    @property
    def cmdline(self):
        """The kernel command line GRUB uses (NAME.cmdline's one line)."""
        with open(self.cmdline_file) as stream:
            return stream.read().strip()


def apt_mirrors(sources=APT_SOURCES):
    """(main, security) Debian mirror URIs this machine's apt uses.

    Reads one-line (.list) and deb822 (.sources) files; either is None if
    not found.
    """
    entries = []
    for source in sources:
        if os.path.isdir(source):
            files = sorted(glob.glob(os.path.join(source, '*.list')) +
                           glob.glob(os.path.join(source, '*.sources')))
        else:
            files = [source] if os.path.isfile(source) else []
        for path in files:
            with open(path, errors='replace') as stream:
                text = stream.read()
            if path.endswith('.sources'):
                entries.extend(_deb822_entries(text))
            else:
                entries.extend(_one_line_entries(text))
    main = security = None
    for uri, suites in entries:
        uri = uri.rstrip('/')
        if any(s.endswith('-security') or s.endswith('/updates')
               for s in suites):
            security = security or uri
        elif uri.endswith('/debian'):
            main = main or uri
    return main, security


def _one_line_entries(text):
    for line in text.splitlines():
        words = re.sub(r'\[[^\]]*\]', ' ', line.split('#', 1)[0]).split()
        if len(words) >= 3 and words[0] == 'deb':
            yield words[1], [words[2]]


def _deb822_entries(text):
    for stanza in re.split(r'\n\s*\n', text):
        fields = {}
        for line in stanza.splitlines():
            if ':' in line and not line.startswith(('#', ' ')):
                key, value = line.split(':', 1)
                fields[key.strip().lower()] = value.split()
        if ('deb' in fields.get('types', []) and fields.get('uris') and
                fields.get('enabled', ['yes'])[0] != 'no'):
            for uri in fields['uris']:
                yield uri, fields.get('suites', [])


def samplevnf_overrides(source):
    """DIB source-repositories settings for a PROX source, as build.py reads.

    A tarball goes in as is (type file: epa_chain.prox.build unpacks it in
    the image, as on a host), a git URL (URL#REF) or git checkout is
    cloned. {} for None; ValueError for what DIB cannot take.
    """
    if not source:
        return {}
    if os.path.isfile(source):
        return {'DIB_REPOTYPE_samplevnf': 'file',
                'DIB_REPOLOCATION_samplevnf':
                    'file://' + os.path.abspath(source)}
    location, _sep, ref = source.partition('#')
    if os.path.isdir(location) and not os.path.isdir(
            os.path.join(location, '.git')):
        raise ValueError('%s is a directory but not a git checkout: '
                         'source-repositories takes a tarball or git '
                         'repository' % location)
    return {'DIB_REPOTYPE_samplevnf': 'git',
            'DIB_REPOLOCATION_samplevnf': location,
            'DIB_REPOREF_samplevnf': ref or 'HEAD'}


def has_device_mapper():
    try:
        with open('/proc/misc') as stream:
            return any(line.split()[-1:] == ['device-mapper']
                       for line in stream)
    except OSError:
        return False


def missing_tools():
    """Host programs the build and boot need that are not installed."""
    needed = ['disk-image-create', 'debootstrap', 'sudo', 'qemu-img',
              'qemu-system-x86_64', 'ssh', 'ssh-keygen']
    if has_device_mapper():
        needed.append('kpartx')
    if not shutil.which('xorriso') and not shutil.which('genisoimage'):
        needed.append('xorriso')
    return [tool for tool in needed if not shutil.which(tool, path=_path())]


def _path():
    # disk-image-create comes with the virtualenv running the tests.
    bindir = os.path.dirname(sys.executable)
    return os.pathsep.join([bindir, os.environ.get('PATH', ''),
                            '/usr/sbin', '/sbin'])


def environment(cache_dir=DEFAULT_CACHE, base=None):
    """The environment for vnf_images/: this machine's mirrors, the cache."""
    env = dict(os.environ if base is None else base)
    env['PATH'] = _path()
    if os.geteuid() == 0 and not has_device_mapper():
        env['PATH'] = SHIMS + os.pathsep + env['PATH']
    env.setdefault('DIB_IMAGE_CACHE', cache_dir)
    # The PROX source the host's tests use, unless DIB's own is set.
    if 'DIB_REPOLOCATION_samplevnf' not in env:
        env.update(samplevnf_overrides(env.get(prox_build.SOURCE_VARIABLE)))
    main, security = apt_mirrors()
    if main:
        env.setdefault('DIB_DISTRIBUTION_MIRROR', main)
    if security:
        env.setdefault('DIB_DEBIAN_SECURITY_MIRROR', security)
    return env


def is_warm(env, distro='debian', release='bookworm', arch='amd64'):
    """True if the debootstrap tarball of an earlier build is cached."""
    return os.path.isfile(os.path.join(
        env['DIB_IMAGE_CACHE'],
        'debootstrap-%s-%s-%s.tar.gz' % (distro, release, arch)))


def build(command, output_dir, env, name=None, timeout=3600):
    """Run vnf_images/<command>; BuildResult, or BuildFailed."""
    os.makedirs(output_dir, exist_ok=True)
    log = os.path.join(output_dir, command + '.log')
    argv = [os.path.join(VNF_IMAGES, command), '-o', output_dir]
    if name:
        argv += ['-n', name]
    warm = is_warm(env)
    started = time.monotonic()
    with open(log, 'w') as stream:
        proc = subprocess.run(argv, env=env, stdout=stream,
                              stderr=subprocess.STDOUT, timeout=timeout)
    seconds = time.monotonic() - started
    with open(log, errors='replace') as stream:
        output = stream.read()
    if proc.returncode != 0:
        raise BuildFailed('%s exited %d; log %s ends:\n%s'
                          % (command, proc.returncode, log,
                             '\n'.join(output.splitlines()[-40:])))
    match = re.search(r'^Image: (\S+) ', output, re.M)
    if not match or not os.path.isfile(match.group(1)):
        raise BuildFailed('%s printed no image path; log %s' % (command, log))
    image = match.group(1)
    printed = {}
    for label in ('Kernel', 'Ramdisk', 'Command line'):
        found = re.search(r'^%s: (\S+)' % label, output, re.M)
        printed[label] = found.group(1) if found else None
    return BuildResult(image=image, seconds=seconds,
                       size_bytes=os.path.getsize(image), warm=warm,
                       log=log, output=output, kernel=printed['Kernel'],
                       initrd=printed['Ramdisk'],
                       cmdline_file=printed['Command line'])
