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

"""Deploy the shipped Heat templates on this host and benchmark them.

No cloud: Heat's own engine resolves the stack in-process; provider VLAN
networks become OVS-DPDK bridges (userspace datapath, private OVS), VNF
ports vhost-user ports, servers VNF runtimes driving PROX (or
dpdk-testpmd) through virtio-user, and the generator PROX on vhost-user
ports too, or a paced AF_PACKET sender/receiver when there is no PROX
binary. Needs root; installs the Debian packages it lacks.

  epa-chain local run --preset pvp --prox-source samplevnf.tar.gz

  epa-chain local run --preset pvp --frame-sizes 64,512 --json out.json
  epa-chain local run --preset vecpe --vnf-counts 0,1,2,3
  epa-chain local run --preset pvp --chain-counts 1,2 --plots DIR
  epa-chain local run --preset pvp --chain-count 2 --noisy-neighbours 0.5
  epa-chain local up --preset pvvp-unidir; epa-chain local status
  epa-chain local down          (idempotent; cleans up a killed run too)

Presets: pvp, pvvp, vecpe (bidirectional; 1, 2, 3 VNFs) and
pvp-unidir, pvvp-unidir, vecpe-unidir, pvp-bidir, ... (templates/presets).
A bed's --prefix is short and lower case (^[a-z][a-z0-9-]{0,10}$: its
namespaces must fit an interface name); its --state-root a directory only
root can write, not a symbolic link. `down` stops only processes the bed
recorded that still run from its directory, and removes only what a bed
creates there.
Exit status: 0 done, 1 a measurement or a chain check failed (down: a part
of the bed could not be undone, named on stderr), 2 bad input (nothing
created or touched), 130 interrupted (the bed was taken down).
"""

import sys

from epa_chain.commands import _arguments
from epa_chain import generators
from epa_chain.local import names as bed_names
from epa_chain.measurement import options as campaign_options
from epa_chain import outputs
from epa_chain.prox import binary as prox_binary
from epa_chain.prox import build as prox_build

DEFAULT_PREFIX = 'epa'
#: the most VNFs --vnf-counts takes (the shipped chain's longest)
MAX_VNF_COUNT = 3


def add_arguments(parser):
    actions = parser.add_subparsers(dest='action', metavar='ACTION')
    actions.required = True
    run = actions.add_parser(
        'run', help='up, prove the chain, measure, down',
        description='Bring the chain up, prove it (learning, MAC rewriting, '
                    'delivery, no flooding), run the throughput search and '
                    'latency test, print the seed-layout table, take it '
                    'down.')
    _stack_arguments(run)
    _bed_arguments(run)
    campaign_options.add_arguments(run, campaign_options.LOCAL)
    _run_arguments(run)

    up = actions.add_parser(
        'up', help='bring the chain up and prove it; leave it up',
        description='Realise the stack on this host and prove the chain, '
                    'then leave it running.')
    _stack_arguments(up)
    _bed_arguments(up)
    up.add_argument('-q', '--quiet', action='store_true')

    down = actions.add_parser(
        'down', help='take a bed down (idempotent)',
        description='Stop every process, delete the namespaces (bridges, '
                    'ports), give the huge pages back and remove the '
                    'sockets of a bed, whether its run ended, failed or '
                    'was killed. Safe to run twice.')
    _bed_arguments(down, stack=False)

    status = actions.add_parser('status', help='what a bed holds now')
    _bed_arguments(status, stack=False)
    status.add_argument('--json', action='store_true',
                        help='print the status as JSON')


def _run_arguments(run):
    """What `run` alone takes: the comparisons, outputs, a bottleneck."""
    run.add_argument('--vnf-counts', metavar='N,...',
                     help='run once per chain length with the preset\'s '
                          'other settings, 0 meaning OVS alone, and print '
                          'each lossless rate as a ratio to the first '
                          '(e.g. 0,1,2,3)')
    run.add_argument('--chain-counts', metavar='N,...',
                     help='run once per number of chains side by side '
                          '(1-%d), each measured together, and print the '
                          'density curve: aggregate and per-chain '
                          'lossless rate per N (e.g. 1,2)'
                          % bed_names.MAX_CHAINS)
    run.add_argument('--noisy-neighbours', metavar='FRACTION',
                     help='with 2 or more chains: search chain 0 alone, '
                          'then while every other chain carries FRACTION '
                          '(0-1] of its own lossless rate alone; report '
                          'both and their ratio')
    run.add_argument('--keep-up', action='store_true',
                     help='leave the bed up afterwards (take it down with '
                          '`epa-chain local down`)')
    run.add_argument('--json', metavar='OUT',
                     help='write the results (schema epa-chain/results/2 '
                          'with a testbed section; with --vnf-counts, '
                          'epa-chain/local-chain-lengths/1; with '
                          '--chain-counts, epa-chain/density/1) to '
                          'OUT')
    run.add_argument('--plots', metavar='DIR',
                     help='also write the PNG plots `epa-chain report '
                          '--plots` draws (with --repeat, the spread) '
                          'into DIR; with --vnf-counts or --chain-counts, '
                          'one folder per run and the comparison\'s plot')
    run.add_argument('--throttle-vnf', metavar='N:PERCENT',
                     help='hold the N-th VNF of the chain to PERCENT of '
                          'one CPU (a CPU cgroup quota) once the chain is '
                          'proven: a bottleneck on purpose, to see the '
                          'loss split by hop name it (e.g. 2:10)')
    run.add_argument('-q', '--quiet', action='store_true',
                     help='no progress lines on stderr')


def _stack_arguments(parser):
    group = parser.add_argument_group(
        'stack', 'the same template, environments and parameters as '
        '`openstack stack create`')
    group.add_argument('-t', '--template', metavar='FILE',
                       help='HOT template (default: the shipped '
                            'templates/chain.yaml)')
    group.add_argument('--preset', default='pvp', metavar='NAME',
                       help='environment from templates/presets by name: '
                            'pvp, pvvp, vecpe (bidirectional), NAME-unidir, '
                            'NAME-bidir; or a file (default: pvp)')
    group.add_argument('-e', '--environment', action='append', default=[],
                       metavar='FILE',
                       help='more environment files, applied after the '
                            'preset')
    group.add_argument('--parameter', action='append', default=[],
                       metavar='KEY=VALUE',
                       help='template parameter, repeatable, as `openstack '
                            'stack create --parameter`: an environment '
                            'file setting it wins, as in Heat (a warning '
                            'says so); the bed\'s own settings (engine, '
                            'in-stack generator, --vnf-counts) are a last '
                            'environment file')
    group.add_argument('--chain-count', metavar='N',
                       help='chains side by side (the template\'s '
                            'chain_count, 1-%d here): each its own VNFs, '
                            'VLANs and generator, measured together'
                            % bed_names.MAX_CHAINS)
    group.add_argument('--engine', choices=('testpmd', 'prox'),
                       help='VNF forwarding engine (default: prox when a '
                            'PROX binary is given or built, the seeds\' '
                            'engine; else testpmd, from the dpdk-dev '
                            'package)')
    group.add_argument('--engine-binary', metavar='PATH',
                       help='the engine executable (default: the PROX '
                            'binary for prox, else found on PATH)')
    group.add_argument('--generator', choices=generators.local_kinds(),
                       help='traffic generator (default: prox when a PROX '
                            'binary is given or built, else afpacket, the '
                            'Python AF_PACKET sender, ~10^5 fps)')
    group.add_argument('--prox-binary', metavar='PATH',
                       help='PROX executable (default: $%s)'
                            % prox_build.BINARY_VARIABLE)
    group.add_argument('--prox-source', metavar='SRC',
                       help='build PROX from a samplevnf tarball, git URL '
                            'or directory, cached (default: $%s)'
                            % prox_build.SOURCE_VARIABLE)
    group.add_argument('--no-install', dest='install', action='store_false',
                       help='do not apt-get install missing packages')


def _bed_arguments(parser, stack=True):
    from epa_chain.local import names
    from epa_chain.local import state

    parser.add_argument('--prefix', default=DEFAULT_PREFIX,
                        help='names of this bed: namespaces PREFIX-ovs and '
                             'PREFIX-gen, state in STATE_ROOT/PREFIX, the '
                             'stack name; %s (default: %%(default)s)'
                             % names.PREFIX_PATTERN.replace('%', '%%'))
    parser.add_argument('--state-root', default=state.DEFAULT_ROOT,
                        metavar='DIR',
                        help='where beds keep their state: an absolute '
                             'path to a directory owned by root (or you) '
                             'that nobody else may write, no symbolic link '
                             '(default: %(default)s)')


def _error(message):
    print('epa-chain local: %s' % message, file=sys.stderr, flush=True)


def _progress(args):
    if getattr(args, 'quiet', False):
        return lambda line: None

    def say(line):
        print(line, file=sys.stderr, flush=True)
    return say


# ---- the edge: text -> checked values -------------------------------------

def _stack(args):
    """The lifecycle.Stack of -t, --preset, -e and --parameter."""
    from epa_chain.hot import shipped
    from epa_chain.local import lifecycle

    parameters = _arguments.parse_pairs(args.parameter, '--parameter',
                                        'vnf_count=2', convert=str)
    template_dir = shipped.template_dir()
    template = args.template or (template_dir and
                                 '%s/%s' % (template_dir, shipped.TEMPLATE))
    if not template:
        raise lifecycle.LocalError(
            'no --template and no shipped templates found in %s'
            % ', '.join(shipped.template_dir_candidates()))
    try:
        environments = [shipped.preset_path(args.preset, template_dir)]
    except shipped.PresetError as exc:
        raise lifecycle.LocalError('--preset %s' % exc)
    return lifecycle.Stack(template=template,
                           environments=tuple(environments +
                                              args.environment),
                           parameters=parameters, stack_name=args.prefix)


def _vnf_counts(text):
    """(count, ...) of --vnf-counts; (None,): the preset's own."""
    if not text:
        return (None,)
    try:
        counts = [int(item) for item in text.split(',') if item]
    except ValueError:
        counts = []
    if not counts or any(c < 0 or c > MAX_VNF_COUNT for c in counts):
        raise ValueError('--vnf-counts %r: give chain lengths 0 to %d '
                         'separated by commas, e.g. 0,1,2,3'
                         % (text, MAX_VNF_COUNT))
    return tuple(counts)


def _chain_count(text):
    """--chain-count N: a whole number 1 to names.py's MAX_CHAINS."""
    counts = _chain_counts(text, '--chain-count')
    if len(counts) != 1:
        raise ValueError('--chain-count %r: give one number' % text)
    return counts[0]


def _chain_counts(text, option='--chain-counts'):
    """(N, ...) of --chain-counts; ValueError naming the option."""
    try:
        counts = tuple(int(item) for item in str(text).split(',') if item)
    except ValueError:
        counts = ()
    highest = bed_names.MAX_CHAINS
    if not counts or any(c < 1 or c > highest for c in counts):
        raise ValueError('%s %r: give numbers of chains 1 to %d separated '
                         'by commas, e.g. 1,2' % (option, text, highest))
    return counts


def _fraction(text):
    """--noisy-neighbours FRACTION: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value <= 1:
        raise ValueError('--noisy-neighbours %r: give the neighbours\' '
                         'load as a fraction of their lossless rate, above '
                         '0 and at most 1 (e.g. 0.5)' % text)
    return value


def _runs(args):
    """(vnf_counts, chain_counts) of a run: one of the two may vary."""
    vnf_counts = _vnf_counts(getattr(args, 'vnf_counts', None))
    chain_counts = ((_chain_count(args.chain_count),) if args.chain_count
                    else (None,))
    if getattr(args, 'chain_counts', None):
        if args.chain_count:
            raise ValueError('give --chain-count or --chain-counts, not '
                             'both')
        chain_counts = _chain_counts(args.chain_counts)
    if len(vnf_counts) > 1 and len(chain_counts) > 1:
        raise ValueError('give --vnf-counts or --chain-counts, not both: '
                         'one comparison per run')
    if 0 in vnf_counts and chain_counts != (None,) and max(
            chain_counts) > 1:
        raise ValueError('--vnf-counts 0 (OVS alone) takes one chain; drop '
                         '0 or use --chain-count 1')
    noisy = getattr(args, 'noisy_neighbours', None)
    if noisy is not None:
        noisy = _fraction(noisy)
    if noisy and chain_counts != (None,) and min(chain_counts) < 2:
        raise ValueError('--noisy-neighbours needs neighbours: give '
                         '--chain-count 2 or more (--chain-counts: each '
                         'at least 2)')
    return vnf_counts, chain_counts, noisy


def _request(args, state):
    """The lifecycle.Request of `up` or `run`; nothing runs before it.

    The PROX source it would build after preflight is refused now if
    hostile, a binary that is not executable too.
    """
    from epa_chain.local import lifecycle

    if args.action == 'run' and args.json:
        outputs.check_file(args.json, '--json')
    if args.action == 'run' and args.plots:
        outputs.check_directory(args.plots, '--plots')
    prox = prox_binary.given(args.prox_binary, args.prox_source)
    stack = _stack(args)
    vnf_counts, chain_counts, noisy = _runs(args)
    fields = dict(state=state, stack=stack, prox=prox,
                  engine=args.engine, engine_binary=args.engine_binary,
                  generator=args.generator, install=args.install,
                  chain_counts=chain_counts)
    if args.action == 'run':
        fields.update(_run_fields(args, stack, vnf_counts, noisy))
    return lifecycle.Request(**fields)


def _run_fields(args, stack, vnf_counts, noisy):
    """The Request fields of `run` only, each refused now if bad."""
    from epa_chain.local import throttle

    # Bad measurement options fail here, before anything is created; the
    # runner sets chain length and directions from each bed.
    campaign = _arguments.campaign_from_arguments(args,
                                                  campaign_options.LOCAL)
    throttled = None
    if args.throttle_vnf:
        throttled = throttle.Throttle.parse(args.throttle_vnf)
        # A VNF no chain of the run has: refused before preflight, a
        # PROX build or the resolve.
        throttle.check_chains(throttled, stack, vnf_counts)
    return dict(vnf_counts=vnf_counts, campaign=campaign,
                keep_up=args.keep_up, json=args.json, plots=args.plots,
                throttle=throttled, noisy_fraction=noisy)


# ---- the action -----------------------------------------------------------

def run(args):
    from epa_chain.local import lifecycle
    from epa_chain.local import names

    try:
        state = lifecycle.bed_state(args.prefix, args.state_root,
                                    new=args.action in ('up', 'run'))
        request = (_request(args, state) if args.action in ('up', 'run')
                   else None)
    except (names.BadName, outputs.OutputError, prox_build.InputError,
            lifecycle.LocalError, ValueError) as exc:
        _error(exc)
        return 2
    return _act(args, state, request)


def _act(args, state, request):
    """The one lifecycle function of the action; errors as exit status."""
    from epa_chain.local import lifecycle
    from epa_chain.measurement import trial

    progress = _progress(args)
    try:
        if args.action == 'down':
            return lifecycle.down(state, progress)
        if args.action == 'status':
            return lifecycle.status(state, sys.stdout, args.json)
        if args.action == 'up':
            return lifecycle.up(request, progress, sys.stdout)
        return lifecycle.run(request, progress, sys.stdout)
    except lifecycle.Interrupted as exc:
        _error('interrupted (%s); the bed was taken down' % exc)
        return 130
    except campaign_options.FieldError as exc:
        _error(campaign_options.cli_message(exc, args))
        return 2
    except (lifecycle.LocalError, ValueError) as exc:
        _error(exc)
        return 2
    except trial.GeneratorError as exc:
        _error('the generator failed, the bed was taken down: %s' % exc)
        return 1
