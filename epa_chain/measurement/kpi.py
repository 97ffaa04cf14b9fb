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

"""A KPI file: the operator's limits a results document is judged against.

Parsed once here into frozen dataclasses; verdicts.py judges. The file
(YAML; every section optional, at least one KPI)::

    throughput:                 # floors, per direction
      - goal: NDR               # a loss goal of the search
        frame_size: '64'        # optional: every frame size
        min_fps: 1000000        # or min_bps (on the wire, per direction)
                                # or min_line_rate_percent
    latency:                    # ceilings of the latency test, per direction
      - percentile: '99'        # a percentile the results hold, avg or max
        max_us: 50
        frame_size: '64'        # optional
    pdv:                        # RFC 5481 PDV ceilings, per direction
      - percentile: '99.9'
        max_us: 20
    max_loss_ratio: 0.0001      # the latency trial's loss
    max_regression_percent: 5   # each goal's throughput against --baseline
    allow_inconsistent: false   # true: a figure its own trials contradict
                                # (measurement/consistency.py) may be met
"""

import dataclasses
import math
import typing

from epa_chain import safe_yaml

THROUGHPUT_UNITS = ('min_fps', 'min_bps', 'min_line_rate_percent')
LATENCY_STATISTICS = ('avg', 'max')
_SECTIONS = ('throughput', 'latency', 'pdv', 'max_loss_ratio',
             'max_regression_percent')
# Not a KPI: how the KPIs treat a figure marked inconsistent.
_ALLOW = 'allow_inconsistent'
# What a key that is no name (64:, 1e6:, true:, ~:) is to YAML.
_YAML_KINDS = {int: 'a number', float: 'a number', bool: 'a boolean',
               type(None): 'null'}


@dataclasses.dataclass(frozen=True)
class ThroughputFloor:
    goal: str
    unit: str           # one of THROUGHPUT_UNITS
    limit: float
    frame_size: typing.Optional[str] = None


@dataclasses.dataclass(frozen=True)
class DelayCeiling:
    statistic: str      # a percentile ('99', '99.9') or avg / max
    max_us: float
    frame_size: typing.Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Kpis:
    source: str
    throughput: typing.Tuple[ThroughputFloor, ...] = ()
    latency: typing.Tuple[DelayCeiling, ...] = ()
    pdv: typing.Tuple[DelayCeiling, ...] = ()
    max_loss_ratio: typing.Optional[float] = None
    max_regression_percent: typing.Optional[float] = None
    # False: a figure marked inconsistent is never met (issue 32).
    allow_inconsistent: bool = False

    def __bool__(self):
        return bool(self.throughput or self.latency or self.pdv or
                    self.max_loss_ratio is not None or
                    self.max_regression_percent is not None)


def load(path):
    """The KPI file at `path`; safe_yaml.InputError naming what is wrong."""
    name = safe_yaml.shown(path)
    document = safe_yaml.load(path, 'KPI file')
    _known(name, '', document, _SECTIONS + (_ALLOW,))
    kpis = Kpis(
        source=name,
        throughput=tuple(_throughput(name, item, index) for index, item in
                         enumerate(_list(name, document, 'throughput'))),
        latency=tuple(_ceiling(name, 'latency', item, index, True)
                      for index, item in enumerate(
                          _list(name, document, 'latency'))),
        pdv=tuple(_ceiling(name, 'pdv', item, index, False)
                  for index, item in enumerate(
                      _list(name, document, 'pdv'))),
        max_loss_ratio=_number(name, 'max_loss_ratio',
                               document.get('max_loss_ratio'), 0.0, 1.0),
        max_regression_percent=_number(
            name, 'max_regression_percent',
            document.get('max_regression_percent'), 0.0, 100.0),
        allow_inconsistent=_flag(name, _ALLOW, document.get(_ALLOW, False)))
    if not kpis:
        raise safe_yaml.InputError(name, 'no KPI in it', 'write at least '
                                   'one of %s' % ', '.join(_SECTIONS))
    return kpis


def _known(name, where, mapping, keys):
    """Every key of `mapping` one of `keys`: the first other one named."""
    # YAML reads a key such as 64 or 1e6 as a number: name it as written
    # (sorting a number among names would raise TypeError).
    unknown = sorted(set(mapping) - set(keys), key=lambda key: (
        isinstance(key, str), str(key)))
    if unknown:
        key = unknown[0]
        kind = '' if isinstance(key, str) else ' (YAML reads it as %s, ' \
            'not a name)' % _YAML_KINDS.get(type(key), 'a value')
        raise safe_yaml.InputError(
            name, '%s%s: unknown key%s' % (where, key, kind),
            'use %s' % ', '.join(keys))


def _list(name, document, section):
    items = document.get(section)
    if items is None:
        return []
    if not isinstance(items, list) or not all(
            isinstance(item, dict) for item in items):
        raise safe_yaml.InputError(name, '%s: not a list of mappings'
                                   % section, 'write "- key: value" '
                                   'entries under %s' % section)
    return items


def _number(name, field, value, low, high):
    """A finite number in [low, high], or None when left out."""
    if value is None:
        return None
    if isinstance(value, str):
        # YAML reads 1e6 (no dot) as text: take it as the number it is.
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or not low <= value <= high:
        raise safe_yaml.InputError(name, '%s: %r is not a number from %g '
                                   'to %g' % (field, value, low, high),
                                   'give a number in that range')
    return float(value)


def _flag(name, field, value):
    if not isinstance(value, bool):
        raise safe_yaml.InputError(name, '%s: %r is not true or false'
                                   % (field, value), 'write true or false')
    return value


def _frame_size(name, where, item):
    size = item.get('frame_size')
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, (str, int)):
        raise safe_yaml.InputError(name, '%s.frame_size: %r is not a frame '
                                   'size label' % (where, size),
                                   'write the label the results print, '
                                   'e.g. \'64\' or IMIX')
    return str(size)


def _throughput(name, item, index):
    where = 'throughput[%d]' % index
    _known(name, where + '.', item, ('goal', 'frame_size') +
           THROUGHPUT_UNITS)
    goal = item.get('goal')
    if not isinstance(goal, str) or not goal:
        raise safe_yaml.InputError(name, '%s.goal: missing' % where,
                                   'name a loss goal of the search, e.g. '
                                   'NDR or PDR')
    units = [unit for unit in THROUGHPUT_UNITS if unit in item]
    if len(units) != 1:
        raise safe_yaml.InputError(name, '%s: %s' % (
            where, 'no floor' if not units else 'more than one floor'),
            'give exactly one of %s' % ', '.join(THROUGHPUT_UNITS))
    high = 100.0 if units[0] == 'min_line_rate_percent' else 1e15
    return ThroughputFloor(
        goal=goal, unit=units[0],
        limit=_number(name, '%s.%s' % (where, units[0]), item[units[0]],
                      0.0, high),
        frame_size=_frame_size(name, where, item))


def _ceiling(name, section, item, index, statistics):
    where = '%s[%d]' % (section, index)
    _known(name, where + '.', item, ('percentile', 'max_us', 'frame_size'))
    statistic = item.get('percentile')
    if isinstance(statistic, (int, float)) and not isinstance(
            statistic, bool) and 0 < statistic < 100:
        statistic = '%g' % statistic
    allowed = LATENCY_STATISTICS if statistics else ()
    if not isinstance(statistic, str) or not (
            statistic in allowed or _is_percentile(statistic)):
        raise safe_yaml.InputError(name, '%s.percentile: %r' % (
            where, statistic), 'give a percentile such as \'99\' or '
            '\'99.9\'%s' % (' (or avg, max)' if statistics else ''))
    if 'max_us' not in item:
        raise safe_yaml.InputError(name, '%s.max_us: missing' % where,
                                   'give the ceiling in microseconds')
    return DelayCeiling(
        statistic=statistic,
        max_us=_number(name, where + '.max_us', item['max_us'], 0.0, 3.6e9),
        frame_size=_frame_size(name, where, item))


def _is_percentile(text):
    try:
        value = float(text)
    except ValueError:
        return False
    return 0 < value < 100 and text == '%g' % value
