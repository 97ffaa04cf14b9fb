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

"""The campaign's options, declared once.

One row per Campaign field: its default, bounds or choices, help, how a
user writes it and where (`--frame-sizes` of `epa-chain measure` and
`epa-chain local run`, `[epa_chain] frame_sizes` in Tempest). The
Campaign takes its defaults and its checks from here; the command line
(add_arguments) and the Tempest plugin (tempest_plugin/ at the top,
epa_chain_tempest_plugin/config.py) generate their options from the same
rows. A refused value raises FieldError naming the Campaign field; each
front end names it as its users wrote it (cli_message, conf_name).

    parser = argparse.ArgumentParser()
    add_arguments(parser, 'measure')
    values = values_from_arguments(parser.parse_args(), 'measure')
    plan = campaign.Campaign(**values)

The commands do this through commands/_arguments.campaign_from_arguments,
which names a refused value as the user wrote it.
"""

import dataclasses
import math
import re
import typing

from epa_chain.chain import directions
from epa_chain.measurement import trial

# Front ends: the two commands and the Tempest plugin.
MEASURE = 'measure'
LOCAL = 'local'
TEMPEST = 'tempest'

# (name, description) of every throughput search (measurement/searches).
METHODS = (
    ('rfc2544', 'RFC 2544 binary search, one per loss goal'),
    ('mlrsearch', 'MLRsearch: NDR and PDR in one search'),
    ('best-of-n', 'best of `repetitions` searches'),
    ('worst-of-n', 'worst of `repetitions` searches'),
    ('linear', 'linear loss sweep, 1..100 % of line rate'),
)
METHOD_NAMES = tuple(name for name, _description in METHODS)

# (name, loss ratio, what it is): the default loss goals. Tempest has one
# option per goal, <name>_loss_ratio.
LOSS_GOALS = (
    ('NDR', 0.0, 'the No Drop Rate (0: zero loss, as RFC 2544)'),
    ('PDR', 0.005, 'the Partial Drop Rate'),
)
# A loss ratio is in [LOW, HIGH).
LOSS_RATIO_LOW, LOSS_RATIO_HIGH = 0.0, 1.0
RFC2544_FRAME_SIZES = (64, 128, 256, 512, 1024, 1280, 1518)
# A loss goal's name: it titles tables (the results schema's pattern).
GOAL_NAME = re.compile(r'^[A-Za-z][A-Za-z0-9_.-]{0,31}$')
# How the command line writes numbers: Python would also take '1_0'.
_WHOLE = re.compile(r'^[-+]?[0-9]+$')
_DECIMAL = re.compile(r'^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$')
# Flows a case may ask for (a PROX generator varies at most 24 bits).
MAX_FLOWS = 2 ** 24


class FieldError(ValueError):
    """A Campaign field refused: which field, the value and the fix."""

    def __init__(self, field, value, fix):
        super().__init__('Campaign.%s=%r: %s' % (field, value, fix))
        self.field = field
        self.value = value
        self.fix = fix


def split_frame_sizes(text):
    """Split a comma list; consecutive size:weight items form one mix.

    '64,imix,64:7,570:4' -> ['64', 'imix', '64:7,570:4']
    """
    items, mix = [], []
    for token in (t.strip() for t in text.split(',')):
        if not token:
            raise ValueError('an empty item in %r; separate sizes with one '
                             'comma, e.g. 64,512,imix' % text)
        if ':' in token:
            mix.append(token)
            continue
        if mix:
            items.append(','.join(mix))
            mix = []
        items.append(token)
    if mix:
        items.append(','.join(mix))
    return items


def frame_size_text(frame_size, mix_separator=','):
    """How a user writes `frame_size`: '64', 'imix' or '64:7,570:4'."""
    if frame_size.imix is None:
        return str(frame_size.size)
    if frame_size.imix == trial.IMIX_EANTC:
        return 'imix'
    return mix_separator.join('%d:%d' % item for item in frame_size.imix)


def _frame_sizes_from_conf(values):
    # A ListOpt item cannot hold the commas between mix entries: '/'.
    return [value.replace('/', ',') if isinstance(value, str) else value
            for value in values]


def _whole_numbers(text):
    try:
        return [trial.whole_number(t.strip()) for t in text.split(',')]
    except ValueError:
        raise ValueError('give whole numbers separated by commas, e.g. '
                         '1,1000') from None


def parse_goals(text):
    """'NDR=0,PDR=0.005' -> {'NDR': 0.0, 'PDR': 0.005}."""
    goals = {}
    for item in (t.strip() for t in text.split(',')):
        if not item:
            continue
        name, sep, ratio = item.partition('=')
        name = name.strip()
        if not sep or not GOAL_NAME.match(name):
            raise ValueError('give NAME=RATIO items, a NAME of letters, '
                             'digits, "_", "." or "-" (at most 32, a letter '
                             'first), e.g. NDR=0,PDR=0.005')
        if name in goals:
            raise ValueError('goal %s is given twice; give each goal once'
                             % name)
        goals[name] = _number(float)(ratio.strip())
    return goals


def _goals_text(goals):
    return ','.join('%s=%g' % item for item in goals.items())


def _number(kind):
    """A parser of `kind` (int or float) taking digits only (no '1_0')."""
    pattern = _WHOLE if kind is int else _DECIMAL

    def parse(text):
        if not pattern.match(text.strip()):
            raise ValueError('give a %s' % ('whole number' if kind is int
                                            else 'number'))
        return kind(text)
    return parse


# ---- checks: value -> normalised value, or FieldError ---------------------

def _check_frame_sizes(field, values):
    if isinstance(values, (str, int, trial.FrameSize)):
        values = [values]
    sizes = []
    for value in values or ():
        if isinstance(value, trial.FrameSize):
            sizes.append(value)
            continue
        try:
            sizes.append(trial.FrameSize.parse(value))
        except ValueError as error:
            raise FieldError(field, value, 'give sizes 64..9018 bytes, '
                             '"imix" or a mix of size:weight pairs (%s)'
                             % error)
    if not sizes:
        raise FieldError(field, values, 'give at least one frame size')
    return sizes


def _check_flows(field, values):
    flows = list(values or ())
    whole = all(isinstance(f, int) and not isinstance(f, bool) and
                1 <= f <= MAX_FLOWS for f in flows)
    if not flows or not whole:
        raise FieldError(field, values, 'give a list of whole numbers from '
                         '1 to %d, e.g. [1, 1000]' % MAX_FLOWS)
    return flows


def _check_directions(field, value):
    try:
        return directions.parse(value)
    except ValueError:
        raise FieldError(field, value, 'give %s' % directions.HELP) from None


def _check_goals(field, goals):
    if not isinstance(goals, dict) or not goals:
        raise FieldError(field, goals, "give a dict name -> loss ratio, "
                         "e.g. {'NDR': 0.0, 'PDR': 0.005}")
    for name, ratio in goals.items():
        if not isinstance(name, str) or not GOAL_NAME.match(name):
            raise FieldError(field, goals, 'goal name %r: letters, digits, '
                             '"_", "." or "-", a letter first, at most 32'
                             % (name,))
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) \
                or not LOSS_RATIO_LOW <= ratio < LOSS_RATIO_HIGH:
            raise FieldError(field, goals, 'loss ratio of %s must be in '
                             '[%g, %g), e.g. 0.005 for 0.5 %%' % (
                                 name, LOSS_RATIO_LOW, LOSS_RATIO_HIGH))
    if len(set(goals.values())) != len(goals):
        raise FieldError(field, goals, 'two goals have the same loss ratio')
    return {name: float(ratio) for name, ratio in goals.items()}


@dataclasses.dataclass(frozen=True)
class Option:
    """One campaign option; see the module docstring."""

    field: str
    flag: str
    default: typing.Any
    help: str
    #: 'int', 'float', 'choice' or 'list' (a value a `check` normalises)
    kind: str
    #: text of the command line -> value (the Campaign checks it)
    parse: typing.Callable = str
    #: value -> text of the command line (its default)
    show: typing.Callable = str
    #: [epa_chain] name in Tempest; None: not a Tempest option
    conf: typing.Optional[str] = None
    #: oslo.config value -> value, for Tempest
    from_conf: typing.Callable = None
    #: value -> oslo.config default
    to_conf: typing.Callable = None
    #: False: `epa-chain local run` sets it from the bed
    local: bool = True
    low: typing.Optional[float] = None
    low_open: bool = False
    high: typing.Optional[float] = None
    high_open: bool = False
    #: a floor and a ceiling against typos, overflow and searches that
    #: never end, not bounds of the quantity (Tempest does not declare
    #: them)
    least: typing.Optional[float] = None
    most: typing.Optional[float] = None
    #: None allowed (e.g. "line rate" for no maximum load)
    optional: bool = False
    #: a list of whole numbers >= item_low (flow counts)
    item_low: typing.Optional[int] = None
    choices: typing.Tuple = ()
    metavar: typing.Optional[str] = None
    #: added to the fix of a refused number, e.g. an example
    hint: str = ''
    #: a list's own check: (field, value) -> normalised value
    check_list: typing.Callable = None

    @property
    def dest(self):
        """The argparse attribute."""
        return self.flag[2:].replace('-', '_')

    def bounds_text(self):
        text = self._bounds_text()
        if self.least is not None:
            text += ', at least %g' % self.least
        if self.most is not None:
            text += ' up to %g' % self.most
        return text

    def _bounds_text(self):
        if self.low is not None and self.high is not None:
            return '%s%g, %g%s' % ('(' if self.low_open else '[', self.low,
                                   self.high, ')' if self.high_open else ']')
        if self.low is None:
            return None
        if self.kind == 'int':
            return 'a whole number >= %d' % self.low
        if self.low == 0:
            return 'a positive number' if self.low_open else '0 or more'
        return 'a number %s %g' % ('>' if self.low_open else '>=', self.low)

    def check(self, value):
        """The value as the Campaign keeps it, or FieldError."""
        if value is None and self.optional:
            return None
        if self.check_list:
            return self.check_list(self.field, value)
        if self.kind == 'text':
            return value
        if self.kind == 'choice':
            if value not in self.choices:
                raise FieldError(self.field, value, 'choose one of %s'
                                 % ', '.join(self.choices))
            return value
        return self._check_number(value)

    def _check_number(self, value):
        # math.isfinite of a huge int overflows: only floats are not.
        number = (not isinstance(value, bool) and
                  isinstance(value, (int, float)) and
                  not (isinstance(value, float) and
                       not math.isfinite(value)))
        if self.kind == 'int':
            number = number and isinstance(value, int)
        inside = number and (
            self.low is None or value > self.low or
            (value == self.low and not self.low_open)) and (
            self.high is None or value < self.high or
            (value == self.high and not self.high_open)) and (
            self.least is None or value >= self.least) and (
            self.most is None or value <= self.most)
        if not inside:
            bounds = self.bounds_text()
            fix = ('give %s' % bounds if bounds.startswith(('a ', '0'))
                   else 'give a number in %s' % bounds)
            raise FieldError(self.field, value, fix + self.hint)
        return value


def _plain(value):
    return value


SECONDS = 'SECONDS'
# (name, what it is) of each search profile (PROFILES, below the table).
PROFILE_HELP = (
    ('plain', 'one trial decides a load (RFC 2544)'),
    ('noise-robust', 'a load is confirmed before it fails, for a noisy '
                     'SUT'),
)
# Ceilings: beyond them a value is a typo, and a campaign would run for
# ever or a count of frames overflow (1e300 s at line rate).
MAX_TRIAL_S = 86400.0
MAX_SOAK_S = 30 * 86400.0
MAX_REPETITIONS = 100
MAX_REPEAT = 100
MAX_LINEAR_STEPS = 10000
MAX_PRECEDING_TARGETS = 20
MAX_CHAIN_LENGTH = 100
# Finer than this the binary searches halve past a float's precision and
# never end (and MLRsearch divides by zero).
MIN_RESOLUTION = 1e-6
# Each soak interval rewrites the whole results file: a day at 8.64 s.
MAX_SOAK_INTERVALS = 10000

TABLE = (
    Option('frame_sizes', '--frame-sizes',
           (trial.FrameSize(size=64),),
           'frame sizes in bytes with the FCS (64..9018), separated by '
           'commas; "imix" for 64:7{mix}570:4{mix}1518:1 (seed 002), or '
           'a mix as size:weight pairs joined by "{mix}"', 'list',
           parse=split_frame_sizes,
           show=lambda sizes: ','.join(frame_size_text(s) for s in sizes),
           conf='frame_sizes', from_conf=_frame_sizes_from_conf,
           to_conf=lambda sizes: [frame_size_text(s, '/') for s in sizes],
           check_list=_check_frame_sizes, metavar='SIZES'),
    Option('flow_counts', '--flows', (1,),
           'flow counts to measure each frame size with, separated by '
           'commas (seed 000 uses 1, 100, 500, 1000 and more)', 'list',
           parse=_whole_numbers,
           show=lambda flows: ','.join(str(f) for f in flows),
           conf='flow_counts', from_conf=_plain, to_conf=list,
           item_low=1, check_list=_check_flows, metavar='N,...'),
    Option('directions', '--direction', directions.UNIDIRECTIONAL,
           'traffic directions: ' + directions.HELP, 'list',
           parse=directions.parse,
           show=lambda d: 'bi' if directions.parse(d) ==
           directions.BIDIRECTIONAL
           else 'uni', local=False, check_list=_check_directions,
           metavar='uni|bi'),
    Option('chain_length', '--chain-length', None,
           'VNFs in the chain, for the switching operations table', 'int',
           parse=_number(int), local=False, low=0, most=MAX_CHAIN_LENGTH,
           optional=True,
           metavar='VNFS'),
    Option('method', '--method', 'mlrsearch', 'throughput search method',
           'choice', conf='search_method', from_conf=_plain,
           to_conf=_plain, choices=METHOD_NAMES),
    Option('trial_duration_s', '--trial-duration', 60.0,
           'seconds of traffic per full search trial (RFC 2544 and the '
           'seeds use 60)', 'float', parse=_number(float),
           conf='trial_duration', from_conf=_plain, to_conf=_plain,
           low=0, low_open=True, most=MAX_TRIAL_S, metavar=SECONDS),
    Option('loss_goals', '--loss-goals', dict(
        (name, ratio) for name, ratio, _what in LOSS_GOALS),
        'loss-ratio goals as NAME=RATIO items', 'list',
        parse=parse_goals, show=_goals_text, check_list=_check_goals,
        metavar='NAME=RATIO,...'),
    Option('resolution', '--resolution', 0.005,
           'relative width goal of the search interval: the search stops '
           'when the interval around the throughput is narrower than this '
           'fraction', 'float', parse=_number(float),
           conf='search_resolution', from_conf=_plain, to_conf=_plain,
           low=0, low_open=True, high=1, high_open=True,
           least=MIN_RESOLUTION, metavar='FRACTION',
           hint=', e.g. 0.005 for 0.5 %'),
    Option('repetitions', '--repetitions', 3,
           'trials per step of best-of-n and worst-of-n (their N; not '
           'repeat, the runs of the whole campaign)', 'int',
           parse=_number(int), conf='repetitions', from_conf=_plain,
           to_conf=_plain, low=1, most=MAX_REPETITIONS, metavar='N'),
    # A ceiling below line rate for a generator that cannot offer it (e.g.
    # guests under QEMU/TCG); the results record the ceiling used.
    # The whole campaign again, for the spread of its figures
    # (measurement/repeats.py): a noisy SUT's median, min and max.
    Option('repeat', '--repeat', 1,
           'runs of the whole campaign, every search again; the results '
           'keep each run\'s cases and their median, min and max per frame '
           'size and goal (not repetitions, the trials per step of '
           'best-of-n and worst-of-n)', 'int', parse=_number(int),
           conf='repeat', from_conf=_plain, to_conf=_plain, low=1,
           most=MAX_REPEAT, metavar='N'),
    Option('max_load_fps', '--max-load', None,
           'highest load per direction, frames/s (default: line rate)',
           'float', parse=_number(float), conf='max_load_fps',
           from_conf=_plain, to_conf=_plain, low=0, low_open=True,
           optional=True, metavar='FPS'),
    Option('min_load_fps', '--min-load', None,
           'lowest load per direction, frames/s (default: 0.1 % of the '
           'highest)', 'float', parse=_number(float), conf='min_load_fps',
           from_conf=_plain, to_conf=_plain, low=0, low_open=True,
           optional=True, metavar='FPS'),
    # A generator that falls short of the asked rate, stops answering
    # for a while, or counts frames of an earlier trial makes an invalid
    # trial, never a result; on a shared host (TCG guests, a busy gate)
    # that can be a moment's preemption, so the trial may run again.
    # Every invalid trial stays in the case's totals.
    Option('invalid_trial_retries', '--invalid-trial-retries', 0,
           'times a trial runs again that the generator could not offer at '
           'the asked rate, that it stopped answering in, or that received '
           'more frames than it sent, before the case ends with that '
           'error; each such trial is '
           'recorded (totals.invalid_trials)', 'int',
           parse=_number(int), conf='invalid_trial_retries',
           from_conf=_plain, to_conf=_plain, low=0, high=10, metavar='N'),
    Option('linear_steps', '--linear-steps', 100,
           'steps of the linear sweep', 'int', parse=_number(int), low=1,
           most=MAX_LINEAR_STEPS, metavar='N'),
    Option('latency_load_fraction', '--latency-fraction', 0.9,
           'the latency test offers this fraction of the strictest goal\'s '
           'throughput', 'float', parse=_number(float),
           conf='latency_load_fraction', from_conf=_plain, to_conf=_plain,
           low=0, low_open=True, high=1, metavar='FRACTION'),
    Option('latency_duration_s', '--latency-duration', 60.0,
           'seconds of the latency test; 0 disables it', 'float',
           parse=_number(float), conf='latency_duration', from_conf=_plain,
           to_conf=_plain, low=0, most=MAX_TRIAL_S, metavar=SECONDS,
           hint=' (0 disables it)'),
    Option('soak_duration_s', '--soak-duration', 0.0,
           'seconds of a long latency soak after the latency test, '
           'saving partial results every soak interval; 0 disables it',
           'float', parse=_number(float),
           conf='latency_soak_duration', from_conf=_plain, to_conf=_plain,
           low=0, most=MAX_SOAK_S, metavar=SECONDS,
           hint=' (0 disables it)'),
    Option('soak_interval_s', '--soak-interval', 60.0,
           'seconds of one soak interval, between partial saves', 'float',
           parse=_number(float), low=0, low_open=True, most=MAX_TRIAL_S,
           metavar=SECONDS),
    Option('results_dir', '--results-dir', None,
           'also keep a partial results file here, rewritten as the '
           'campaign goes', 'text', optional=True, metavar='DIR'),
    Option('mlr_initial_trial_duration_s', '--mlr-initial-trial', 1.0,
           'MLRsearch initial trial duration', 'float',
           parse=_number(float), low=0, low_open=True, most=MAX_TRIAL_S,
           metavar=SECONDS),
    Option('mlr_preceding_targets', '--mlr-preceding-targets', 2,
           'MLRsearch coarser targets before the final one', 'int',
           parse=_number(int), low=0, most=MAX_PRECEDING_TARGETS,
           metavar='N'),
    # The search profile sets the options it names in PROFILES (their
    # row's default is None: "the profile's"); a value given wins.
    Option('search_profile', '--search-profile', 'plain',
           'how many trials decide a load: ' + '; '.join(
               '%s: %s' % item for item in PROFILE_HELP), 'choice',
           conf='search_profile', from_conf=_plain, to_conf=_plain,
           choices=tuple(name for name, _what in PROFILE_HELP),
           metavar='PROFILE'),
    Option('mlr_exceed_ratio', '--mlr-exceed-ratio', None,
           'MLRsearch exceed ratio: share of bad trial-seconds a lower '
           'bound may hold (0: any bad trial makes an upper bound)',
           'float', parse=_number(float), low=0, high=1, high_open=True,
           optional=True, metavar='RATIO'),
    Option('mlr_duration_sum_trials', '--mlr-duration-sum', None,
           'MLRsearch goal duration sum, in full trials: the trial-seconds '
           'of full trials that make a load a bound', 'float',
           parse=_number(float), low=1, most=MAX_REPETITIONS,
           optional=True, metavar='TRIALS'),
    Option('loss_verification_repeats', '--loss-verification-repeats',
           None, 'RFC 2544 loss verification (RFC 9004, ETSI GS NFV-TST '
           '009): times a trial that misses its goal by little runs again '
           'at the same load; the load passes when one of them meets the '
           'goal (0: off)', 'int', parse=_number(int), low=0,
           most=MAX_REPETITIONS, optional=True, metavar='M'),
    Option('loss_verification_frames', '--loss-verification-frames', 100,
           'a trial misses its goal by little when it lost fewer frames '
           'than this beyond the goal\'s allowance', 'int',
           parse=_number(int), low=0, metavar='N'),
    Option('loss_verification_ratio', '--loss-verification-ratio', 0.001,
           'or when its loss ratio exceeds the goal\'s by less than this',
           'float', parse=_number(float), low=0, high=1, high_open=True,
           metavar='RATIO'),
)
BY_FIELD = {option.field: option for option in TABLE}

# What each search profile sets where the user gave no value: one line
# per value. 'plain' is RFC 2544's and the seeds' one trial per load;
# 'noise-robust' is CSIT's NDR/PDR goals (exceed ratio 0.5 over several
# full trials: two of three decide) and RFC 9004's binary search with
# loss verification; measured on the noisy model in measurement.rst.
PROFILES = {
    'plain': {
        'mlr_exceed_ratio': 0.0,
        'mlr_duration_sum_trials': 1.0,
        'loss_verification_repeats': 0,
    },
    'noise-robust': {
        'mlr_exceed_ratio': 0.5,
        'mlr_duration_sum_trials': 3.0,
        'loss_verification_repeats': 3,
    },
}

# Where a front end starts from other values than the table's, and why.
OVERRIDES = {
    MEASURE: {},
    # One host shares its few cores with the chain: short trials, a
    # coarser search, RFC 2544's plain binary search.
    LOCAL: {'method': 'rfc2544', 'trial_duration_s': 5.0,
            'resolution': 0.05, 'latency_duration_s': 5.0,
            'mlr_initial_trial_duration_s': 0.5},
    # A cloud benchmark reports the RFC 2544 frame sizes.
    TEMPEST: {'frame_sizes': tuple(trial.FrameSize(size=size)
                                   for size in RFC2544_FRAME_SIZES)},
}


def check(field, value):
    return BY_FIELD[field].check(value)


def field_default(field):
    """The dataclass field of the Campaign with the table's default."""
    value = BY_FIELD[field].default
    if isinstance(value, (dict, list)):
        return dataclasses.field(default_factory=lambda: type(value)(value))
    return dataclasses.field(default=value)


def defaults(front_end):
    """{field: default} as `front_end` starts from."""
    found = {option.field: option.default for option in TABLE}
    found.update(OVERRIDES[front_end])
    return found


def profile_values(profile, given):
    """{field: value} of `given` with `profile`'s where a value is None."""
    return {field: value if given.get(field) is None else given[field]
            for field, value in PROFILES[profile].items()}


def profile_default_text(option):
    """'plain 0, noise-robust 0.5': the defaults of a profiled option."""
    return ', '.join('%s %s' % (name, option.show(values[option.field]))
                     for name, values in PROFILES.items())


def for_front_end(front_end):
    """The options `front_end` offers, in table order."""
    if front_end == TEMPEST:
        return [o for o in TABLE if o.conf or o.field == 'loss_goals']
    return [o for o in TABLE if front_end == MEASURE or o.local]


# ---- the command line -------------------------------------------------------

def add_arguments(parser, front_end):
    """Add the options of `epa-chain measure` or `epa-chain local run`."""
    starts = defaults(front_end)
    for option in for_front_end(front_end):
        default = starts[option.field]
        text = None if default is None else option.show(default)
        help_text = option.help.format(mix=',')
        if text is not None:
            help_text += ' (default: %s)' % text
        elif option.field in PROFILES['plain']:
            help_text += ' (default by --search-profile: %s)' % (
                profile_default_text(option))
        parser.add_argument(option.flag, default=text, metavar=option.metavar,
                            choices=option.choices or None,
                            help=help_text.replace('%', '%%'))


def values_from_arguments(args, front_end):
    """{field: value} from parsed arguments; FieldError on bad text."""
    values = {}
    for option in for_front_end(front_end):
        text = getattr(args, option.dest)
        if text is None:
            values[option.field] = None
            continue
        try:
            values[option.field] = option.parse(text)
        except ValueError as error:
            raise FieldError(option.field, text, str(error)) from None
    return values


def cli_message(error, args=None):
    """A FieldError as the command line spells it: '--flows 'x': ...'."""
    option = BY_FIELD.get(error.field)
    if option is None:
        return str(error)
    text = getattr(args, option.dest, None) if args is not None else None
    if text is None and error.value is None:
        return '%s: %s' % (option.flag, error.fix)
    return '%s %r: %s' % (option.flag, error.value if text is None else text,
                          error.fix)


# ---- Tempest ----------------------------------------------------------------

def goal_conf_name(goal):
    return '%s_loss_ratio' % goal.lower()


def conf_name(field):
    """The [epa_chain] option(s) behind a Campaign field."""
    if field == 'loss_goals':
        return ' and '.join(goal_conf_name(name)
                            for name, _ratio, _what in LOSS_GOALS)
    option = BY_FIELD.get(field)
    return option.conf if option and option.conf else field


def conf_defaults():
    """{[epa_chain] name: oslo.config default} of the campaign options."""
    starts = defaults(TEMPEST)
    found = {}
    for option in for_front_end(TEMPEST):
        if option.field == 'loss_goals':
            for name, ratio in starts['loss_goals'].items():
                found[goal_conf_name(name)] = ratio
            continue
        found[option.conf] = option.to_conf(starts[option.field])
    return found


def values_from_conf(conf_values):
    """{field: value} from {[epa_chain] name: value} of oslo.config."""
    values = {'loss_goals': {
        name: conf_values[goal_conf_name(name)]
        for name, _ratio, _what in LOSS_GOALS}}
    for option in for_front_end(TEMPEST):
        if option.conf:
            values[option.field] = option.from_conf(conf_values[option.conf])
    return values
