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

"""Prove that a created chain stack forwards, hop by hop.

For a stack made with `openstack stack create -t templates/chain.yaml`:
puts what Heat holds for it (template, environment, files) through the
one resolve-and-check (validation/check.py) to learn its nodes and say
what the NFV rules find, waits until every server's console says
EPA-CHAIN READY (keeping where each guest's boot went; a guest whose
kernel reports a stall and is not READY 30 s later is hard-rebooted
once), starts the parked VNFs' tasks (vnf_control_endpoints), then sends
a low-rate trial per direction through the stack's generator (its PROX
control endpoint) and checks that the frames came back, and parks the
tasks again. On the compute host (all-in-one clouds) it also reads each
hop's Open vSwitch counters: the generator's port sent the frames, each
VNF's ingress port was delivered them and its egress port sent them on.
Uses the `openstack` client and its clouds.yaml entry. Every option is
checked before the client is called: a stack name or ID as Heat makes
them, --attempts 1-10, --load-fraction in [1e-06, 1], --max-loss-ratio
in [0, 0.5) (a chain losing half its frames does not forward),
--ready-timeout up to a day, a --json file that can be written. Exit
status: 0 proven, 1 not, 2 usage.

  openstack stack create -t templates/chain.yaml \\
      -e templates/presets/pvp-bidir.yaml pvp
  epa-chain prove --os-cloud mycloud pvp --json proof.json

A chain with an external tester (endpoints=external, e.g. the vecpe
presets as shipped) is driven through that tester's PROX control address:

  epa-chain tester up --os-cloud mycloud vecpe ...   (prints it)
  epa-chain prove --os-cloud mycloud vecpe \\
      --generator-endpoint 127.0.0.1:8474
"""

import math
import sys

from epa_chain.cloud import hop_check
from epa_chain.cloud import openstack_cli
from epa_chain.cloud import proof as proof_doc
from epa_chain.cloud import workflow
from epa_chain.commands import _arguments
from epa_chain import outputs

# The proof's schema (cloud/proof.py owns the document).
PROOF_SCHEMA = proof_doc.SCHEMA
MAX_READY_TIMEOUT_S = 86400.0
# The hop check's settings, as this command's options name them.
SETTING_FLAGS = {'load_fraction': '--load-fraction',
                 'max_loss_ratio': '--max-loss-ratio',
                 'attempts': '--attempts'}


def add_arguments(parser):
    parser.add_argument('stack', help='name or ID of the chain stack')
    parser.add_argument('--os-cloud', metavar='CLOUD',
                        help='clouds.yaml entry (default: the client\'s '
                             'OS_CLOUD / OS_* environment)')
    parser.add_argument('--ready-timeout', type=float, default=900.0,
                        metavar='S',
                        help='seconds to wait for EPA-CHAIN READY on every '
                             'console (default: 900; guests under QEMU '
                             'without KVM take minutes)')
    parser.add_argument('--load-fraction', type=float,
                        default=hop_check.LOAD_FRACTION, metavar='F',
                        help='trial load as a fraction of the generator\'s '
                             'line rate (default: %(default)s, the seeds\' '
                             'hop check)')
    parser.add_argument('--max-loss-ratio', type=float,
                        default=hop_check.MAX_LOSS_RATIO, metavar='R',
                        help='frames a trial or hop may lose '
                             '(default: %(default)s)')
    parser.add_argument('--attempts', type=int,
                        default=hop_check.ATTEMPTS, metavar='N',
                        help='trials per direction, %g s apart, before the '
                             'direction fails: a path just brought up can '
                             'drop frames for a moment (default: '
                             '%%(default)s; the JSON keeps every failed '
                             'one)' % hop_check.SETTLE_S)
    parser.add_argument('--generator-endpoint', metavar='HOST:PORT',
                        help='PROX control address of the external tester '
                             'of a stack with endpoints=external (e.g. the '
                             'one `epa-chain tester up` started)')
    parser.add_argument('--no-ovs', action='store_true',
                        help='skip the per-hop Open vSwitch counters (when '
                             'not on the compute host)')
    parser.add_argument('--json', metavar='OUT',
                        help='write the proof as JSON ("-" for stdout)')


def _say(text):
    print(text, file=sys.stderr, flush=True)


def check_arguments(args):
    """Refuse, before the cloud is asked anything, what cannot be right.

    Returns the workflow.ProveRequest; ValueError naming the option. The
    stack name never becomes an option of the client.
    """
    openstack_cli.check_stack_reference(args.stack)
    if args.os_cloud is not None and (
            not args.os_cloud.strip() or args.os_cloud.startswith('-') or
            not args.os_cloud.isprintable()):
        raise ValueError('--os-cloud %r: give the name of a clouds.yaml '
                         'entry' % args.os_cloud)
    if not (math.isfinite(args.ready_timeout) and
            0 < args.ready_timeout <= MAX_READY_TIMEOUT_S):
        raise ValueError('--ready-timeout %r: give seconds, more than 0 and '
                         'at most %g' % (args.ready_timeout,
                                         MAX_READY_TIMEOUT_S))
    try:
        hop_check.check_settings(args.load_fraction, args.max_loss_ratio,
                                 args.attempts)
    except hop_check.SettingError as error:
        raise ValueError('%s %r: %s' % (SETTING_FLAGS[error.setting],
                                        error.value, error.fix)) from None
    endpoint = None
    if args.generator_endpoint is not None:
        endpoint = _arguments.parse_endpoint(args.generator_endpoint,
                                             '--generator-endpoint')
    if args.json is not None:
        outputs.check_file(args.json, '--json', allow_stdout=True)
    return workflow.ProveRequest(
        stack=args.stack, ready_timeout=args.ready_timeout,
        hop=workflow.HopSettings(args.load_fraction, args.max_loss_ratio,
                                 args.attempts),
        generator_endpoint=endpoint, no_ovs=args.no_ovs)


def run(args):
    try:
        request = check_arguments(args)
    except ValueError as error:
        _say('epa-chain prove: %s' % workflow.one_line(error))
        return 2
    proof = workflow.prove(openstack_cli.OpenStackCLI(args.os_cloud),
                           request, _say)
    if 'error' in proof:
        _say('epa-chain prove: %s' % workflow.one_line(proof['error']))
    if args.json is not None:
        proof_doc.write(proof, args.json)
    if proof['proven']:
        _say('proven: every direction forwards%s' % (
            '' if args.no_ovs else ', hop by hop'))
    return 0 if proof['proven'] else 1
