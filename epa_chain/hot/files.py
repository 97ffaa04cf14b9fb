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

"""Load HOT templates and environments the way the Heat client uploads them.

heatclient's template_utils is what `openstack stack create` runs: it reads
the template, follows nested template types and get_file paths, merges the
`-e` environments and collects every referenced file. Using it here means
validation sees exactly the stack a user would create.

heatclient would read any file and fetch any URL a template names, and
parse them with nothing bounding the work. So the files are read first,
here, following the references the way template_utils does: each is
checked against the template's directory tree (tree.py) and read and
checked by safe_yaml before anything parses it. template_utils then
assembles the stack from those checked bytes only (its object_request
hook), and never opens a file itself.
"""

import base64
import dataclasses
import json
import os
import pathlib
import typing
from urllib import parse as urlparse

from heatclient.common import environment_format
from heatclient.common import template_format
from heatclient.common import template_utils
from heatclient.common import utils as heat_utils

from epa_chain.hot import memo
from epa_chain.hot import tree as tree_mod
from epa_chain import safe_yaml

ENVIRONMENT_SECTIONS = frozenset(environment_format.SECTIONS)
# The sections Heat takes as lists; the others are mappings.
_LIST_SECTIONS = ('event_sinks', 'encrypted_param_names')
TEMPLATE_VERSION_KEYS = ('heat_template_version', 'HeatTemplateFormatVersion',
                         'AWSTemplateFormatVersion')
TEMPLATE_SUFFIXES = ('.yaml', '.yml', '.template')
# Sections Heat's engine iterates without checking their kind first.
_TEMPLATE_SECTIONS = {'parameters': dict, 'resources': dict,
                      'outputs': dict, 'conditions': dict,
                      'parameter_groups': list}
# The `type:` values heatclient follows as nested templates.
_NESTED_SUFFIXES = ('.yaml', '.template')
# Registry entries heatclient does not read as files.
_REGISTRY_SKIPPED = ('hooks', 'restricted_actions')
# Files including files deeper than this are refused: Heat nests stacks
# at most 5 deep (max_nested_stack_depth), and heatclient recurses.
MAX_FILE_DEPTH = 20
# Environments in a directory of this name adapt a chain to a kind of host
# rather than choosing one: they go on top of a preset (`-e PRESET -e ENV`).
OVERLAY_DIRECTORY = 'environments'

# A file that cannot be read, or must not be (safe_yaml, tree).
LoadError = safe_yaml.InputError

# Every check of a run reads the same files: each text is checked and
# parsed once per process (memo.py), each caller getting its own copy.
_load_text = memo.once(safe_yaml.load_text)
_check_text = memo.once(safe_yaml.check)
_parse_as_heatclient = memo.once(template_format.parse)


@dataclasses.dataclass
class TemplateSet:
    """A top-level template, its environments and every file they use."""

    template_path: str
    environment_paths: typing.List[str]
    template: dict
    environment: dict
    files: typing.Dict[str, str]
    # The environment files as `openstack stack create -e` sends them
    # (environment_files): keys of `files`, in order. Heat's engine merges
    # them again over the API's parameters.
    environment_files: typing.List[str] = dataclasses.field(
        default_factory=list)

    def display_path(self, url_or_path):
        """The path to show for a file (or the file:// URL Heat uses).

        Relative to the working directory when the file is below it, as the
        user typed it; absolute otherwise.
        """
        return safe_yaml.shown(url_to_path(url_or_path))


def url_to_path(url_or_path):
    if url_or_path.startswith('file://'):
        return urlparse.unquote(urlparse.urlparse(url_or_path).path)
    return url_or_path


def load(template_path, environment_paths=(), allow_outside=False):
    """Load a template and its environments as `stack create` would.

    LoadError names the file (and the field) refused or unreadable.
    """
    template_path = os.path.abspath(template_path) if template_path else ''
    environment_paths = [os.path.abspath(p) if p else ''
                         for p in environment_paths]
    reader = _Reader(tree_mod.Tree(template_path, allow_outside))
    template_url = reader.template(template_path)
    # What the template's tree holds, before the environments add theirs.
    tree_files = tuple(sorted(reader.checked.items()))
    environment_urls = [reader.environment(p) for p in environment_paths]
    environment_files = []
    try:
        tpl_files, template = _uploaded_template(template_url, tree_files)
        env_files, environment = (
            template_utils.process_multiple_environments_and_files(
                env_paths=environment_urls,
                env_path_is_object=lambda path: True,
                object_request=reader.serve,
                env_list_tracker=environment_files))
    except LoadError:
        raise
    except Exception as exc:
        # Checked above as heatclient reads them: not expected.
        raise LoadError(safe_yaml.shown(template_path), _describe(exc),
                        'see the message')
    files = {}
    env_texts = [(url, _uploaded_environment(url, reader))
                 for url in environment_files]
    for name, content in (list(tpl_files.items()) + list(env_files.items()) +
                          env_texts):
        # get_file contents come back as bytes; Heat wants text.
        if isinstance(content, bytes):
            content = content.decode('utf-8')
        files[name] = content
    return TemplateSet(template_path, environment_paths, template,
                       environment or {}, files, environment_files)


@memo.once
def _uploaded_template(template_url, tree_files):
    """(files, template) as heatclient uploads a template: once per tree.

    `tree_files` are the (URL, bytes) the checks read for the template.
    """
    return template_utils.get_template_contents(
        template_object=template_url,
        object_request=_Reader(None, dict(tree_files)).serve)


def _uploaded_environment(url, reader):
    """An environment file as the client uploads it beside the others.

    heatclient sends each -e file as JSON, its registry's paths made
    absolute (process_environment_and_files with include_env_in_files),
    but leaves it out for objects, which is how ours are read: done here
    with its own functions.
    """
    environment = environment_format.parse(reader.serve('GET', url))
    template_utils.resolve_environment_urls(
        environment.get('resource_registry'), {},
        heat_utils.base_url_for_url(url), is_object=True,
        object_request=reader.serve)
    return json.dumps(environment)


def from_heat(stack_name, template, environment, files):
    """A created stack's template set, as Heat holds it.

    `template`, `environment` and `files` are what `openstack stack
    template show`, `stack environment show` and `stack file list` give
    (parsed from JSON): the uploaded template, environment and files map
    of stack `stack_name`. They come from the cloud, so every file is
    checked by safe_yaml before Heat's engine parses it, as a file read
    from disk is; LoadError names what is wrong. Nothing is read from
    disk: Heat's engine takes nested templates from the files map.
    """
    name = 'stack %s' % stack_name
    for value, what in ((template, 'template'),
                        (environment, 'environment'), (files, 'files')):
        if not isinstance(value, dict):
            raise LoadError(name, 'its %s is %s, not a mapping' % (
                what, safe_yaml.kind_of(value)), 'check the stack in Heat')
    check_template(template, name)
    check_environment(environment, name)
    for url, text in files.items():
        # JSON keys are always strings; the values must be too.
        if not isinstance(text, str):
            raise LoadError(name, 'file %s of its files map is %s, not '
                            'text' % (url, safe_yaml.kind_of(text)),
                            'check the stack in Heat')
        safe_yaml.check(text, url, syntax=False)
    return TemplateSet(name, [], template, environment, dict(files))


class _Reader:
    """Reads a template set's files as template_utils would, checked.

    Every file is read once, into `checked`, keyed by the URL heatclient
    gives it; serve() hands template_utils those bytes and nothing else.
    """

    def __init__(self, tree, checked=None):
        self.tree = tree
        self.checked = {} if checked is None else checked
        self._walking = []      # the chain of files being followed

    def template(self, path):
        text = safe_yaml.read_text(path, 'template')
        name = safe_yaml.shown(path)
        document = _template(text, name)
        url = _file_url(path)
        self.checked[url] = text.encode('utf-8')
        self._walking.append(url)
        self._follow_template(document, url, name)
        self._walking.pop()
        return url

    def environment(self, path):
        what = 'environment'
        text = safe_yaml.read_text(path, what)
        name = safe_yaml.shown(path)
        document = _load_text(text, name, what)
        check_environment(document, name)
        url = _file_url(path)
        self.checked[url] = text.encode('utf-8')
        self._follow_registry(document.get('resource_registry'), url, name)
        return url

    def serve(self, method, url):
        """template_utils' object_request: the checked bytes, or refuse."""
        if url not in self.checked:
            raise LoadError(safe_yaml.shown(url_to_path(url)),
                            'heatclient asked for a file the checks did not '
                            'read', 'report this as a bug of epa-chain')
        content = self.checked[url]
        try:
            content.decode('utf-8')
        except UnicodeDecodeError:
            # What template_utils does with a binary get_file.
            content = base64.encodebytes(content)
        return content

    # ---- following references the way template_utils does ------------

    def _follow_template(self, document, url, name, where=()):
        """Every get_file, and every type naming a .yaml/.template file."""
        if isinstance(document, dict):
            for key, value in document.items():
                field = where + (str(key),)
                if isinstance(value, (dict, list)):
                    self._follow_template(value, url, name, field)
                elif isinstance(value, str) and (
                        key == 'get_file' or key == 'type' and
                        value.endswith(_NESTED_SUFFIXES)):
                    self._read(url, value, name, _dotted(field),
                               nested=key == 'type')
        elif isinstance(document, list):
            for index, value in enumerate(document):
                self._follow_template(value, url, name, where + (index,))

    def _follow_registry(self, registry, url, name):
        if registry is None:
            return
        base = self._base_url(registry, heat_utils.base_url_for_url(url),
                              name, 'resource_registry')
        self._registry_entries(registry, base, url, name,
                               'resource_registry')
        resources = registry.get('resources', {})
        if not isinstance(resources, dict):
            raise LoadError(name, 'resource_registry.resources is %s, not '
                            'a mapping' % safe_yaml.kind_of(resources),
                            'map resource names to their registry entries')
        for resource, entries in resources.items():
            field = 'resource_registry.resources.%s' % resource
            if not isinstance(entries, dict):
                raise LoadError(name, '%s is %s, not a mapping' % (
                    field, safe_yaml.kind_of(entries)),
                    'map resource types to templates there')
            self._registry_entries(
                entries, self._base_url(entries, base, name, field), url,
                name, field)

    def _base_url(self, entries, default, name, field):
        base = entries.get('base_url', default)
        if not isinstance(base, str) or not tree_mod.is_url(base):
            raise LoadError(name, '%s.base_url %r: not a file:// URL' % (
                field, base), 'leave base_url out: entries are relative to '
                'the environment file')
        return base

    def _registry_entries(self, entries, base, url, name, where):
        for key, value in entries.items():
            field = '%s.%s' % (where, key)
            if key in ('base_url', 'resources') or isinstance(value, dict):
                continue    # base_url is read, resources walked, apart
            if key in _REGISTRY_SKIPPED and isinstance(value, list):
                continue
            if not isinstance(value, str):
                raise LoadError(name, '%s is %s' % (
                    field, safe_yaml.kind_of(value)),
                    'give a resource type (OS::...) or a template path')
            if '::' in value or key in _REGISTRY_SKIPPED:
                continue
            self._read(url, value, name, field, base)

    def _read(self, referrer_url, value, referrer, field, base=None,
              nested=True):
        """Read (once) the file `value` names, and what it names in turn.

        `nested`: a nested template (a type or a registry entry), which
        must be one; else a get_file, which may be anything.
        """
        if base is None:
            base = heat_utils.base_url_for_url(referrer_url)
        if base and not base.endswith('/'):
            base += '/'
        url = urlparse.urljoin(base, value)
        if url in self._walking:
            chain = [safe_yaml.shown(url_to_path(u))
                     for u in self._walking[self._walking.index(url):]]
            raise LoadError(referrer, '%s %s: the templates include each '
                            'other (%s)' % (field, value, ' -> '.join(
                                chain + [chain[0]])),
                            'Heat refuses recursive templates: break the '
                            'cycle')
        if url in self.checked:
            return
        if len(self._walking) >= MAX_FILE_DEPTH:
            raise LoadError(referrer, '%s %s: files include files more '
                            'than %d deep' % (field, value, MAX_FILE_DEPTH),
                            'Heat nests stacks at most 5 deep: flatten '
                            'them')
        path = self.tree.url(url, referrer, field, value)
        name = safe_yaml.shown(path)
        try:
            data = safe_yaml.read_bytes(path)
        except LoadError as exc:
            # Missing, a directory, too large: the reference is to fix.
            raise LoadError(referrer, '%s %s: %s: %s' % (
                field, value, name, exc.message), exc.fix)
        self.checked[url] = data
        document = (_template(safe_yaml.decode(data, name), name) if nested
                    else _maybe_template(data, name))
        if document is not None:
            self._walking.append(url)
            try:
                self._follow_template(document, url, name)
            finally:
                self._walking.pop()


def _template(text, name):
    """A template's text, checked, as heatclient reads it."""
    document = _load_text(text, name, 'template')
    if not any(key in document for key in TEMPLATE_VERSION_KEYS):
        raise LoadError(name, 'not a Heat template: no '
                        'heat_template_version', 'give a HOT template '
                        '(the shipped one is templates/chain.yaml)')
    check_template(document, name)
    return _heat_parse(text, name)


def _maybe_template(data, name):
    """A get_file's content as a template if heatclient takes it for one.

    heatclient parses every file it reads to see whether it is a
    template, and follows what a template names: the text is checked
    first, as far as it is YAML. Binary content is uploaded as it is.
    """
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError:
        return None
    _check_text(text, name, syntax=False)
    try:
        # What template_utils.is_template asks.
        document = _parse_as_heatclient(text)
    except (ValueError, TypeError):
        return None
    if isinstance(document, dict):
        check_template(document, name)
    return document


def _dotted(parts):
    """resources.sg.properties.rules[0].remote_ip_prefix"""
    text = ''
    for part in parts:
        text += '[%d]' % part if isinstance(part, int) else (
            '.' + part if text else part)
    return text


def _file_url(path):
    """The URL heatclient gives a file named on the command line."""
    return pathlib.Path(path).resolve().as_uri()


def _heat_parse(text, name):
    """The document as heatclient reads it (text already checked)."""
    try:
        return _parse_as_heatclient(text)
    except ValueError as exc:
        raise LoadError(name, _describe(exc), 'give a Heat template')


def check_template(document, name):
    """A template's sections are of the kind Heat assumes they are."""
    for section, kind in _TEMPLATE_SECTIONS.items():
        value = document.get(section)
        if value is not None and not isinstance(value, kind):
            raise LoadError(name, 'section %s is %s, not %s' % (
                section, safe_yaml.kind_of(value),
                'a list' if kind is list else 'a mapping'),
                'see Heat\'s template guide (templates/chain.yaml has '
                'each section)')


def check_environment(document, name):
    """An environment's sections are Heat's, each of the right kind."""
    for section, value in document.items():
        if section not in ENVIRONMENT_SECTIONS:
            raise LoadError(name, 'unknown environment section %r' % (
                section,), 'use %s' % ', '.join(sorted(
                    ENVIRONMENT_SECTIONS)))
        kind = list if section in _LIST_SECTIONS else dict
        if value is not None and not isinstance(value, kind):
            raise LoadError(name, 'section %s is %s, not %s' % (
                section, safe_yaml.kind_of(value),
                'a list' if kind is list else 'a mapping'),
                'see Heat\'s environment format')


def _describe(exc):
    text = str(exc).strip() or type(exc).__name__
    return ' '.join(text.split())


def read_yaml(path):
    """A YAML file's document (any kind), read with every safe_yaml check."""
    text = safe_yaml.read_text(path, 'file')
    return safe_yaml.parse(text, safe_yaml.shown(path))


def is_template(document):
    return isinstance(document, dict) and 'heat_template_version' in document


def is_environment(document):
    return (isinstance(document, dict) and bool(document) and
            set(document) <= ENVIRONMENT_SECTIONS)


def nested_template_paths(path, document):
    """Files a template uses as resource types, by absolute path.

    A resource's own type, or the type of the members a ResourceGroup
    makes (its resource_def).
    """
    nested = set()
    resources = document.get('resources')
    for definition in (resources.values() if isinstance(resources, dict)
                       else ()):
        for rtype in (_resource_type(definition),
                      _resource_type(_group_member(definition))):
            if not (isinstance(rtype, str) and
                    rtype.endswith(TEMPLATE_SUFFIXES)):
                continue
            nested.add(os.path.normpath(
                os.path.join(os.path.dirname(path), url_to_path(rtype))))
    return nested


def _resource_type(definition):
    return isinstance(definition, dict) and definition.get('type')


def _group_member(definition):
    properties = isinstance(definition, dict) and definition.get('properties')
    return isinstance(properties, dict) and properties.get('resource_def')


@dataclasses.dataclass
class Discovery:
    """What a directory holds: top-level templates and their presets."""

    pairs: typing.List[typing.Tuple[str, typing.List[str]]]
    unreadable: typing.List[LoadError]
    orphan_environments: typing.List[str]


def discover(directory, allow_outside=False):
    """Pair every top-level template under a directory with its presets.

    Templates used as nested resource types are validated through their
    parents. Each top-level template is validated alone (its defaults) and
    with each environment whose parameters it declares. An environment in
    an `environments/` directory (OVERLAY_DIRECTORY) is an overlay: it is
    validated alone and on top of each of its template's presets, in the
    order a user passes them (`-e PRESET -e OVERLAY`). A symbolic link to
    a file outside the directory is not read (unless `allow_outside`).
    """
    templates, environments, unreadable = {}, {}, []
    real_directory = os.path.realpath(directory)
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith('.'))
        for name in sorted(names):
            if not name.endswith(TEMPLATE_SUFFIXES):
                continue
            path = os.path.abspath(os.path.join(root, name))
            try:
                if not allow_outside:
                    _inside_directory(path, real_directory, directory)
                document = read_yaml(path)
            except LoadError as exc:
                unreadable.append(exc)
                continue
            if is_template(document):
                templates[path] = document
            elif is_environment(document):
                environments[path] = document
    nested = set()
    for path, document in templates.items():
        nested |= nested_template_paths(path, document)
    top_level = [p for p in sorted(templates) if p not in nested]

    pairs = [(t, []) for t in top_level]
    orphans, overlays = [], []
    for env_path, env in sorted(environments.items()):
        template = _best_template(env, top_level, templates)
        if template is None:
            orphans.append(env_path)
        elif is_overlay(env_path):
            overlays.append((template, env_path))
        else:
            pairs.append((template, [env_path]))
    presets = [(t, envs[0]) for t, envs in pairs if envs]
    for template, overlay in overlays:
        pairs.append((template, [overlay]))
        pairs += [(template, [preset, overlay])
                  for preset_template, preset in presets
                  if preset_template == template]
    return Discovery(pairs, unreadable, orphans)


def _inside_directory(path, real_directory, directory):
    real = os.path.realpath(path)
    if not tree_mod.inside(real, real_directory):
        raise LoadError(safe_yaml.shown(path), 'a symbolic link to %s, '
                        'outside %s' % (real, directory),
                        'copy the file into %s, or pass %s' % (
                            directory, tree_mod.ALLOW_OPTION))


def is_overlay(path):
    return os.path.basename(os.path.dirname(path)) == OVERLAY_DIRECTORY


def _best_template(environment, candidates, templates):
    wanted = _names(environment.get('parameters'))
    wanted |= _names(environment.get('parameter_defaults'))
    best, best_score = None, -1
    for path in candidates:
        declared = _names(templates[path].get('parameters'))
        score = len(wanted & declared)
        if score > best_score:
            best, best_score = path, score
    if best is not None and wanted and best_score == 0:
        return None
    return best


def _names(section):
    """The names a parameters section declares or sets (none if broken)."""
    return {str(name) for name in section} if isinstance(
        section, dict) else set()
