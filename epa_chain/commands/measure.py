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

"""Measure throughput and latency through a traffic generator.

Runs one search per frame size and flow count against a generator - the
model of a system under test, or PROX at HOST:PORT - then a latency test
at a fraction of the throughput found, and writes the results as JSON
(schema epa-chain/results/1). Progress goes to stderr, one line per trial.
Every option, generator option and output path is checked before the
first trial. Exit status: 0 measured, 1 a case ended in a generator
error (the JSON says which) or PROX could not be reached (nothing is
written), 2 usage.

  epa-chain measure --generator model --frame-sizes 64,128,imix \\
      --flows 1,1000 --direction bi --method mlrsearch --json out.json
  epa-chain measure --generator prox --prox-endpoint 10.0.0.5:8474 \\
      --method rfc2544 --trial-duration 60 --json out.json
"""

import ipaddress
import re
import sys

from epa_chain.generators import options as generator_options
from epa_chain.measurement import options as campaign_options
from epa_chain import outputs


def add_arguments(parser):
    parser.add_argument('--generator', default='model',
                        help='traffic generator: model (simulated system '
                             'under test) or prox (default: model)')
    parser.add_argument('--prox-endpoint', metavar='HOST:PORT',
                        help='PROX control address (generator prox)')
    parser.add_argument('--generator-option', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='option for the generator, repeatable, e.g. '
                             'ndr_fps=2e6, jitter=0.01, link_bps=1e9 (each '
                             'generator\'s keys and bounds: '
                             'doc/source/measurement.rst)')
    campaign_options.add_arguments(parser, campaign_options.MEASURE)
    parser.add_argument('--json', required=True, metavar='OUT',
                        help='results file to write ("-" for stdout)')
    parser.add_argument('--tables', action='store_true',
                        help='print the report tables when done')
    parser.add_argument('-q', '--quiet', action='store_true',
                        help='no progress lines on stderr')


def parse_pairs(pairs, option, example, convert=str):
    """KEY=VALUE items of a repeatable option, as a dict."""
    found = {}
    for pair in pairs:
        key, sep, value = pair.partition('=')
        if not sep or not key.strip():
            raise ValueError('%s %r: give KEY=VALUE, e.g. %s'
                             % (option, pair, example))
        found[key.strip()] = convert(value.strip())
    return found


# A host name (RFC 1123 labels) or an IP address; never an option.
_HOST_NAME = re.compile(r'(?=.{1,253}\Z)[A-Za-z0-9]([A-Za-z0-9-]{0,61}'
                        r'[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}'
                        r'[A-Za-z0-9])?)*\.?')
_PORT = re.compile(r'[0-9]{1,5}')


def parse_endpoint(text, option='--prox-endpoint'):
    """(host, port) of HOST:PORT, [IPv6]:PORT; ValueError names `option`."""
    fix = ('give HOST:PORT with a port in 1-65535, e.g. 10.0.0.5:8474 or '
           '[fd00::5]:8474')
    host, sep, port = text.rpartition(':')
    if not sep or not _PORT.fullmatch(port) or not 1 <= int(port) <= 65535:
        raise ValueError('%s %r: %s' % (option, text, fix))
    bracketed = host.startswith('[') and host.endswith(']')
    if bracketed:
        host = host[1:-1]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None and not _HOST_NAME.fullmatch(host):
        raise ValueError('%s %r: %r is neither an IP address nor a host '
                         'name; %s' % (option, text, host, fix))
    if address is not None and address.version == 6 and not bracketed:
        raise ValueError('%s %r: write an IPv6 address in brackets; %s'
                         % (option, text, fix))
    return host, int(port)


def _option_message(error, text):
    """A generator's OptionError as the command line spells it."""
    return '--generator-option %s=%s: %s' % (error.name, text, error.fix)


def parse_options(pairs, prox_endpoint, generator='model'):
    """The generator's keyword arguments: typed, checked, named.

    `pairs` are --generator-option KEY=VALUE items of `generator`; host
    and port come from `prox_endpoint` (HOST:PORT) when given.
    """
    texts = parse_pairs(pairs, '--generator-option', 'link_bps=1e9')
    try:
        options = generator_options.from_text(generator, texts)
    except generator_options.OptionError as error:
        raise ValueError(_option_message(error, texts[error.name])) from None
    if prox_endpoint:
        options['host'], options['port'] = parse_endpoint(prox_endpoint)
    return options


def build_plan(args, front_end=campaign_options.MEASURE, **fixed):
    """The Campaign of the parsed options; ValueError names the option."""
    from epa_chain.measurement import campaign

    try:
        values = campaign_options.values_from_arguments(args, front_end)
        values.update(fixed)
        return campaign.Campaign(**values)
    except campaign_options.FieldError as error:
        raise ValueError(campaign_options.cli_message(error, args)) from None


def _error(message):
    # One line, whatever a value or path holds.
    print('epa-chain measure: %s' % ' '.join(str(message).split()),
          file=sys.stderr)


def _check_generator(args):
    """Refuse a generator measure cannot build, or its missing endpoint."""
    from epa_chain import generators

    if args.generator not in generator_options.TABLES:
        if args.generator in generators.names():
            raise ValueError('--generator %s: its test bed runs it: use '
                             '`epa-chain %s run`; measure runs %s'
                             % (args.generator, args.generator,
                                ' or '.join(sorted(
                                    generator_options.TABLES))))
        raise ValueError('--generator %r: unknown generator: choose one of '
                         '%s' % (args.generator, ', '.join(sorted(
                             generator_options.TABLES))))
    if args.prox_endpoint and args.generator != 'prox':
        raise ValueError('--prox-endpoint is for --generator prox')
    if args.generator == 'prox' and not args.prox_endpoint:
        raise ValueError('--generator prox needs --prox-endpoint HOST:PORT, '
                         'PROX\'s control address (prox -t), e.g. '
                         '10.0.0.5:8474')


def _check_outputs(args, plan):
    """Before any trial: a campaign of hours never ends in "cannot write"."""
    outputs.check_file(args.json, '--json', allow_stdout=True)
    if plan.results_dir is not None:
        outputs.check_directory(plan.results_dir, '--results-dir')


def run(args):
    # Imported here: the CLI loads every command module at start.
    from epa_chain import generators
    from epa_chain.measurement import campaign
    from epa_chain.measurement import report
    from epa_chain.measurement import results
    from epa_chain.measurement import trial

    try:
        _check_generator(args)
        plan = build_plan(args)
        options = parse_options(args.generator_option, args.prox_endpoint,
                                args.generator)
        _check_outputs(args, plan)
        generator = generators.create(args.generator, **options)
    except generator_options.OptionError as error:
        # Options checked together (knee_fps against ndr_fps).
        _error(_option_message(error, error.value))
        return 2
    except ValueError as error:
        _error(error)
        return 2
    except trial.GeneratorError as error:
        _error('generator %s: %s' % (args.generator, error))
        return 1

    def progress(line):
        print(line, file=sys.stderr, flush=True)

    with generator:
        # PROX out of reach fails every case the same way, each after a
        # connect timeout: say it once, before the campaign.
        unreachable = generator.describe().get('connect_error')
        if unreachable:
            _error('--prox-endpoint %s: %s; nothing measured'
                   % (args.prox_endpoint, unreachable))
            return 1
        document = campaign.run(generator, plan,
                                None if args.quiet else progress)
    if args.json == outputs.STDOUT:
        sys.stdout.write(results.to_text(document))
    else:
        campaign.write_json(document, args.json, '--json')
        if not args.quiet:
            progress('results written to %s' % args.json)
    if args.tables:
        sys.stdout.write(report.render_tables(document))
    failures = campaign.errors(document)
    for label, cause, detail in failures:
        _error('%s: %s: %s' % (label, cause, detail))
    return 1 if failures else 0
