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

"""Reading a file a user gives as YAML: the one loader of the package.

Templates, environments, TOSCA service templates, their imports and inputs
are hostile until read. Every one is read here, HOT and TOSCA alike, and
refused, naming the file, when it is:

- not a regular file (a FIFO would block, a device never end) or missing;
- larger than Heat's API accepts (its `max_template_size`), checked
  before a byte more is read;
- not UTF-8 text, or binary (NUL bytes);
- YAML with more than MAX_ALIASES aliases, aliases standing for more than
  MAX_ALIAS_NODES nodes in all (an alias bomb is a few hundred bytes that
  expand to billions of nodes), or nested deeper than MAX_DEPTH.

The alias and depth checks count the parser's events, which PyYAML
produces without building anything, so they run before anything (this
loader, heatclient's, Heat's or tosca-parser's) builds the document.
"""

import functools
import json
import math
import os
import re
import stat

import yaml

# Heat's default for max_template_size, used where Heat's engine is not
# installed (the TOSCA side); a unit test checks it equals Heat's own.
HEAT_MAX_TEMPLATE_SIZE = 524288
# The shipped chain.yaml has 14 aliases standing for a few hundred nodes,
# nested 16 deep; Heat's engine handles 300 levels. Far above what a
# template needs, far below what makes anything slow.
MAX_ALIASES = 100
MAX_ALIAS_NODES = 10000
MAX_DEPTH = 100

_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
# YAML's and JSON's ways of writing a number, infinities and NaN included.
_NUMBER = re.compile(r'^[-+]?(\.(inf|Inf|INF|nan|NaN|NAN)|Infinity|NaN|'
                     r'[0-9][0-9_]*\.?[0-9_]*([eE][-+]?[0-9]+)?|'
                     r'\.[0-9_]+([eE][-+]?[0-9]+)?)$')
_STARTS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_ENDS = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
_WRITE_ONE = 'write a YAML mapping (name: value lines) in it'
_KINDS = {dict: 'a mapping', list: 'a list', str: 'a string',
          int: 'a number', float: 'a number', bool: 'a boolean'}


class InputError(ValueError):
    """A file (or a reference in one) that must not or cannot be used.

    `path` is the file as shown to the user, `message` what is wrong
    (naming the field where there is one) and `fix` what to do.
    """

    def __init__(self, path, message, fix=''):
        self.path = escape(path)
        self.message = escape(message)
        self.fix = escape(fix)
        super().__init__('%s: %s%s' % (self.path, self.message,
                                       '; %s' % self.fix if fix else ''))


def shown(path):
    """Relative to the working directory when below it, else absolute.

    Escaped: a name is hostile too, and a newline in it would split the
    one line an error is.
    """
    path = os.path.abspath(path)
    relative = os.path.relpath(path)
    return escape(path if relative.startswith('..') else relative)


def escape(text):
    """Text with each unprintable character (newline, ...) escaped."""
    text = str(text)
    if text.isprintable():
        return text
    return ''.join(char if char.isprintable() else
                   repr(char)[1:-1] for char in text)


@functools.lru_cache(maxsize=None)
def max_file_bytes():
    """Heat's max_template_size, from Heat itself where it is installed."""
    try:
        from heat.common import config
    except ImportError:
        return HEAT_MAX_TEMPLATE_SIZE
    return config.cfg.CONF.max_template_size


def read_bytes(path, what='file'):
    """The bytes of a regular file no larger than Heat accepts."""
    if not path:
        raise InputError(repr(path), 'an empty path',
                         'give the path of the %s' % what)
    name = shown(path)
    try:
        # stat before open: opening a FIFO blocks, some devices act on it.
        found = os.stat(path)
    except FileNotFoundError:
        raise InputError(name, 'no such file', 'give an existing %s' % what)
    except (OSError, ValueError) as exc:
        raise InputError(name, 'cannot read it: %s' % _why(exc),
                         'give a file you can read')
    _check_kind(name, found, what)
    limit = max_file_bytes()
    try:
        with open(path, 'rb') as stream:
            _check_kind(name, os.fstat(stream.fileno()), what)
            data = stream.read(limit + 1)
    except OSError as exc:
        raise InputError(name, 'cannot read it: %s' % _why(exc),
                         'give a file you can read')
    if len(data) > limit:
        raise InputError(name, 'larger than the %d bytes Heat accepts '
                         '(max_template_size)' % limit,
                         'split it, or move data out of it')
    return data


def _check_kind(name, found, what):
    if stat.S_ISDIR(found.st_mode):
        raise InputError(name, 'is a directory, not a file',
                         'name a file inside it')
    if not stat.S_ISREG(found.st_mode):
        raise InputError(name, 'is not a regular file (a device, FIFO or '
                         'socket)', 'give a regular file')
    if found.st_size > max_file_bytes():
        raise InputError(name, 'is %d bytes, more than the %d bytes Heat '
                         'accepts (max_template_size)' % (
                             found.st_size, max_file_bytes()),
                         'split it, or move data out of it')


def decode(data, name):
    """UTF-8 text without NUL bytes, or InputError."""
    if b'\0' in data:
        raise InputError(name, 'a binary file (it holds NUL bytes), not '
                         'YAML text', 'give a YAML text file')
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise InputError(name, 'not UTF-8 text (byte 0x%02x at offset %d)'
                         % (data[exc.start], exc.start),
                         'save it as UTF-8')


def read_text(path, what='file'):
    return decode(read_bytes(path, what), shown(path))


def load(path, what='file'):
    """A YAML file's document, which must be a mapping."""
    return load_text(read_text(path, what), shown(path), what)


def load_text(text, name, what='file'):
    """A file's text as a YAML mapping, `name` the file in errors."""
    if not text.strip():
        raise InputError(name, 'empty', _WRITE_ONE)
    document = parse(text, name)
    if document is None:
        raise InputError(name, 'holds only comments, no YAML document',
                         _WRITE_ONE)
    if not isinstance(document, dict):
        raise InputError(name, 'is %s, not a mapping' % kind_of(document),
                         'the %s must be a YAML mapping (name: value '
                         'lines)' % what)
    return document


def parse(text, name):
    """YAML text (checked first) as Python objects; InputError if bad."""
    check(text, name)
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        if _is_json(text):
            return _parse_json(text, name, exc)
        raise InputError(name, 'not YAML: %s' % describe(exc),
                         'fix the YAML syntax there')
    except RecursionError:
        raise InputError(name, 'nested too deeply to parse',
                         'flatten it')


def check(text, name, syntax=True):
    """Refuse alias bombs and deep nesting before anything parses the text.

    A YAML syntax error is InputError too, unless `syntax` is false: then
    the text is only checked as far as it is YAML (a get_file script, say,
    which nothing will parse past its first error).
    """
    if _is_json(text) and _json_depth(text) > MAX_DEPTH:
        raise _too_deep(name)
    try:
        _count(yaml.parse(text, Loader=_LOADER), name)
    except yaml.YAMLError as exc:
        if 'maximum nesting depth' in str(exc):
            raise _too_deep(name)   # libyaml's own limit, 1000 levels
        if syntax and not _is_json(text):
            raise InputError(name, 'not YAML: %s' % describe(exc),
                             'fix the YAML syntax there')


def _count(events, name):
    """Aliases, the nodes they stand for and the depth, by events."""
    aliases = expanded = 0
    anchors = {}        # anchor -> (nodes, depth) of the node it marks
    open_nodes = []     # [anchor, nodes, depth below] per open collection

    def add(nodes, depth):
        if open_nodes:
            top = open_nodes[-1]
            top[1] += nodes
            top[2] = max(top[2], depth)
            if len(open_nodes) + depth > MAX_DEPTH:
                raise _too_deep(name)

    for event in events:
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            nodes, depth = anchors.get(event.anchor, (1, 0))
            expanded += nodes
            if aliases > MAX_ALIASES or expanded > MAX_ALIAS_NODES:
                raise InputError(
                    name, 'YAML aliases (*name) beyond the limit of %d '
                    'aliases standing for %d nodes (an alias bomb?)' % (
                        MAX_ALIASES, MAX_ALIAS_NODES),
                    'write the values out instead of aliasing them')
            add(nodes, depth)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor:
                anchors[event.anchor] = (1, 0)
            if event.implicit[0] and _non_finite(event.value):
                raise InputError(
                    name, '%s is not a finite number (line %d)' % (
                        event.value, event.start_mark.line + 1),
                    'give a number')
            add(1, 0)
        elif isinstance(event, _STARTS):
            open_nodes.append([event.anchor, 1, 0])
            if len(open_nodes) > MAX_DEPTH:
                raise _too_deep(name)
        elif isinstance(event, _ENDS):
            anchor, nodes, depth = open_nodes.pop()
            if anchor:
                anchors[anchor] = (nodes, depth + 1)
            add(nodes, depth + 1)


def _non_finite(plain):
    """A plain scalar that reads as NaN or an infinity (.nan, 1e999, ...).

    Heat reads such a number parameter as a value every range passes.
    """
    if not _NUMBER.match(plain):
        return False
    text = plain.replace('_', '').lower()
    try:
        return not math.isfinite(float(text.replace('.inf', 'inf').replace(
            '.nan', 'nan')))
    except ValueError:
        return False


def _too_deep(name):
    return InputError(name, 'nested deeper than %d levels' % MAX_DEPTH,
                      'flatten it')


def _is_json(text):
    # heatclient and Heat parse such text with json, not yaml.
    return text.lstrip().startswith('{')


def _json_depth(text):
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in '[{':
            depth += 1
            deepest = max(deepest, depth)
        elif char in ']}':
            depth -= 1
    return deepest


def _parse_json(text, name, yaml_error):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise InputError(name, 'not YAML: %s' % describe(yaml_error),
                         'fix the YAML syntax there')


def describe(exc):
    """A YAML error on one line: what and where."""
    problem = getattr(exc, 'problem', None)
    mark = getattr(exc, 'problem_mark', None)
    if problem and mark is not None:
        context = getattr(exc, 'context', None)
        return '%s%s at line %d column %d' % (
            '%s, ' % context if context else '', problem, mark.line + 1,
            mark.column + 1)
    return ' '.join(str(exc).split()) or type(exc).__name__


def kind_of(value):
    if value is None:
        return 'empty (null)'
    return _KINDS.get(type(value), 'a %s' % type(value).__name__)


def _why(exc):
    return getattr(exc, 'strerror', None) or str(exc)
