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

"""The maps of the tree stay true to it, so that they cannot drift.

Every package's __init__.py docstring names each of its modules and
subpackages on a line of its own (`name`, `- name`, `name/`, with or
without backticks, then what it is for); doc/source/architecture.rst
names every package of epa_chain; README.rst stays short and gives the
test command .ci/run runs. Docstrings are read with ast, nothing is
imported. In a test package a `test_*` module is exempt: its name says
what it tests; the helpers and subpackages beside it are not.
"""

import ast
import os
import re

import testtools

from epa_chain.tests import repo

# The package trees whose docstrings are maps.
TREES = (os.path.join(repo.ROOT, 'epa_chain'),
         os.path.join(repo.ROOT, 'tempest_plugin', 'epa_chain_tempest_plugin'))
ARCHITECTURE = os.path.join(repo.ROOT, 'doc', 'source', 'architecture.rst')
README = os.path.join(repo.ROOT, 'README.rst')
CI_RUN = os.path.join(repo.ROOT, '.ci', 'run')
README_MAX_LINES = 200


def packages():
    """Every package directory under TREES, sorted."""
    found = []
    for tree in TREES:
        for top, dirs, files in os.walk(tree):
            dirs[:] = sorted(d for d in dirs if d != '__pycache__')
            if '__init__.py' in files:
                found.append(top)
    return sorted(found)


def _is_test_package(path):
    return 'tests' in os.path.relpath(path, repo.ROOT).split(os.sep)


def members(path):
    """The module and subpackage names a package's docstring must name."""
    names = []
    for entry in sorted(os.listdir(path)):
        full = os.path.join(path, entry)
        if os.path.isfile(os.path.join(full, '__init__.py')):
            names.append(entry)
        elif entry.endswith('.py') and entry != '__init__.py':
            module = entry[:-3]
            if not (_is_test_package(path) and module.startswith('test_')):
                names.append(module)
    return names


def docstring(path):
    with open(os.path.join(path, '__init__.py')) as stream:
        return ast.get_docstring(ast.parse(stream.read())) or ''


def named(name, text):
    """Whether a line of `text` starts with `name` (the map's form)."""
    pattern = (r'^\s*(?:[-*]\s+)?`{0,2}%s(?:/|\.py)?`{0,2}(?::|\s|$)'
               % re.escape(name))
    return re.search(pattern, text, re.MULTILINE) is not None


def unnamed(path):
    text = docstring(path)
    return [name for name in members(path) if not named(name, text)]


class PackageMapTest(testtools.TestCase):

    def test_every_package_docstring_names_its_modules(self):
        problems = []
        for path in packages():
            missing = unnamed(path)
            if missing:
                problems.append(
                    '%s/__init__.py: docstring names no line for %s; fix: '
                    'add one line each, "name  what it is for" (read the '
                    "module's own docstring)"
                    % (os.path.relpath(path, repo.ROOT), ', '.join(missing)))
        self.assertEqual([], problems, '\n'.join(problems))

    def test_the_architecture_page_names_every_package(self):
        with open(ARCHITECTURE) as stream:
            page = stream.read()
        top = os.path.join(repo.ROOT, 'epa_chain')
        missing = [name for name in members(top)
                   if name != 'tests' and '``%s' % name not in page]
        self.assertEqual([], missing,
                         '%s: no ``name`` for these parts of epa_chain; fix: '
                         'say what each owns on the page'
                         % os.path.relpath(ARCHITECTURE, repo.ROOT))


class MatcherTest(testtools.TestCase):

    def test_a_name_counts_only_at_the_start_of_a_line(self):
        self.assertTrue(named('stack', 'stack     the stack'))
        self.assertTrue(named('traffic', '- `traffic/`: senders'))
        self.assertTrue(named('plugin', 'plugin.py  the entry point'))
        self.assertFalse(named('stack', 'stack_needs  what a stack asks'))
        self.assertFalse(named('stack', 'resolves the stack first'))

    def test_test_modules_of_a_test_package_are_exempt(self):
        unit = os.path.join(repo.ROOT, 'epa_chain', 'tests', 'unit')
        names = members(unit)
        self.assertNotIn('test_package_map', names)
        self.assertIn('recorded_cloud', names)


class ReadmeTest(testtools.TestCase):

    def _readme(self):
        with open(README) as stream:
            return stream.read()

    def test_the_readme_is_read_in_five_minutes(self):
        lines = self._readme().count('\n')
        self.assertLess(lines, README_MAX_LINES,
                        'README.rst: %d lines; fix: move the detail into a '
                        'doc/source page and link it' % lines)

    def test_the_readme_gives_the_test_command_ci_runs(self):
        with open(CI_RUN) as stream:
            commands = [line.strip() for line in stream
                        if line.startswith('tox ')]
        self.assertEqual(1, len(commands), '.ci/run: one tox line expected')
        self.assertIn('\n    %s\n' % commands[0], self._readme(),
                      'README.rst: the test command is not .ci/run\'s '
                      '"%s"; fix: give the same command in both' % commands[0])
