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

"""Heat's validation errors, addressed to a file, resource and property.

Heat reports a path such as
  resources.vnf1<file:///.../lib/chain_server.yaml>.resources.server
  .properties.flavor
and a message. The path says which template file the error is in (the last
nested template named in it), the resource and the property. The message
gets a suggested fix where the schema knows the right spelling.
"""

import difflib
import re

from epa_chain.hot import files
from epa_chain.hot import offline
from epa_chain import safe_yaml
from epa_chain.validation import findings

_NESTED = re.compile(r'^(?P<name>[^<]+)<(?P<url>[^>]+)>$')


def to_finding(exc, template_set, template, context=()):
    """Turn an exception raised while Heat parsed or validated into a Finding.

    `template` is the display path of the file being processed and
    `context` the resource path of the nested stack it belongs to.
    """
    h = offline.heat()
    path = list(getattr(exc, 'path', None) or [])
    message = getattr(exc, 'error_message', None) or str(exc)
    if not isinstance(message, str):
        # Heat sometimes raises ValueError(format, value): a tuple.
        message = str(message)
    if isinstance(exc, h.exception.StackValidationFailed) and not path:
        message = str(exc)
    file, resource, prop = template, list(context), ''
    index = 0
    while index < len(path):
        part = str(path[index])
        if part == 'resources' and index + 1 < len(path):
            name = str(path[index + 1])
            match = _NESTED.match(name)
            if match:
                resource.append(match.group('name'))
                url = match.group('url')
                # <file:///.../lib/x.yaml>, or <nested_stack> of an
                # AWS::CloudFormation::Stack, which names no file.
                if url.startswith('file://') or url.endswith(
                        files.TEMPLATE_SUFFIXES):
                    file = template_set.display_path(url)
            else:
                resource.append(name)
            index += 2
            continue
        if part == 'properties' and index + 1 < len(path):
            prop = str(path[index + 1])
        index += 1
    # One line: Heat quotes values, newlines included.
    message = ' '.join(_strip_path(message).split())
    unknown = re.search(r'Unknown Property (\S+)', message)
    if unknown and not prop:
        prop = unknown.group(1)
    unknown = re.search(r'The Resource Type \((\S+)\) could not be found',
                        message)
    if unknown and not resource:
        resource = _resources_of_type(unknown.group(1), template_set)
    return findings.Finding(
        rule='HEAT', message=message,
        fix=_fix(message, resource, template_set),
        file=file, resource='.'.join(resource), property=prop)


def _strip_path(message):
    # Heat prefixes its message with the path it also gives separately.
    return re.sub(r'^(Property error: )?[\w.<>:/$-]+\.(properties|'
                  r'resources|params|get_attr)\.?[\w.<>:/$-]*: ', '',
                  message).strip()


def _fix(message, resource, template_set):
    env = offline.heat().resources.global_env()

    match = re.search(r'Unknown Property (\S+)', message)
    if match:
        rtype = _resource_type(resource, template_set)
        choices = _properties_of(env, rtype)
        return _closest('property', match.group(1), choices,
                        'the properties of %s' % (rtype or 'the type'))
    match = re.search(r'The Resource Type \((\S+)\) could not be found',
                      message)
    if match:
        return _closest('resource type', match.group(1),
                        env.get_types(support_status=None),
                        'openstack orchestration resource type list')
    match = re.search(r'The Referenced Attribute \((\S+) (\S+)\) is '
                      r'incorrect', message)
    if match:
        target, attribute = match.groups()
        rtype = _resource_type(resource[:-1] + [target], template_set)
        try:
            choices = sorted(env.get_class(rtype).attributes_schema)
        except Exception:
            choices = []
        if choices:
            return _closest('attribute', attribute, choices,
                            'the attributes of %s' % rtype)
        return ('get_attr names an attribute %s does not have; use one of '
                'its attributes or an output of its nested template'
                % target)
    match = re.search(r'The Parameter \((\S+)\) was not defined', message)
    if match:
        return ('remove %s from the environment, or declare it in the '
                'template' % match.group(1))
    if re.search(r'(is not a|Value .* must be|could not convert|invalid '
                 r'literal|is not an integer|Unrecognized value)', message,
                 re.I):
        return 'give the property a value of the type its schema declares'
    if 'does not match pattern' in message or 'must be one of' in message \
            or 'is out of range' in message or 'length' in message:
        return 'give a value within the constraint quoted above'
    return 'change what Heat\'s message names'


def _resources_of_type(rtype, template_set):
    resources = template_set.template.get('resources') or {}
    return sorted(name for name, definition in resources.items()
                  if isinstance(definition, dict) and
                  definition.get('type') == rtype)[:1]


def _resource_type(resource, template_set):
    """The resource type of the innermost named resource, if we can tell."""
    if not resource:
        return None
    document = template_set.template
    docs = {files.url_to_path(k): v for k, v in template_set.files.items()}
    for name in resource:
        resources = document.get('resources')
        definition = resources.get(name) if isinstance(
            resources, dict) else None
        rtype = definition.get('type') if isinstance(
            definition, dict) else None
        if not isinstance(rtype, str):
            return None
        nested = docs.get(files.url_to_path(rtype))
        if nested is not None and name != resource[-1]:
            try:
                document = safe_yaml.parse(nested, rtype)
            except safe_yaml.InputError:
                return None
            if not isinstance(document, dict):
                return None
            continue
        return rtype
    return None


def _properties_of(env, rtype):
    try:
        cls = env.get_class(rtype)
    except Exception:
        return []
    return sorted(getattr(cls, 'properties_schema', {}) or {})


def _closest(kind, word, choices, where):
    near = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    if near:
        return 'did you mean %s %s? (see %s)' % (
            kind, ' or '.join(near), where)
    return 'use a %s from %s' % (kind, where)
