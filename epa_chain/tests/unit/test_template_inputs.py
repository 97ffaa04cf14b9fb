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

"""Template inputs are what they say: read safely, from their own tree.

safe_yaml.py reads every file a user gives (size, kind, encoding,
aliases, depth); hot/tree.py keeps what a template pulls in inside its
directory tree and fetches nothing; hot/files.py follows a template set's
references as heatclient does, checking each before anything reads it.
"""

import builtins
import contextlib
import glob
import os
import shutil
import socket
import tempfile
import time
from unittest import mock

import fixtures
import testtools

from heatclient.common import template_utils

from epa_chain.hot import files
from epa_chain import safe_yaml
from epa_chain.tests import repo
from epa_chain.tests.unit import tosca_cases

# Text of the file outside every tree: no output may ever show it.
SECRET = 'epa-chain-outside-marker-7f3c1d'
HOT = 'heat_template_version: 2021-04-16\n'
VALUE = '  r:\n    type: OS::Heat::Value\n    properties:\n      value: %s\n'


@contextlib.contextmanager
def watched():
    """Record every file opened; make any URL fetch or connection fail.

    Yields the list of real paths opened (by open, io.open or os.open:
    heatclient, tosca-parser and urllib's file handler all use them).
    """
    opened = []
    real = {'open': builtins.open, 'os': os.open}

    def note(path):
        if isinstance(path, (str, bytes, os.PathLike)):
            opened.append(os.path.realpath(os.fsdecode(path)))

    def opening(file, *args, **kwargs):
        note(file)
        return real['open'](file, *args, **kwargs)

    def os_opening(path, *args, **kwargs):
        note(path)
        return real['os'](path, *args, **kwargs)

    def no_network(*args, **kwargs):
        raise AssertionError('tried to reach the network: %r' % (args,))

    real_connect = socket.socket.connect

    def connecting(sock, address):
        # A datagram socket's connect sends nothing: nova's configuration,
        # imported by the rules, finds this host's address that way.
        if sock.type != socket.SOCK_DGRAM:
            no_network(sock, address)
        return real_connect(sock, address)

    with mock.patch('builtins.open', opening), \
            mock.patch('io.open', opening), \
            mock.patch('os.open', os_opening), \
            mock.patch('urllib.request.urlopen', no_network), \
            mock.patch('socket.create_connection', no_network), \
            mock.patch.object(socket.socket, 'connect', connecting), \
            mock.patch.object(socket.socket, 'sendto', no_network):
        yield opened


class Sandbox(testtools.TestCase):
    """A scratch directory with a template tree and a secret outside it.

    base/
      secret.yaml         outside the tree (a template, so that following
                          it would be worth it), text SECRET
      tree/               the top-level template's directory
    """

    def setUp(self):
        super().setUp()
        self.base = tempfile.mkdtemp(prefix='epa-chain-inputs-')
        self.addCleanup(shutil.rmtree, self.base, True)
        self.tree = os.path.join(self.base, 'tree')
        os.mkdir(self.tree)
        self.secret = self.write(os.path.join(self.base, 'secret.yaml'),
                                 HOT + '# %s\n' % SECRET)

    def write(self, path, text, mode='w'):
        path = os.path.join(self.tree, path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as stream:
            stream.write(text)
        return path

    def template(self, resources='', name='t.yaml', extra=''):
        return self.write(name, HOT + extra + (
            'resources:\n' + resources if resources else ''))

    def refused(self, function, *args, **kwargs):
        with watched() as opened:
            error = self.assertRaises(safe_yaml.InputError, function,
                                      *args, **kwargs)
        self.assertNotIn(os.path.realpath(self.secret), opened)
        self.assertNotIn(SECRET, str(error))
        self.assertNotIn('\n', str(error))
        return error


class TestSafeYaml(Sandbox):

    def test_the_size_limit_is_heats(self):
        from heat.common import config

        self.assertEqual(config.cfg.CONF.max_template_size,
                         safe_yaml.max_file_bytes())
        self.assertEqual(safe_yaml.HEAT_MAX_TEMPLATE_SIZE,
                         config.cfg.CONF.max_template_size)

    def test_a_file_over_the_limit_is_refused_unread(self):
        path = self.write('big.yaml', HOT + '#' * safe_yaml.max_file_bytes())
        with mock.patch.object(safe_yaml, 'parse') as parse:
            error = self.assertRaises(safe_yaml.InputError,
                                      safe_yaml.load, path, 'template')
        parse.assert_not_called()
        self.assertIn('more than the 524288 bytes Heat accepts',
                      error.message)
        self.assertEqual(safe_yaml.shown(path), error.path)

    def test_a_fifo_is_refused_without_blocking(self):
        path = os.path.join(self.tree, 'fifo.yaml')
        os.mkfifo(path)
        error = self.assertRaises(safe_yaml.InputError, safe_yaml.load,
                                  path, 'template')
        self.assertIn('not a regular file', error.message)

    def test_a_directory_missing_file_and_empty_path(self):
        self.assertIn('is a directory', self.assertRaises(
            safe_yaml.InputError, safe_yaml.load, self.tree).message)
        self.assertEqual('no such file', self.assertRaises(
            safe_yaml.InputError, safe_yaml.load,
            os.path.join(self.tree, 'nope.yaml')).message)
        self.assertEqual(
            "'': an empty path; give the path of the template",
            str(self.assertRaises(safe_yaml.InputError, safe_yaml.load, '',
                                  'template')))

    def test_a_name_with_a_newline_stays_on_one_line(self):
        error = self.assertRaises(safe_yaml.InputError, safe_yaml.load,
                                  os.path.join(self.tree, 'a\nb.yaml'))
        self.assertNotIn('\n', str(error))
        self.assertIn('a\\nb.yaml', error.path)
        self.assertEqual('\\udcff.yaml', safe_yaml.shown('\udcff.yaml'))

    def test_binary_and_not_utf8(self):
        binary = self.write('bin.yaml', b'\x7fELF\x00\x01', 'wb')
        latin = self.write('latin.yaml', 'a: caf\xe9\n'.encode('latin-1'),
                           'wb')
        self.assertIn('binary', self.assertRaises(
            safe_yaml.InputError, safe_yaml.load, binary).message)
        self.assertEqual('not UTF-8 text (byte 0xe9 at offset 6)',
                         self.assertRaises(safe_yaml.InputError,
                                           safe_yaml.load, latin).message)

    def test_empty_comments_only_and_wrong_kind(self):
        cases = {'': 'empty', '# nothing\n': 'holds only comments',
                 '- a\n- b\n': 'is a list, not a mapping',
                 'just text\n': 'is a string, not a mapping',
                 '42\n': 'is a number, not a mapping'}
        for text, expected in cases.items():
            path = self.write('case.yaml', text)
            error = self.assertRaises(safe_yaml.InputError, safe_yaml.load,
                                      path, 'template')
            self.assertIn(expected, error.message, text)

    def test_a_syntax_error_is_one_line_with_its_place(self):
        path = self.write('bad.yaml', 'a: [1, 2\nb: 3\n')
        error = self.assertRaises(safe_yaml.InputError, safe_yaml.load, path)
        self.assertIn('not YAML: ', error.message)
        self.assertIn('line 2', error.message)
        self.assertNotIn('\n', str(error))

    def test_an_alias_bomb_is_refused_at_once(self):
        lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]']
        for level in range(1, 10):
            lines.append('a%d: &a%d [%s]' % (level, level, ', '.join(
                ['*a%d' % (level - 1)] * 10)))
        started = time.monotonic()
        error = self.assertRaises(safe_yaml.InputError, safe_yaml.parse,
                                  '\n'.join(lines), 'bomb.yaml')
        self.assertLess(time.monotonic() - started, 1)
        self.assertIn('alias bomb', error.message)

    def test_too_many_aliases(self):
        text = 'a: &a 1\nb: [%s]\n' % ', '.join(
            ['*a'] * (safe_yaml.MAX_ALIASES + 1))
        self.assertRaises(safe_yaml.InputError, safe_yaml.parse, text, 'x')
        text = 'a: &a 1\nb: [%s]\n' % ', '.join(
            ['*a'] * safe_yaml.MAX_ALIASES)
        self.assertEqual(safe_yaml.MAX_ALIASES,
                         len(safe_yaml.parse(text, 'x')['b']))

    def test_the_shipped_templates_are_within_every_limit(self):
        for path in glob.glob(os.path.join(repo.TEMPLATES, '**', '*.yaml'),
                              recursive=True) + glob.glob(os.path.join(
                                  repo.TOSCA, '**', '*.yaml'),
                                  recursive=True):
            safe_yaml.load(path)

    def test_deep_nesting_is_refused_not_a_recursion_error(self):
        depth = 100000
        for text in ('[' * depth + ']' * depth,
                     '{"a": ' * depth + '1' + '}' * depth,
                     ''.join('%s- \n' % ('  ' * i) for i in range(300))):
            error = self.assertRaises(safe_yaml.InputError, safe_yaml.parse,
                                      text, 'deep.yaml')
            self.assertIn('nested deeper than 100', error.message)
        ok = '[' * safe_yaml.MAX_DEPTH + ']' * safe_yaml.MAX_DEPTH
        self.assertIsInstance(safe_yaml.parse(ok, 'x'), list)

    def test_an_alias_cannot_nest_past_the_limit(self):
        half = safe_yaml.MAX_DEPTH // 2 + 1
        text = 'a: &a %s1%s\nb: %s*a%s\n' % ('[' * half, ']' * half,
                                             '[' * half, ']' * half)
        self.assertIn('nested deeper', self.assertRaises(
            safe_yaml.InputError, safe_yaml.parse, text, 'x').message)

    def test_json_is_read_as_heat_reads_it(self):
        # Tabs: JSON, not YAML; heatclient and Heat parse it with json.
        self.assertEqual({'a': [1]}, safe_yaml.parse('{\t"a": [1]}', 'x'))


class TestTree(Sandbox):

    def test_the_shipped_template_set_loads_as_heatclient_loads_it(self):
        envs = sorted(glob.glob(os.path.join(repo.TEMPLATES, 'presets',
                                             '*.yaml')))
        envs.append(os.path.join(repo.TEMPLATES, 'environments',
                                 'small-host.yaml'))
        for env in envs + [None]:
            chosen = [env] if env else []
            loaded = files.load(repo.CHAIN, chosen)
            tpl_files, template = template_utils.get_template_contents(
                template_file=repo.CHAIN)
            # As `openstack stack create -e` calls it: the environment
            # files named, their text among the files.
            named = []
            env_files, environment = (
                template_utils.process_multiple_environments_and_files(
                    env_paths=chosen, env_list_tracker=named))
            self.assertEqual(template, loaded.template)
            self.assertEqual(environment or {}, loaded.environment)
            self.assertEqual(named, loaded.environment_files)
            self.assertEqual(dict(tpl_files, **env_files), loaded.files)

    def test_nested_types_outside_the_tree_are_refused(self):
        outside = os.path.relpath(self.secret, self.tree)
        for value in (outside, self.secret, 'file://' + self.secret,
                      'lib/../../secret.yaml'):
            top = self.template('  r:\n    type: %s\n' % value)
            error = self.refused(files.load, top)
            self.assertEqual(safe_yaml.shown(top), error.path)
            self.assertIn('resources.r.type %s: ' % value, error.message)
            self.assertIn('outside the template\'s directory tree',
                          error.message)
            self.assertIn('--allow-files-outside', error.fix)

    def test_get_file_outside_the_tree_is_refused_anywhere(self):
        top = self.template(
            '  r:\n    type: OS::Heat::Value\n    properties:\n'
            '      value: {list_join: ["", [{get_file: /etc/hostname}]]}\n')
        error = self.refused(files.load, top)
        self.assertIn('resources.r.properties.value.list_join[1][0].'
                      'get_file /etc/hostname', error.message)

    def test_nested_templates_are_followed_and_checked(self):
        self.write('lib/inner.yaml', HOT + 'resources:\n  s:\n    type: '
                   '../../secret.yaml\n')
        top = self.template('  r:\n    type: lib/inner.yaml\n')
        error = self.refused(files.load, top)
        self.assertEqual(safe_yaml.shown(os.path.join(
            self.tree, 'lib', 'inner.yaml')), error.path)

    def test_a_symbolic_link_out_of_the_tree_is_refused(self):
        os.symlink(self.secret, os.path.join(self.tree, 'link.yaml'))
        top = self.template('  r:\n    type: link.yaml\n')
        error = self.refused(files.load, top)
        self.assertIn(os.path.realpath(self.secret), error.message)

    def test_the_tree_is_the_real_directory_of_the_template(self):
        # A template reached through a link is in its real directory.
        self.write('lib/inner.yaml', HOT)
        top = self.template('  r:\n    type: lib/inner.yaml\n')
        link = os.path.join(self.base, 'top-link.yaml')
        os.symlink(top, link)
        self.assertEqual(1, len(files.load(link).files))

    def test_registry_entries_are_held_to_the_template_tree(self):
        self.write('lib/inner.yaml', HOT)
        top = self.template('  r:\n    type: My::Inner\n')
        # The shipped layout: environments/ refers to ../lib/.
        good = self.write('environments/env.yaml', 'resource_registry:\n'
                          '  My::Inner: ../lib/inner.yaml\n')
        loaded = files.load(top, [good])
        self.assertEqual(1, len(loaded.files) - len(loaded.environment_files))
        for entry in ('../../secret.yaml', self.secret):
            bad = self.write('environments/bad.yaml', 'resource_registry:\n'
                             '  My::Inner: %s\n' % entry)
            error = self.refused(files.load, top, [bad])
            self.assertIn('resource_registry.My::Inner %s: ' % entry,
                          error.message)
        # An environment outside the tree is read (the user named it),
        # what it registers is not.
        env = os.path.join(self.base, 'env.yaml')
        with open(env, 'w') as stream:
            stream.write('resource_registry:\n  resources:\n    r:\n'
                         '      My::Inner: secret.yaml\n')
        error = self.refused(files.load, top, [env])
        self.assertIn('resource_registry.resources.r.My::Inner secret.yaml',
                      error.message)

    def test_hidden_files_in_the_tree_are_refused(self):
        # A template kept in a home directory or a clone: not .ssh/, .git/.
        self.write('.ssh/id_rsa', SECRET)
        self.write('lib/.env', SECRET)
        for value in ('.ssh/id_rsa', 'lib/.env', 'lib/../.ssh/id_rsa'):
            top = self.template(VALUE % '{get_file: "%s"}' % value)
            with watched() as opened:
                error = self.assertRaises(safe_yaml.InputError, files.load,
                                          top)
            self.assertIn('is hidden', error.message)
            self.assertNotIn(SECRET, str(error))
            self.assertEqual([], [p for p in opened if '.ssh' in p or
                                  p.endswith('.env')])
        top = self.template(VALUE % '{get_file: .ssh/id_rsa}')
        self.assertEqual(1, len(files.load(top, allow_outside=True).files))

    def test_a_template_in_the_root_directory_has_no_tree(self):
        from epa_chain.hot import tree

        error = self.assertRaises(
            safe_yaml.InputError, tree.Tree('/t.yaml').path, '/etc/hostname',
            't.yaml', 'resources.r.type', 'etc/hostname')
        self.assertIn('outside the template\'s directory tree /;',
                      str(error))

    def test_allow_outside_reads_what_the_flag_allows(self):
        top = self.template('  r:\n    type: ../secret.yaml\n')
        with watched() as opened:
            loaded = files.load(top, allow_outside=True)
        # What shows that watched() sees the files read.
        self.assertIn(os.path.realpath(self.secret), opened)
        self.assertEqual(['file://' + os.path.realpath(self.secret)],
                         list(loaded.files))

    def test_urls_are_never_fetched(self):
        for value in ('http://127.0.0.1:9/x.yaml', 'https://example.com/'
                      'x.template', 'ftp://example.com/x.yaml',
                      'file://otherhost/etc/x.yaml'):
            for resources in ('  r:\n    type: %s\n' % value,
                              '  r:\n    type: OS::Heat::Value\n'
                              '    properties: {value: {get_file: %s}}\n'
                              % value):
                top = self.template(resources)
                with watched():
                    error = self.assertRaises(
                        safe_yaml.InputError, files.load, top,
                        allow_outside=True)
                self.assertIn('a URL, and epa-chain fetches nothing',
                              error.message)
        top = self.template('  r:\n    type: My::Remote\n')
        env = self.write('env.yaml', 'resource_registry:\n  base_url: '
                         'http://127.0.0.1:9/\n  My::Remote: x.yaml\n')
        with watched():
            error = self.assertRaises(safe_yaml.InputError, files.load, top,
                                      [env])
        self.assertIn('resource_registry.My::Remote x.yaml: a URL',
                      error.message)

    def test_templates_including_each_other_are_refused(self):
        self.write('a.yaml', HOT + 'resources:\n  b:\n    type: b.yaml\n')
        self.write('b.yaml', HOT + 'resources:\n  a:\n    type: a.yaml\n')
        top = self.template('  a:\n    type: a.yaml\n')
        error = self.assertRaises(safe_yaml.InputError, files.load, top)
        self.assertIn('include each other (a.yaml -> b.yaml -> a.yaml)',
                      error.message.replace(self.tree + '/', '').replace(
                          safe_yaml.shown(self.tree) + '/', ''))
        itself = self.template('  a:\n    type: t.yaml\n')
        self.assertIn('include each other', self.assertRaises(
            safe_yaml.InputError, files.load, itself).message)

    def test_every_file_read_is_checked_before_it_is_parsed(self):
        bomb = 'a: &a [x, x, x, x, x, x, x, x, x, x]\n' + ''.join(
            'a%d: &a%d [%s]\n' % (i, i, ', '.join(
                ['*a' if i == 1 else '*a%d' % (i - 1)] * 10))
            for i in range(1, 10))
        self.write('bomb.txt', bomb)
        top = self.template('  r:\n    type: OS::Heat::Value\n'
                            '    properties: {value: {get_file: bomb.txt}}\n')
        self.assertIn('alias bomb', self.assertRaises(
            safe_yaml.InputError, files.load, top).message)
        self.write('big.yaml', HOT + '#' * safe_yaml.max_file_bytes())
        top = self.template('  r:\n    type: big.yaml\n')
        self.assertIn('Heat accepts', self.assertRaises(
            safe_yaml.InputError, files.load, top).message)

    def test_a_binary_get_file_is_uploaded_as_heatclient_does(self):
        self.write('blob.bin', b'\xff\xfe\x00binary', 'wb')
        top = self.template('  r:\n    type: OS::Heat::Value\n'
                            '    properties: {value: {get_file: blob.bin}}\n')
        (content,) = files.load(top).files.values()
        self.assertEqual('//4AYmluYXJ5\n', content)

    def test_environment_sections_are_checked(self):
        top = self.template()
        for text, expected in (
                ('parameterz: {}\n', "unknown environment section "
                 "'parameterz'"),
                ('parameters: [a, b]\n', 'section parameters is a list, '
                 'not a mapping'),
                ('resource_registry:\n  My::X: [a]\n',
                 'resource_registry.My::X is a list'),
                ('resource_registry:\n  resources: [a]\n',
                 'resource_registry.resources is a list'),
                ('resource_registry:\n  base_url: lib\n  My::X: a.yaml\n',
                 "base_url 'lib': not a file:// URL")):
            env = self.write('env.yaml', text)
            error = self.assertRaises(safe_yaml.InputError, files.load, top,
                                      [env])
            self.assertIn(expected, error.message)

    def test_a_nested_template_must_be_one(self):
        for text, expected in (
                (b'\x00\x01', 'binary'), ('- a\n', 'is a list'),
                ('resources: {}\n', 'not a Heat template'),
                (HOT + 'resources: [a\n', 'not YAML: '),
                (HOT + 'resources: [a]\n', 'section resources is a list')):
            self.write('lib/inner.yaml', text,
                       'wb' if isinstance(text, bytes) else 'w')
            top = self.template('  r:\n    type: lib/inner.yaml\n')
            error = self.assertRaises(safe_yaml.InputError, files.load, top)
            self.assertEqual(safe_yaml.shown(os.path.join(
                self.tree, 'lib', 'inner.yaml')), error.path)
            self.assertIn(expected, error.message)

    def test_a_missing_reference_names_the_file_that_makes_it(self):
        top = self.template('  r:\n    type: lib/nope.yaml\n')
        error = self.assertRaises(safe_yaml.InputError, files.load, top)
        self.assertEqual(safe_yaml.shown(top), error.path)
        self.assertIn('resources.r.type lib/nope.yaml: ', error.message)
        self.assertIn('no such file', error.message)

    def test_sections_heat_iterates_must_be_of_their_kind(self):
        for section in ('parameters', 'resources', 'outputs', 'conditions'):
            path = self.write('t.yaml', HOT + '%s: [a]\n' % section)
            self.assertIn('section %s is a list, not a mapping' % section,
                          self.assertRaises(safe_yaml.InputError, files.load,
                                            path).message)

    def test_a_template_must_be_a_heat_template(self):
        path = self.write('t.yaml', 'resources: {}\n')
        self.assertIn('not a Heat template', self.assertRaises(
            safe_yaml.InputError, files.load, path).message)

    def test_discovery_does_not_follow_links_out_of_the_directory(self):
        self.template()
        os.symlink(self.secret, os.path.join(self.tree, 'link.yaml'))
        with watched() as opened:
            found = files.discover(self.tree)
        self.assertNotIn(os.path.realpath(self.secret), opened)
        (error,) = found.unreadable
        self.assertIn('a symbolic link to', error.message)
        self.assertEqual([], files.discover(self.tree, True).unreadable)

    def test_a_repeat_bomb_is_refused(self):
        from epa_chain.hot import offline
        from epa_chain.hot import resolve

        items = '[%s]' % ', '.join('"%d"' % i for i in range(1000))
        top = self.template(VALUE % ('{repeat: {template: x, for_each: '
                                     '{a: %s, b: %s, c: %s}}}' % (
                                         items, items, items)))
        started = time.monotonic()
        error = self.assertRaises(resolve.ResolveError, resolve.resolve, top)
        self.assertLess(time.monotonic() - started, 30)
        self.assertIn('repeat would make 1000000000 copies', str(error))
        small = self.template(VALUE % (
            '{repeat: {template: x, for_each: {a: [%s]}}}' % ', '.join(
                ['"a"'] * offline.MAX_REPEAT)), name='small.yaml')
        resolve.resolve(small)

    def test_offline_heat_fetches_nothing(self):
        from epa_chain.hot import resolve

        top = self.template('  s:\n    type: AWS::CloudFormation::Stack\n'
                            '    properties:\n      TemplateURL: file://%s\n'
                            % self.secret)
        with watched() as opened:
            error = self.assertRaises(resolve.ResolveError, resolve.resolve,
                                      top)
        self.assertNotIn(os.path.realpath(self.secret), opened)
        self.assertIn('offline validation fetches nothing', str(error))


class TestToscaImports(Sandbox):
    """A service template's imports: in its tree, never fetched."""

    def setUp(self):
        super().setUp()
        tosca_cases.require_translator()
        shutil.copytree(repo.TOSCA, self.tree, dirs_exist_ok=True)
        with open(os.path.join(repo.TOSCA, 'pvp.yaml')) as stream:
            self.pvp = stream.read()
        self.types = os.path.join(self.tree, 'definitions',
                                  'epa_chain_types.yaml')
        with open(self.types) as stream:
            self.types_text = stream.read()

    def importing(self, *imports, text=None):
        """pvp.yaml with other imports (or types with other imports)."""
        listed = ''.join('  - %s\n' % item for item in imports)
        if text == 'types':
            self.write(self.types, self.types_text.replace(
                '  - etsi_nfv_sol001_subset.yaml\n', listed))
            return os.path.join(self.tree, 'pvp.yaml')
        return self.write('broken.yaml', self.pvp.replace(
            '  - definitions/epa_chain_types.yaml\n', listed))

    def translate(self, path, **kwargs):
        from epa_chain.tosca import translate

        return translate.translate(path, **kwargs)

    def test_the_shipped_imports_are_read_from_the_checked_copies(self):
        with watched() as opened:
            self.translate(os.path.join(self.tree, 'pvp.yaml'))
        read = [p for p in opened if p.startswith(self.tree)]
        # Each of the three files once, by safe_yaml, not by tosca-parser.
        self.assertEqual(3, len(read), read)

    def test_imports_outside_the_tree_are_refused(self):
        outside = os.path.relpath(self.secret, self.tree)
        for value in (outside, self.secret, 'file://' + self.secret,
                      '{s: {file: %s}}' % outside):
            error = self.refused(self.translate, self.importing(value))
            self.assertEqual('broken.yaml', os.path.basename(error.path))
            self.assertIn('imports[0]', error.message)
            self.assertIn('outside the template\'s directory tree',
                          error.message)

    def test_an_import_of_an_import_is_held_to_the_tree(self):
        path = self.importing('../../secret.yaml', text='types')
        error = self.refused(self.translate, path)
        self.assertEqual(safe_yaml.shown(self.types), error.path)

    def test_urls_and_repositories_are_never_fetched(self):
        for value in ('http://127.0.0.1:9/types.yaml',
                      'https://example.com/types.yaml',
                      'file://otherhost/types.yaml',
                      '{t: {file: types.yaml, repository: r}}'):
            with watched():
                error = self.assertRaises(
                    safe_yaml.InputError, self.translate,
                    self.importing(value), allow_outside=True)
            self.assertIn('epa-chain fetches nothing', error.message)

    def test_allow_outside_reads_the_import(self):
        with open(self.secret, 'w') as stream:
            stream.write('tosca_definitions_version: tosca_simple_yaml_1_2'
                         '\nimports: [%s]\n' % os.path.join(
                             self.tree, 'definitions',
                             'epa_chain_types.yaml'))
        self.translate(self.importing('../secret.yaml'), allow_outside=True)

    def test_imports_of_each_other_are_refused(self):
        path = self.importing('etsi_nfv_sol001_subset.yaml',
                              'epa_chain_types.yaml', text='types')
        error = self.assertRaises(safe_yaml.InputError, self.translate, path)
        self.assertIn('the files import each other', error.message)

    def test_tosca_parser_reads_nothing_the_checks_did_not(self):
        # tosca-parser looks for an import in the working directory first.
        work = os.path.join(self.base, 'work')
        os.makedirs(os.path.join(work, 'definitions'))
        with open(os.path.join(work, 'definitions', 'epa_chain_types.yaml'),
                  'w') as stream:
            stream.write('tosca_definitions_version: tosca_simple_yaml_1_2\n')
        self.useFixture(_WorkingDirectory(work))
        error = self.assertRaises(safe_yaml.InputError, self.translate,
                                  os.path.join(self.tree, 'pvp.yaml'))
        self.assertIn('tosca-parser would read this file', error.message)

    def test_an_import_that_is_not_a_file_name(self):
        for value, expected in (('42', 'imports[0] is a number'),
                                ('{t: {file: null}}',
                                 'imports[0].t is empty')):
            error = self.assertRaises(safe_yaml.InputError, self.translate,
                                      self.importing(value))
            self.assertIn(expected, error.message)

    def test_sections_of_the_wrong_kind_are_problems_not_crashes(self):
        from epa_chain.tosca import errors

        for old, new, field in (
                ('description: >', 'description: [a]\nx: >',
                 'description'),
                ('topology_template:\n', 'topology_template: 5\nx:\n',
                 'topology_template'),
                ('  inputs:\n', '  inputs: [a]\n  x:\n',
                 'topology_template.inputs')):
            path = self.write('broken.yaml', self.pvp.replace(old, new, 1))
            error = self.assertRaises(errors.ToscaError, self.translate, path)
            (problem,) = error.problems
            self.assertEqual(field, problem.field)
            self.assertNotIn('\n', problem.line())

    def test_a_csar_is_not_extracted(self):
        path = self.write('chain.csar', 'PK\x03\x04')
        self.assertIn('not a .yaml file', self.assertRaises(
            safe_yaml.InputError, self.translate, path).message)


class _WorkingDirectory(fixtures.Fixture):

    def __init__(self, path):
        super().__init__()
        self.path = path

    def _setUp(self):
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(self.path)


class TestPresetNames(testtools.TestCase):

    def test_an_unknown_or_empty_preset_name_is_one_line(self):
        from epa_chain.hot import shipped

        for name, shown in (('pvp\nx', 'pvp\\nx'), ('', "''"),
                            ('..', '..')):
            error = self.assertRaises(shipped.PresetError,
                                      shipped.preset_path, name,
                                      repo.TEMPLATES)
            self.assertTrue(str(error).startswith(shown + ': no such '
                                                  'preset'), str(error))
            self.assertNotIn('\n', str(error))
            self.assertIn('pvp-bidir', str(error))
