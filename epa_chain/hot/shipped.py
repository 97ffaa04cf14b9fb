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

"""The shipped templates and presets: where they are, which one to use.

A preset is an environment file under templates/presets/. Two questions
pick one: by name (`epa-chain local --preset`: an alias such as pvp, a
file stem such as pvvp-unidir, or a path) and by chain length and
direction (the Tempest scenarios).
"""

import copy
import os
import site
import sys

from epa_chain import safe_yaml

TEMPLATE = 'chain.yaml'
# Chain length -> preset family; the presets differ in segments (and the
# vE-CPE ones in fixed MACs), the direction picks -unidir or -bidir.
FAMILIES = {1: 'pvp', 2: 'pvvp', 3: 'vecpe'}
DIRECTION_SUFFIX = {'unidirectional': 'unidir', 'bidirectional': 'bidir'}
# A bare family name means its bidirectional preset.
ALIASES = {family: family + '-' + DIRECTION_SUFFIX['bidirectional']
           for family in FAMILIES.values()}


class PresetError(ValueError):
    """No preset by that name; the message lists the known ones."""


def template_dir_candidates():
    """templates/ of a source checkout, then the installed copies.

    setup.cfg installs the templates as data files: under the environment
    (sys.prefix/share), or the user base for `pip install --user`.
    """
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return [
        os.path.join(package_root, 'templates'),
        os.path.join(sys.prefix, 'share', 'epa-chain', 'templates'),
        os.path.join(site.getuserbase(), 'share', 'epa-chain', 'templates'),
    ]


def template_dir():
    """The first candidate holding chain.yaml, or None."""
    for candidate in template_dir_candidates():
        if os.path.isfile(os.path.join(candidate, TEMPLATE)):
            return candidate
    return None


def presets(directory):
    """Preset names (file stems) in directory/presets, sorted."""
    folder = os.path.join(directory, 'presets')
    if not os.path.isdir(folder):
        return []
    return sorted(name[:-5] for name in os.listdir(folder)
                  if name.endswith('.yaml'))


def preset_path(name, directory=None):
    """A preset by name (`pvp`, `pvvp-unidir`, ...) or as a file path.

    `directory` holds presets/ (default: the shipped templates).
    """
    if os.path.sep in name or name.endswith('.yaml'):
        return name
    directory = directory or template_dir()
    path = _preset_file(directory, ALIASES.get(name, name))
    if not name or not os.path.isfile(path):
        known = presets(directory) if directory else []
        message = ('%s: no such preset (no %s); use one of %s, the aliases '
                   '%s, or an environment file\'s path' % (
                       safe_yaml.escape(name) or "''",
                       safe_yaml.escape(path), ', '.join(known),
                       ', '.join(sorted(ALIASES))))
        raise PresetError(message)
    return path


def preset_for(directory, chain_length, direction):
    """The preset of a chain length (1-3) and a direction's long name."""
    return _preset_file(directory, '%s-%s' % (
        FAMILIES[chain_length], DIRECTION_SUFFIX[direction]))


def _preset_file(directory, stem):
    return os.path.join(directory or '', 'presets', stem + '.yaml')


def parameter_default(name, directory=None):
    """The default of chain.yaml's parameter `name`: the template owns it.

    Code that needs such a value (the Tempest options' defaults) reads it
    here instead of writing it a second time.
    """
    return parameter_defaults((name,), directory)[name]


def parameter_defaults(names, directory=None):
    """{name: chain.yaml's default} of the parameters `names`, one read.

    `directory` holds chain.yaml (default: the shipped templates).
    """
    path, parameters = _chain_parameters(directory)
    found = {}
    for name in names:
        try:
            found[name] = parameters[name]['default']
        except (KeyError, TypeError):
            raise PresetError('%s: parameter %s has no default; give it '
                              'one there' % (safe_yaml.shown(path),
                                             name)) from None
    return found


def parameter_definition(name, directory=None):
    """A copy of chain.yaml's definition of parameter `name`.

    For templates that take the same parameter (the translated TOSCA
    chains): type, label, description and constraints stay chain.yaml's.
    """
    path, parameters = _chain_parameters(directory)
    definition = parameters.get(name)
    if not isinstance(definition, dict):
        raise PresetError('%s: no parameter %s' % (safe_yaml.shown(path),
                                                   name))
    return copy.deepcopy(definition)


def _chain_parameters(directory):
    """chain.yaml's path and its parameters section."""
    directory = directory or template_dir()
    if directory is None:
        raise PresetError('no shipped templates found in %s' % ', '.join(
            template_dir_candidates()))
    path = os.path.join(directory, TEMPLATE)
    parameters = safe_yaml.load(path).get('parameters')
    return path, parameters if isinstance(parameters, dict) else {}
