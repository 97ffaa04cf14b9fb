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

"""Each distinct nested stack validated once per process.

The chain nests a template per VNF and per segment, and Heat validates
every nested stack twice (leniently within the parent's validation, then
strictly with the parent's values): `epa-chain validate templates/` ran
some 900 such validations for its 35 checks, of barely a hundred distinct
stacks. What Heat's validation of a nested stack does depends only on
what the stack is parsed from: its name, template, parameters, the
parent's environment and files, its depth and how strict the validation
is (the files it names, not the environment files, which every preset
changes). `Outcomes` keeps, per such input, what validating did (the cloud
lookups it skipped, the error it raised) and replays it for the same
input instead of validating again. An input that cannot be written as
JSON is validated every time.
"""

import collections
import json
import threading

# Distinct nested stacks kept: a tree of templates with all its presets
# has about a hundred.
MAX_KEPT = 512


def key(*parts, files=None):
    """What a nested stack is parsed from, as a key; None if unkeyable.

    `parts` are JSON values (names, template, parameters, environment,
    depth, strictness); `files` the stack's files map (name: text), of
    which the key holds the files the parts name, and the files those
    name in turn: Heat reads a file by its name (get_file, a template
    type, a registry entry), which heatclient wrote out in full.
    """
    try:
        text = json.dumps(parts, sort_keys=True, ensure_ascii=False,
                          default=_refuse)
        return text, _named_files(text, files or {})
    except (TypeError, ValueError, RecursionError):
        return None


def _refuse(value):
    raise TypeError('not JSON: %s' % type(value).__name__)


def _named_files(text, files):
    names = sorted(files)
    if any(json.dumps(name, ensure_ascii=False)[1:-1] != name
           for name in names):
        # A name JSON escapes may not appear as itself: all files then.
        return tuple((name, files[name]) for name in names)
    found, unread = set(), [text]
    while unread:
        current = unread.pop()
        for name in names:
            if name not in found and name in current:
                found.add(name)
                unread.append(files[name])
    return tuple((name, files[name]) for name in names if name in found)


class Outcomes:
    """Validations done, by key: their skipped lookups and error.

    `recorded` returns the list the cloud lookups skipped are being
    appended to (offline.py's recorder) when a validation runs.
    """

    def __init__(self, recorded):
        self._recorded = recorded
        self._kept = collections.OrderedDict()
        self._lock = threading.Lock()

    def validate(self, found_key, validate):
        """validate() once per key; after that, its outcome replayed."""
        if found_key is None:
            return validate()
        with self._lock:
            kept = self._kept.get(found_key)
        if kept is None:
            kept = self._run(validate)
            with self._lock:
                self._kept[found_key] = kept
                while len(self._kept) > MAX_KEPT:
                    self._kept.popitem(last=False)
        else:
            self._recorded().extend(kept[0])
        if kept[1] is not None:
            raise kept[1].with_traceback(None)

    def _run(self, validate):
        recorded = self._recorded()
        start = len(recorded)
        try:
            validate()
        except Exception as exc:
            return list(recorded[start:]), exc
        return list(recorded[start:]), None

    def clear(self):
        with self._lock:
            self._kept.clear()
