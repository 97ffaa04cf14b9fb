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

"""Parse a TOSCA service template and its inputs with tosca-parser.

tosca-parser validates thoroughly but reports many problems without saying
where they are ('"two" is not an integer.'). While it parses, the loader
notes which template entity (node, policy, input) and which property
tosca-parser is working on, and stamps that place on every error it
collects, so each error names the node and the field. Nothing tosca-parser
decides is changed: the stamping only observes.
"""

import contextlib
import dataclasses
import functools
import logging
import re
import threading
import typing

from epa_chain.hot import shipped
from epa_chain import safe_yaml
from epa_chain.tosca import errors
from epa_chain.tosca import imports

TEMPLATE_SUFFIXES = ('.yaml', '.yml')
# What tosca-parser raises when a value is not of the kind it assumes.
_CRASHES = (AttributeError, TypeError, IndexError)
# The kind of each section of a service template (TOSCA Simple Profile
# 1.3, 3.10 and 3.9), where tosca-parser assumes it.
_SECTIONS = dict(
    {'tosca_definitions_version': str, 'description': str,
     'imports': list, 'topology_template': dict, 'metadata': dict,
     'repositories': dict},
    **{name: dict for name in (
        'artifact_types', 'data_types', 'capability_types',
        'interface_types', 'relationship_types', 'node_types',
        'group_types', 'policy_types')})
_TOPOLOGY_SECTIONS = {
    'description': str, 'inputs': dict, 'node_templates': dict,
    'relationship_templates': dict, 'groups': dict, 'policies': list,
    'outputs': dict, 'substitution_mappings': dict, 'workflows': dict}
_KIND_NAMES = {str: 'text', list: 'a list', dict: 'a mapping'}
_KINDS = {'node_type': 'node', 'policy_type': 'policy',
          'group_type': 'group', 'relationship_type': 'relationship'}
_state = threading.local()


@dataclasses.dataclass(frozen=True)
class _Place:
    kind: str
    node: str
    field: str = ''


@dataclasses.dataclass
class LoadedTemplate:
    """A parsed service template and the value of each of its inputs."""

    path: str
    inputs_path: typing.Optional[str]
    tosca: typing.Any                 # toscaparser ToscaTemplate
    given: typing.Dict[str, typing.Any]
    values: typing.Dict[str, typing.Any]
    raw: dict                         # the template as YAML, for messages

    @property
    def display_path(self):
        return display(self.path)


def display(path):
    """Relative to the working directory when below it, else absolute."""
    return safe_yaml.shown(path)


def load(path, inputs_path=None, allow_outside=False):
    """Parse a service template with its inputs; ToscaError if broken.

    safe_yaml.InputError when a file cannot be read or must not be: the
    template, its inputs or an import (a URL, or outside the template's
    directory tree unless `allow_outside`: tosca/imports.py). An optional
    input left without a value gets templates/chain.yaml's default for
    the parameter of its name: chain.yaml owns it.
    """
    text, raw = _read_template(path)
    given = _given_inputs(path, inputs_path, raw)
    imported = imports.Imports(path, text, raw, allow_outside)
    tosca = _parse(path, inputs_path, given, raw, imported)
    values = {i.name: given.get(i.name, i.default) for i in tosca.inputs}
    problems = _stack_defaults(tosca, given, values, path)
    problems += _check_inputs(tosca, given, values, path, inputs_path)
    if problems:
        raise errors.ToscaError(problems)
    return LoadedTemplate(path=path, inputs_path=inputs_path, tosca=tosca,
                          given=given, values=values, raw=raw)


def _read_template(path):
    """The service template's text and document, checked as TOSCA."""
    text = safe_yaml.read_text(path, 'service template')
    if not path.lower().endswith(TEMPLATE_SUFFIXES):
        raise safe_yaml.InputError(
            display(path), 'not a .yaml file: tosca-parser would read it as '
            'a CSAR archive or refuse it', 'give the service template\'s '
            '.yaml file')
    raw = safe_yaml.load_text(text, display(path), 'service template')
    if 'tosca_definitions_version' not in raw:
        raise errors.ToscaError([errors.ToscaProblem(
            display(path), 'not a TOSCA service template (no '
            'tosca_definitions_version)', kind='template',
            fix='give a file like tosca/pvp.yaml')])
    problems = list(_check_sections(raw, display(path)))
    if problems:
        raise errors.ToscaError(problems)
    return text, raw


def _given_inputs(path, inputs_path, raw):
    """The inputs file's values, each naming an input of the template."""
    given = {}
    if inputs_path is not None:
        given = safe_yaml.load(inputs_path, 'inputs file')
    declared = _mapping(_mapping(raw.get('topology_template')).get('inputs'))
    unknown = [name for name in given if name not in declared]
    if unknown:
        raise errors.ToscaError([errors.ToscaProblem(
            display(inputs_path), 'not an input of %s' % display(path),
            node=str(name), kind='input',
            fix='use one of: %s' % ', '.join(sorted(map(str, declared))))
            for name in unknown])
    return given


def _parse(path, inputs_path, given, raw, imported):
    """tosca-parser's ToscaTemplate; its errors stamped with their place."""
    from toscaparser.common import exception as tp_exception
    from toscaparser import tosca_template

    # tosca-parser logs each error it also raises: keep only the raise.
    with captured_log('tosca'), _attribution() as collected, \
            imported.served():
        try:
            return tosca_template.ToscaTemplate(path, dict(given), True)
        except safe_yaml.InputError:
            raise
        except tp_exception.ValidationError:
            raise errors.ToscaError(_problems(
                collected or tp_exception.ExceptionCollector.getExceptions(),
                path, inputs_path, raw))
        except Exception as exc:
            # tosca-parser carries on past a bad value and trips over it
            # later (comparing "two" with a range, say): the collected
            # errors say what is wrong, the crash only where.
            raise errors.ToscaError(_problems(
                list(collected) or [exc], path, inputs_path, raw))


def _stack_defaults(tosca, given, values, path):
    """Fill in chain.yaml's default for each optional input left unset.

    templates/chain.yaml owns such defaults (generator_latency_bucket_shift):
    the service templates leave the value to it rather than copying it.
    Updates `values`; returns a problem for each input without one.
    """
    problems = []
    for item in tosca.inputs:
        # Only an input not given at all: a null given is the user's error.
        if item.name in given or values.get(item.name) is not None or \
                item.required:
            continue
        try:
            values[item.name] = shipped.parameter_default(item.name)
        except shipped.PresetError as exc:
            problems.append(errors.ToscaProblem(
                display(path), 'no value, and no default from '
                'templates/chain.yaml (%s)' % exc, node=item.name,
                kind='input', fix='give it a default, or a value in the '
                'inputs file'))
    return problems


def _check_sections(raw, shown):
    """Sections of the kind TOSCA says: tosca-parser crashes on others."""
    topology = raw.get('topology_template')
    for sections, document, prefix in (
            (_SECTIONS, raw, ''),
            (_TOPOLOGY_SECTIONS, _mapping(topology), 'topology_template.')):
        for name, kind in sections.items():
            value = document.get(name)
            if value is not None and not isinstance(value, kind):
                yield errors.ToscaProblem(
                    shown, 'is %s, not %s' % (
                        safe_yaml.kind_of(value), _KIND_NAMES[kind]),
                    field=prefix + name, kind='template',
                    fix='see the TOSCA Simple Profile (tosca/pvp.yaml has '
                    'every section)')


def _mapping(value):
    """A section of the template as a mapping (empty if it is not one)."""
    return value if isinstance(value, dict) else {}


def _check_inputs(tosca, given, values, path, inputs_path):
    """Input constraints (heat-translator checks them only as it writes)."""
    for item in tosca.inputs:
        try:
            constraints = item.constraints or []
        except Exception as exc:
            # tosca-parser reads an input's constraints only when asked.
            yield errors.ToscaProblem(
                display(path), 'constraints: %s' % ' '.join(str(
                    exc).split()), node=item.name, kind='input',
                field='constraints', fix='write constraints as a list of '
                'maps, e.g. [{valid_values: [a, b]}]')
            continue
        if values[item.name] is None:
            if item.name in given:
                yield errors.ToscaProblem(
                    display(inputs_path), 'given without a value',
                    node=item.name, kind='input', fix='give a value, or '
                    'leave the input out for its default')
            continue    # else no value to check (_stack_defaults says so)
        for constraint in constraints:
            try:
                constraint.validate(values[item.name])
            except Exception as exc:
                yield errors.ToscaProblem(
                    display(inputs_path if item.name in given else path),
                    str(exc), node=item.name, kind='input',
                    fix='give a value the input\'s constraints allow')


# ---- stamping tosca-parser's errors with their place ------------------------

def _stack():
    if not hasattr(_state, 'stack'):
        _state.stack = []
    return _state.stack


def _stamp(exc):
    stack = _stack()
    if stack and getattr(exc, 'epa_place', None) is None:
        try:
            exc.epa_place = stack[-1]
        except AttributeError:
            pass  # an exception type without a __dict__: left unplaced
    return exc


@contextlib.contextmanager
def _attribution():
    """Stamp every error tosca-parser collects with the entity it was on."""
    from toscaparser.common import exception as tp_exception

    originals = []
    collected = []
    collector = tp_exception.ExceptionCollector
    append = collector.__dict__['appendException'].__func__

    def stamped_append(exception):
        collected.append(_stamp(exception))
        return append(exception)

    try:
        for owner, name, place in _observed():
            original = owner.__dict__[name]
            originals.append((owner, name, original))
            setattr(owner, name, _scoped(original, place))
        collector.appendException = staticmethod(stamped_append)
        yield collected
    finally:
        collector.appendException = staticmethod(append)
        for owner, name, original in reversed(originals):
            setattr(owner, name, original)


def _observed():
    """(class, method, place) for each tosca-parser method observed.

    `place` gives the _Place the method works on from its arguments.
    """
    from toscaparser import entity_template
    from toscaparser import nodetemplate
    from toscaparser import parameters
    from toscaparser import policy
    from toscaparser import properties

    return [
        (entity_template.EntityTemplate, '__init__', _enter_entity),
        (nodetemplate.NodeTemplate, '__init__', _create_node),
        (nodetemplate.NodeTemplate, 'validate', _on_node),
        (nodetemplate.NodeTemplate, '_get_explicit_relationship',
         _enter_requirement),
        (nodetemplate.NodeTemplate, '_validate_relationship_occurrences',
         _on_node),
        (policy.Policy, '__init__', _create_policy),
        (policy.Policy, 'validate', _on_policy),
        (properties.Property, 'validate', _enter_property),
        (parameters.Input, 'validate', _enter_input),
    ]


# The place each observed method works on, from its own arguments.

def _enter_entity(self, name, template, entity_name, *rest, **kw):
    return _Place(_KINDS.get(entity_name, 'node'), name)


def _create_node(self, name, *args, **kwargs):
    return _Place('node', name)


def _on_node(self, *args, **kwargs):
    return _Place('node', self.name)


def _create_policy(self, name, *args, **kwargs):
    return _Place('policy', name)


def _on_policy(self, *args, **kwargs):
    return _Place('policy', self.name)


def _enter_requirement(self, req, *args, **kwargs):
    names = list(req) if isinstance(req, dict) else []
    return _Place('node', self.name,
                  'requirements.%s' % names[0] if names else 'requirements')


def _enter_property(self, *args, **kwargs):
    outer = _stack()[-1] if _stack() else _Place('template', '')
    return dataclasses.replace(outer, field=self.name)


def _enter_input(self, *args, **kwargs):
    return _Place('input', self.name)


def _scoped(function, place):
    @functools.wraps(function)
    def wrapper(self, *args, **kwargs):
        stack = _stack()
        stack.append(place(self, *args, **kwargs))
        try:
            return function(self, *args, **kwargs)
        except Exception as exc:
            raise _stamp(exc)
        finally:
            stack.pop()
    return wrapper


# ---- tosca-parser's errors as problems --------------------------------------

_NODE_RE = [re.compile(p) for p in (
    r'[Tt]emplate "([^"]+)"', r'[Nn]ode "([^"]+)"')]
_FIELD_RE = [re.compile(p) for p in (
    r'unknown field "([^"]+)"', r'missing required field "\[?\'?([^"\']+)',
    r'[Rr]elationship "([^"]+)"', r'of property "([^"]+)"',
    r'[Pp]roperty "([^"]+)"')]
_SECTION_RE = re.compile(r'^"?(\w+)"? of template|^(\w+) of template')
_FIXES = (
    ('UnknownFieldError', 'remove it or correct its spelling: the types are '
     'in tosca/definitions/'),
    ('MissingRequiredFieldError', 'add it'),
    ('InvalidTypeError', 'use a type defined in tosca/definitions/'),
    ('InvalidNodeTypeError', 'use a type defined in tosca/definitions/'),
    ('UnknownInputError', 'declare the input under topology_template.inputs'),
    ('was not found', 'name a node template of this file'),
    ('Import ', 'import an existing file, relative to the template'),
    ('out of range', 'give a value inside the range'),
    ('must be less', 'give a value inside the range'),
    ('must be greater', 'give a value inside the range'),
    ('not valid. Expected a value from',
     'give one of the values the message lists'),
    ('ValidationError', 'see the node type in tosca/definitions/'),
)


def _problems(exceptions, path, inputs_path, raw):
    problems = [_problem(exc, path, inputs_path, raw) for exc in exceptions]
    # A node of an unknown type makes every one of its fields unknown, and
    # a crash after a collected error repeats it: keep the first cause.
    imports = [p for p in problems if p.field == 'imports']
    if imports:
        # Nothing the missing file defines exists: every type it would
        # have given is unknown. The import is the cause.
        problems = imports
    untyped = {p.node for p in problems if 'not a valid type' in p.message}
    placed = {(p.kind, p.node, p.field) for p in problems
              if not _is_crash(p)}
    seen, found = set(), []
    for problem in problems:
        if problem.node in untyped and 'not a valid type' not in (
                problem.message):
            continue
        if _is_crash(problem) and (
                problem.kind, problem.node, problem.field) in placed:
            continue
        if str(problem) not in seen:
            seen.add(str(problem))
            found.append(problem)
    return found


def _is_crash(problem):
    return 'not supported between instances' in problem.message


def _problem(exc, path, inputs_path, raw):
    message = ' '.join(str(exc).split()) or type(exc).__name__
    place = getattr(exc, 'epa_place', None) or _Place('template', '')
    kind, node, field = place.kind, place.node, place.field
    if not node:
        node = _first(_NODE_RE, message)
        kind = 'node' if node else 'template'
    if not field:
        field = _first(_FIELD_RE, message)
        section = _SECTION_RE.search(message)
        if field and section:
            field = '%s.%s' % (section.group(1) or section.group(2), field)
    if 'is not a valid type' in message:
        field = 'type'
    if message.startswith('Import ') or isinstance(exc, ImportError):
        kind, node, field = 'template', '', 'imports'
    if kind == 'node' and node:
        field = _qualify(raw, node, field)
    file = path
    if kind == 'input' and inputs_path:
        file = inputs_path
    fix = next((f for name, f in _FIXES
                if name == type(exc).__name__ or name in message),
               'give a value of the type and range the node type declares')
    if isinstance(exc, _CRASHES):
        # tosca-parser assumed a map, a list or text and met another kind.
        message = 'tosca-parser cannot read it (%s)' % message
        fix = ('write each value there as tosca/definitions/ declares it: '
               'a map, a list or text')
    return errors.ToscaProblem(display(file), message, node=node or '',
                               field=field or '', fix=fix, kind=kind)


def _first(patterns, text):
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return match.group(1)
    return ''


def _qualify(raw, node, field):
    """Where in the node template a property named `field` is written."""
    if not field or '.' in field:
        return field
    topology = _mapping(raw.get('topology_template'))
    template = _mapping(topology.get('node_templates')).get(node)
    if not isinstance(template, dict):
        return field
    if field in _mapping(template.get('properties')):
        return 'properties.%s' % field
    for cap, body in _mapping(template.get('capabilities')).items():
        if field in _mapping(_mapping(body).get('properties')):
            return 'capabilities.%s.properties.%s' % (cap, field)
    return field


# ---- logs ------------------------------------------------------------------

class _Collector(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        if record.levelno >= logging.WARNING:
            self.messages.append(record.getMessage())


class captured_log:
    """Collect a logger's warnings instead of printing them."""

    def __init__(self, name):
        self.logger = logging.getLogger(name)

    def __enter__(self):
        self.handler = _Collector()
        self.propagate = self.logger.propagate
        self.logger.addHandler(self.handler)
        self.logger.propagate = False
        return self.handler.messages

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        self.logger.propagate = self.propagate
        return False
