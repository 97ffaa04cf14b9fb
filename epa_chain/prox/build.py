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

"""Build PROX from a pinned samplevnf source against the distribution's DPDK.

PROX (samplevnf ``VNFs/DPPD-PROX``) builds with meson against the
distribution's ``libdpdk-dev`` once the driver-SDK headers it includes
(``ethdev_driver.h``, ``bus_pci_driver.h``, ...), which ``libdpdk-dev``
leaves out, are added from the same DPDK version's Debian source package.
The source package is fetched with a private apt configuration (deb-src
twins of the system's own distribution sources); the system's apt state is
not touched.

The source is a samplevnf tarball (.tar.gz, .tgz, .tar.xz), a git URL
(``URL#REF`` for a branch, tag or commit) or a directory (a samplevnf tree
or DPPD-PROX itself). It is hostile until checked (`check_source`): it
never starts with '-', a URL has one of GIT_SCHEMES (or is ``user@host:path``
for ssh), every git command ends its options before it (``--``), git may
use those protocols only, and a tarball's members are refused, by name, if
they would land outside the tree or are devices or links out of it
(extracted with tarfile's ``data`` filter too). The cache directory holds
a binary run as root: it must be owned by this user (or root) and not
writable by others. Builds are cached by (source identity, DPDK version)
under ``~/.cache/epa-chain/prox`` (``EPA_CHAIN_PROX_CACHE``); an entry is
renamed into place only once complete, so a killed build leaves none.

One source edit is made before meson (`SOURCE_PATCHES`): handle_gen.c
names each gen task's flow table after its core only, so a second gen
task on one core fails in rte_hash_create() and PROX aborts; the edit
adds the task's index to the name, which lets gen_config's compact layout
run every gen task on one core. The edit's digest is part of the cache
entry's name: a binary built without it is never reused.

Standard library only: this module is installed into the VNF images and
runs there as ``python3 -m epa_chain.prox.build --source SRC``.
"""

import argparse
import contextlib
import copy
import dataclasses
import datetime
import fcntl
import hashlib
import json
import lzma
import os
import re
import shutil
import stat
import sys
import tarfile
import tempfile
import time
import typing
import urllib.parse
import zlib

from epa_chain import outputs
from epa_chain.prox import dpdk_sdk

# The PROX environment variables, declared here once: this module reads
# the source and the cache; prox/binary.py (what `epa-chain local` runs)
# the binary too, and the tests read all three from here.
BINARY_VARIABLE = 'EPA_CHAIN_PROX_BINARY'
SOURCE_VARIABLE = 'EPA_CHAIN_PROX_SOURCE'
CACHE_VARIABLE = 'EPA_CHAIN_PROX_CACHE'
DEFAULT_CACHE = os.path.join('~', '.cache', 'epa-chain', 'prox')
MANIFEST = 'manifest.json'
BINARY = 'prox'
PROX_SUBDIR = os.path.join('VNFs', 'DPPD-PROX')
TARBALL_SUFFIXES = ('.tar.gz', '.tgz', '.tar.xz', '.txz', '.tar')
# Debian package -> a program it provides (None: a library, by dpkg only).
BUILD_PACKAGES = (
    ('meson', 'meson'),
    ('ninja-build', 'ninja'),
    ('pkg-config', 'pkg-config'),
    ('gcc', 'cc'),
    ('git', 'git'),          # PROX's meson.build runs `git describe`
    ('dpkg-dev', None),      # apt-get source
    ('libdpdk-dev', None),
    ('liblua5.3-dev', None),
    ('libedit-dev', None),
    ('libpcap-dev', None),
    ('libncurses-dev', None),
)
LOG_TAIL_LINES = 15
GIT_SCHEMES = ('https', 'http', 'git', 'ssh', 'file')
# Whatever a URL, a submodule or a redirect asks for, git uses only these.
GIT_ENV = {'GIT_ALLOW_PROTOCOL': ':'.join(GIT_SCHEMES),
           'GIT_TERMINAL_PROMPT': '0'}
_HEX40 = re.compile(r'[0-9a-f]{40}')
_URL = re.compile(r'([A-Za-z][A-Za-z0-9+.-]*)://(.*)', re.S)
_SCP_LIKE = re.compile(r'([A-Za-z0-9._-]+)@([A-Za-z0-9.-]+):(.+)', re.S)
_TRANSPORT = re.compile(r'[A-Za-z][A-Za-z0-9+.-]*::')
_REF = re.compile(r'[A-Za-z0-9_][A-Za-z0-9._/-]*')
_CONTROL = re.compile(r'[\x00-\x1f\x7f]')


class BuildError(Exception):
    """A build step failed; the message names it and says how to fix it."""


class InputError(BuildError):
    """A source, cache directory or path refused: bad input, nothing built.

    `option` names what was given (--source, --cache-dir, ...), `reason`
    says what is wrong and the fix; str() is 'OPTION VALUE: REASON'.
    """

    def __init__(self, option, value, reason):
        super().__init__('%s %s: %s' % (option, _shown(value), reason))
        self.option = option
        self.value = value
        self.reason = reason


def _shown(value):
    """A value on one line: quoted if it holds anything unusual."""
    text = '' if value is None else str(value)
    return text if text and re.fullmatch(r'[\w./:@#~+-]+', text) \
        else repr(text)


@dataclasses.dataclass(frozen=True)
class SourcePatch:
    """Replace one exact line of a PROX source file (DPPD-PROX relative)."""

    path: str
    why: str
    old: str
    new: str

    def apply(self, text):
        """The patched text; unchanged if already patched; BuildError."""
        if self.new in text:
            return text
        if text.count(self.old) != 1:
            raise BuildError(
                'cannot patch %s (%s): expected exactly one line %r, found '
                '%d; this samplevnf version differs from the one the patch '
                'was written for: update SOURCE_PATCHES in '
                'epa_chain/prox/build.py' % (self.path, self.why,
                                             self.old.strip(),
                                             text.count(self.old)))
        return text.replace(self.old, self.new)


# Each gen task's flow table gets the task's index in its name, not only
# the core's (rte_hash names must be unique): two gen tasks on one core.
# "A001_00_hash_gen_table" and rte_hash's "HT_" prefix fit its 32 bytes.
GEN_HASH_NAMES = 'unique gen flow table name per task'
SOURCE_PATCHES = (
    SourcePatch(
        path='handle_gen.c',
        why=GEN_HASH_NAMES,
        old='sprintf(hash_name, "A%03d_hash_gen_table", '
            'targ->lconf->id);',
        new='sprintf(hash_name, "A%03d_%02d_hash_gen_table", '
            'targ->lconf->id, targ->task); /* epa-chain */'),
)


def patches_digest(patches=None):
    """A short digest of the source edits, part of the cache key."""
    digest = hashlib.sha256()
    for patch in SOURCE_PATCHES if patches is None else patches:
        for field in (patch.path, patch.old, patch.new):
            digest.update(field.encode() + b'\0')
    return digest.hexdigest()[:8]


def has_patch(binary, why):
    """Whether `binary` is a build of this module with the edit `why`.

    Known from the manifest next to it (a cache entry); False for a
    binary from elsewhere, which may lack it.
    """
    try:
        with open(os.path.join(os.path.dirname(os.path.realpath(binary)),
                               MANIFEST)) as stream:
            manifest = json.load(stream)
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and why in (
        manifest.get('source_patches') or ())


def patch_source(prox, patches=None):
    """Apply the source edits in the DPPD-PROX tree `prox`; BuildError."""
    for patch in SOURCE_PATCHES if patches is None else patches:
        path = os.path.join(prox, patch.path)
        try:
            with open(path) as stream:
                text = stream.read()
        except OSError as error:
            raise BuildError('cannot patch %s (%s): %s' % (
                path, patch.why, error))
        patched = patch.apply(text)
        if patched != text:
            with open(path, 'w') as stream:
                stream.write(patched)


_last_line = dpdk_sdk.tool_error
_safe = dpdk_sdk.safe_name


def _run(argv, **kwargs):
    return dpdk_sdk.run_tool(argv, **kwargs)


def dpdk_versions():
    """(pkg-config version, Debian package version or None); BuildError."""
    try:
        return dpdk_sdk.dpdk_versions()
    except dpdk_sdk.SdkError as error:
        raise BuildError(str(error))


def sdk_headers(cache_dir, dpdk_version, debian_version, say=None):
    """The SDK headers' directory (None: DPDK has them); BuildError."""
    try:
        return dpdk_sdk.sdk_headers(cache_dir, dpdk_version, debian_version,
                                    say)
    except dpdk_sdk.SdkError as error:
        raise BuildError(str(error))


class Source:
    """Where PROX comes from and what identifies that content."""

    def __init__(self, kind, location, digest, ref=None, commit=None):
        self.kind = kind          # 'tarball', 'git' or 'directory'
        self.location = location  # absolute path or URL
        self.digest = digest      # identity of the content
        self.ref = ref            # git: what was asked for
        self.commit = commit      # samplevnf commit, if known

    def __repr__(self):
        return 'Source(%s %s %s)' % (self.kind, self.location, self.digest)


# -- the source ------------------------------------------------------------


def _is_tarball(path):
    return path.endswith(TARBALL_SUFFIXES)


def _is_tarfile(path):
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


def split_git_source(source):
    """'URL#REF' -> (URL, REF or None)."""
    url, _sep, ref = source.partition('#')
    return url, (ref or None)


def is_git_url(source):
    """A URL of GIT_SCHEMES, or ssh's user@host:path (not checked here)."""
    url = split_git_source(source)[0]
    return bool(_URL.fullmatch(url) or _SCP_LIKE.fullmatch(url))


def check_source(source, option='--source'):
    """Refuse a source that is not a known URL or a plain path; InputError.

    Syntax only (nothing is fetched or read): no leading '-' (git and tar
    would take it for an option), no control characters, no git transport
    syntax (``ext::...``), a URL's scheme in GIT_SCHEMES and its host not
    an option, a ref that is a branch, tag or commit name.
    """
    if not source:
        raise InputError(option, '', 'no PROX source given: pass --source '
                         '(a samplevnf tarball, git URL or directory) or '
                         'set %s' % SOURCE_VARIABLE)
    if _CONTROL.search(source):
        raise InputError(option, source, 'holds control characters; give '
                         'a path or a URL')
    if source.startswith('-'):
        raise InputError(option, source, 'starts with \'-\', which git and '
                         'tar would read as an option; give a URL or a path '
                         '(./%s for a file named so)' % source)
    if _TRANSPORT.match(source):
        raise InputError(option, source, 'git transport syntax (NAME::) is '
                         'not accepted; give a URL of %s or a path'
                         % ', '.join(s + '://' for s in GIT_SCHEMES))
    url, ref = split_git_source(source)
    scheme = _URL.fullmatch(url)
    scp = _SCP_LIKE.fullmatch(url)
    if scheme:
        if scheme.group(1).lower() not in GIT_SCHEMES:
            raise InputError(option, source, 'URL scheme %r is not one of '
                             '%s; give such a URL or a local path' % (
                                 scheme.group(1), ', '.join(GIT_SCHEMES)))
        try:
            parts = urllib.parse.urlsplit(url)
            parts.port
        except ValueError as error:
            raise InputError(option, source, 'not a URL (%s); give one such '
                             'as https://github.com/opnfv/samplevnf.git'
                             % error) from None
        if (parts.hostname or '').startswith('-') or \
                (parts.username or '').startswith('-') or \
                (scheme.group(1).lower() != 'file' and not parts.hostname):
            raise InputError(option, source, 'the URL\'s host is missing or '
                             'starts with \'-\'; give a URL such as '
                             'https://github.com/opnfv/samplevnf.git')
        if ' ' in url:
            raise InputError(option, source, 'a URL holds no spaces')
    elif scp and scp.group(1).startswith('-') or \
            scp and scp.group(2).startswith('-'):
        raise InputError(option, source, 'the user or host starts with '
                         '\'-\'; give USER@HOST:PATH or an ssh:// URL')
    if (scheme or scp) and ref is not None and not (
            _REF.fullmatch(ref) and '..' not in ref and
            not ref.endswith(('/', '.lock', '.'))):
        raise InputError(option, source, 'the ref %r after # is not a '
                         'branch, tag or commit name' % ref)
    return source


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as stream:
        for block in iter(lambda: stream.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def _is_build_dir(name):
    return name in ('.git', 'build') or name.startswith('build-')


def tree_digest(top):
    """sha256 over a tree's relative paths, modes and contents.

    Build directories and VCS metadata are left out: they are not source.
    """
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if not _is_build_dir(d))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            relative = os.path.relpath(path, top)
            info = os.lstat(path)
            digest.update(relative.encode() + b'\0')
            if stat.S_ISLNK(info.st_mode):
                digest.update(b'l' + os.readlink(path).encode())
            elif stat.S_ISREG(info.st_mode):
                digest.update(b'x' if info.st_mode & 0o111 else b'f')
                digest.update(sha256_file(path).encode())
            digest.update(b'\0')
    return digest.hexdigest()


def prox_dir(top):
    """The DPPD-PROX directory in a samplevnf tree, or the tree itself."""
    for candidate in (os.path.join(top, PROX_SUBDIR), top):
        if (os.path.isfile(os.path.join(candidate, 'meson.build')) and
                os.path.isfile(os.path.join(candidate, 'main.c')) and
                os.path.isfile(os.path.join(candidate, 'version.h'))):
            return candidate
    return None


def _git_clean_head(path):
    """The HEAD commit of a git work tree without changes, else None."""
    head = _run(['git', '-C', path, 'rev-parse', 'HEAD'])
    if head.returncode != 0 or not _HEX40.fullmatch(head.stdout.strip()):
        return None
    dirty = _run(['git', '-C', path, 'status', '--porcelain',
                  '--untracked-files=normal', '--', '.'])
    if dirty.returncode != 0 or dirty.stdout.strip():
        return None
    return head.stdout.strip()


def _tarball_commit(path):
    """The commit `git archive` records in a tarball's pax header."""
    try:
        with tarfile.open(path) as archive:
            comment = archive.pax_headers.get('comment', '')
    except (tarfile.TarError, OSError, EOFError, zlib.error,
            lzma.LZMAError):
        return None
    return comment if _HEX40.fullmatch(comment) else None


def _git_env():
    env = dict(os.environ, **GIT_ENV)
    # ssh would ask on the terminal for an unknown host key: never wait.
    if 'GIT_SSH_COMMAND' not in env and 'GIT_SSH' not in env:
        env['GIT_SSH_COMMAND'] = 'ssh -o BatchMode=yes'
    return env


def resolve_git(url, ref=None):
    """The commit a git URL's ref (default HEAD) points at."""
    if ref and _HEX40.fullmatch(ref):
        return ref
    wanted = ref or 'HEAD'
    result = _run(['git', 'ls-remote', '--', url, wanted], env=_git_env(),
                  timeout=300)
    if result.returncode != 0:
        raise BuildError('git ls-remote %s failed: %s; check the URL and '
                         'the network' % (url, _last_line(result.stderr)))
    refs = {}
    for line in result.stdout.splitlines():
        commit, _tab, name = line.partition('\t')
        if _HEX40.fullmatch(commit):
            refs[name] = commit
    # An annotated tag's commit is the peeled entry.
    for name in ('refs/tags/%s^{}' % wanted, wanted,
                 'refs/heads/%s' % wanted, 'refs/tags/%s' % wanted):
        if name in refs:
            return refs[name]
    if refs and ref is None:
        return next(iter(refs.values()))
    raise BuildError('git source %s has no ref %r; give URL#BRANCH, '
                     'URL#TAG or URL#COMMIT' % (url, wanted))


def identify(source, option='--source'):
    """A Source for a tarball path, git URL or directory; BuildError.

    InputError (naming `option`) for a source refused or not found.
    """
    check_source(source, option)
    if is_git_url(source) and not os.path.exists(source):
        url, ref = split_git_source(source)
        commit = resolve_git(url, ref)
        return Source('git', url, commit, ref=ref, commit=commit)
    path = os.path.abspath(os.path.expanduser(source))
    if not os.path.exists(path):
        raise InputError(option, source, 'does not exist; give a samplevnf '
                         'tarball (.tar.gz/.tgz/.tar.xz), a git URL (%s) or '
                         'a directory' % ', '.join(
                             s + '://' for s in GIT_SCHEMES))
    if os.path.isfile(path):
        # Any tarball: DIB's source-repositories "file" type keeps no
        # suffix.
        if not _is_tarball(path) and not _is_tarfile(path):
            raise InputError(option, source, 'is a file but not a tarball '
                             '(.tar.gz, .tgz, .tar.xz)')
        unpack_tarball(path, option=option)   # refused before any work
        return Source('tarball', path, sha256_file(path),
                      commit=_tarball_commit(path))
    if not os.path.isdir(path):
        raise InputError(option, source, 'is neither a file nor a '
                         'directory; give a tarball or a samplevnf tree')
    prox = prox_dir(path)
    if prox is None:
        raise InputError(option, source, 'is not a samplevnf tree: neither '
                         '%s nor the directory itself holds PROX '
                         '(meson.build, main.c)' % os.path.join(
                             path, PROX_SUBDIR))
    commit = _git_clean_head(prox)
    digest = 'git-' + commit if commit else tree_digest(prox)
    return Source('directory', path, digest, commit=commit)


# -- building --------------------------------------------------------------


def missing_packages(need_source_package=True):
    """Build dependencies not installed (Debian packages), or [].

    A DPDK pkg-config finds (e.g. compiled into /usr/local) stands for
    libdpdk-dev; dpkg-dev (apt-get source) only matters when the SDK
    headers must be fetched.
    """
    missing = []
    have_dpkg = shutil.which('dpkg-query') is not None
    for package, program in BUILD_PACKAGES:
        if program and shutil.which(program):
            continue
        if package == 'libdpdk-dev' and _run(
                ['pkg-config', '--exists', 'libdpdk']).returncode == 0:
            continue
        if package == 'dpkg-dev' and not need_source_package:
            continue
        if have_dpkg:
            status = _run(['dpkg-query', '-W', '-f=${Status}', package])
            if status.returncode == 0 and \
                    status.stdout.strip().endswith(' installed'):
                continue
        elif program is None:
            continue   # no dpkg to ask: meson will say what is missing
        missing.append(package)
    return missing


def install_packages(packages, say=None):
    """apt-get install PACKAGES (root); BuildError on failure."""
    if not packages:
        return
    (say or (lambda message: None))('apt-get install %s' % ' '.join(packages))
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    result = _run(['apt-get', 'install', '-y', '-q'] + list(packages),
                  env=env, timeout=1800)
    if result.returncode != 0:
        raise BuildError('apt-get install %s failed: %s'
                         % (' '.join(packages),
                            _last_line(result.stderr or result.stdout)))


def cache_root(cache_dir=None):
    return os.path.abspath(os.path.expanduser(
        cache_dir or os.environ.get(CACHE_VARIABLE) or DEFAULT_CACHE))


def cache_option(cache_dir=None):
    """What names the cache directory in a message."""
    if cache_dir:
        return '--cache-dir'
    return '$' + CACHE_VARIABLE if os.environ.get(CACHE_VARIABLE) \
        else 'the cache directory'


def check_cache_dir(root, option='--cache-dir', euid=None):
    """Refuse a cache others could plant a binary in: it is run as root.

    Missing is fine (build() creates it); it must otherwise be a directory
    owned by this user (or root) that neither group nor others may write.
    """
    euid = os.geteuid() if euid is None else euid
    try:
        info = os.stat(root)
    except FileNotFoundError:
        return root
    except OSError as error:
        raise InputError(option, root, 'cannot be read: %s' % (
            error.strerror or error))
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(option, root, 'is not a directory; give a '
                         'directory for the cache')
    why = outputs.foreign_control(info, euid)
    if why:
        raise InputError(option, root, '%s: they could swap the PROX binary '
                         'this runs (as root, by epa-chain local); chmod '
                         'go-w it, or use a cache of your own' % why)
    return root


def check_install(path, option='--install'):
    """Refuse an install path that is not, or cannot become, a file."""
    target = os.path.abspath(path)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise InputError(option, path, 'exists and is not a regular file '
                         '(a directory, link or device is never replaced); '
                         'give a file path such as /usr/local/bin/prox')
    if not os.path.isdir(os.path.dirname(target)):
        raise InputError(option, path, 'its directory %s does not exist'
                         % os.path.dirname(target))
    return target


def entry_name(source, dpdk_version, debian_version=None):
    """The cache entry's directory name for this source and DPDK."""
    digest = source.digest
    if digest.startswith('git-'):
        digest = digest[4:]
    return 'prox-%s-%s-p%s-dpdk-%s' % (
        source.kind, digest[:16], patches_digest(),
        _safe(debian_version or dpdk_version))


def _entry_binary(entry):
    path = os.path.join(entry, BINARY)
    if os.path.isfile(path) and os.access(path, os.X_OK) and \
            os.path.isfile(os.path.join(entry, MANIFEST)):
        return path
    return None


def cached(source, cache_dir=None):
    """The cached PROX binary for source and this host's DPDK, or None."""
    root = cache_root(cache_dir)
    try:
        check_cache_dir(root, cache_option(cache_dir))
        identity = identify(source)
        dpdk, debian = dpdk_versions()
    except BuildError:
        return None
    return _entry_binary(os.path.join(root, entry_name(identity, dpdk,
                                                       debian)))


def _stripped(name, strip):
    """A member's name in the tree: the top directory taken off if asked.

    None for the top directory itself.
    """
    if not strip:
        return name
    rest = name.split('/', 1)[1:]
    return rest[0] if rest and rest[0] else None


def _unsafe(member, name, link):
    """Why a member must not be extracted, or None.

    `name` and `link` are the member's names in the tree; its own names
    are judged too (stripping '/tmp/x' would hide that it is absolute).
    """
    if member.name.startswith('/'):
        return 'is an absolute path'
    if '..' in member.name.split('/') or '..' in name.split('/'):
        return 'climbs out of the tree (..)'
    if member.ischr() or member.isblk() or member.isfifo():
        return 'is a device or a FIFO'
    if not (member.isfile() or member.isdir() or member.issym() or
            member.islnk()):
        return 'is not a file, directory or link'
    if member.issym():
        target = os.path.normpath(os.path.join(os.path.dirname(name),
                                               member.linkname))
        if member.linkname.startswith('/') or target == '..' or \
                target.startswith('../'):
            return 'links out of the tree (to %s)' % member.linkname
    if member.islnk() and (link is None or
                           member.linkname.startswith('/') or
                           '..' in member.linkname.split('/')):
        return 'is a hard link out of the tree (to %s)' % member.linkname
    return None


def checked_members(members, strip, source, option='--source'):
    """The members to extract, renamed into the tree.

    InputError naming the first member that would land outside the tree,
    is a device or a FIFO, or links out of the tree.
    """
    checked = []
    for member in members:
        name = _stripped(member.name, strip)
        if name is None:
            continue
        link = _stripped(member.linkname, strip) if member.islnk() else None
        why = _unsafe(member, name, link)
        if why:
            raise InputError(option, source, 'tarball member %r %s; nothing '
                             'was extracted' % (member.name, why))
        member = copy.copy(member)
        member.name = name
        if member.islnk():
            member.linkname = link
        checked.append(member)
    return checked


# Python's own refusal of what escapes, where it has it (3.12, backports).
_DATA_FILTER = {'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}
_FILTER_ERROR = getattr(tarfile, 'FilterError', ())


def unpack_tarball(path, dest=None, option='--source'):
    """Check every member of a tarball; extract it into dest if given.

    InputError (naming `option`) for a damaged tarball or a member that is
    unsafe (checked_members), before anything is extracted.
    """
    try:
        with tarfile.open(path) as archive:
            members = archive.getmembers()
            tops = {m.name.split('/', 1)[0] for m in members}
            strip = len(tops) == 1 and any('/' in m.name for m in members)
            checked = checked_members(members, strip, path, option)
            if dest is not None:
                os.makedirs(dest)
                archive.extractall(dest, members=checked, **_DATA_FILTER)
    except _FILTER_ERROR as error:
        raise InputError(option, path, 'tarball member %r: %s; nothing '
                         'of it was used' % (error.tarinfo.name, error))
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError) as error:
        # tarfile's message lists every compression it tried, a line each.
        raise InputError(option, path, 'cannot be unpacked (%s): a damaged '
                         'or truncated tarball; fetch it again' % (
                             ' '.join(str(error).split()) or
                             type(error).__name__))
    except OSError as error:
        raise BuildError('cannot unpack PROX source tarball %s: %s'
                         % (path, error))


def _fetch_source(source, dest, log):
    """Put a copy of the source's tree at dest; its DPPD-PROX dir."""
    if source.kind == 'tarball':
        unpack_tarball(source.location, dest)
    elif source.kind == 'git':
        result = _run(['git', 'clone', '--quiet', '--', source.location,
                       dest], env=_git_env(), log=log, timeout=1800)
        if result.returncode == 0:
            # A commit id (checked: 40 hex digits), never an option.
            result = _run(['git', '-C', dest, 'checkout', '--quiet',
                           '--detach', source.commit, '--'],
                          env=_git_env(), log=log)
        if result.returncode != 0:
            log.flush()
            raise BuildError('git clone %s (%s) failed: %s' % (
                source.location, source.ref or 'HEAD',
                _last_line(_tail(log.name))))
    else:
        prox = prox_dir(source.location)
        shutil.copytree(prox, dest, symlinks=True,
                        ignore=lambda _dir, names: [
                            n for n in names if _is_build_dir(n)])
    prox = prox_dir(dest)
    if prox is None:
        raise BuildError('PROX source %s is not a samplevnf tree: no %s '
                         'with meson.build and main.c in it'
                         % (source.location, PROX_SUBDIR))
    return prox


def prox_version(prox_source):
    """PROX's version string from version.h (e.g. '22.12'), or None."""
    try:
        with open(os.path.join(prox_source, 'version.h')) as stream:
            text = stream.read()
    except OSError:
        return None
    values = dict(re.findall(r'#define\s+VERSION_(MINOR|REV)\s+(\d+)', text))
    if 'MINOR' not in values:
        return None
    minor = int(values['MINOR'])
    version = '%02d.%02d' % (minor // 100, minor % 100)
    if int(values.get('REV', 0)):
        version += '.%02d' % int(values['REV'])
    return version


def _meson_ninja(prox, headers, log, log_path):
    env = dict(os.environ)
    # PROX's meson.build runs `git describe`: never describe a repository
    # the cache happens to sit in.
    env['GIT_CEILING_DIRECTORIES'] = os.path.dirname(prox)
    setup = ['meson', 'setup', 'build', '--buildtype=release']
    if headers:
        setup.append('-Dc_args=-I%s' % headers)
    for argv in (setup, ['ninja', '-C', 'build']):
        log.write('$ %s\n' % ' '.join(argv))
        log.flush()
        result = _run(argv, cwd=prox, env=env, log=log)
        log.flush()
        if result.returncode != 0:
            raise BuildError('%s failed (exit %d); log %s ends:\n%s'
                             % (argv[0], result.returncode, log_path,
                                _tail(log_path)))
    binary = os.path.join(prox, 'build', BINARY)
    if not os.path.isfile(binary):
        raise BuildError('ninja finished but %s is missing; log %s'
                         % (binary, log_path))
    return binary


def _tail(path, lines=LOG_TAIL_LINES):
    try:
        with open(path, errors='replace') as stream:
            return '\n'.join(stream.read().splitlines()[-lines:])
    except OSError:
        return ''


@contextlib.contextmanager
def _locked(path):
    with open(path, 'w') as stream:
        fcntl.flock(stream, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(stream, fcntl.LOCK_UN)


def build(source, cache_dir=None, progress=None, option='--source'):
    """Build PROX from source (cached); the binary's absolute path.

    source: a samplevnf tarball, git URL (URL#REF) or directory, named by
    `option` in messages. progress: called with one-line messages. Raises
    BuildError; InputError (a subclass) for a source or cache refused.
    """
    say = progress or (lambda message: None)
    root = check_cache_dir(cache_root(cache_dir), cache_option(cache_dir))
    identity = identify(source, option)
    dpdk, debian = dpdk_versions()
    name = entry_name(identity, dpdk, debian)
    final = os.path.join(root, name)
    binary = _entry_binary(final)
    if binary:
        say('cached: %s' % binary)
        return binary
    missing = missing_packages(
        need_source_package=not dpdk_sdk.has_sdk_headers())
    if missing:
        raise BuildError('missing build dependencies: %s; apt-get install '
                         '%s (or pass --install-deps)'
                         % (', '.join(missing), ' '.join(missing)))
    os.makedirs(root, mode=0o755, exist_ok=True)
    # One builder per entry; a killed one leaves only its staging dir,
    # which the next holder of the lock removes.
    with _locked(os.path.join(root, '.%s.lock' % name)):
        binary = _entry_binary(final)
        if binary:
            say('cached (built meanwhile): %s' % binary)
            return binary
        return _build_entry(identity, dpdk, debian, root, final, say)


def _build_entry(identity, dpdk, debian, root, final, say):
    started = time.monotonic()
    headers = sdk_headers(root, dpdk, debian, say)
    staging = os.path.join(root, '.staging-' + os.path.basename(final))
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    log_path = os.path.join(staging, 'build.log')
    try:
        with open(log_path, 'w') as log:
            say('unpacking %s %s' % (identity.kind, identity.location))
            prox = _fetch_source(identity, os.path.join(staging, 'src'), log)
            patch_source(prox)
            say('building PROX (%s) against DPDK %s%s'
                % (prox_version(prox) or 'version unknown', dpdk,
                   ' with SDK headers %s' % headers if headers else ''))
            built = _meson_ninja(prox, headers, log, log_path)
        shutil.copy2(built, os.path.join(staging, BINARY))
        manifest = {
            'source': identity.location,
            'source_kind': identity.kind,
            'source_ref': identity.ref,
            'source_digest': identity.digest,
            'samplevnf_commit': identity.commit,
            'dpdk_version': dpdk,
            'dpdk_package_version': debian,
            'sdk_headers': headers,
            'prox_version': prox_version(prox),
            'source_patches': [p.why for p in SOURCE_PATCHES],
            'source_patches_digest': patches_digest(),
            'built_at': datetime.datetime.now(datetime.timezone.utc)
            .strftime('%Y-%m-%dT%H:%M:%SZ'),
            'build_seconds': round(time.monotonic() - started, 1),
        }
        shutil.rmtree(os.path.join(staging, 'src'))
        with open(os.path.join(staging, MANIFEST), 'w') as stream:
            json.dump(manifest, stream, indent=2, sort_keys=True)
            stream.write('\n')
        os.rename(staging, final)
    except BaseException:
        _keep_failed_log(root, final, log_path)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    binary = os.path.join(final, BINARY)
    say('built %s in %.0f s' % (binary, manifest['build_seconds']))
    return binary


def _keep_failed_log(root, final, log_path):
    if os.path.isfile(log_path):
        failed = os.path.join(root, 'failed')
        os.makedirs(failed, exist_ok=True)
        shutil.copy(log_path, os.path.join(
            failed, os.path.basename(final) + '.log'))


# -- command line (also `epa-chain prox build`) ----------------------------


def add_arguments(parser):
    parser.add_argument(
        '--source',
        help='samplevnf tarball (.tar.gz/.tgz/.tar.xz), git URL (URL#REF; '
             '%s, or USER@HOST:PATH) or directory (samplevnf or DPPD-PROX); '
             'default $%s' % (', '.join(s + '://' for s in GIT_SCHEMES),
                              SOURCE_VARIABLE))
    parser.add_argument(
        '--cache-dir', default=None,
        help='cache root, yours and writable by you only (default $%s or '
             '%s)' % (CACHE_VARIABLE, DEFAULT_CACHE))
    parser.add_argument(
        '--install-deps', action='store_true',
        help='apt-get install the missing build dependencies first')
    parser.add_argument(
        '--install', metavar='PATH',
        help='also copy the binary to PATH (e.g. /usr/local/bin/prox)')
    parser.add_argument('-q', '--quiet', action='store_true',
                        help='no progress lines on stderr')


def source_of(args):
    """(source, what names it): --source, else the environment."""
    if args.source is not None:
        return args.source, '--source'
    return os.environ.get(SOURCE_VARIABLE), '$' + SOURCE_VARIABLE


@dataclasses.dataclass(frozen=True)
class Request:
    """A build as the command line asked for it, checked (`request`)."""

    source: str
    #: what named the source: --source or $EPA_CHAIN_PROX_SOURCE
    option: str
    cache_dir: typing.Optional[str] = None
    install_deps: bool = False
    #: where to copy the binary (an absolute path), or None
    install: typing.Optional[str] = None
    quiet: bool = False


def request(args):
    """The Request of parsed arguments, every path and URL checked first.

    InputError naming the option (or variable) otherwise: nothing built.
    """
    if args.cache_dir is not None and not args.cache_dir.strip():
        # An empty value would mean the default cache: not what was named.
        raise InputError('--cache-dir', args.cache_dir, 'an empty path; '
                         'give a directory, or leave the option out')
    source, option = source_of(args)
    check_source(source, option)
    check_cache_dir(cache_root(args.cache_dir), cache_option(args.cache_dir))
    install = None
    if args.install is not None:
        install = check_install(args.install)
    return Request(source=source, option=option, cache_dir=args.cache_dir,
                   install_deps=args.install_deps, install=install,
                   quiet=args.quiet)


def run(the_request, prog='prox build'):
    """Build (or find cached) and install: the exit status.

    0 built or cached, 1 the build failed, 2 bad input. The binary's path
    goes to stdout, progress and the one error line to stderr.
    """
    def say(message):
        if not the_request.quiet:
            print('%s: %s' % (prog, message), file=sys.stderr, flush=True)
    try:
        if the_request.install_deps:
            install_packages(missing_packages(), say)
        binary = build(the_request.source, the_request.cache_dir,
                       progress=say, option=the_request.option)
        if the_request.install:
            # again: the build took minutes, the path may have changed
            binary = _install(binary, check_install(the_request.install))
            say('installed %s' % binary)
    except InputError as error:
        print('%s: %s' % (prog, error), file=sys.stderr)
        return 2
    except BuildError as error:
        print('%s: %s' % (prog, error), file=sys.stderr)
        return 1
    except OSError as error:
        print('%s: %s: %s' % (prog, error.filename or '', error.strerror or
                              error), file=sys.stderr)
        return 1
    print(binary)
    return 0


def _install(binary, target):
    """Copy to a new file beside target, then rename over it.

    A running prox keeps its old inode; a new name (mkstemp) follows
    nothing planted at a fixed one.
    """
    handle, staged = tempfile.mkstemp(dir=os.path.dirname(target),
                                      prefix='.%s.' % os.path.basename(
                                          target))
    os.close(handle)
    try:
        shutil.copyfile(binary, staged)
        os.chmod(staged, 0o755)
        os.rename(staged, target)
    except BaseException:
        os.unlink(staged)
        raise
    return target


def main(argv=None):
    prog = 'epa_chain.prox.build'
    parser = argparse.ArgumentParser(
        prog='python3 -m epa_chain.prox.build',
        description=__doc__.split('\n\n')[0])
    add_arguments(parser)
    try:
        the_request = request(parser.parse_args(argv))
    except InputError as error:
        print('%s: %s' % (prog, error), file=sys.stderr)
        return 2
    return run(the_request, prog=prog)


if __name__ == '__main__':
    sys.exit(main())
