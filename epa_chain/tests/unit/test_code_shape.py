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

"""The shape of the code: no function of MAX_FUNCTION_LINES or more.

Every .py under epa_chain/ and tempest_plugin/, tests included; every
def and async def, methods and nested functions included, counted from
its def line to its last line (docstring, comments and blank lines
within it count: a reader reads them too).
"""

import ast
import os
import shutil
import tempfile

import testtools

from epa_chain.tests import repo

#: a function this long or longer is split into helpers named for what
#: they do
MAX_FUNCTION_LINES = 60
PACKAGES = ('epa_chain', 'tempest_plugin')
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def python_files(top):
    """Every .py below `top`, skipping caches and hidden directories."""
    for root, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs
                         if d != '__pycache__' and not d.startswith('.'))
        for name in sorted(names):
            if name.endswith('.py'):
                yield os.path.join(root, name)


def long_functions(path, limit=MAX_FUNCTION_LINES):
    """['file:function:N lines'] of each function of `limit` lines or more.

    A nested function is named after the functions and classes around it
    (Outer.method.inner).
    """
    with open(path, encoding='utf-8') as stream:
        tree = ast.parse(stream.read(), path)
    shown = os.path.relpath(path, repo.ROOT)
    return ['%s:%s:%d lines (%d-%d)' % (shown, name, length, node.lineno,
                                        node.end_lineno)
            for name, node in _functions(tree, '')
            for length in [node.end_lineno - node.lineno + 1]
            if length >= limit]


def _functions(node, prefix):
    """(dotted name, node) of every function below `node`, in order."""
    for child in ast.iter_child_nodes(node):
        name = prefix
        if isinstance(child, _FUNCTIONS + (ast.ClassDef,)):
            name = prefix + child.name
            if isinstance(child, _FUNCTIONS):
                yield name, child
            name += '.'
        yield from _functions(child, name)


class TestFunctionLength(testtools.TestCase):

    def test_no_function_of_max_lines_or_more(self):
        checked, found = 0, []
        for package in PACKAGES:
            for path in python_files(os.path.join(repo.ROOT, package)):
                checked += 1
                found += long_functions(path)
        self.assertGreater(checked, 200)
        self.assertEqual([], found, 'functions of %d lines or more: split '
                         'each into helpers named for what they do'
                         % MAX_FUNCTION_LINES)

    def test_what_counts(self):
        # Methods, nested and async functions, from def to the last line.
        source = ('class A:\n'                          # line 1
                  '    def m(self):\n'                  # 2-61: 60 lines
                  '        def inner():\n' +            # 3-60: 58
                  '            x = 1\n' * 57 +
                  '        return inner\n'
                  'async def b():\n' +                  # 62-120: 59
                  '    pass\n' * 58)
        directory = tempfile.mkdtemp(prefix='epa-shape-')
        self.addCleanup(shutil.rmtree, directory)
        path = os.path.join(directory, 'shape.py')
        with open(path, 'w') as stream:
            stream.write(source)
        self.assertEqual(['A.m:60 lines (2-61)'], [
            found.split(':', 1)[1] for found in long_functions(path)])
        self.assertEqual(['A.m', 'A.m.inner', 'b'], [
            found.split(':')[1] for found in long_functions(path, 58)])
