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
or DPPD-PROX itself). Builds are cached by (source identity, DPDK version)
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
import dataclasses
import datetime
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tarfile
import time

from epa_chain.prox import dpdk_sdk

CACHE_VARIABLE = 'EPA_CHAIN_PROX_CACHE'
SOURCE_VARIABLE = 'EPA_CHAIN_PROX_SOURCE'
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
_HEX40 = re.compile(r'^[0-9a-f]{40}$')
_GIT_URL = re.compile(r'^(https?|git|ssh|file)://|^[\w.-]+@[\w.-]+:')


class BuildError(Exception):
    """A build step failed; the message names it and says how to fix it."""


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
    url = split_git_source(source)[0]
    return bool(_GIT_URL.match(url)) or (
        url.endswith('.git') and not os.path.isdir(url))


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
    if head.returncode != 0 or not _HEX40.match(head.stdout.strip()):
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
    except (tarfile.TarError, OSError):
        return None
    return comment if _HEX40.match(comment) else None


def resolve_git(url, ref=None):
    """The commit a git URL's ref (default HEAD) points at."""
    if ref and _HEX40.match(ref):
        return ref
    wanted = ref or 'HEAD'
    result = _run(['git', 'ls-remote', url, wanted], timeout=300)
    if result.returncode != 0:
        raise BuildError('git ls-remote %s failed: %s; check the URL and '
                         'the network' % (url, _last_line(result.stderr)))
    refs = {}
    for line in result.stdout.splitlines():
        commit, _tab, name = line.partition('\t')
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


def identify(source):
    """A Source for a tarball path, git URL or directory; BuildError."""
    if not source:
        raise BuildError('no PROX source given: pass --source (a samplevnf '
                         'tarball, git URL or directory) or set %s'
                         % SOURCE_VARIABLE)
    if is_git_url(source) and not os.path.exists(source):
        url, ref = split_git_source(source)
        commit = resolve_git(url, ref)
        return Source('git', url, commit, ref=ref, commit=commit)
    path = os.path.abspath(os.path.expanduser(source))
    if not os.path.exists(path):
        raise BuildError('PROX source %s does not exist; give a samplevnf '
                         'tarball (.tar.gz/.tgz/.tar.xz), a git URL or a '
                         'directory' % path)
    if os.path.isfile(path):
        # Any tarball: DIB's source-repositories "file" type keeps no
        # suffix.
        if not _is_tarball(path) and not _is_tarfile(path):
            raise BuildError('PROX source %s is a file but not a tarball '
                             '(.tar.gz, .tgz, .tar.xz)' % path)
        return Source('tarball', path, sha256_file(path),
                      commit=_tarball_commit(path))
    prox = prox_dir(path)
    if prox is None:
        raise BuildError('PROX source %s is not a samplevnf tree: neither '
                         '%s nor the directory itself holds PROX '
                         '(meson.build, main.c)'
                         % (path, os.path.join(path, PROX_SUBDIR)))
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
        identity = identify(source)
        dpdk, debian = dpdk_versions()
    except BuildError:
        return None
    return _entry_binary(os.path.join(root, entry_name(identity, dpdk,
                                                       debian)))


def _safe_members(archive, top_to_strip):
    for member in archive.getmembers():
        name = member.name
        parts = name.split('/', 1)
        if top_to_strip:
            if len(parts) < 2 or not parts[1]:
                continue
            name = parts[1]
        if name.startswith('/') or '..' in name.split('/'):
            raise BuildError('tarball member %s escapes the tree'
                             % member.name)
        if member.issym() or member.islnk():
            target = member.linkname
            if target.startswith('/') or '..' in target.split('/'):
                continue
        if not (member.isfile() or member.isdir() or member.issym()):
            continue
        member.name = name
        yield member


def _unpack_tarball(path, dest):
    try:
        with tarfile.open(path) as archive:
            names = [m.name for m in archive.getmembers()]
            tops = {n.split('/', 1)[0] for n in names}
            strip = len(tops) == 1 and any('/' in n for n in names)
            os.makedirs(dest)
            archive.extractall(dest, members=list(_safe_members(archive,
                                                                strip)))
    except (tarfile.TarError, OSError, EOFError) as error:
        raise BuildError('cannot unpack PROX source tarball %s: %s'
                         % (path, error))


def _fetch_source(source, dest, log):
    """Put a copy of the source's tree at dest; its DPPD-PROX dir."""
    if source.kind == 'tarball':
        _unpack_tarball(source.location, dest)
    elif source.kind == 'git':
        result = _run(['git', 'clone', '--quiet', source.location, dest],
                      log=log, timeout=1800)
        if result.returncode == 0:
            result = _run(['git', '-C', dest, 'checkout', '--quiet',
                           source.commit], log=log)
        if result.returncode != 0:
            raise BuildError('git clone %s (%s) failed; see %s'
                             % (source.location, source.ref or 'HEAD',
                                log.name))
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


def build(source, cache_dir=None, progress=None):
    """Build PROX from source (cached); the binary's absolute path.

    source: a samplevnf tarball, git URL (URL#REF) or directory. progress:
    called with one-line messages. Raises BuildError.
    """
    say = progress or (lambda message: None)
    root = cache_root(cache_dir)
    identity = identify(source)
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
    os.makedirs(root, exist_ok=True)
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
        '--source', default=os.environ.get(SOURCE_VARIABLE),
        help='samplevnf tarball (.tar.gz/.tgz/.tar.xz), git URL (URL#REF) '
             'or directory (samplevnf or DPPD-PROX); default $%s'
             % SOURCE_VARIABLE)
    parser.add_argument(
        '--cache-dir', default=None,
        help='cache root (default $%s or %s)'
             % (CACHE_VARIABLE, DEFAULT_CACHE))
    parser.add_argument(
        '--install-deps', action='store_true',
        help='apt-get install the missing build dependencies first')
    parser.add_argument(
        '--install', metavar='PATH',
        help='also copy the binary to PATH (e.g. /usr/local/bin/prox)')
    parser.add_argument('-q', '--quiet', action='store_true',
                        help='no progress lines on stderr')


def run(args, prog='prox build'):
    def say(message):
        if not args.quiet:
            print('%s: %s' % (prog, message), file=sys.stderr, flush=True)
    try:
        if args.install_deps:
            install_packages(missing_packages(), say)
        binary = build(args.source, args.cache_dir, progress=say)
        if args.install:
            # Copy then rename: a running prox keeps its old inode.
            target = os.path.abspath(args.install)
            staged = target + '.new'
            shutil.copy2(binary, staged)
            os.rename(staged, target)
            say('installed %s' % target)
            binary = target
    except BuildError as error:
        print('%s: %s' % (prog, error), file=sys.stderr)
        return 1
    print(binary)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python3 -m epa_chain.prox.build',
        description=__doc__.split('\n\n')[0])
    add_arguments(parser)
    return run(parser.parse_args(argv), prog='epa_chain.prox.build')


if __name__ == '__main__':
    sys.exit(main())
