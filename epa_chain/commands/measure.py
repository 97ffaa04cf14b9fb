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

METHODS = ('rfc2544', 'mlrsearch', 'best-of-n', 'worst-of-n', 'linear')
DIRECTIONS = {'uni': ('forward',), 'bi': ('forward', 'reverse')}


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
    parser.add_argument('--direction', choices=sorted(DIRECTIONS),
                        default='uni', help='uni- or bidirectional traffic')
    parser.add_argument('--chain-length', type=int, metavar='VNFS',
                        help='VNFs in the chain, for the switching '
                             'operations table')
    add_campaign_arguments(parser)
    parser.add_argument('--json', required=True, metavar='OUT',
                        help='results file to write ("-" for stdout)')
    parser.add_argument('--tables', action='store_true',
                        help='print the report tables when done')
    parser.add_argument('-q', '--quiet', action='store_true',
                        help='no progress lines on stderr')


def add_campaign_arguments(parser, **defaults):
    """The search and latency options, shared with `epa-chain local run`."""
    parser.add_argument('--frame-sizes',
                        default=defaults.get('frame_sizes', '64'),
                        help='comma-separated frame sizes with FCS, "imix" '
                             'for 64:7,570:4,1518:1, or a mix written as '
                             'size:weight items (default: %(default)s)')
    parser.add_argument('--flows', default='1',
                        help='comma-separated flow counts (default: 1)')
    parser.add_argument('--method', choices=METHODS,
                        default=defaults.get('method', 'mlrsearch'),
                        help='throughput search (default: mlrsearch)')
    parser.add_argument('--trial-duration', type=float,
                        default=defaults.get('trial_duration', 60.0),
                        metavar='SECONDS', help='full trial duration '
                        '(default: %(default)s; 60 in RFC 2544 and the '
                        'seeds)')
    parser.add_argument('--loss-goals', default='NDR=0,PDR=0.005',
                        metavar='NAME=RATIO,...',
                        help='loss-ratio goals (default: NDR=0,PDR=0.005)')
    parser.add_argument('--resolution', type=float,
                        default=defaults.get('resolution', 0.005),
                        help='relative width goal of the search interval '
                             '(default: %(default)s)')
    parser.add_argument('--repetitions', type=int, default=3, metavar='N',
                        help='trials per step of best-of-n / worst-of-n '
                             '(default: 3)')
    parser.add_argument('--max-load', type=float, metavar='FPS',
                        help='highest load per direction (default: line '
                             'rate)')
    parser.add_argument('--min-load', type=float, metavar='FPS',
                        help='lowest load per direction (default: 0.1 %% '
                             'of the maximum)')
    parser.add_argument('--linear-steps', type=int, default=100,
                        help='steps of the linear sweep (default: 100)')
    parser.add_argument('--latency-fraction', type=float, default=0.9,
                        help='latency test load as a fraction of the '
                             'strictest goal\'s throughput (default: 0.9)')
    parser.add_argument('--latency-duration', type=float,
                        default=defaults.get('latency_duration', 60.0),
                        metavar='SECONDS',
                        help='latency test duration, 0 to skip '
                             '(default: %(default)s)')
    parser.add_argument('--soak-duration', type=float, default=0.0,
                        metavar='SECONDS', help='long latency soak after '
                        'the latency test (needs --results-dir)')
    parser.add_argument('--soak-interval', type=float, default=60.0,
                        metavar='SECONDS', help='soak interval between '
                        'partial saves (default: 60)')
    parser.add_argument('--results-dir', metavar='DIR',
                        help='also keep a partial results file here, '
                             'rewritten as the campaign goes')
    parser.add_argument('--mlr-initial-trial', type=float,
                        default=defaults.get('mlr_initial_trial', 1.0),
                        metavar='SECONDS', help='MLRsearch initial trial '
                        'duration (default: %(default)s)')
    parser.add_argument('--mlr-preceding-targets', type=int, default=2,
                        help='MLRsearch coarser targets before the final '
                             'one (default: 2)')
    parser.add_argument('--mlr-exceed-ratio', type=float, default=0.0,
                        help='MLRsearch exceed ratio (default: 0, any bad '
                             'trial makes an upper bound)')


def parse_frame_sizes(text):
    """Split --frame-sizes; consecutive size:weight items form one mix.

    '64,imix,64:7,570:4' -> ['64', 'imix', '64:7,570:4']
    """
    items, mix = [], []
    for token in (t.strip() for t in text.split(',')):
        if not token:
            continue
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


def parse_flows(text):
    try:
        return [int(t) for t in text.split(',') if t.strip()]
    except ValueError:
        raise ValueError('--flows %r: give whole numbers separated by '
                         'commas, e.g. 1,1000' % text) from None


def parse_goals(text):
    goals = {}
    for item in (t.strip() for t in text.split(',')):
        if not item:
            continue
        name, sep, ratio = item.partition('=')
        try:
            goals[name.strip()] = float(ratio)
        except ValueError:
            sep = ''
        if not sep or not name.strip():
            raise ValueError('--loss-goals %r: give NAME=RATIO items, e.g. '
                             'NDR=0,PDR=0.005' % text)
    return goals


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


def build_plan(args):
    from epa_chain.measurement import campaign
    return campaign.Campaign(
        frame_sizes=parse_frame_sizes(args.frame_sizes),
        flow_counts=parse_flows(args.flows),
        directions=DIRECTIONS[args.direction],
        method=args.method,
        trial_duration_s=args.trial_duration,
        loss_goals=parse_goals(args.loss_goals),
        resolution=args.resolution,
        repetitions=args.repetitions,
        max_load_fps=args.max_load,
        min_load_fps=args.min_load,
        linear_steps=args.linear_steps,
        latency_load_fraction=args.latency_fraction,
        latency_duration_s=args.latency_duration,
        soak_duration_s=args.soak_duration,
        soak_interval_s=args.soak_interval,
        results_dir=args.results_dir,
        chain_length=args.chain_length,
        mlr_initial_trial_duration_s=args.mlr_initial_trial,
        mlr_preceding_targets=args.mlr_preceding_targets,
        mlr_exceed_ratio=args.mlr_exceed_ratio)


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
