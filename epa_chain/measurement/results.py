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

The schema (schemas/results-1.json) is the contract with everything that
reads results later - `epa-chain report`, dashboards, the next version of
this code. A reader checks `schema` first and refuses versions it does
not know rather than guessing.
"""

import datetime
from importlib import metadata
import json
import os
import tempfile

from epa_chain.measurement import latency

SCHEMA_ID = 'epa-chain/results/1'
#: `epa-chain local run --vnf-counts`: one results document per chain
#: length and their lossless rates as ratios to the first
CHAIN_LENGTHS_SCHEMA_ID = 'epa-chain/local-chain-lengths/1'
SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'schemas')
# Every schema id written, its file in schemas/ and what writes it.
SCHEMAS = {
    SCHEMA_ID: ('results-1.json', '`epa-chain measure`'),
    CHAIN_LENGTHS_SCHEMA_ID: ('local-chain-lengths-1.json',
                              '`epa-chain local run --vnf-counts`'),
}
SCHEMA_FILE = os.path.join(SCHEMA_DIR, SCHEMAS[SCHEMA_ID][0])


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
    return {
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
    path = os.path.join(SCHEMA_DIR, SCHEMAS[schema_id][0])
    with open(path, encoding='utf-8') as stream:
        return json.load(stream)


def _field_path(error):
    path = ''
    for part in error.absolute_path:
        path += '[%d]' % part if isinstance(part, int) else (
            '.%s' % part if path else str(part))
    return path or '(top level)'


def validate(document, source='results document', schema_id=SCHEMA_ID):
    """Raise ResultsError naming `source`, the field and the fix."""
    if not isinstance(document, dict):
        raise ResultsError('%s: a results document is a JSON object, not '
                           '%s' % (source, type(document).__name__))
    writer = SCHEMAS[schema_id][1]
    found = document.get('schema')
    if found != schema_id:
        raise ResultsError(
            '%s: field "schema" is %r, this epa-chain reads %r; write it '
            'with this version of %s' % (source, found, schema_id, writer))
    try:
        import jsonschema
    except ImportError as error:
        raise ResultsError('%s: cannot validate without the jsonschema '
                           'package (pip install jsonschema)'
                           % source) from error
    validator = jsonschema.Draft202012Validator(load_schema(schema_id))
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
            % (source, _field_path(first), first.message, more, schema_id,
               writer))
    if schema_id == CHAIN_LENGTHS_SCHEMA_ID:
        # Each run is a whole results document (its own schema).
        for number, run in enumerate(document['runs']):
            validate(run, '%s: runs[%d]' % (source, number))


def load(path):
    """Read and validate a results file."""
    try:
        with open(path, encoding='utf-8') as stream:
            document = json.load(stream)
    except OSError as error:
        raise ResultsError('%s: cannot read: %s' % (path, error.strerror))
    except ValueError as error:
        raise ResultsError('%s: not JSON (%s); give a file written by '
                           '`epa-chain measure --json`' % (path, error))
    validate(document, path)
    return document


def write_json(document, path):
    """Write atomically: readers never see half a file, even mid-soak."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix='.results-',
                                         suffix='.json')
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as stream:
            json.dump(document, stream, indent=1, sort_keys=True)
            stream.write('\n')
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return path
