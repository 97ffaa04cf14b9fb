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

"""The DPDK PROX builds against: its version and its driver-SDK headers.

The distributions' ``libdpdk-dev`` leaves out the driver-SDK headers PROX
includes (``ethdev_driver.h``, ``bus_pci_driver.h``, ...). They are taken
from the same DPDK version's Debian source package, fetched with a private
apt configuration whose deb-src lines are twins of the system's own
distribution sources: the system's apt configuration and state are not
touched.

Standard library only (installed into the images with epa_chain.prox).
"""

import glob
import lzma
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import zlib

# The driver-SDK headers PROX includes, as laid out in DPDK's source tree.
SDK_HEADERS = (
    'lib/eal/include/bus_driver.h',
    'lib/eal/include/dev_driver.h',
    'lib/ethdev/ethdev_driver.h',
    'lib/ethdev/ethdev_pci.h',
    'lib/ethdev/ethdev_vdev.h',
    'drivers/bus/pci/bus_pci_driver.h',
    'drivers/bus/vdev/bus_vdev_driver.h',
    'drivers/bus/pci/private.h',
)
SOURCES_LIST = '/etc/apt/sources.list'
SOURCES_PARTS = '/etc/apt/sources.list.d'
OS_RELEASE = '/etc/os-release'


class SdkError(Exception):
    """DPDK or its headers cannot be had; the message says how to fix it."""


def run_tool(argv, cwd=None, env=None, log=None, timeout=None):
    """Run argv; CompletedProcess with text output (or into log).

    Never waits on a terminal (stdin is /dev/null); a tool that does not
    finish in `timeout` seconds is killed and reported as exit 124.
    """
    try:
        if log is not None:
            return subprocess.run(argv, cwd=cwd, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return subprocess.CompletedProcess(argv, 127, '',
                                           '%s: not found' % argv[0])
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            argv, 124, '', 'error: %s gave no answer in %d s' % (
                argv[0], timeout))


def tool_error(text):
    """The line of a tool's output that says why: its error, else the last."""
    lines = [line.strip() for line in (text or '').splitlines()
             if line.strip()]
    for line in lines:
        if line.startswith(('fatal:', 'E:', 'ERROR:', 'error:')):
            return line
    return lines[-1] if lines else 'no output'


def safe_name(text):
    """text usable as a file name (a package version: 22.11.11-0+deb12u1)."""
    return re.sub(r'[^A-Za-z0-9._-]', '_', text)


def dpdk_versions():
    """(pkg-config version, Debian package version or None); SdkError."""
    result = run_tool(['pkg-config', '--modversion', 'libdpdk'])
    if result.returncode != 0:
        raise SdkError('no libdpdk-dev: pkg-config --modversion libdpdk '
                       'failed (%s); apt-get install libdpdk-dev'
                       % tool_error(result.stderr))
    package = run_tool(['dpkg-query', '-W', '-f=${Version}', 'libdpdk-dev'])
    debian = package.stdout.strip() if package.returncode == 0 else None
    return result.stdout.strip(), debian or None


def _dpdk_include_dirs():
    result = run_tool(['pkg-config', '--cflags-only-I', 'libdpdk'])
    return [word[2:] for word in result.stdout.split()
            if word.startswith('-I')]


def has_sdk_headers(include_dirs=None):
    """True if DPDK's own include dirs already hold the SDK headers.

    DPDK built with -Denable_driver_sdk=true installs them; then nothing
    needs fetching.
    """
    if include_dirs is None:
        include_dirs = _dpdk_include_dirs()
    names = {os.path.basename(h) for h in SDK_HEADERS} - {'private.h'}
    found = set()
    for directory in include_dirs:
        found.update(n for n in names
                     if os.path.isfile(os.path.join(directory, n)))
    return found == names


def os_codename(path=OS_RELEASE):
    try:
        with open(path) as stream:
            for line in stream:
                key, _sep, value = line.strip().partition('=')
                if key == 'VERSION_CODENAME':
                    return value.strip('"\'') or None
    except OSError:
        pass
    return None


def _is_distribution_suite(suite, codename):
    if codename is None:
        return True
    base = suite.split('/')[0]
    return base == codename or base.startswith(codename + '-')


def _one_line_entries(text):
    """(options, uri, suite, components) of every `deb` line."""
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line.startswith('deb '):
            continue
        options = ''
        rest = line[4:].strip()
        if rest.startswith('['):
            options, _sep, rest = rest[1:].partition(']')
            options = options.strip()
        words = rest.split()
        if len(words) >= 2:
            yield options, words[0], words[1], words[2:]


def _deb822_entries(text):
    for stanza in re.split(r'\n\s*\n', text):
        fields = {}
        key = None
        for line in stanza.splitlines():
            if line.startswith('#'):
                continue
            if line[:1] in (' ', '\t') and key:
                fields[key] += ' ' + line.strip()
                continue
            if ':' in line:
                key, value = line.split(':', 1)
                key = key.strip().lower()
                fields[key] = value.strip()
        if 'deb' not in fields.get('types', '').split():
            continue
        if fields.get('enabled', 'yes').lower() == 'no':
            continue
        options = []
        for field, option in (('signed-by', 'signed-by'),
                              ('architectures', 'arch'),
                              ('trusted', 'trusted')):
            value = fields.get(field)
            # An inline key block cannot go on a one-line entry.
            if value and '\n' not in value and ' ' not in value:
                options.append('%s=%s' % (option, value))
        for uri in fields.get('uris', '').split():
            for suite in fields.get('suites', '').split():
                yield (' '.join(options), uri, suite,
                       fields.get('components', '').split())


def deb_src_lines(sources_list=SOURCES_LIST, parts_dir=SOURCES_PARTS,
                  codename=None):
    """deb-src twins of the system's deb entries for the distribution.

    Only entries whose suite is the distribution's (codename, codename-*)
    are kept: third-party repositories have no dpdk source package and may
    not be reachable. Both the one-line (.list) and deb822 (.sources)
    formats are read; disabled files (other suffixes) are not.
    """
    files = [sources_list] if os.path.isfile(sources_list) else []
    if os.path.isdir(parts_dir):
        files += sorted(glob.glob(os.path.join(parts_dir, '*.list')) +
                        glob.glob(os.path.join(parts_dir, '*.sources')))
    lines = []
    for path in files:
        with open(path, errors='replace') as stream:
            text = stream.read()
        entries = (_deb822_entries(text) if path.endswith('.sources')
                   else _one_line_entries(text))
        for options, uri, suite, components in entries:
            if not _is_distribution_suite(suite, codename):
                continue
            line = 'deb-src %s%s %s %s' % (
                '[%s] ' % options if options else '', uri, suite,
                ' '.join(components))
            if line.strip() not in lines:
                lines.append(line.strip())
    return lines


def _apt_options(private):
    # Everything apt writes goes to the private directory.
    return ['-o', 'Dir::Etc::SourceList=%s'
            % os.path.join(private, 'sources.list'),
            '-o', 'Dir::Etc::SourceParts=/dev/null',
            '-o', 'Dir::State::Lists=%s' % os.path.join(private, 'lists'),
            '-o', 'Dir::Cache=%s' % os.path.join(private, 'cache'),
            '-o', 'Debug::NoLocking=1',
            '-o', 'APT::Sandbox::User=root']


def fetch_dpdk_orig(debian_version, workdir, say=None):
    """Download dpdk=VERSION's source package; the orig tarball's path."""
    say = say or (lambda message: None)
    private = os.path.join(workdir, 'apt')
    for sub in ('lists/partial', 'cache/archives/partial'):
        os.makedirs(os.path.join(private, sub), exist_ok=True)
    lines = deb_src_lines(codename=os_codename())
    if not lines:
        raise SdkError('apt-get source dpdk=%s failed: no deb entries of '
                       'the distribution in %s or %s to derive deb-src '
                       'lines from' % (debian_version, SOURCES_LIST,
                                       SOURCES_PARTS))
    with open(os.path.join(private, 'sources.list'), 'w') as stream:
        stream.write('\n'.join(lines) + '\n')
    say('fetching the dpdk=%s source package through %d deb-src entries'
        % (debian_version, len(lines)))
    options = _apt_options(private)
    update = run_tool(['apt-get', '-q'] + options + ['update'], timeout=900)
    download = os.path.join(workdir, 'download')
    os.makedirs(download, exist_ok=True)
    argv = ['apt-get', '-q'] + options + [
        'source', '--download-only', 'dpdk=%s' % debian_version]
    result = run_tool(argv, cwd=download, timeout=1800)
    if result.returncode != 0:
        reason = tool_error(result.stderr or result.stdout)
        if update.returncode != 0:
            reason += ' (apt-get update: %s)' % tool_error(
                update.stderr or update.stdout)
        raise SdkError('apt-get source dpdk=%s failed: %s; a deb-src '
                       'entry for the distribution mirror must be '
                       'reachable (derived from %s)'
                       % (debian_version, reason, SOURCES_LIST + ', ' +
                          SOURCES_PARTS))
    found = sorted(glob.glob(os.path.join(download, 'dpdk_*.orig.tar.*')))
    if not found:
        raise SdkError('apt-get source dpdk=%s downloaded no '
                       'dpdk_*.orig.tar.* into %s'
                       % (debian_version, download))
    return found[0]


def extract_sdk_headers(orig_tarball, dest):
    """Copy SDK_HEADERS from a DPDK source tarball, flattened, into dest."""
    wanted = {h: os.path.basename(h) for h in SDK_HEADERS}
    found = {}
    try:
        with tarfile.open(orig_tarball) as archive:
            for member in archive:
                if not member.isfile():
                    continue
                # Strip the top directory (dpdk-stable-22.11.11/).
                relative = member.name.split('/', 1)[-1]
                if relative in wanted and relative not in found:
                    stream = archive.extractfile(member)
                    found[relative] = stream.read()
    except (tarfile.TarError, OSError, EOFError, zlib.error,
            lzma.LZMAError) as error:
        raise SdkError('cannot read the DPDK source tarball %s: %s; remove '
                       'it and run again' % (orig_tarball, error))
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise SdkError('%s lacks the DPDK SDK header(s) %s: is it a DPDK '
                       '22.11-or-later source package?'
                       % (orig_tarball, ', '.join(missing)))
    os.makedirs(dest, exist_ok=True)
    for relative, data in found.items():
        with open(os.path.join(dest, wanted[relative]), 'wb') as stream:
            stream.write(data)
    return dest


def sdk_headers(cache_dir, dpdk_version, debian_version, say=None):
    """A directory with the SDK headers for this DPDK, cached; or None.

    None when DPDK's own include directories already have them.
    """
    if has_sdk_headers():
        return None
    if not debian_version:
        raise SdkError('DPDK %s lacks the driver-SDK headers and is not '
                       "Debian's libdpdk-dev, whose source package "
                       'could provide them: install libdpdk-dev, or DPDK '
                       'built with -Denable_driver_sdk=true'
                       % dpdk_version)
    final = os.path.join(cache_dir, 'dpdk-sdk-headers',
                         safe_name(debian_version))
    if all(os.path.isfile(os.path.join(final, os.path.basename(h)))
           for h in SDK_HEADERS):
        return final
    os.makedirs(os.path.dirname(final), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(final),
                                     prefix='.fetch-') as work:
        orig = fetch_dpdk_orig(debian_version, work, say)
        staged = extract_sdk_headers(orig, os.path.join(work, 'headers'))
        shutil.rmtree(final, ignore_errors=True)
        os.rename(staged, final)
    return final
