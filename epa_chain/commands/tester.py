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

"""Attach seed 000's external tester to a chain's provider bridges.

On the compute host of a stack created with endpoints=external (the
vecpe presets as shipped): a PROX generator on a trunk port of the
provider bridge of each end's physical network, sending 802.1Q-tagged
frames from the stack's external MACs (epa_chain.cloud.tester). `up`
prints its PROX control address (127.0.0.1 only) on stdout, for `epa-chain
prove --generator-endpoint` and `epa-chain measure --generator prox
--prox-endpoint`; `down` removes everything `up` made. Root. Exit
status: 0 done, 1 failed (nothing left behind), 2 bad input.

  epa-chain tester up --os-cloud mycloud vecpe \\
      --bridge-mappings physnet1:br-physnet1,physnet2:br-physnet2 \\
      --prox-binary "$(epa-chain prox build -q)"
  epa-chain tester down
"""

import sys

from epa_chain.chain import node_config
from epa_chain.cloud import tester
from epa_chain import safe_yaml

MIN_SHIFT = node_config.MIN_LATENCY_BUCKET_SHIFT
MAX_SHIFT = node_config.MAX_LATENCY_BUCKET_SHIFT
CPUS_HELP = ('CPUs of the tester\'s PROX, comma-separated ids, at least two '
             '(default: 0,1)')


def add_arguments(parser):
    actions = parser.add_subparsers(dest='action', metavar='ACTION')
    actions.required = True
    up = actions.add_parser('up', help='attach the tester to a stack\'s '
                            'provider bridges; print its control address')
    up.add_argument('stack', help='name or ID of the chain stack '
                    '(endpoints=external)')
    up.add_argument('--os-cloud', metavar='CLOUD',
                    help='clouds.yaml entry (default: the client\'s '
                         'OS_CLOUD / OS_* environment)')
    up.add_argument('--bridge-mappings', required=True,
                    metavar='PHYSNET:BRIDGE[,...]',
                    help='provider bridges, as the devstack plugin\'s '
                         'OVS_BRIDGE_MAPPINGS')
    up.add_argument('--prox-binary', required=True, metavar='PATH',
                    help='PROX to run (`epa-chain prox build` prints one)')
    up.add_argument('--cpus', default='0,1', metavar='LIST', help=CPUS_HELP)
    up.add_argument('--control-port', type=int,
                    default=tester.DEFAULT_CONTROL_PORT, metavar='PORT',
                    help='TCP port on 127.0.0.1 (default: %(default)s)')
    up.add_argument('--latency-bucket-shift', type=int, metavar='N',
                    help='PROX\'s latency histogram buckets are 2^N TSC '
                         'cycles, %d..%d (default: the stack\'s '
                         'generator_latency_bucket_shift, else PROX\'s '
                         'own)' % (MIN_SHIFT, MAX_SHIFT))
    up.add_argument('--ready-timeout', type=float,
                    default=tester.READY_TIMEOUT_S, metavar='S',
                    help='seconds to wait for EPA-CHAIN READY (default: '
                         '%(default)s)')
    for action in (up, actions.add_parser(
            'down', help='remove the tester up attached')):
        action.add_argument('--state-dir', default=tester.DEFAULT_STATE_DIR,
                            metavar='DIR',
                            help='what up made, for down (default: '
                                 '%(default)s)')


def _say(text):
    print('epa-chain tester: %s' % safe_yaml.escape(
        ' '.join(str(text).split())), file=sys.stderr, flush=True)


def _cpus(text):
    # A plain list: the runtime (which only its own modules import) reads
    # ranges too, but two CPU ids is all the tester takes.
    words = text.split(',')
    found = [int(w) for w in words if w.isdigit()]
    if len(found) != len(words) or len(set(found)) < 2:
        raise ValueError('--cpus %r: give at least two CPUs as a kernel '
                         'list of ids, e.g. 0,1 (PROX\'s master and a '
                         'worker)'
                         % text)
    return found


def _check_up(args):
    from epa_chain.cloud import openstack_cli

    openstack_cli.check_stack_reference(args.stack)
    if not 1 <= args.control_port <= 65535:
        raise ValueError('--control-port %r: 1..65535' % args.control_port)
    if args.latency_bucket_shift is not None and not (
            MIN_SHIFT <= args.latency_bucket_shift <= MAX_SHIFT):
        raise ValueError('--latency-bucket-shift %r: %d..%d (log2 TSC '
                         'cycles per bucket)' % (args.latency_bucket_shift,
                                                 MIN_SHIFT, MAX_SHIFT))
    if not 0 < args.ready_timeout <= 3600:
        raise ValueError('--ready-timeout %r: seconds, up to 3600'
                         % args.ready_timeout)
    return (tester.parse_bridge_mappings(args.bridge_mappings),
            _cpus(args.cpus))


def run(args):
    the_tester = tester.Tester(args.state_dir, progress=_say)
    if args.action == 'down':
        return _down(the_tester, args)
    return _up(the_tester, args)


def _down(the_tester, args):
    try:
        removed = the_tester.down()
    except (tester.TesterError, OSError) as exc:
        _say(exc)
        return 1
    if not removed:
        _say('no tester is up (%s)' % args.state_dir)
    return 0


def _up(the_tester, args):
    from epa_chain.cloud import openstack_cli

    try:
        mappings, cpus = _check_up(args)
        cli = openstack_cli.OpenStackCLI(args.os_cloud)
    except ValueError as exc:
        _say(exc)
        return 2
    try:
        plan = tester.plan_for_stack(cli, args.stack, mappings,
                                     args.control_port,
                                     args.latency_bucket_shift)
        endpoint = the_tester.up(plan, args.prox_binary, cpus,
                                 args.ready_timeout)
    except (openstack_cli.CLIError, tester.TesterError, OSError) as exc:
        _say(exc)
        return 1
    print(endpoint)
    return 0
