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

"""Work every check of a process shares, done once and handed out copied.

`epa-chain validate templates/` checks one template tree with some thirty
presets: each check reads the same files, and parsing them (YAML checked,
then parsed by heatclient, by Heat, by the HEAT-COMPAT rule) was most of
its time. `once` keeps a function's result by its arguments (the text
itself, never a path: a file that changed is a new key) and gives every
caller its own copy, so no check sees what another did to its documents.
Failures are not kept: a refused text is refused again, as it was first.

`resident` is for what a process loads once and keeps to its end (Heat's
engine, Nova's rules): millions of objects the garbage collector would
otherwise walk again at each full collection, while they load, during the
checks and at the interpreter's exit (seconds in all).
"""

import contextlib
import copy
import datetime
import functools
import gc

# Results kept per function: a tree's files and its presets, with room.
MAX_KEPT = 128
# Values nothing can change in place, shared between copies.
_IMMUTABLE = frozenset((str, bytes, int, float, bool, type(None),
                        datetime.date, datetime.datetime, datetime.time))


def once(function, maxsize=MAX_KEPT):
    """`function` computed once per distinct arguments; results copied."""
    kept = functools.lru_cache(maxsize=maxsize)(function)

    @functools.wraps(function)
    def copied_result(*args, **kwargs):
        return copied(kept(*args, **kwargs))

    copied_result.cache_clear = kept.cache_clear
    copied_result.cache_info = kept.cache_info
    return copied_result


def copied(value, _seen=None):
    """A deep copy of a parsed document (mappings, lists, scalars).

    Several times faster than copy.deepcopy for what YAML and JSON give
    (anything else is deep-copied); a node YAML aliases stays one node
    shared by its uses, as in the original.
    """
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is not dict and kind is not list:
        return copy.deepcopy(value)
    seen = {} if _seen is None else _seen
    if id(value) in seen:
        return seen[id(value)]
    if kind is dict:
        seen[id(value)] = result = {}
        for key, item in value.items():
            result[key] = item if type(item) in _IMMUTABLE else copied(
                item, seen)
    else:
        seen[id(value)] = result = []
        for item in value:
            result.append(item if type(item) in _IMMUTABLE else copied(
                item, seen))
    return result


@contextlib.contextmanager
def resident():
    """Load what the process keeps to its end: collector paused, then frozen.

    Nothing collectable is made by a module import, and what is loaded
    lives as long as the process: the collector is paused while it loads,
    and everything alive after is moved out of its sight (gc.freeze), so
    no later collection walks it again, nor the one at exit. A worker
    forked after shares those pages with its parent instead of copying
    them when the collector would touch them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
