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
(schema epa-chain/results/2). Progress goes to stderr, one line per trial.
Every option, generator option and output path is checked before the
first trial. Exit status: 0 measured, 1 a case ended in a generator
error (the JSON says which) or PROX could not be reached (nothing is
written), 2 usage.

  epa-chain measure --generator model --frame-sizes 64,128,imix \\
      --flows 1,1000 --direction bi --method mlrsearch --json out.json
  epa-chain measure --generator prox --prox-endpoint 10.0.0.5:8474 \\
      --method rfc2544 --trial-duration 60 --json out.json
"""

import dataclasses
import sys
import typing
import warnings

from epa_chain.commands import _arguments
from epa_chain.generators import options as generator_options
from epa_chain.measurement import options as campaign_options
from epa_chain import outputs
from epa_chain import safe_yaml


def add_arguments(parser):
    parser.add_argument('--generator', default='model',
                        help='traffic generator: model (simulated system '
                             'under test) or prox (default: model)')
    parser.add_argument('--prox-endpoint', metavar='HOST:PORT',
                        action='append', default=[],
                        help='PROX control address (generator prox); once '
                             'per chain of a chain_count stack, in chain '
                             'order: the chains are measured together')
    parser.add_argument('--generator-option', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='option for the generator, repeatable, e.g. '
                             'ndr_fps=2e6, jitter=0.01, link_bps=1e9 (each '
                             'generator\'s keys and bounds: '
                             'doc/source/measurement.rst)')
    campaign_options.add_arguments(parser, campaign_options.MEASURE)
    parser.add_argument('--json', required=True, metavar='OUT',
                        help='results file to write ("-" for stdout)')
    parser.add_argument('--loss-by-hop', metavar='PROOF',
                        help='split every lossy trial\'s loss hop by hop '
                             'from this host\'s Open vSwitch counters, '
                             'along the path that `epa-chain prove --json '
                             'PROOF` counted (run it on the compute host, '
                             'as root); the chain\'s parked VNFs (the '
                             'proof\'s vnf_control_endpoints) run their '
                             'tasks for the measurement only; with a '
                             '--prox-endpoint per chain, each chain\'s '
                             'path and VNFs from the proof\'s chains')
    parser.add_argument('--tables', action='store_true',
                        help='print the report tables when done')
    parser.add_argument('-q', '--quiet', action='store_true',
                        help='no progress lines on stderr')


@dataclasses.dataclass(frozen=True)
class Request:
    """`epa-chain measure` as typed, checked values."""

    generator: str
    #: the generator's keyword arguments (host and port for prox)
    options: typing.Mapping[str, typing.Any]
    campaign: typing.Any            # measurement.campaign.Campaign
    json: str
    tables: bool = False
    quiet: bool = False
    #: --prox-endpoint, one per chain measured together
    prox_endpoints: typing.Tuple[str, ...] = ()
    #: the generator's keyword arguments of each chain after the first
    more_options: typing.Tuple[typing.Mapping[str, typing.Any], ...] = ()
    #: each chain's {direction: (hop_loss.Hop, ...)} of --loss-by-hop,
    #: or None
    loss_paths: typing.Any = None
    #: the proven chain's parked VNFs (vnf_tasks.Endpoint, ...)
    vnf_endpoints: typing.Tuple[typing.Any, ...] = ()


# Moved to commands/_arguments.py (shared with `epa-chain local`), kept
# for a release: {old name: new name}.
_MOVED = {'parse_pairs': 'parse_pairs', 'parse_endpoint': 'parse_endpoint',
          'parse_options': 'parse_generator_options',
          'build_plan': 'campaign_from_arguments'}


def __getattr__(name):
    if name not in _MOVED:
        raise AttributeError('module %r has no attribute %r'
                             % (__name__, name))
    warnings.warn('epa_chain.commands.measure.%s is epa_chain.commands.'
                  '_arguments.%s now' % (name, _MOVED[name]),
                  DeprecationWarning, stacklevel=2)
    return getattr(_arguments, _MOVED[name])


def _error(message):
    # One line, whatever a value or path holds.
    print('epa-chain measure: %s' % safe_yaml.escape(str(message).strip()),
          file=sys.stderr)


def _check_generator(args):
    """Refuse a generator measure cannot build, or its missing endpoint."""
    from epa_chain import generators

    if args.generator not in generator_options.TABLES:
        measured = ' or '.join(sorted(generator_options.TABLES))
        if generators.known(args.generator) and generators.kind(
                args.generator, warn=False).local:
            raise ValueError('--generator %s: its test bed runs it: use '
                             '`epa-chain local run --generator %s`; measure '
                             'runs %s' % (args.generator, generators.kind(
                                 args.generator, warn=False).name,
                                 measured))
        raise ValueError('--generator %r: unknown generator: choose one of '
                         '%s' % (args.generator, ', '.join(sorted(
                             generator_options.TABLES))))
    if len(args.prox_endpoint) > 1 and len(set(args.prox_endpoint)) != len(
            args.prox_endpoint):
        raise ValueError('--prox-endpoint %s twice: give each chain\'s '
                         'generator once' % next(
                             e for e in args.prox_endpoint
                             if args.prox_endpoint.count(e) > 1))
    if args.prox_endpoint and args.generator != 'prox':
        raise ValueError('--prox-endpoint is for --generator prox')
    if args.generator == 'prox' and not args.prox_endpoint:
        raise ValueError('--generator prox needs --prox-endpoint HOST:PORT, '
                         'PROX\'s control address (prox -t), e.g. '
                         '10.0.0.5:8474')


def _request(args):
    """The Request of the parsed arguments; ValueError names the option.

    Every option, generator option and output path is checked here,
    before the first trial: a campaign of hours never ends in "cannot
    write".
    """
    _check_generator(args)
    plan = _arguments.campaign_from_arguments(args)
    endpoints = args.prox_endpoint or [None]
    options, *more = [_arguments.parse_generator_options(
        args.generator_option, endpoint, args.generator)
        for endpoint in endpoints]
    outputs.check_file(args.json, '--json', allow_stdout=True)
    if plan.results_dir is not None:
        outputs.check_directory(plan.results_dir, '--results-dir')
    loss_paths, vnf_endpoints = None, ()
    if args.loss_by_hop is not None:
        loss_paths, vnf_endpoints = _proven(args.loss_by_hop,
                                            plan.directions, len(endpoints))
    return Request(generator=args.generator, options=options, campaign=plan,
                   json=args.json, tables=args.tables, quiet=args.quiet,
                   prox_endpoints=tuple(args.prox_endpoint),
                   more_options=tuple(more), loss_paths=loss_paths,
                   vnf_endpoints=vnf_endpoints)


def _proven(path, directions, chain_count):
    """Each chain's paths and every parked VNF of the proof at `path`."""
    from epa_chain.cloud import proof
    from epa_chain.cloud import vnf_tasks

    chains = proof.proven_chains(path, directions)
    if len(chains) != chain_count:
        raise ValueError('--loss-by-hop %s proves %d chain(s), --prox-'
                         'endpoint gives %d: give each chain\'s generator, '
                         'in chain order' % (path, len(chains), chain_count))
    return (tuple(paths for paths, _parked in chains),
            vnf_tasks.of_chains(parked for _paths, parked in chains))


def run(args):
    # Imported here: the CLI loads every command module at start.
    from epa_chain import generators
    from epa_chain.measurement import trial

    try:
        from epa_chain.cloud import workflow

        request = _request(args)
        generator = workflow.chains_generator(
            [generators.create(request.generator, **options)
             for options in (request.options,) + request.more_options],
            request.loss_paths)
    except generator_options.OptionError as error:
        # Options checked together (knee_fps against ndr_fps).
        _error(_arguments.option_message(error, error.value))
        return 2
    except ValueError as error:
        _error(error)
        return 2
    except trial.GeneratorError as error:
        _error('generator %s: %s' % (args.generator, error))
        return 1
    return _measure(request, generator)


def _progress(line):
    print(line, file=sys.stderr, flush=True)


def _measure(request, generator):
    """Run the workflow's campaign, write its results; the exit status."""
    from epa_chain.cloud import workflow

    progress = None if request.quiet else _progress
    try:
        document = workflow.measure(generator, request, progress)
    except workflow.NothingMeasured as error:
        _error(error)
        return 1
    return _write(request, document, progress)


def _write(request, document, progress):
    """Write the results and the tables asked for; the exit status."""
    from epa_chain.measurement import campaign
    from epa_chain.measurement import report
    from epa_chain.measurement import results

    if request.json == outputs.STDOUT:
        sys.stdout.write(results.to_text(document))
    else:
        campaign.write_json(document, request.json, '--json')
        if progress:
            progress('results written to %s' % request.json)
    if request.tables:
        sys.stdout.write(report.render_tables(document))
    failures = campaign.errors(document)
    for label, cause, detail in failures:
        _error('%s: %s: %s' % (label, cause, detail))
    return 1 if failures else 0
