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
Exit status: 0 measured, 1 a case ended in a generator error (the JSON
says which), 2 usage.

  epa-chain measure --generator model --frame-sizes 64,128,imix \\
      --flows 1,1000 --direction bi --method mlrsearch --json out.json
  epa-chain measure --generator prox --prox-endpoint 10.0.0.5:8474 \\
      --method rfc2544 --trial-duration 60 --json out.json
"""

import sys

from epa_chain.measurement import options as campaign_options


def add_arguments(parser):
    parser.add_argument('--generator', default='model',
                        help='traffic generator: model (simulated system '
                             'under test) or prox (default: model)')
    parser.add_argument('--prox-endpoint', metavar='HOST:PORT',
                        help='PROX control address (generator prox)')
    parser.add_argument('--generator-option', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='option for the generator, repeatable, e.g. '
                             'ndr_fps=2e6, jitter=0.01, link_bps=1e9')
    campaign_options.add_arguments(parser, campaign_options.MEASURE)
    parser.add_argument('--json', required=True, metavar='OUT',
                        help='results file to write ("-" for stdout)')
    parser.add_argument('--tables', action='store_true',
                        help='print the report tables when done')
    parser.add_argument('-q', '--quiet', action='store_true',
                        help='no progress lines on stderr')


def _value(text):
    lowered = text.lower()
    if lowered in ('none', 'null'):
        return None
    if lowered in ('true', 'false'):
        return lowered == 'true'
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_pairs(pairs, option, example, convert=_value):
    """KEY=VALUE items of a repeatable option, as a dict."""
    found = {}
    for pair in pairs:
        key, sep, value = pair.partition('=')
        if not sep or not key.strip():
            raise ValueError('%s %r: give KEY=VALUE, e.g. %s'
                             % (option, pair, example))
        found[key.strip()] = convert(value.strip())
    return found


def parse_options(pairs, prox_endpoint):
    options = parse_pairs(pairs, '--generator-option', 'link_bps=1e9')
    if prox_endpoint:
        host, sep, port = prox_endpoint.rpartition(':')
        if not sep or not host or not port.isdigit():
            raise ValueError('--prox-endpoint %r: give HOST:PORT, e.g. '
                             '10.0.0.5:8474' % prox_endpoint)
        options['host'] = host.strip('[]')
        options['port'] = int(port)
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
    print('epa-chain measure: %s' % message, file=sys.stderr)


def run(args):
    # Imported here: the CLI loads every command module at start.
    import json

    from epa_chain import generators
    from epa_chain.measurement import campaign
    from epa_chain.measurement import report
    from epa_chain.measurement import trial

    if args.prox_endpoint and args.generator != 'prox':
        _error('--prox-endpoint is for --generator prox')
        return 2
    try:
        plan = build_plan(args)
        options = parse_options(args.generator_option, args.prox_endpoint)
        generator = generators.create(args.generator, **options)
    except (ValueError, TypeError) as error:
        _error(error)
        return 2
    except trial.GeneratorError as error:
        _error('generator %s: %s' % (args.generator, error))
        return 1

    def progress(line):
        print(line, file=sys.stderr, flush=True)

    with generator:
        document = campaign.run(generator, plan,
                                None if args.quiet else progress)
    if args.json == '-':
        json.dump(document, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write('\n')
    else:
        campaign.write_json(document, args.json)
        if not args.quiet:
            progress('results written to %s' % args.json)
    if args.tables:
        sys.stdout.write(report.render_tables(document))
    failures = campaign.errors(document)
    for label, cause, detail in failures:
        _error('%s: %s: %s' % (label, cause, detail))
    return 1 if failures else 0
