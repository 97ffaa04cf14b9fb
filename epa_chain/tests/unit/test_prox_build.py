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

"""epa_chain.prox.build without compiling: sources, apt, cache, errors.

The tools (pkg-config, apt-get, meson, ninja, git ls-remote) are faked
where a real run would need the network or minutes; tarballs, trees and
the cache are real files in a temporary directory. The real build is in
functional/test_prox_build.py.
"""

import contextlib
import io
import json
import os
import subprocess
import tarfile
import tempfile
import unittest
from unittest import mock

from epa_chain import cli
from epa_chain.prox import build
from epa_chain.prox import dpdk_sdk
from epa_chain.tests import prox_binary

COMMIT = 'c97164903fc712487b26aa80edec3a96b6049074'
VERSION_H = '#define VERSION_MAJOR 0\n#define VERSION_MINOR 2212\n' \
            '#define VERSION_REV   0\n'


# The lines of samplevnf's handle_gen.c around the flow table's name.
HANDLE_GEN_C = (
    '\tstatic char hash_name[30];\n'
    '\tsprintf(hash_name, "A%03d_hash_gen_table", targ->lconf->id);\n'
    '\tstruct rte_hash_parameters hash_params = {\n')


def _write(path, text='', mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as stream:
        stream.write(text)
    os.chmod(path, mode)
    return path


def _samplevnf(top):
    """A minimal samplevnf tree: what identify() and prox_dir() look at."""
    prox = os.path.join(top, 'VNFs', 'DPPD-PROX')
    _write(os.path.join(prox, 'meson.build'), "project('dppd-prox', 'C')\n")
    _write(os.path.join(prox, 'main.c'), 'int main(void) { return 0; }\n')
    _write(os.path.join(prox, 'version.h'), VERSION_H)
    _write(os.path.join(prox, 'handle_gen.c'), HANDLE_GEN_C)
    _write(os.path.join(top, 'README'), 'samplevnf\n')
    return prox


def _tarball(path, top, comment=COMMIT, compression='gz'):
    """`git archive --prefix=samplevnf/` of top, as a pax tarball."""
    headers = {'comment': comment} if comment else {}
    with tarfile.open(path, 'w:' + compression, format=tarfile.PAX_FORMAT,
                      pax_headers=headers) as archive:
        archive.add(top, arcname='samplevnf')
    return path


def _done(stdout='', returncode=0, stderr=''):
    return subprocess.CompletedProcess([], returncode, stdout, stderr)


class TempDir(unittest.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix='prox-build-test-')
        self.addCleanup(lambda: subprocess.run(['rm', '-rf', self.tmp]))


class TestIdentify(TempDir):

    def test_tarball_digest_is_its_sha256_and_commit_from_git_archive(self):
        _samplevnf(os.path.join(self.tmp, 'tree'))
        path = _tarball(os.path.join(self.tmp, 's.tar.gz'),
                        os.path.join(self.tmp, 'tree'))
        source = build.identify(path)
        self.assertEqual('tarball', source.kind)
        self.assertEqual(build.sha256_file(path), source.digest)
        self.assertEqual(64, len(source.digest))
        self.assertEqual(COMMIT, source.commit)

    def test_xz_tarball_and_one_without_a_suffix(self):
        _samplevnf(os.path.join(self.tmp, 'tree'))
        xz = _tarball(os.path.join(self.tmp, 's.tar.xz'),
                      os.path.join(self.tmp, 'tree'), compression='xz')
        self.assertEqual('tarball', build.identify(xz).kind)
        # DIB's source-repositories "file" type drops the name.
        bare = os.path.join(self.tmp, 'samplevnf')
        os.rename(xz, bare)
        self.assertEqual('tarball', build.identify(bare).kind)

    def test_directory_samplevnf_or_dppd_prox_same_digest(self):
        prox = _samplevnf(os.path.join(self.tmp, 'tree'))
        whole = build.identify(os.path.join(self.tmp, 'tree'))
        alone = build.identify(prox)
        self.assertEqual('directory', whole.kind)
        # Only DPPD-PROX is built, so only it is digested.
        self.assertEqual(whole.digest, alone.digest)

    def test_tree_digest_follows_content_not_build_output(self):
        prox = _samplevnf(os.path.join(self.tmp, 'tree'))
        before = build.tree_digest(prox)
        _write(os.path.join(prox, 'build', 'prox'), 'binary')
        _write(os.path.join(prox, 'build-x86', 'prox'), 'binary')
        _write(os.path.join(prox, '.git', 'HEAD'), 'ref')
        self.assertEqual(before, build.tree_digest(prox))
        _write(os.path.join(prox, 'main.c'), 'int main(void) { return 1; }')
        self.assertNotEqual(before, build.tree_digest(prox))
        changed = build.tree_digest(prox)
        os.chmod(os.path.join(prox, 'main.c'), 0o755)
        self.assertNotEqual(changed, build.tree_digest(prox))

    def test_clean_git_checkout_is_identified_by_its_commit(self):
        top = os.path.join(self.tmp, 'tree')
        _samplevnf(top)
        git = ['git', '-C', top, '-c', 'user.name=t', '-c',
               'user.email=t@example.org']
        subprocess.run(['git', 'init', '-q', top], check=True)
        subprocess.run(git + ['add', '.'], check=True)
        subprocess.run(git + ['commit', '-qm', 'x'], check=True)
        head = subprocess.run(git + ['rev-parse', 'HEAD'], check=True,
                              capture_output=True, text=True).stdout.strip()
        source = build.identify(top)
        self.assertEqual('git-' + head, source.digest)
        self.assertEqual(head, source.commit)
        # A change makes it a tree again.
        _write(os.path.join(top, 'VNFs', 'DPPD-PROX', 'main.c'), 'changed')
        source = build.identify(top)
        self.assertIsNone(source.commit)
        self.assertEqual(64, len(source.digest))

    def test_git_url_resolved_with_ls_remote(self):
        listing = ('1111111111111111111111111111111111111111\tHEAD\n'
                   '2222222222222222222222222222222222222222\t'
                   'refs/heads/master\n'
                   '3333333333333333333333333333333333333333\t'
                   'refs/tags/v1\n'
                   '4444444444444444444444444444444444444444\t'
                   'refs/tags/v1^{}\n')
        url = 'https://example.org/samplevnf.git'
        with mock.patch.object(build, '_run',
                               return_value=_done(listing)) as run:
            self.assertEqual('2' * 40,
                             build.identify(url + '#master').digest)
            self.assertEqual('4' * 40, build.identify(url + '#v1').commit)
            self.assertEqual('1' * 40, build.identify(url).commit)
            source = build.identify(url + '#' + 'a' * 40)
        self.assertEqual('a' * 40, source.commit)
        self.assertEqual('git', source.kind)
        self.assertEqual(url, source.location)
        # Options end before the URL; git may use the known protocols only.
        self.assertEqual(['git', 'ls-remote', '--', url, 'master'],
                         run.call_args_list[0][0][0])
        self.assertEqual('https:http:git:ssh:file', run.call_args_list[0][1][
            'env']['GIT_ALLOW_PROTOCOL'])

    def test_git_url_errors(self):
        url = 'git@example.org:samplevnf'
        with mock.patch.object(build, '_run', return_value=_done(
                '', 128, "fatal: could not read from remote repository.\n"
                "Please make sure you have the correct access rights\n")):
            with self.assertRaisesRegex(
                    build.BuildError, r'^git ls-remote git@example.org:'
                    r'samplevnf failed: fatal: could not read'):
                build.identify(url)
        with mock.patch.object(build, '_run', return_value=_done('')):
            with self.assertRaisesRegex(build.BuildError, "no ref 'nope'"):
                build.identify(url + '#nope')

    def test_bad_sources_one_line_each(self):
        cases = [
            (os.path.join(self.tmp, 'missing.tar.gz'), 'does not exist'),
            (self.tmp, 'is not a samplevnf tree'),
            (_write(os.path.join(self.tmp, 'notes.txt'), 'x'),
             'is a file but not a tarball'),
            ('', 'no PROX source given: pass --source'),
        ]
        for source, message in cases:
            with self.subTest(source=source):
                with self.assertRaises(build.BuildError) as caught:
                    build.identify(source)
                self.assertIn(message, str(caught.exception))
                self.assertNotIn('\n', str(caught.exception))


class TestDebSrcLines(TempDir):

    def _lists(self, main_text=None, parts=None):
        sources = os.path.join(self.tmp, 'sources.list')
        if main_text is not None:
            _write(sources, main_text)
        parts_dir = os.path.join(self.tmp, 'sources.list.d')
        os.makedirs(parts_dir, exist_ok=True)
        for name, text in (parts or {}).items():
            _write(os.path.join(parts_dir, name), text)
        return dpdk_sdk.deb_src_lines(sources, parts_dir, codename='bookworm')

    def test_one_line_format(self):
        lines = self._lists(
            '# comment\n'
            'deb http://deb.debian.org/debian bookworm main contrib\n'
            'deb [signed-by=/usr/share/keyrings/k.gpg arch=amd64] '
            'http://security.debian.org/debian-security bookworm-security '
            'main  # trailing\n'
            'deb-src http://deb.debian.org/debian bookworm main\n'
            'deb https://packages.cloud.google.com/apt cloud-sdk-bookworm '
            'main\n')
        self.assertEqual(
            ['deb-src http://deb.debian.org/debian bookworm main contrib',
             'deb-src [signed-by=/usr/share/keyrings/k.gpg arch=amd64] '
             'http://security.debian.org/debian-security bookworm-security '
             'main'], lines)

    def test_deb822_format(self):
        lines = self._lists(parts={
            'debian.sources':
                'Types: deb\n'
                '# http://snapshot.debian.org/archive/debian/2025\n'
                'URIs: http://deb.debian.org/debian\n'
                'Suites: bookworm bookworm-updates\n'
                'Components: main\n'
                'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
                '\n'
                'Types: deb deb-src\n'
                'URIs: http://deb.debian.org/debian-security\n'
                'Suites: bookworm-security\n'
                'Components: main non-free-firmware\n'
                '\n'
                'Types: deb\n'
                'URIs: http://mirror.example.org/debian\n'
                'Suites: bookworm\n'
                'Components: main\n'
                'Enabled: no\n',
            'nodesource.sources':
                'Types: deb\nURIs: https://deb.nodesource.com/node_20.x\n'
                'Suites: nodistro\nComponents: main\n',
            'old.list.disabled':
                'deb http://deb.debian.org/debian bookworm-backports main\n',
        })
        key = '[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] '
        self.assertEqual(
            ['deb-src %shttp://deb.debian.org/debian bookworm main' % key,
             'deb-src %shttp://deb.debian.org/debian bookworm-updates main'
             % key,
             'deb-src http://deb.debian.org/debian-security '
             'bookworm-security main non-free-firmware'], lines)

    def test_nothing_of_the_distribution(self):
        self.assertEqual([], self._lists(
            'deb https://packages.cloud.google.com/apt cloud-sdk main\n'))

    def test_codename_from_os_release(self):
        path = _write(os.path.join(self.tmp, 'os-release'),
                      'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'
                      'VERSION_CODENAME=bookworm\n')
        self.assertEqual('bookworm', dpdk_sdk.os_codename(path))
        self.assertIsNone(dpdk_sdk.os_codename(os.path.join(self.tmp, 'no')))


class FakeTools:
    """pkg-config, dpkg-query and apt-get as build.py calls them."""

    def __init__(self, test, dpdk='22.11.11', debian='22.11.11-0+deb12u1'):
        self.test = test
        self.dpdk = dpdk
        self.debian = debian
        self.calls = []
        self.apt_source = None   # callable(cwd) -> CompletedProcess

    def __call__(self, argv, cwd=None, env=None, log=None, timeout=None):
        self.calls.append(list(argv))
        if argv[:2] == ['pkg-config', '--modversion']:
            return _done(self.dpdk + '\n') if self.dpdk else _done(
                '', 1, 'Package libdpdk was not found in the pkg-config '
                'search path.\n')
        if argv[:2] == ['dpkg-query', '-W']:
            return _done(self.debian) if self.debian else _done('', 1)
        if argv[0] == 'apt-get' and 'update' in argv:
            return _done('Hit:1 http://deb.debian.org/debian bookworm\n')
        if argv[0] == 'apt-get' and 'source' in argv:
            return self.apt_source(cwd)
        raise AssertionError('unexpected command %s' % argv)


class TestDpdkAndHeaders(TempDir):

    def test_no_libdpdk_dev(self):
        with mock.patch.object(dpdk_sdk, 'run_tool',
                               FakeTools(self, dpdk=None)):
            with self.assertRaisesRegex(
                    build.BuildError, r'^no libdpdk-dev: pkg-config '
                    r'--modversion libdpdk failed \(Package libdpdk was not '
                    r'found.*\); apt-get install libdpdk-dev$'):
                build.dpdk_versions()

    def test_versions(self):
        with mock.patch.object(dpdk_sdk, 'run_tool', FakeTools(self)):
            self.assertEqual(('22.11.11', '22.11.11-0+deb12u1'),
                             build.dpdk_versions())

    def _orig(self, headers=dpdk_sdk.SDK_HEADERS):
        top = os.path.join(self.tmp, 'dpdk-stable-22.11.11')
        for header in headers:
            _write(os.path.join(top, header), '/* %s */\n' % header)
        _write(os.path.join(top, 'lib', 'eal', 'include', 'rte_eal.h'), '')
        path = os.path.join(self.tmp, 'dpdk_22.11.11.orig.tar.xz')
        with tarfile.open(path, 'w:xz') as archive:
            archive.add(top, arcname='dpdk-stable-22.11.11')
        return path

    def test_headers_extracted_flat(self):
        dest = dpdk_sdk.extract_sdk_headers(self._orig(),
                                            os.path.join(self.tmp, 'h'))
        self.assertEqual(sorted(os.path.basename(h)
                                for h in dpdk_sdk.SDK_HEADERS),
                         sorted(os.listdir(dest)))
        with open(os.path.join(dest, 'bus_pci_driver.h')) as stream:
            self.assertEqual('/* drivers/bus/pci/bus_pci_driver.h */\n',
                             stream.read())

    def test_header_missing_in_the_source_package(self):
        orig = self._orig(dpdk_sdk.SDK_HEADERS[1:])
        with self.assertRaisesRegex(
                dpdk_sdk.SdkError, r'dpdk_22.11.11.orig.tar.xz lacks the DPDK '
                r'SDK header\(s\) lib/eal/include/bus_driver.h'):
            dpdk_sdk.extract_sdk_headers(orig, os.path.join(self.tmp, 'h'))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'h')))

    def _patch_sources(self):
        lists = os.path.join(self.tmp, 'sources.list')
        _write(lists, 'deb http://deb.debian.org/debian bookworm main\n')
        for name, value in (('SOURCES_LIST', lists),
                            ('SOURCES_PARTS', os.path.join(self.tmp, 'no'))):
            patcher = mock.patch.object(dpdk_sdk, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)
        patcher = mock.patch.object(dpdk_sdk, 'os_codename',
                                    return_value='bookworm')
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_source_package_fetched_with_private_apt_dirs_and_cached(self):
        self._patch_sources()
        orig = self._orig()
        tools = FakeTools(self)

        def apt_source(cwd):
            os.link(orig, os.path.join(cwd, os.path.basename(orig)))
            return _done()
        tools.apt_source = apt_source
        cache = os.path.join(self.tmp, 'cache')
        with mock.patch.object(dpdk_sdk, 'run_tool', tools), \
                mock.patch.object(dpdk_sdk, 'has_sdk_headers',
                                  return_value=False):
            headers = build.sdk_headers(cache, '22.11.11',
                                        '22.11.11-0+deb12u1')
            calls = len(tools.calls)
            # Per DPDK version: the second time, nothing is fetched.
            self.assertEqual(headers, build.sdk_headers(
                cache, '22.11.11', '22.11.11-0+deb12u1'))
        self.assertEqual(calls, len(tools.calls))
        self.assertEqual(os.path.join(cache, 'dpdk-sdk-headers',
                                      '22.11.11-0_deb12u1'), headers)
        self.assertEqual([os.path.join(cache, 'dpdk-sdk-headers')],
                         [os.path.join(cache, d) for d in os.listdir(cache)])
        source_call = tools.calls[-1]
        self.assertEqual(['source', '--download-only',
                          'dpdk=22.11.11-0+deb12u1'], source_call[-3:])
        options = ' '.join(source_call)
        for option in ('Dir::Etc::SourceParts=/dev/null',
                       'Dir::Etc::SourceList=', 'Dir::State::Lists=',
                       'Dir::Cache='):
            self.assertIn(option, options)
        # Nothing of the system's apt configuration is named.
        self.assertNotIn('/etc/apt', options)
        self.assertNotIn('/var/lib/apt', options)

    def test_apt_get_source_failure_is_one_clear_line(self):
        self._patch_sources()
        tools = FakeTools(self)
        tools.apt_source = lambda cwd: _done(
            'Reading package lists...\n', 100,
            "E: You must put some 'deb-src' URIs in your sources.list\n")
        with mock.patch.object(dpdk_sdk, 'run_tool', tools), \
                mock.patch.object(dpdk_sdk, 'has_sdk_headers',
                                  return_value=False):
            with self.assertRaises(build.BuildError) as caught:
                build.sdk_headers(os.path.join(self.tmp, 'c'), '22.11.11',
                                  '22.11.11-0+deb12u1')
        message = str(caught.exception)
        self.assertTrue(message.startswith(
            "apt-get source dpdk=22.11.11-0+deb12u1 failed: E: You must put "
            "some 'deb-src' URIs"), message)
        self.assertNotIn('\n', message)
        # Nothing half-fetched stays in the cache.
        self.assertEqual([], os.listdir(os.path.join(self.tmp, 'c',
                                                     'dpdk-sdk-headers')))

    def test_installed_sdk_headers_need_no_fetch(self):
        include = os.path.join(self.tmp, 'include')
        for header in dpdk_sdk.SDK_HEADERS:
            _write(os.path.join(include, os.path.basename(header)))
        self.assertTrue(dpdk_sdk.has_sdk_headers([include, '/nonexistent']))
        os.unlink(os.path.join(include, 'ethdev_driver.h'))
        self.assertFalse(dpdk_sdk.has_sdk_headers([include]))


class BuildTest(TempDir):
    """build() with a real tarball and cache, meson and ninja faked."""

    def setUp(self):
        super().setUp()
        _samplevnf(os.path.join(self.tmp, 'tree'))
        self.source = _tarball(os.path.join(self.tmp, 'samplevnf.tar.gz'),
                               os.path.join(self.tmp, 'tree'))
        self.cache = os.path.join(self.tmp, 'cache')
        self.compiles = []
        patches = (
            (build, 'dpdk_versions',
             {'return_value': ('22.11.11', '22.11.11-0+deb12u1')}),
            (build, 'sdk_headers', {'return_value': '/headers'}),
            (dpdk_sdk, 'has_sdk_headers', {'return_value': False}),
            (build, 'missing_packages', {'return_value': []}),
            (build, '_meson_ninja', {'side_effect': self._compile}))
        for module, name, kwargs in patches:
            patcher = mock.patch.object(module, name, **kwargs)
            patcher.start()
            self.addCleanup(patcher.stop)

    def _compile(self, prox, headers, log, log_path):
        self.compiles.append((prox, headers))
        with open(os.path.join(prox, 'handle_gen.c')) as stream:
            self.compiled_handle_gen = stream.read()
        log.write('compiling\n')
        return _write(os.path.join(prox, 'build', 'prox'), '#!/bin/sh\n',
                      0o755)

    def _entries(self):
        return sorted(os.listdir(self.cache))

    def test_build_then_cache_hit(self):
        messages = []
        binary = build.build(self.source, self.cache, messages.append)
        self.assertTrue(os.path.isabs(binary))
        self.assertTrue(os.access(binary, os.X_OK))
        entry = os.path.dirname(binary)
        self.assertEqual(
            'prox-tarball-%s-p%s-dpdk-22.11.11-0_deb12u1'
            % (build.sha256_file(self.source)[:16], build.patches_digest()),
            os.path.basename(entry))
        with open(os.path.join(entry, build.MANIFEST)) as stream:
            manifest = json.load(stream)
        self.assertEqual(self.source, manifest['source'])
        self.assertEqual(build.sha256_file(self.source),
                         manifest['source_digest'])
        self.assertEqual(COMMIT, manifest['samplevnf_commit'])
        self.assertEqual('22.11.11', manifest['dpdk_version'])
        self.assertEqual('22.12', manifest['prox_version'])
        self.assertIn('built_at', manifest)
        # The unpacked source is not kept; the log is.
        self.assertEqual(['build.log', 'manifest.json', 'prox'],
                         sorted(os.listdir(entry)))
        self.assertEqual(1, len(self.compiles))
        self.assertTrue(self.compiles[0][0].endswith('VNFs/DPPD-PROX'))

        self.assertEqual(binary, build.cached(self.source, self.cache))
        self.assertEqual(binary, build.build(self.source, self.cache,
                                             messages.append))
        self.assertEqual(1, len(self.compiles))
        self.assertIn('cached: %s' % binary, messages)

    def test_other_dpdk_version_is_another_entry(self):
        first = build.build(self.source, self.cache)
        build.dpdk_versions.return_value = ('23.11.2', '23.11.2-1')
        self.assertIsNone(build.cached(self.source, self.cache))
        second = build.build(self.source, self.cache)
        self.assertNotEqual(first, second)
        self.assertIn('dpdk-23.11.2-1', second)

    def test_cache_dir_from_the_environment(self):
        with mock.patch.dict(os.environ,
                             {build.CACHE_VARIABLE: self.cache}):
            binary = build.build(self.source)
        self.assertTrue(binary.startswith(self.cache + os.sep))

    def test_failed_build_leaves_no_entry_and_keeps_the_log(self):
        def fail(prox, headers, log, log_path):
            log.write('error: rte_ethdev.h: no such file\n')
            log.flush()
            raise build.BuildError('ninja failed (exit 1); log %s ends:\n%s'
                                   % (log_path, build._tail(log_path)))
        build._meson_ninja.side_effect = fail
        with self.assertRaisesRegex(build.BuildError, 'ninja failed'):
            build.build(self.source, self.cache)
        entries = self._entries()
        self.assertEqual(['failed'], [e for e in entries
                                      if not e.endswith('.lock')])
        self.assertIsNone(build.cached(self.source, self.cache))
        failed = os.listdir(os.path.join(self.cache, 'failed'))
        self.assertEqual(1, len(failed))
        with open(os.path.join(self.cache, 'failed', failed[0])) as stream:
            self.assertIn('rte_ethdev.h', stream.read())

    def test_interrupted_build_leaves_no_entry(self):
        build._meson_ninja.side_effect = KeyboardInterrupt
        with self.assertRaises(KeyboardInterrupt):
            build.build(self.source, self.cache)
        self.assertFalse([e for e in self._entries()
                          if e.startswith(('prox-', '.staging-'))])

    def test_staging_of_a_killed_build_is_replaced(self):
        identity = build.identify(self.source)
        name = build.entry_name(identity, '22.11.11', '22.11.11-0+deb12u1')
        stale = os.path.join(self.cache, '.staging-' + name)
        _write(os.path.join(stale, 'prox'), 'half', 0o755)
        binary = build.build(self.source, self.cache)
        self.assertFalse(os.path.exists(stale))
        with open(binary) as stream:
            self.assertEqual('#!/bin/sh\n', stream.read())

    def test_source_is_patched_before_meson(self):
        build.build(self.source, self.cache)
        self.assertIn('"A%03d_%02d_hash_gen_table", targ->lconf->id, '
                      'targ->task);', self.compiled_handle_gen)

    def test_unpatchable_source_fails_naming_file_and_line(self):
        _write(os.path.join(self.tmp, 'tree', 'VNFs', 'DPPD-PROX',
                            'handle_gen.c'), 'int other;\n')
        source = _tarball(os.path.join(self.tmp, 'other.tar.gz'),
                          os.path.join(self.tmp, 'tree'))
        with self.assertRaisesRegex(
                build.BuildError, r'cannot patch handle_gen.c \(unique gen '
                r'flow table name per task\): expected exactly one line '
                r'\'sprintf\(hash_name, "A%03d_hash_gen_table"'):
            build.build(source, self.cache)
        self.assertEqual([], self.compiles)
        self.assertEqual(['failed'], [n for n in self._entries()
                                      if not n.startswith('.')])

    def test_changed_patch_changes_the_cache_entry(self):
        binary = build.build(self.source, self.cache)
        other = build.SourcePatch('handle_gen.c', 'x', 'a', 'b')
        with mock.patch.object(build, 'SOURCE_PATCHES', (other,)):
            self.assertIsNone(build.cached(self.source, self.cache))
            self.assertNotEqual(os.path.dirname(binary), build.entry_name(
                build.identify(self.source), '22.11.11',
                '22.11.11-0+deb12u1'))
        self.assertEqual(binary, build.cached(self.source, self.cache))

    def test_entry_without_manifest_is_not_a_hit(self):
        binary = build.build(self.source, self.cache)
        os.unlink(os.path.join(os.path.dirname(binary), build.MANIFEST))
        self.assertIsNone(build.cached(self.source, self.cache))

    def test_missing_dependencies_named_with_the_fix(self):
        build.missing_packages.return_value = ['meson', 'liblua5.3-dev']
        with self.assertRaisesRegex(
                build.BuildError, r'^missing build dependencies: meson, '
                r'liblua5.3-dev; apt-get install meson liblua5.3-dev '
                r'\(or pass --install-deps\)$'):
            build.build(self.source, self.cache)
        self.assertFalse(os.path.exists(self.cache))

    def test_tarball_that_is_not_samplevnf(self):
        _write(os.path.join(self.tmp, 'other', 'README'), 'x')
        other = _tarball(os.path.join(self.tmp, 'other.tgz'),
                         os.path.join(self.tmp, 'other'))
        with self.assertRaisesRegex(build.BuildError,
                                    'other.tgz is not a samplevnf tree'):
            build.build(other, self.cache)

    def test_directory_source_copies_dppd_prox_only(self):
        binary = build.build(os.path.join(self.tmp, 'tree'), self.cache)
        self.assertIn('prox-directory-', binary)
        self.assertFalse(os.path.exists(os.path.join(
            self.tmp, 'tree', 'VNFs', 'DPPD-PROX', 'build')))

    def test_command_prints_the_path_on_stdout(self):
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), \
                contextlib.redirect_stderr(stderr):
            code = cli.main(['prox', 'build', '--source', self.source,
                             '--cache-dir', self.cache])
        self.assertEqual(0, code)
        self.assertEqual(build.cached(self.source, self.cache) + '\n',
                         stdout.getvalue())
        self.assertIn('epa-chain prox build: built ', stderr.getvalue())

    def test_missing_source_is_bad_input_one_line_exit_2(self):
        # Named as given: here by the environment, not --source.
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), \
                contextlib.redirect_stderr(stderr), \
                mock.patch.dict(os.environ, {build.SOURCE_VARIABLE:
                                             os.path.join(self.tmp, 'no')}):
            code = cli.main(['prox', 'build', '--cache-dir', self.cache])
        self.assertEqual(2, code)
        self.assertEqual('', stdout.getvalue())
        self.assertRegex(stderr.getvalue(),
                         r'^epa-chain prox build: \$EPA_CHAIN_PROX_SOURCE '
                         r'\S+/no: does not exist; .*\n$')

    def test_failed_build_is_one_line_exit_1(self):
        build.missing_packages.return_value = ['meson']
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), \
                contextlib.redirect_stderr(stderr):
            code = cli.main(['prox', 'build', '--source', self.source,
                             '--cache-dir', self.cache])
        self.assertEqual(1, code)
        self.assertEqual('', stdout.getvalue())
        self.assertEqual('epa-chain prox build: missing build dependencies: '
                         'meson; apt-get install meson (or pass '
                         '--install-deps)\n', stderr.getvalue())


class TestSourcePatch(unittest.TestCase):

    patch = build.SOURCE_PATCHES[0]

    def test_adds_the_task_to_the_name(self):
        patched = self.patch.apply(HANDLE_GEN_C)
        self.assertIn('\tsprintf(hash_name, "A%03d_%02d_hash_gen_table", '
                      'targ->lconf->id, targ->task); /* epa-chain */\n',
                      patched)
        self.assertNotIn('"A%03d_hash_gen_table"', patched)
        self.assertEqual(HANDLE_GEN_C.splitlines()[::2],
                         patched.splitlines()[::2])

    def test_idempotent(self):
        once = self.patch.apply(HANDLE_GEN_C)
        self.assertEqual(once, self.patch.apply(once))

    def test_missing_line_is_a_clear_error(self):
        with self.assertRaisesRegex(
                build.BuildError, r'^cannot patch handle_gen.c .*expected '
                r'exactly one line .*found 0; .*update SOURCE_PATCHES'):
            self.patch.apply('static char hash_name[30];\n')

    def test_line_found_twice_is_an_error(self):
        with self.assertRaisesRegex(build.BuildError, 'found 2'):
            self.patch.apply(HANDLE_GEN_C * 2)

    def test_digest_follows_the_edit(self):
        other = build.SourcePatch(self.patch.path, self.patch.why,
                                  self.patch.old, self.patch.new + ' ')
        self.assertNotEqual(build.patches_digest(),
                            build.patches_digest((other,)))
        self.assertRegex(build.patches_digest(), r'^[0-9a-f]{8}$')

    def test_patch_source_rewrites_the_file_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = _write(os.path.join(tmp, 'handle_gen.c'), HANDLE_GEN_C)
            build.patch_source(tmp)
            build.patch_source(tmp)
            with open(path) as stream:
                self.assertEqual(self.patch.apply(HANDLE_GEN_C),
                                 stream.read())

    def test_patch_source_without_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(build.BuildError,
                                        r'^cannot patch \S+handle_gen.c'):
                build.patch_source(tmp)


class TestMissingPackages(unittest.TestCase):

    def _missing(self, installed, dpdk_found, **kwargs):
        def run(argv, **_kwargs):
            if argv[0] == 'pkg-config':
                return _done(returncode=0 if dpdk_found else 1)
            status = ('install ok installed' if argv[-1] in installed
                      else 'deinstall ok config-files')
            return _done(status)
        with mock.patch.object(build.shutil, 'which',
                               lambda name: '/usr/bin/' + name
                               if name in installed + ['dpkg-query']
                               else None), \
                mock.patch.object(build, '_run', run):
            return build.missing_packages(**kwargs)

    def test_each_missing_package_named(self):
        self.assertEqual(
            ['meson', 'ninja-build', 'dpkg-dev', 'libdpdk-dev',
             'liblua5.3-dev'],
            self._missing(['pkg-config', 'cc', 'git', 'libedit-dev',
                           'libpcap-dev', 'libncurses-dev'], False))

    def test_dpdk_found_by_pkg_config_and_headers_present(self):
        self.assertEqual(['liblua5.3-dev'], self._missing(
            ['meson', 'ninja', 'pkg-config', 'cc', 'git', 'libedit-dev',
             'libpcap-dev', 'libncurses-dev'], True,
            need_source_package=False))


class TestMesonNinja(TempDir):

    def test_failure_names_the_log_and_shows_its_tail(self):
        prox = _samplevnf(os.path.join(self.tmp, 'tree'))
        log_path = os.path.join(self.tmp, 'build.log')

        def run(argv, cwd=None, env=None, log=None, timeout=None):
            self.assertEqual(os.path.dirname(prox),
                             env['GIT_CEILING_DIRECTORIES'])
            if argv[0] == 'meson':
                self.assertIn('-Dc_args=-I/hdrs', argv)
                return _done()
            log.write('\n'.join('line %d' % i for i in range(40)) + '\n')
            return _done(returncode=1)
        with open(log_path, 'w') as log, \
                mock.patch.object(build, '_run', run):
            with self.assertRaises(build.BuildError) as caught:
                build._meson_ninja(prox, '/hdrs', log, log_path)
        message = str(caught.exception)
        self.assertTrue(message.startswith(
            'ninja failed (exit 1); log %s ends:\n' % log_path), message)
        self.assertIn('line 39', message)
        self.assertNotIn('line 10\n', message)


class TestProxBinary(TempDir):

    def test_binary_given(self):
        binary = _write(os.path.join(self.tmp, 'prox'), '', 0o755)
        self.assertEqual((binary, None), prox_binary.find(
            {build.BINARY_VARIABLE: binary}))

    def test_binary_given_but_not_executable_is_an_error(self):
        binary = _write(os.path.join(self.tmp, 'prox'), '', 0o644)
        with self.assertRaisesRegex(prox_binary.ProxBinaryError,
                                    'is not an executable file'):
            prox_binary.find({build.BINARY_VARIABLE: binary})

    def test_nothing_given_is_a_skip_reason(self):
        path, reason = prox_binary.find({})
        self.assertIsNone(path)
        self.assertIn('EPA_CHAIN_PROX_SOURCE', reason)
        self.assertIn('EPA_CHAIN_PROX_BINARY', reason)

    def test_source_is_built_once_and_a_failure_is_an_error(self):
        source = os.path.join(self.tmp, 'samplevnf.tar.gz')
        with mock.patch.object(build, 'build',
                               return_value='/cache/prox') as built, \
                mock.patch.dict(prox_binary._found, clear=True):
            for _ in range(2):
                self.assertEqual(('/cache/prox', None), prox_binary.find(
                    {build.SOURCE_VARIABLE: source}))
        self.assertEqual(1, built.call_count)
        with mock.patch.object(build, 'build', side_effect=build.BuildError(
                'ninja failed')), \
                mock.patch.dict(prox_binary._found, clear=True):
            with self.assertRaisesRegex(prox_binary.ProxBinaryError,
                                        'ninja failed'):
                prox_binary.find({build.SOURCE_VARIABLE: source})
