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
"""

import dataclasses
import os
import typing
from urllib import parse as urlparse

import yaml

from heatclient.common import template_utils

ENVIRONMENT_SECTIONS = frozenset([
    'parameters', 'parameter_defaults', 'resource_registry', 'event_sinks',
    'encrypted_param_names', 'parameter_merge_strategies'])
TEMPLATE_SUFFIXES = ('.yaml', '.yml', '.template')
# Environments in a directory of this name adapt a chain to a kind of host
# rather than choosing one: they go on top of a preset (`-e PRESET -e ENV`).
OVERLAY_DIRECTORY = 'environments'


class LoadError(Exception):
    """A template or environment file cannot be read or parsed."""

    def __init__(self, path, message):
        super().__init__('%s: %s' % (path, message))
        self.path = path
        self.message = message


@dataclasses.dataclass
class TemplateSet:
    """A top-level template, its environments and every file they use."""

    template_path: str
    environment_paths: typing.List[str]
    template: dict
    environment: dict
    files: typing.Dict[str, str]

    def display_path(self, url_or_path):
        """The path to show for a file (or the file:// URL Heat uses).

        Relative to the working directory when the file is below it, as the
        user typed it; absolute otherwise.
        """
        path = url_to_path(url_or_path)
        rel = os.path.relpath(path, os.getcwd())
        return path if rel.startswith('..') else rel


def url_to_path(url_or_path):
    if url_or_path.startswith('file://'):
        return urlparse.unquote(urlparse.urlparse(url_or_path).path)
    return url_or_path


def load(template_path, environment_paths=()):
    """Load a template and its environments as `stack create` would."""
    template_path = os.path.abspath(template_path)
    environment_paths = [os.path.abspath(p) for p in environment_paths]
    for path in [template_path] + environment_paths:
        if not os.path.isfile(path):
            raise LoadError(path, 'no such file')
    try:
        tpl_files, template = template_utils.get_template_contents(
            template_file=template_path)
    except Exception as exc:
        raise LoadError(template_path, _describe(exc))
    try:
        env_files, environment = (
            template_utils.process_multiple_environments_and_files(
                env_paths=environment_paths))
    except Exception as exc:
        raise LoadError(', '.join(environment_paths), _describe(exc))
    files = {}
    for name, content in list(tpl_files.items()) + list(env_files.items()):
        # get_file contents come back as bytes; Heat wants text.
        if isinstance(content, bytes):
            content = content.decode('utf-8')
        files[name] = content
    return TemplateSet(template_path, environment_paths, template,
                       environment or {}, files)


def _describe(exc):
    text = str(exc).strip() or type(exc).__name__
    return text.replace('\n', ' ')


def read_yaml(path):
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise LoadError(path, _describe(exc))


def is_template(document):
    return isinstance(document, dict) and 'heat_template_version' in document


def is_environment(document):
    return (isinstance(document, dict) and bool(document) and
            set(document) <= ENVIRONMENT_SECTIONS)


def nested_template_paths(path, document):
    """Files a template uses as resource types, by absolute path."""
    nested = set()
    for definition in (document.get('resources') or {}).values():
        rtype = isinstance(definition, dict) and definition.get('type')
        if isinstance(rtype, str) and rtype.endswith(TEMPLATE_SUFFIXES):
            nested.add(os.path.normpath(
                os.path.join(os.path.dirname(path), url_to_path(rtype))))
    return nested


@dataclasses.dataclass
class Discovery:
    """What a directory holds: top-level templates and their presets."""

    pairs: typing.List[typing.Tuple[str, typing.List[str]]]
    unreadable: typing.List[LoadError]
    orphan_environments: typing.List[str]


def discover(directory):
    """Pair every top-level template under a directory with its presets.

    Templates used as nested resource types are validated through their
    parents. Each top-level template is validated alone (its defaults) and
    with each environment whose parameters it declares. An environment in
    an `environments/` directory (OVERLAY_DIRECTORY) is an overlay: it is
    validated alone and on top of each of its template's presets, in the
    order a user passes them (`-e PRESET -e OVERLAY`).
    """
    templates, environments, unreadable = {}, {}, []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith('.'))
        for name in sorted(names):
            if not name.endswith(TEMPLATE_SUFFIXES):
                continue
            path = os.path.abspath(os.path.join(root, name))
            try:
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


def is_overlay(path):
    return os.path.basename(os.path.dirname(path)) == OVERLAY_DIRECTORY


def _best_template(environment, candidates, templates):
    wanted = set(environment.get('parameters') or {})
    wanted |= set(environment.get('parameter_defaults') or {})
    best, best_score = None, -1
    for path in candidates:
        declared = set(templates[path].get('parameters') or {})
        score = len(wanted & declared)
        if score > best_score:
            best, best_score = path, score
    if best is not None and wanted and best_score == 0:
        return None
    return best
