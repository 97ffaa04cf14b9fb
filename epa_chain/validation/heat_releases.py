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

"""Constructs that break a Heat release which accepts the template.

The validator runs one Heat engine, the one it imports; a template must
also work on every Heat release that supports its heat_template_version.
This rule reads the template files as written (the top-level template and
every nested one the stack uses) for constructs known to break such a
release although the imported engine accepts them.

  HEAT-COMPAT  a two-argument `if` (HOT 2021-04-16, Heat 16 Wallaby on):
               when its condition is false Heat 19 (Zed) fails stack
               create with "EllipsisType takes no arguments" (HTTP 500),
               although `template validate` passes
"""

import datetime

import yaml

from epa_chain.hot import files
from epa_chain.hot import memo
from epa_chain import safe_yaml
from epa_chain.validation import findings

RULE = 'HEAT-COMPAT'
# The first HOT version with a two-argument `if`; older versions refuse
# it themselves (Heat's own error, rule HEAT).
TWO_ARGUMENT_IF_SINCE = '2021-04-16'
VERSION_NAMES = {'wallaby': '2021-04-16'}

NULL_FIX = ('give `if` a third argument, null to leave the value unset: '
            '{if: [%s, VALUE, null]}')
# The same files for every preset of a template: parsed once (memo.py).
_parse = memo.once(safe_yaml.parse)
MAC_FIX = ('fix the MAC through value_specs instead: value_specs: {if: '
           '[%s, {mac_address: VALUE}, {}]} (a null mac_address becomes '
           '\'\', which Neutron refuses)')


def check(template_set):
    """HEAT-COMPAT findings for every template file of a TemplateSet."""
    documents = {template_set.template_path: template_set.template}
    for name, text in sorted(template_set.files.items()):
        path = files.url_to_path(name)
        if path in documents or not path.endswith(files.TEMPLATE_SUFFIXES):
            continue
        try:
            document = _parse(text, template_set.display_path(path))
        except safe_yaml.InputError:
            continue    # not ours to report: Heat's own parse does
        if files.is_template(document):
            documents[path] = document
    for path, document in documents.items():
        yield from check_document(document, template_set.display_path(path))


def check_document(document, shown_path):
    """HEAT-COMPAT findings for one parsed template."""
    version = _version(document.get('heat_template_version'))
    if version is None or version < TWO_ARGUMENT_IF_SINCE:
        return
    for path, node in _walk(document, ()):
        if isinstance(node, dict) and list(node) == ['if'] and (
                isinstance(node['if'], list) and len(node['if']) == 2):
            resource, prop = _address(path)
            condition = _condition_name(node['if'][0])
            fix = MAC_FIX if path[-1:] == ('mac_address',) else NULL_FIX
            yield findings.Finding(
                rule=RULE, file=shown_path, resource=resource,
                property=prop,
                message='two-argument `if` on condition %s: when the '
                        'condition is false, Heat 19 (Zed), which supports '
                        'heat_template_version %s, fails stack create with '
                        '"EllipsisType takes no arguments" (template '
                        'validate passes)'
                        % (condition,
                           document.get('heat_template_version')),
                fix=fix % condition)


def _version(value):
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.strftime('%Y-%m-%d')
    if not isinstance(value, str):
        return None
    return VERSION_NAMES.get(value, value)


def _walk(node, path):
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _walk(value, path + (str(key),))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, path + (str(index),))


def _address(path):
    """(resource, property path) for a finding; outputs by section."""
    if len(path) >= 2 and path[0] == 'resources':
        rest = path[2:]
        if rest[:1] == ('properties',):
            rest = rest[1:]
        return path[1], '.'.join(rest)
    return '', '.'.join(path)


def _condition_name(condition):
    if isinstance(condition, str):
        return condition
    return yaml.safe_dump(condition, default_flow_style=True).strip()
