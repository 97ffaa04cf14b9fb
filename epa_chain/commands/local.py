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

import os
import sys

from epa_chain.commands import measure
from epa_chain.measurement import options as campaign_options
from epa_chain import outputs

DEFAULT_PREFIX = 'epa'
_PROX_BINARY_ENV = 'EPA_CHAIN_PROX_BINARY'
_PROX_SOURCE_ENV = 'EPA_CHAIN_PROX_SOURCE'


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
    run.add_argument('--vnf-counts', metavar='N,...',
                     help='run once per chain length with the preset\'s '
                          'other settings, 0 meaning OVS alone, and print '
                          'each lossless rate as a ratio to the first '
                          '(e.g. 0,1,2,3)')
    run.add_argument('--keep-up', action='store_true',
                     help='leave the bed up afterwards (take it down with '
                          '`epa-chain local down`)')
    run.add_argument('--json', metavar='OUT',
                     help='write the results (schema epa-chain/results/1 '
                          'with a testbed section; with --vnf-counts, '
                          'epa-chain/local-chain-lengths/1) to OUT')
    run.add_argument('-q', '--quiet', action='store_true',
                     help='no progress lines on stderr')

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
                       help='template parameter, repeatable (wins over '
                            'environments)')
    group.add_argument('--engine', choices=('testpmd', 'prox'),
                       help='VNF forwarding engine (default: prox when a '
                            'PROX binary is given or built, the seeds\' '
                            'engine; else testpmd, from the dpdk-dev '
                            'package)')
    group.add_argument('--engine-binary', metavar='PATH',
                       help='the engine executable (default: the PROX '
                            'binary for prox, else found on PATH)')
    group.add_argument('--generator', choices=('prox', 'afpacket'),
                       help='traffic generator (default: prox when a PROX '
                            'binary is given or built, else afpacket, the '
                            'Python AF_PACKET sender, ~10^5 fps)')
    group.add_argument('--prox-binary', metavar='PATH',
                       help='PROX executable (default: $%s)'
                            % _PROX_BINARY_ENV)
    group.add_argument('--prox-source', metavar='SRC',
                       help='build PROX from a samplevnf tarball, git URL '
                            'or directory, cached (default: $%s)'
                            % _PROX_SOURCE_ENV)
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


def _parameters(args, vnf_count=None):
    # The bed always runs its own generator in the stack: a preset made
    # for an external hardware tester (vecpe) gets the in-stack one.
    parameters = {'vnf_engine': args.engine, 'endpoints': 'generator'}
    parameters.update(measure.parse_pairs(args.parameter, '--parameter',
                                          'vnf_count=2', convert=str))
    if vnf_count is not None:
        parameters['vnf_count'] = max(1, vnf_count)
    return parameters


def _stack(args, vnf_count=None):
    from epa_chain.hot import shipped
    from epa_chain.local import session

    template_dir = shipped.template_dir()
    template = args.template or (template_dir and
                                 '%s/%s' % (template_dir, shipped.TEMPLATE))
    if not template:
        raise session.SessionError(
            'no --template and no shipped templates found in %s'
            % ', '.join(shipped.template_dir_candidates()))
    try:
        environments = [shipped.preset_path(args.preset, template_dir)]
    except shipped.PresetError as exc:
        raise session.SessionError('--preset %s' % exc)
    return session.Stack(template=template,
                         environments=environments + args.environment,
                         parameters=_parameters(args, vnf_count),
                         stack_name=args.prefix)


def _checked_state(args):
    """The bed's record from --prefix and --state-root, checked first.

    Before preflight, apt-get or anything else: `down` removes and stops
    what these name.
    """
    from epa_chain.local import names
    from epa_chain.local import session

    prefix = names.check_prefix(args.prefix)
    root = names.check_state_root(args.state_root)
    names.bed_directory(root, prefix)
    state = session.new_state(root, prefix)
    if args.action in ('up', 'run'):
        if state.exists():
            raise names.BadName('--prefix', prefix, 'a bed is up in %s, or '
                                'was killed: `epa-chain local down --prefix '
                                '%s --state-root %s` first' % (
                                    state.directory, prefix, root))
        foreign = state.foreign()
        if foreign:
            raise names.BadName('--prefix', prefix, '%s holds %s, not made '
                                'by a bed; choose another --prefix or '
                                '--state-root' % (state.directory,
                                                  ', '.join(foreign)))
    if args.action == 'run' and args.json:
        outputs.check_file(args.json, '--json')
    binary = args.action in ('up', 'run') and (
        args.prox_binary or os.environ.get(_PROX_BINARY_ENV))
    if args.action in ('up', 'run') and not binary:
        # The source it would use is built after preflight: refuse a
        # hostile one now.
        from epa_chain.prox import build
        for value, label in ((args.prox_source, '--prox-source'), (
                os.environ.get(_PROX_SOURCE_ENV), _PROX_SOURCE_ENV)):
            if value:
                build.check_source(value, label)
                break
    return state


def run(args):
    from epa_chain.local import names
    from epa_chain.local import session
    from epa_chain.measurement import trial
    from epa_chain.prox import build

    progress = _progress(args)
    try:
        state = _checked_state(args)
    except (names.BadName, outputs.OutputError, build.InputError) as exc:
        _error(exc)
        return 2
    try:
        if args.action == 'down':
            from epa_chain.local import teardown
            done = teardown.down(state, progress)
            return 1 if done['gave_up'] else 0
        if args.action == 'status':
            return _status(args, state)
        if args.action == 'up':
            return _up(args, state, progress)
        return _run(args, state, progress)
    except session.Interrupted as exc:
        _error('interrupted (%s); the bed was taken down' % exc)
        return 130
    except campaign_options.FieldError as exc:
        _error(campaign_options.cli_message(exc, args))
        return 2
    except (session.SessionError, ValueError) as exc:
        _error(exc)
        return 2
    except trial.GeneratorError as exc:
        _error('the generator failed, the bed was taken down: %s' % exc)
        return 1


def _status(args, state):
    import json

    from epa_chain.local import bed

    found = bed.status(state)
    if args.json:
        json.dump(found, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write('\n')
        return 0
    if not found.get('phase'):
        print('%s: no bed in %s%s' % (
            state.prefix, state.directory,
            '; namespaces %s exist without one (a bed under another '
            '--state-root, or leftovers: ip netns delete NAME)' % ', '.join(
                found['leftovers']) if found.get('leftovers') else ''))
        return 0
    print('%s: %s (%s)' % (state.prefix, found['phase'],
                           found['directory']))
    for process in found['processes']:
        status = process.get('status') or {}
        print('  %-24s pid %-7s %s, engine %s, %s restart(s)' % (
            process['name'], process['pid'],
            'alive' if process['alive'] else 'GONE',
            status.get('state'), status.get('restarts') or 0))
    print('  namespaces: %s' % ', '.join(found['namespaces']))
    plan = found.get('plan') or {}
    for bridge in plan.get('bridges', []):
        ports = [p for p in plan.get('ports', [])
                 if p['bridge'] == bridge['name']]
        print('  bridge %s: %s' % (bridge['name'], ', '.join(
            '%s (VLAN %d, %s)' % (p['name'], p['vlan'], p['mac'])
            for p in ports)))
    pages = found.get('hugepages') or {}
    if 'added' in pages:
        print('  huge pages: %d x 2 MB wanted, %d added (given back by '
              'down), hugetlbfs at %s' % (pages['pages'], pages['added'],
                                          pages['mount_point']))
    return 0


def _up_once(args, state, progress, vnf_count=None):
    """Resolve, plan, bring up, prove: the Bed (taken down on failure)."""
    from epa_chain.local import session

    session.preflight(args.install, progress)
    _choose_engines(args, progress)
    stack = _stack(args, vnf_count)
    progress('resolving %s with %s (Heat engine, in-process)' % (
        stack.template, ', '.join(stack.environments)))
    resolved = session.resolve(stack)
    plan = session.make_plan(resolved.topology, state, vnf_count,
                             generator=args.generator,
                             generator_why=args.generator_why)
    for note in plan.notes + plan.flavors:
        progress('plan: ' + note)
    engine_binary = args.engine_binary
    if not engine_binary and args.engine == 'prox':
        engine_binary = args.prox_found
    return session.bring_up(plan, state, progress, engine_binary,
                            prox_binary=args.prox_found)


def _choose_engines(args, progress):
    """PROX as engine and generator when there is a binary (once a run)."""
    from epa_chain.local import prox_generator

    if hasattr(args, 'prox_found'):
        return
    found, how = prox_generator.find_binary(args.prox_binary,
                                            args.prox_source, progress)
    args.prox_found = found
    if found:
        progress('PROX: %s' % found)
    if args.engine is None:
        args.engine = 'prox' if found else 'testpmd'
    if args.generator is None:
        args.generator = 'prox' if found else 'afpacket'
        args.generator_why = ('default: a PROX binary (%s)' % how if found
                              else 'default: no PROX binary (%s)' % how)
    else:
        args.generator_why = '--generator %s' % args.generator
    if args.generator == 'prox' and not found:
        raise ValueError('--generator prox: no PROX binary (%s); give '
                         '--prox-binary PATH or --prox-source SRC' % how)


def _up(args, state, progress):
    from epa_chain.local import session

    with session.Signals():
        bed = _up_once(args, state, progress)
        bed.close_generator()
    print('%s is up: `epa-chain local status --prefix %s`, `epa-chain '
          'local down --prefix %s`' % (args.prefix, args.prefix,
                                       args.prefix))
    return 0


def _vnf_counts(args):
    if not args.vnf_counts:
        return [None]
    try:
        counts = [int(item) for item in args.vnf_counts.split(',') if item]
    except ValueError:
        counts = []
    if not counts or any(c < 0 or c > 3 for c in counts):
        raise ValueError('--vnf-counts %r: give chain lengths 0 to 3 '
                         'separated by commas, e.g. 0,1,2,3'
                         % args.vnf_counts)
    return counts


def _run(args, state, progress):
    from epa_chain.local import runner
    from epa_chain.local import session

    counts = _vnf_counts(args)
    # Bad measurement options fail here, before anything is created; the
    # runner sets chain length and directions from each bed.
    plan = measure.build_plan(args, campaign_options.LOCAL)
    documents = []
    with session.Signals():
        for count in counts:
            bed = _up_once(args, state, progress, count)
            documents.append(runner.measure(
                bed, plan, progress,
                keep_up=args.keep_up and count == counts[-1]))
    return runner.finish(documents, args.json, progress, sys.stdout)
