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

"""The options of each generator `epa-chain measure` builds, declared once.

One row per keyword argument: its type and bounds. `--generator-option
KEY=VALUE` text is parsed here, at the edge, into typed values (from_text);
the model generator checks its keyword arguments against the same rows
(check). A NaN, an infinity, a negative rate or an unknown key never
reaches a generator: an infinite link speed or a NaN jitter used to end
in a traceback or in NaN results.

    values = from_text('model', {'jitter': '0.01', 'seed': '4'})
    generator = generators.create('model', **values)
"""

import dataclasses
import math
import os
import stat
import typing

NONE_WORDS = ('none', 'null')
#: Largest file a `layout` option may name: a PROX configuration is a few kB.
MAX_FILE_BYTES = 1024 * 1024
#: The model's delays stay within its latency histogram's range (1 h).
MAX_DELAY_NS = 3.6e12
MAX_LINK_BPS = 1e12
MAX_FPS = 1e10
MAX_TRIAL_INDEX = 2 ** 31 - 1


class OptionError(ValueError):
    """A generator option refused: which, the value, the fix."""

    def __init__(self, generator, name, value, fix):
        super().__init__('%s generator option %s=%r: %s' % (
            generator, name, value, fix))
        self.generator = generator
        self.name = name
        self.value = value
        self.fix = fix


@dataclasses.dataclass(frozen=True)
class Option:
    """One keyword argument of a generator."""

    name: str
    #: 'float', 'int', 'choice' or 'file' (the path of a regular file)
    kind: str
    low: typing.Optional[float] = None
    high: typing.Optional[float] = None
    #: None allowed, written "none"
    optional: bool = False
    choices: typing.Tuple[str, ...] = ()

    def bounds_text(self):
        form = '%d' if self.kind == 'int' else '%g'
        return '[%s, %s]' % (form % self.low, form % self.high)

    def fix(self):
        """What to give instead, for an error."""
        if self.kind == 'choice':
            text = 'choose one of %s' % ', '.join(self.choices)
        elif self.kind == 'file':
            text = 'give the path of a regular file'
        else:
            text = 'give a %s in %s' % (
                'whole number' if self.kind == 'int' else 'finite number',
                self.bounds_text())
        return text + (' (or none)' if self.optional else '')

    def parse(self, text):
        """The typed value of the command line's text; ValueError."""
        if self.optional and text.strip().lower() in NONE_WORDS:
            return None
        if self.kind == 'int':
            return int(text)
        if self.kind == 'float':
            return float(text)
        return text

    def check(self, value):
        """`value` as the generator takes it; ValueError with the fix."""
        if value is None and self.optional:
            return None
        if self.kind == 'choice':
            if value not in self.choices:
                raise ValueError(self.fix())
            return value
        if self.kind == 'file':
            return _regular_file(value, self.fix())
        number = (isinstance(value, (int, float)) and
                  not isinstance(value, bool))
        if self.kind == 'int' and isinstance(value, float):
            number = value.is_integer()
            value = int(value) if number else value
        if not number or (isinstance(value, float) and
                          not math.isfinite(value)) or \
                not self.low <= value <= self.high:
            raise ValueError(self.fix())
        return value


def _regular_file(path, fix):
    # Read later by the generator: a FIFO would block it, a device never
    # end; refused here with the reason.
    if not isinstance(path, str) or not path:
        raise ValueError(fix)
    try:
        found = os.stat(path)
    except OSError as error:
        raise ValueError('%s; %s' % (error.strerror, fix)) from None
    if not stat.S_ISREG(found.st_mode):
        raise ValueError('not a regular file; %s' % fix)
    if found.st_size > MAX_FILE_BYTES:
        raise ValueError('larger than %d kB; %s' % (MAX_FILE_BYTES // 1024,
                                                    fix))
    return path


def _ratio(name, high=0.5):
    return Option(name, 'float', 0.0, high)


def _seconds(name, low=0.01, high=3600.0):
    return Option(name, 'float', low, high)


TABLES = {
    # Defaults and meaning: generators/model.py, doc/source/measurement.rst.
    'model': (
        Option('link_bps', 'float', 1e6, MAX_LINK_BPS),
        Option('ndr_fps', 'float', 1.0, MAX_FPS),
        # knee_fps >= ndr_fps: the model checks the pair.
        Option('knee_fps', 'float', 1.0, MAX_FPS, optional=True),
        _ratio('knee_loss'),
        _ratio('flow_penalty', 0.9),
        _ratio('jitter'),
        Option('spurious_rate', 'float', 0.0, 1e3),
        Option('seed', 'int', 0, 2 ** 31 - 1),
        Option('base_latency_ns', 'float', 1.0, MAX_DELAY_NS),
        Option('queue_latency_ns', 'float', 0.0, MAX_DELAY_NS),
        Option('max_queue_ns', 'float', 1.0, MAX_DELAY_NS),
        # Each trial keeps this many samples per direction in memory.
        Option('latency_samples', 'int', 0, 10 ** 6),
        Option('latency_mode', 'choice',
               choices=('samples', 'histogram', 'off')),
        _ratio('reorder'),
        _ratio('duplicate'),
        Option('max_tx_fps', 'float', 1.0, MAX_FPS, optional=True),
        Option('stop_forwarding_after', 'int', 0, MAX_TRIAL_INDEX,
               optional=True),
        Option('counter_reset_at', 'int', 0, MAX_TRIAL_INDEX,
               optional=True),
        Option('chain_length', 'int', 0, 3),
        _ratio('rate_tolerance'),
        # The virtual clock's start, UNIX seconds (default: now).
        Option('epoch', 'float', 0.0, 1e11, optional=True),
    ),
    # host and port come from --prox-endpoint; see prox/generator.py.
    'prox': (
        Option('layout', 'file', optional=True),
        Option('link_bps', 'float', 1e6, MAX_LINK_BPS),
        _ratio('rate_tolerance'),
        Option('flow_mode', 'choice', choices=('exact', 'power-of-two')),
        _seconds('poll_interval_s', high=60.0),
        _seconds('drain_timeout_s'),
        _seconds('connect_timeout_s'),
        _seconds('reply_timeout_s'),
        _seconds('start_timeout_s'),
        _seconds('stop_timeout_s'),
        Option('update_interval_ms', 'int', 10, 60000, optional=True),
    ),
}


def names(generator):
    """The option names of `generator`, in table order."""
    return [option.name for option in TABLES[generator]]


def option(generator, name):
    for row in TABLES[generator]:
        if row.name == name:
            return row
    raise OptionError(generator, name, None, 'the %s generator has no such '
                      'option; known: %s' % (generator,
                                             ', '.join(names(generator))))


def check(generator, name, value):
    """`value` of option `name` as the generator takes it; OptionError."""
    row = option(generator, name)
    try:
        return row.check(value)
    except ValueError as error:
        raise OptionError(generator, name, value, str(error)) from None


def from_text(generator, texts):
    """{name: typed value} of {name: text}; OptionError names the key.

    An unknown key lists the known ones; every value is checked.
    """
    values = {}
    for name, text in texts.items():
        row = option(generator, name)
        try:
            value = row.parse(text)
        except ValueError:
            raise OptionError(generator, name, text, row.fix()) from None
        try:
            values[name] = row.check(value)
        except ValueError as error:
            raise OptionError(generator, name, text, str(error)) from None
    return values
