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

"""Bad input to `epa-chain prox build`, through the real entry point.

Each case: the exit code, one line on stderr naming the option (or the
variable) that was wrong, no traceback, nothing on stdout; for injection
payloads, the marker file the payload would create is not created, and no
tool (git, tar, apt-get) was run at all. Nothing is built: the DPDK
lookup, the dependency check and meson are replaced, and a source that
got as far as meson fails the test.
"""

import contextlib
import io
import os
import stat
import subprocess
import tarfile
import tempfile
import unittest
from unittest import mock

from epa_chain import cli
from epa_chain.prox import build
from epa_chain.prox import dpdk_sdk

GOOD_TREE = {'samplevnf/VNFs/DPPD-PROX/meson.build': b"project('p')\n",
             'samplevnf/VNFs/DPPD-PROX/main.c': b'int main(void){}\n',
             'samplevnf/VNFs/DPPD-PROX/version.h': b'\n',
             'samplevnf/VNFs/DPPD-PROX/handle_gen.c':
                 build.SOURCE_PATCHES[0].old.encode() + b'\n'}


def _member(name, kind=tarfile.REGTYPE, link='', data=b''):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    info.mode = 0o644
    return info, data


class BadInputTest(unittest.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix='prox-bad-input-')
        self.addCleanup(subprocess.run, ['rm', '-rf', self.tmp])
        self.cache = os.path.join(self.tmp, 'cache')
        self.marker = os.path.join(self.tmp, 'PWNED')
        self.tools = []
        patches = [
            (build, '_run', {'side_effect': self._tool}),
            (dpdk_sdk, 'run_tool', {'side_effect': self._tool}),
            (build, 'dpdk_versions',
             {'return_value': ('22.11.11', '22.11.11-0+deb12u1')}),
            (build, 'sdk_headers', {'return_value': None}),
            (dpdk_sdk, 'has_sdk_headers', {'return_value': True}),
            (build, 'missing_packages', {'return_value': []}),
            (build, '_meson_ninja',
             {'side_effect': AssertionError('a bad source reached meson')}),
        ]
        for module, name, kwargs in patches:
            patcher = mock.patch.object(module, name, **kwargs)
            patcher.start()
            self.addCleanup(patcher.stop)
        patcher = mock.patch.dict(os.environ)
        patcher.start()
        self.addCleanup(patcher.stop)
        for variable in (build.SOURCE_VARIABLE, build.CACHE_VARIABLE):
            os.environ.pop(variable, None)

    def _tool(self, argv, **_kwargs):
        self.tools.append(list(argv))
        return subprocess.CompletedProcess(argv, 1, '', 'fatal: faked')

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def tarball(self, name, *members, good=True):
        path = self.path(name)
        with tarfile.open(path, 'w:gz') as archive:
            if good:
                for member_name, data in GOOD_TREE.items():
                    info, data = _member(member_name, data=data)
                    archive.addfile(info, io.BytesIO(data))
            for info, data in members:
                archive.addfile(info, io.BytesIO(data) if data else None)
        return path

    def directory(self, name, mode=0o755, owner=None):
        path = self.path(name)
        os.mkdir(path)
        os.chmod(path, mode)
        if owner is not None:
            os.chown(path, owner, owner)
        return path

    def run_cli(self, argv, env=None):
        out, err = io.StringIO(), io.StringIO()
        os.environ.update(env or {})
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(['prox', 'build'] + argv)
        return code, out.getvalue(), err.getvalue()

    def cases(self):
        """(label, argv, env, exit code, text stderr must hold)."""
        cache = ['--cache-dir', self.cache]
        good = self.tarball('good.tar.gz')
        return (self._injections(cache) + self._urls(cache) +
                self._not_sources(cache) + self._members(cache) +
                self._caches(good) + self._installs(['--source', good] +
                                                    cache))

    def _injections(self, cache):
        """A source git or tar would read as an option."""
        marker = self.marker
        return [
            ('upload-pack .git', ['--source=--upload-pack=touch %s;.git'
                                  % marker] + cache, None, 2, '--source'),
            ('upload-pack', ['--source=--upload-pack=touch %s' % marker] +
             cache, None, 2, '--source'),
            ('upload-pack env', cache,
             {build.SOURCE_VARIABLE: '--upload-pack=touch %s;.git' % marker},
             2, '$' + build.SOURCE_VARIABLE),
            ('single dash', ['--source=-c'] + cache, None, 2, '--source'),
            ('ext transport', ['--source=ext::sh -c touch% ' + marker] +
             cache, None, 2, 'transport'),
            ('fd transport', ['--source=fd::17'] + cache, None, 2,
             'transport'),
            ('ssh proxycommand host',
             ['--source=ssh://-oProxyCommand=touch%20' + marker + '/r'] +
             cache, None, 2, "starts with '-'"),
            ('ssh user option', ['--source=ssh://-oProxyCommand@h/r'] +
             cache, None, 2, "starts with '-'"),
            ('scp-like host option', ['--source=git@-oProxyCommand:r'] +
             cache, None, 2, '--source'),
            ('ref option', ['--source=https://example.org/s.git'
                            '#--upload-pack=touch ' + marker] + cache, None,
             2, 'after #'),
            ('ref dash', ['--source=https://example.org/s.git#-x'] + cache,
             None, 2, 'after #'),
            ('ref dots', ['--source=https://example.org/s.git#a..b'] +
             cache, None, 2, 'after #'),
        ]

    def _urls(self, cache):
        """Unknown schemes, malformed URLs."""
        return [
            ('ftp', ['--source=ftp://example.org/s.tar.gz'] + cache, None, 2,
             "scheme 'ftp'"),
            ('javascript', ['--source=javascript://x'] + cache, None, 2,
             'scheme'),
            ('no host', ['--source=https:///s.git'] + cache, None, 2,
             'host is missing'),
            ('space in URL', ['--source=https://exa mple.org/s.git'] + cache,
             None, 2, 'no spaces'),
            ('control character', ['--source=s\nx.tar.gz'] + cache, None, 2,
             'control characters'),
            ('broken IPv6 host', ['--source=http://[::1/x.git'] + cache,
             None, 2, '--source'),
            ('port out of range', ['--source=https://h:99999/x.git'] + cache,
             None, 2, 'not a URL'),
        ]

    def _not_sources(self, cache):
        """Local sources that are not one."""
        not_a_tree = self.directory('tree')
        text = self.path('notes.txt')
        with open(text, 'w') as stream:
            stream.write('not a tarball\n')
        truncated = self.path('truncated.tar.gz')
        with open(self.tarball('whole.tar.gz'), 'rb') as stream:
            data = stream.read()
        with open(truncated, 'wb') as stream:
            stream.write(data[:len(data) // 2])
        return [
            ('empty', ['--source='] + cache, None, 2, 'no PROX source'),
            ('missing', ['--source', self.path('no.tar.gz')] + cache, None,
             2, 'does not exist'),
            ('a text file', ['--source', text] + cache, None, 2,
             'not a tarball'),
            ('not samplevnf', ['--source', not_a_tree] + cache, None, 2,
             'not a samplevnf tree'),
            ('truncated gzip', ['--source', truncated] + cache, None, 2,
             'damaged or truncated'),
            ('not a tarball at all',
             ['--source', self.tarball_named_text()] + cache, None, 2,
             'damaged or truncated'),
            ('an empty tarball file', ['--source', self.empty_file()] + cache,
             None, 2, 'damaged or truncated'),
            ('an empty cache directory', ['--source', self.path('no.tar.gz'),
                                          '--cache-dir', ''], None, 2,
             '--cache-dir'),
        ]

    def tarball_named_text(self):
        path = self.path('notatar.tar.gz')
        with open(path, 'w') as stream:
            stream.write('not a tarball\n')
        return path

    def empty_file(self):
        path = self.path('empty.tar.gz')
        open(path, 'w').close()
        return path

    def _members(self, cache):
        """Tarball members out of the tree."""
        char = _member('samplevnf/null', tarfile.CHRTYPE)
        return [
            ('member ..', ['--source', self.tarball(
                'dots.tar.gz', _member('samplevnf/../../../escaped',
                                       data=b'x'))] + cache, None, 2,
             'climbs out of the tree'),
            ('member absolute', ['--source', self.tarball(
                'abs.tar.gz', _member(self.path('absolute'), data=b'x'),
                good=False)] + cache, None, 2, 'absolute path'),
            ('symlink absolute', ['--source', self.tarball(
                'sym.tar.gz', _member('samplevnf/passwd', tarfile.SYMTYPE,
                                      '/etc/passwd'))] + cache, None, 2,
             'links out of the tree'),
            ('symlink up', ['--source', self.tarball(
                'symup.tar.gz', _member('samplevnf/VNFs/up', tarfile.SYMTYPE,
                                        '../../../..'))] + cache, None, 2,
             'links out of the tree'),
            ('hard link out', ['--source', self.tarball(
                'hard.tar.gz', _member('samplevnf/shadow', tarfile.LNKTYPE,
                                       '/etc/shadow'))] + cache, None, 2,
             'hard link out of the tree'),
            ('device', ['--source', self.tarball('dev.tar.gz', char)] +
             cache, None, 2, 'device'),
            ('fifo', ['--source', self.tarball(
                'fifo.tar.gz', _member('samplevnf/fifo', tarfile.FIFOTYPE))] +
             cache, None, 2, 'device or a FIFO'),
        ]

    def _caches(self, good):
        """The cache holds a binary run as root."""
        os.symlink(self.directory('open', 0o777), self.path('open-link'))
        text = self.path('cache.txt')
        with open(text, 'w') as stream:
            stream.write('not a directory\n')
        return [
            ('cache world-writable', ['--source', good, '--cache-dir',
                                      self.path('open')],
             None, 2, 'writable by its group or by others'),
            ('cache through a link', ['--source', good, '--cache-dir',
                                      self.path('open-link')],
             None, 2, '--cache-dir'),
            ('cache a file', ['--source', good, '--cache-dir', text], None, 2,
             'not a directory'),
            ('cache env', ['--source', good],
             {build.CACHE_VARIABLE: self.path('open')}, 2,
             '$' + build.CACHE_VARIABLE),
            ('cache group-writable', ['--source', good, '--cache-dir',
                                      self.directory('group', 0o775)],
             None, 2, 'chmod go-w'),
        ]

    def _installs(self, source):
        """Where the binary is copied."""
        os.symlink(self.path('somewhere'), self.path('install-link'))
        return [
            ('install a directory', source + ['--install', self.tmp], None,
             2, '--install'),
            ('install a link', source + ['--install',
                                         self.path('install-link')], None, 2,
             '--install'),
            ('install a device', source + ['--install', '/dev/null'], None,
             2, '--install'),
            ('install nowhere', source + ['--install',
                                          self.path('no', 'dir', 'prox')],
             None, 2, '--install'),
        ]

    def test_each_bad_input_is_one_line_naming_the_option(self):
        cases = self.cases()
        self.assertGreaterEqual(len(cases), 25)
        for label, argv, env, code, needle in cases:
            with self.subTest(label):
                self.tools.clear()
                before = dict(os.environ)
                try:
                    got, out, err = self.run_cli(argv, env)
                finally:
                    os.environ.clear()
                    os.environ.update(before)
                self.assertEqual(code, got, err)
                self.assertEqual('', out)
                self.assertNotIn('Traceback', err)
                self.assertEqual(1, len(err.splitlines()), err)
                self.assertTrue(err.startswith('epa-chain prox build: '), err)
                self.assertIn(needle, err)
                option = needle if needle.startswith(('-', '$')) else None
                if option is None:
                    self.assertRegex(err, r'(--source|--cache-dir|--install|'
                                          r'\$EPA_CHAIN_PROX_\w+) ')
                self.assertFalse(os.path.exists(self.marker), label)
                # refused before any tool ran (git, tar, apt-get)
                self.assertEqual([], self.tools, label)
        # nothing escaped from a tarball, and no cache entry was made
        self.assertFalse(os.path.exists(self.path('escaped')))
        self.assertFalse(os.path.exists(self.path('absolute')))
        entries = os.listdir(self.cache) if os.path.isdir(self.cache) else []
        self.assertEqual([], [e for e in entries if e.startswith('prox-')])

    def test_owned_by_someone_else(self):
        if os.geteuid() != 0:
            self.skipTest('needs root to give a directory away')
        theirs = self.directory('theirs', 0o755, owner=4242)
        code, _out, err = self.run_cli([
            '--source', self.tarball('good.tar.gz'), '--cache-dir', theirs])
        self.assertEqual(2, code)
        self.assertIn('--cache-dir %s: is owned by uid 4242' % theirs, err)

    def test_git_is_told_where_options_end(self):
        # A URL that passes the checks reaches git after `--` only.
        self.run_cli(['--source', 'https://example.org/s.git#main',
                      '--cache-dir', self.cache])
        self.assertEqual([['git', 'ls-remote', '--',
                           'https://example.org/s.git', 'main']], self.tools)

    def test_a_good_tarball_passes_the_member_checks(self):
        # The same path as the bad ones, up to meson.
        with self.assertRaisesRegex(AssertionError, 'reached meson'):
            build.build(self.tarball('good.tar.gz'), self.cache)


class TestMembers(unittest.TestCase):

    def test_links_inside_the_tree_are_kept(self):
        members = [_member('top/a', data=b'x')[0],
                   _member('top/d/link', tarfile.SYMTYPE, '../a')[0],
                   _member('top/hard', tarfile.LNKTYPE, 'top/a')[0]]
        checked = build.checked_members(members, True, 's.tgz')
        self.assertEqual(['a', 'd/link', 'hard'], [m.name for m in checked])
        self.assertEqual('a', checked[2].linkname)
        # the originals are untouched
        self.assertEqual('top/hard', members[2].name)

    def test_modes_survive_but_not_setuid(self):
        if not build._DATA_FILTER:
            self.skipTest('this Python has no tarfile data filter')
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 's.tar')
            with tarfile.open(path, 'w') as archive:
                info, data = _member('top/tool', data=b'#!/bin/sh\n')
                info.mode = 0o4755
                archive.addfile(info, io.BytesIO(data))
            build.unpack_tarball(path, os.path.join(tmp, 'out'))
            mode = os.stat(os.path.join(tmp, 'out', 'tool')).st_mode
        self.assertEqual(0o755, stat.S_IMODE(mode))
