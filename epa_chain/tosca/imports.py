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

"""A service template's imports, read and checked before tosca-parser.

tosca-parser reads imports itself: a path relative to the working
directory first, then to the importing file; a URL, or a file of a
`repository`, by fetching it. Here each import is resolved as TOSCA says
(relative to the file that imports it), refused if it is a URL or a
repository import (nothing is fetched) or outside the service template's
directory tree (hot/tree.py, --allow-files-outside), and read with
safe_yaml, imports of imports included. While tosca-parser parses, its
YAML loader serves these checked files and refuses any other.
"""

import contextlib
import os
from urllib import parse as urlparse

from epa_chain.hot import tree as tree_mod
from epa_chain import safe_yaml

WHAT = 'TOSCA import'
# tosca-parser follows imports recursively.
MAX_DEPTH = 20


class Imports:
    """The service template and every file it imports, checked, by path."""

    def __init__(self, path, text, document, allow_outside=False):
        self.tree = tree_mod.Tree(path, allow_outside)
        self.texts = {os.path.realpath(path): text}
        self._follow(document, path, [os.path.realpath(path)])

    def _follow(self, document, path, chain):
        """Check what `path` imports; `chain`: the files importing it."""
        imports = document.get('imports')
        referrer = safe_yaml.shown(path)
        if imports is None:
            return
        if not isinstance(imports, list):
            raise safe_yaml.InputError(
                referrer, 'imports is %s, not a list' % safe_yaml.kind_of(
                    imports), 'write imports as a list of file names')
        for field, value in _references(imports, referrer):
            if not isinstance(value, str) or not value:
                raise safe_yaml.InputError(
                    referrer, '%s is %s, not a file name' % (
                        field, safe_yaml.kind_of(value or None)),
                    'name the file, relative to this one')
            real = self._resolve(value, path, field)
            if real in chain:
                # tosca-parser would recurse until Python stops it.
                cycle = chain[chain.index(real):] + [real]
                raise safe_yaml.InputError(
                    referrer, '%s %s: the files import each other (%s)' % (
                        field, value, ' -> '.join(map(safe_yaml.shown,
                                                      cycle))),
                    'break the cycle')
            if len(chain) > MAX_DEPTH:
                raise safe_yaml.InputError(
                    referrer, '%s %s: imports of imports more than %d deep'
                    % (field, value, MAX_DEPTH), 'flatten the imports')
            if real in self.texts or not os.path.lexists(real):
                continue    # a missing file: tosca-parser says so
            try:
                data = safe_yaml.read_bytes(real, WHAT)
            except safe_yaml.InputError as exc:
                # A directory, a FIFO, too large: the import is to fix.
                raise safe_yaml.InputError(referrer, '%s %s: %s: %s' % (
                    field, value, safe_yaml.shown(real), exc.message),
                    exc.fix)
            text = safe_yaml.decode(data, safe_yaml.shown(real))
            imported = safe_yaml.load_text(text, safe_yaml.shown(real), WHAT)
            self.texts[real] = text
            self._follow(imported, real, chain + [real])

    def _resolve(self, value, path, field):
        referrer = safe_yaml.shown(path)
        if tree_mod.is_url(value):
            return self.tree.url(value, referrer, field, value)
        return self.tree.path(os.path.join(os.path.dirname(path), value),
                              referrer, field, value)

    def load_yaml(self, path, a_file=True):
        """tosca-parser's YAML_LOADER: a checked file, or InputError."""
        if not a_file:
            parts = urlparse.urlsplit(path)
            if parts.scheme != 'file' or parts.netloc not in (
                    '', 'localhost'):
                raise tree_mod.refuse_url(path, 'tosca-parser\'s import',
                                          path)
            path = urlparse.unquote(parts.path)
        text = self.texts.get(os.path.realpath(path))
        if text is None:
            raise safe_yaml.InputError(
                safe_yaml.shown(path), 'tosca-parser would read this file, '
                'which is not an import of the service template relative to '
                'the file importing it', 'name each import relative to the '
                'file that imports it')
        return safe_yaml.parse(text, safe_yaml.shown(path))

    @contextlib.contextmanager
    def served(self):
        """While tosca-parser parses: only these files, no URL."""
        from toscaparser import imports
        from toscaparser import tosca_template

        saved = [(module, module.YAML_LOADER)
                 for module in (imports, tosca_template)]
        try:
            for module, _ in saved:
                module.YAML_LOADER = self.load_yaml
            yield
        finally:
            for module, loader in saved:
                module.YAML_LOADER = loader


def _references(imports, referrer):
    """(field, file) of each import; a repository import is refused."""
    for index, item in enumerate(imports):
        field = 'imports[%d]' % index
        if not isinstance(item, dict):
            yield field, item
            continue
        for name, definition in item.items():
            named = '%s.%s' % (field, name)
            if not isinstance(definition, dict):
                yield named, definition
                continue
            repository = definition.get('repository')
            if repository is not None:
                raise safe_yaml.InputError(
                    referrer, '%s: imports from repository %s, by its URL, '
                    'and epa-chain fetches nothing' % (named, repository),
                    tree_mod.URL_FIX)
            yield named, definition.get('file')
