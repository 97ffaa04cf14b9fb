# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and
# limitations under the License.

"""The results document: versioned JSON, self-describing, validated.

The schema (schemas/results-2.json) is the contract with everything that
reads results later - `epa-chain report`, dashboards, the next version of
this code. A reader checks `schema` first and refuses versions it does
not know rather than guessing. Version 1 documents (the KPI record in
its own shape, before the one findings shape) are still read.

A results file is input like any other: it may be a FIFO, a device, a
directory, binary, compressed, truncated, huge, nested past any results
document or hold NaN or Infinity (which Python's json module reads and
writes, and JSON does not have). Each is refused in one line naming the
file and, where there is one, the field. Nothing non-finite is written.
"""

import datetime
from importlib import metadata
import json
import math
import os
import re
import stat

import jsonschema

from epa_chain.measurement import latency
from epa_chain import outputs
from epa_chain import safe_yaml

SCHEMA_ID = 'epa-chain/results/2'
#: Earlier versions still read, and their schema files: a KPI baseline
#: or a report may be older than this epa-chain.
EARLIER = {'epa-chain/results/1': 'results-1.json'}
#: `epa-chain local run --vnf-counts`: one results document per chain
#: length and their lossless rates as ratios to the first
CHAIN_LENGTHS_SCHEMA_ID = 'epa-chain/local-chain-lengths/1'
#: `epa-chain local run --chain-counts` and the Tempest density sweep:
#: results documents per number of chains measured together and the
#: density curve over them
DENSITY_SCHEMA_ID = 'epa-chain/density/1'
SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'schemas')
# Every schema id written, its file in schemas/ and what writes it.
SCHEMAS = {
    SCHEMA_ID: ('results-2.json', '`epa-chain measure`'),
    CHAIN_LENGTHS_SCHEMA_ID: ('local-chain-lengths-1.json',
                              '`epa-chain local run --vnf-counts`'),
    DENSITY_SCHEMA_ID: ('density-1.json',
                        '`epa-chain local run --chain-counts`, the Tempest '
                        'density sweep'),
}
SCHEMA_FILE = os.path.join(SCHEMA_DIR, SCHEMAS[SCHEMA_ID][0])


#: A results document of a week's soak is a few MB; a bigger file is not
#: one (and /dev/zero-like inputs end here).
MAX_BYTES = 64 * 1024 * 1024
#: A results document nests about ten levels; anything far deeper is not
#: one, and would exhaust recursion in whatever reads it next.
MAX_DEPTH = 64
GZIP_MAGIC = b'\x1f\x8b'
#: Characters of the schema's complaint kept in an error.
MAX_MESSAGE = 300
FIX = 'give a file written by `epa-chain measure --json`'
_PLAIN_KEY = re.compile(r'[A-Za-z0-9_.-]+')


class ResultsError(ValueError):
    """A results file that cannot be read; the message says the fix."""


def tool_version():
    try:
        return metadata.version('epa-chain')
    except metadata.PackageNotFoundError:
        return None


def frame_size_dict(frame_size):
    return {'label': frame_size.label,
            'mix': [list(item) for item in frame_size.mix],
            'mean_bytes': frame_size.mean_bytes}


def direction_record(direction):
    record = {
        'direction': direction.direction,
        'intended_fps': direction.intended_fps,
        'offered_fps': direction.offered_fps,
        'achieved_fps': direction.achieved_fps,
        'tx_frames': direction.tx_frames,
        'rx_frames': direction.rx_frames,
        'loss_ratio': direction.loss_ratio,
        'latency': (latency.summarize([direction.latency])
                    if direction.latency is not None else None),
    }
    if direction.loss_by_hop is not None:
        record['loss_by_hop'] = direction.loss_by_hop.as_dict()
    if direction.chains:
        record['chains'] = [dict(direction_record(part.result),
                                 chain=part.chain, role=part.role)
                            for part in direction.chains]
    return record


def trial_record(index, phase, tags, result):
    """A TrialResult as it goes into the results file (no raw samples)."""
    return {
        'index': index,
        'phase': phase,
        'tags': dict(tags),
        'intended_fps': result.spec.load_fps,
        'duration_s': result.spec.duration_s,
        'measured_duration_s': result.duration_s,
        'started_at': result.started_at,
        'tx_frames': result.tx_frames,
        'rx_frames': result.rx_frames,
        'loss_ratio': result.loss_ratio,
        'directions': [direction_record(d) for d in result.directions],
        'notes': list(result.notes),
    }


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def new_document(method, parameters, generator_description):
    return {
        'schema': SCHEMA_ID,
        'created': utc_now(),
        'tool': {'name': 'epa-chain', 'version': tool_version()},
        'method': method,
        'parameters': parameters,
        'generator': generator_description,
        'complete': False,
        'cases': [],
        'totals': {'trials': 0, 'trial_seconds': 0.0,
                   'measured_seconds': 0.0},
    }


def load_schema(schema_id=SCHEMA_ID):
    name = EARLIER.get(schema_id) or SCHEMAS[schema_id][0]
    path = os.path.join(SCHEMA_DIR, name)
    with open(path, encoding='utf-8') as stream:
        return json.load(stream)


def _field_path(parts):
    """'cases[0].trials[3].loss_ratio' of the keys and indexes `parts`."""
    path = ''
    for part in parts:
        if isinstance(part, int):
            path += '[%d]' % part
        elif _PLAIN_KEY.fullmatch(part):
            path += '.%s' % part if path else part
        else:
            # A key of the file's own making: quoted, on one line.
            path += '[%s]' % json.dumps(part)
    return path or '(top level)'


class _NonFinite(float):
    """A NaN or infinity as the file writes it, for the error to quote."""

    def __new__(cls, text):
        made = super().__new__(cls, text)
        made.text = text
        return made


def _json_float(text):
    # 1e999 is a valid JSON number that Python reads as infinity.
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _check_values(document, source, fix):
    """Refuse a NaN or infinity, or nesting past MAX_DEPTH, naming where.

    Walked without recursion: the nesting is what is being checked.
    """
    pending = [((), document)]
    while pending:
        parts, value = pending.pop()
        if len(parts) > MAX_DEPTH:
            raise ResultsError('%s: field %s: nested deeper than %d levels, '
                               'which no results document is; %s' % (
                                   source, _field_path(parts[:MAX_DEPTH]),
                                   MAX_DEPTH, fix))
        if isinstance(value, float) and not math.isfinite(value):
            raise ResultsError('%s: field %s is %s: JSON has no such number '
                               'and no result is one; %s' % (
                                   source, _field_path(parts),
                                   getattr(value, 'text', repr(value)), fix))
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, (list, tuple)):
            items = enumerate(value)
        else:
            continue
        # Reversed onto the stack: the first field is reported first.
        pending.extend((parts + (key,), item)
                       for key, item in reversed(list(items)))


def _finite_validator(schema):
    """The schema's validator, with NaN and infinities not numbers."""
    base = jsonschema.Draft202012Validator

    def is_number(checker, value):
        return base.TYPE_CHECKER.is_type(value, 'number') and not (
            isinstance(value, float) and not math.isfinite(value))
    finite = jsonschema.validators.extend(
        base, type_checker=base.TYPE_CHECKER.redefine('number', is_number))
    return finite(schema)


def _shortened(text, limit=MAX_MESSAGE):
    # jsonschema quotes the value: a whole object, a string of megabytes.
    return text if len(text) <= limit else text[:limit] + '...'


def validate(document, source='results document', schema_id=SCHEMA_ID):
    """Raise ResultsError naming `source`, the field and the fix."""
    if not isinstance(document, dict):
        raise ResultsError('%s: a results document is a JSON object, not '
                           '%s' % (source, type(document).__name__))
    writer = SCHEMAS[schema_id][1]
    found = document.get('schema')
    if schema_id == SCHEMA_ID and found in EARLIER:
        schema_id = found
    elif found != schema_id:
        readable = [schema_id] + (sorted(EARLIER) if schema_id == SCHEMA_ID
                                  else [])
        raise ResultsError(
            '%s: field "schema" is %r, this epa-chain reads %s; write it '
            'with this version of %s' % (source, found, ' or '.join(
                repr(r) for r in readable), writer))
    validator = _finite_validator(load_schema(schema_id))
    errors = list(validator.iter_errors(document))
    if errors:
        # The deepest error names the field; "null or object" alternatives
        # otherwise blame the whole parent object.
        first = jsonschema.exceptions.best_match(errors)
        while first.context:
            first = jsonschema.exceptions.best_match(first.context)
        more = (' (and %d more problems)' % (len(errors) - 1)
                if len(errors) > 1 else '')
        raise ResultsError(
            '%s: field %s: %s%s; the file does not follow %s - regenerate '
            'it with %s or correct that field'
            % (source, _field_path(first.absolute_path),
               _shortened(first.message), more, schema_id, writer))
    if schema_id == CHAIN_LENGTHS_SCHEMA_ID:
        # Each run is a whole results document (its own schema).
        for number, run in enumerate(document['runs']):
            validate(run, '%s: runs[%d]' % (source, number))


def _read_at_most(handle, limit):
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(handle, min(limit - size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b''.join(chunks)


def read_text(path, fix=FIX, what='results file'):
    """The file's text: a regular file, at most MAX_BYTES, UTF-8.

    ResultsError names the file (`what` when there is no path) and ends
    with `fix`.
    """
    if not path:
        raise ResultsError('%s: an empty path; %s' % (what, fix))
    shown = safe_yaml.escape(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer.
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as error:
        raise ResultsError('%s: cannot read: %s; %s' % (
            shown, error.strerror or error, fix)) from None
    try:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            raise ResultsError('%s: is %s, not a regular file; %s' % (
                shown, 'a directory' if stat.S_ISDIR(mode) else
                'a device, FIFO or socket', fix))
        data = _read_at_most(handle, MAX_BYTES + 1)
    except OSError as error:
        raise ResultsError('%s: cannot read: %s; %s' % (
            shown, error.strerror or error, fix)) from None
    finally:
        os.close(handle)
    if len(data) > MAX_BYTES:
        raise ResultsError('%s: larger than %d MiB; a %s is not; %s' % (
            shown, MAX_BYTES // 2 ** 20, what, fix))
    if data.startswith(GZIP_MAGIC):
        raise ResultsError('%s: gzip-compressed; decompress it first '
                           '(gunzip -k %s)' % (shown, shown))
    try:
        return data.decode('utf-8-sig')
    except UnicodeDecodeError as error:
        raise ResultsError('%s: not UTF-8 text (byte 0x%02x at offset %d): '
                           'binary or another encoding; %s' % (
                               shown, data[error.start], error.start, fix)
                           ) from None


def parse(text, source, fix=FIX):
    """The JSON document in `text`, checked finite and not too deep."""
    try:
        document = json.loads(text, parse_constant=_NonFinite,
                              parse_float=_json_float)
    except RecursionError:
        raise ResultsError('%s: nested too deeply to read; %s' % (
            source, fix)) from None
    except ValueError as error:
        raise ResultsError('%s: not JSON (%s); %s' % (
            source, ' '.join(str(error).split()), fix)) from None
    _check_values(document, source, fix)
    return document


def load(path):
    """Read and validate a results file; ResultsError names the file."""
    document = parse(read_text(path), path)
    validate(document, path)
    return document


def to_text(document, source='results document'):
    """The document as JSON text; ResultsError names a non-finite field.

    allow_nan=False would refuse one too, without saying where.
    """
    _check_values(document, source, 'the generator or its options made '
                  'it: nothing is written')
    return json.dumps(document, indent=1, sort_keys=True,
                      allow_nan=False) + '\n'


def write_json(document, path, option='results file'):
    """Write atomically: readers never see half a file, even mid-soak.

    `path` is checked first (outputs.check_file): an existing path that
    is not a regular file - a device, a FIFO, a symbolic link - is
    refused, never replaced. `option` names it in errors.
    """
    return outputs.write_text(path, to_text(document, path), option)
