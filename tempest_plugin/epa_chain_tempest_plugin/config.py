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

"""Tempest options of the epa-chain scenarios.

`[service_available] epa_chain` says the cloud can run them at all
(OVS-DPDK provider networks, the epa-chain images); `[epa_chain]` holds
every knob of the deployment and the measurement. The devstack plugin
writes them with iniset at test-config.
"""

from oslo_config import cfg
from oslo_config import types

from epa_chain.chain import directions as chain_directions
from epa_chain.measurement import options as campaign_options

# The scenarios' directions, as their names spell them.
DIRECTION_WORDS = tuple(chain_directions.WORDS.values())

service_available_group = cfg.OptGroup(
    name='service_available', title='Available OpenStack Services')

ServiceAvailableGroup = [
    cfg.BoolOpt('epa_chain',
                default=False,
                help='Whether the cloud can run the epa-chain benchmarks: '
                     'OVS-DPDK compute hosts, the provider VLAN networks '
                     'of [epa_chain] segments, and the epa-chain VNF and '
                     'generator images in Glance. Off by default: the '
                     'scenarios deploy pinned, huge-page VMs and send '
                     'line-rate traffic.'),
]


def _sentence(text):
    return text[0].upper() + text[1:] + '.'


def _campaign_opt(option, default):
    """The oslo.config option of one row of measurement/options.py."""
    text = _sentence(option.help.format(mix='/'))
    bounds = {}
    if option.low is not None:
        bounds['min'] = option.low
    if option.high is not None:
        bounds['max'] = option.high
    if option.kind == 'choice':
        return cfg.StrOpt(option.conf, default=default, help=text,
                          choices=list(campaign_options.METHODS))
    if option.kind == 'float':
        return cfg.FloatOpt(option.conf, default=default, help=text,
                            **bounds)
    if option.kind == 'int':
        return cfg.IntOpt(option.conf, default=default, help=text, **bounds)
    item_type = (types.Integer(min=option.item_low)
                 if option.item_low is not None else types.String())
    return cfg.ListOpt(option.conf, default=default, help=text,
                       item_type=item_type)


def campaign_opts():
    """[epa_chain] options of the measurement campaign, from its table."""
    defaults = campaign_options.conf_defaults()
    opts = []
    for option in campaign_options.for_front_end(campaign_options.TEMPEST):
        if option.field == 'loss_goals':
            for name, _ratio, what in campaign_options.LOSS_GOALS:
                conf = campaign_options.goal_conf_name(name)
                opts.append(cfg.FloatOpt(
                    conf, default=defaults[conf],
                    min=campaign_options.LOSS_RATIO_LOW,
                    max=campaign_options.LOSS_RATIO_HIGH,
                    help='Loss ratio %s allows, in [%g, %g).' % (
                        what, campaign_options.LOSS_RATIO_LOW,
                        campaign_options.LOSS_RATIO_HIGH)))
            continue
        opts.append(_campaign_opt(option, defaults[option.conf]))
    return opts


epa_chain_group = cfg.OptGroup(
    name='epa_chain',
    title='epa-chain data-plane benchmark options',
    help='Deployment (templates/chain.yaml parameters) and measurement '
         '(search, frame sizes, flows, latency) of the epa-chain '
         'benchmark scenarios.')

EpaChainGroup = [
    # ---- Deployment ------------------------------------------------------
    cfg.StrOpt('template_dir',
               default='',
               help='Directory holding chain.yaml, lib/ and presets/. '
                    'Empty: the templates installed with the epa-chain '
                    'package (share/epa-chain/templates), or the source '
                    'tree\'s templates/ when run from a checkout.'),
    cfg.StrOpt('vnf_image',
               default='epa-chain-vnf',
               help='Glance image (name or ID) of the VNFs, built by '
                    'vnf_images/ for the VNF role.'),
    cfg.StrOpt('generator_image',
               default='epa-chain-generator',
               help='Glance image (name or ID) of the in-stack PROX '
                    'traffic generator.'),
    cfg.StrOpt('vnf_engine',
               default='prox',
               choices=[('prox', 'PROX l2fwd tasks'),
                        ('testpmd', 'DPDK testpmd in mac forwarding mode')],
               help='Forwarding engine the VNFs run.'),
    cfg.StrOpt('vnf_flavor',
               default='',
               help='Existing flavor for the VNFs. Empty: the stack '
                    'creates an EPA flavor from cpu_policy, '
                    'cpu_thread_policy, mem_page_size and numa_nodes '
                    '(creating flavors is admin-only).'),
    cfg.StrOpt('generator_flavor',
               default='',
               help='Existing flavor for the generator. Empty: the stack '
                    'creates one with the same EPA extra specs.'),
    cfg.StrOpt('cpu_policy',
               default='dedicated',
               choices=['dedicated', 'shared'],
               help='hw:cpu_policy of the flavors the stack creates.'),
    cfg.StrOpt('cpu_thread_policy',
               default='prefer',
               choices=['prefer', 'isolate', 'require'],
               help='hw:cpu_thread_policy of the flavors the stack '
                    'creates.'),
    cfg.StrOpt('mem_page_size',
               default='large',
               choices=['large', '2MB', '1GB'],
               help='hw:mem_page_size of the flavors the stack creates; '
                    'vhost-user ports need huge pages.'),
    cfg.IntOpt('numa_nodes',
               default=1,
               min=1, max=8,
               help='hw:numa_nodes of the flavors the stack creates.'),
    cfg.ListOpt('segments',
                default=[],
                help='Chain segments net0, net1, ... as physnet:vlan '
                     '(at most 4). A chain of N VNFs uses the first N+1. '
                     'Empty: the presets\' segments, from '
                     'physnet1:1001,physnet1:1002,physnet2:2001,'
                     'physnet2:2002 (seed 000 Table 8-3).'),
    cfg.StrOpt('management_network',
               default='private',
               help='Existing network for SSH and the generator\'s PROX '
                    'control socket. The host running Tempest must reach '
                    'addresses on it.'),
    cfg.StrOpt('management_allowed_cidr',
               default='10.0.0.0/8',
               help='Source range the stack\'s management security group '
                    'admits to SSH and the generator\'s control port '
                    '(chain.yaml management_allowed_cidr). On a real cloud '
                    'give the address range the host running Tempest '
                    'reaches management_network from (e.g. its router '
                    'gateway\'s, 172.24.4.0/24 on devstack); the control '
                    'socket has no authentication, keep it narrow.'),
    cfg.StrOpt('key_name',
               default='',
               help='Nova key pair installed on every server; empty for '
                    'none.'),
    # ---- What to run -----------------------------------------------------
    cfg.ListOpt('chain_lengths',
                item_type=types.Integer(min=1, max=3),
                default=[1, 2, 3],
                help='Chain lengths (VNF count) to benchmark: 1 (PVP), '
                     '2 (PVVP), 3 (the vE-CPE chain). Scenarios for other '
                     'lengths skip.'),
    cfg.ListOpt('directions',
                item_type=types.String(choices=DIRECTION_WORDS),
                default=list(DIRECTION_WORDS),
                help='Traffic directions to benchmark. Scenarios for other '
                     'directions skip.'),
    # ---- How to measure --------------------------------------------------
    # The campaign's: one table for the CLI and Tempest.
    *campaign_opts(),
    cfg.StrOpt('results_dir',
               default='/tmp/epa-chain-results',
               help='Where each scenario writes its results: one '
                    'directory per run with a JSON document and text '
                    'tables per frame size and flow count.'),
    # ---- Timeouts and ports ----------------------------------------------
    cfg.IntOpt('stack_create_timeout',
               default=1800,
               min=1,
               help='Seconds to wait for the stack to reach '
                    'CREATE_COMPLETE.'),
    cfg.IntOpt('stack_delete_timeout',
               default=600,
               min=1,
               help='Seconds the deletion of the stack may take, both '
                    'attempts together (a DELETE_FAILED is retried once). '
                    'Reserved out of the test timeout before measuring.'),
    cfg.IntOpt('vnf_ready_timeout',
               default=600,
               min=1,
               help='Seconds to wait, once the stack is complete, for '
                    'every VNF and the generator to print "EPA-CHAIN '
                    'READY" on their consoles.'),
    cfg.IntOpt('timeout_scaling_factor',
               default=4,
               min=1,
               help='Multiplies OS_TEST_TIMEOUT for the benchmark scenarios '
                    '(Tempest\'s TIMEOUT_SCALING_FACTOR). Stack creation, '
                    'readiness, the shortest possible campaign and the '
                    'deletion must fit in the product, or the scenario '
                    'fails before creating anything.'),
    # ---- Hop check -------------------------------------------------------
    cfg.FloatOpt('hop_check_load_fraction',
                 default=0.01,
                 min=0.000001, max=1.0,
                 help='Load of the hop check (one 2-second trial of 64-byte '
                      'frames per direction before measuring), as a '
                      'fraction of line rate. Lower it on hosts that '
                      'forward slowly (QEMU TCG guests).'),
    cfg.FloatOpt('hop_check_max_loss_ratio',
                 default=0.01,
                 min=0.0, max=0.999999,
                 help='Loss the hop check tolerates per direction; more '
                      'fails the attempt.'),
    cfg.IntOpt('hop_check_attempts',
               default=3,
               min=1, max=10,
               help='Trials the hop check may run per direction, 5 s '
                    'apart, before failing the scenario with the hops of '
                    'that direction: a path just brought up can drop '
                    'frames for a moment. The results keep every failed '
                    'attempt.'),
    # ---- Heat API --------------------------------------------------------
    cfg.StrOpt('heat_catalog_type',
               default='orchestration',
               help='Catalog type of the Heat API (here because '
                    'current Tempest has no [orchestration] group).'),
    cfg.StrOpt('heat_endpoint_type',
               default='publicURL',
               choices=['public', 'admin', 'internal',
                        'publicURL', 'adminURL', 'internalURL'],
               help='Endpoint type of the Heat API in the catalog.'),
    cfg.StrOpt('heat_region',
               default='',
               help='Region of the Heat API; empty: [identity] region.'),
    cfg.PortOpt('generator_control_port',
                default=8474,
                help='TCP port of the generator\'s PROX control socket '
                     '(no authentication: the stack admits only '
                     'management clients).'),
    cfg.IntOpt('generator_latency_bucket_shift',
               default=12,
               min=11, max=30,
               help='Width of the generator\'s latency histogram buckets, '
                    '2^N TSC cycles (PROX\'s `latency bucket size`, the '
                    'stack\'s generator_latency_bucket_shift). 12 covers '
                    '200 us in 128 buckets at 2.6 GHz; a percentile '
                    'beyond is reported only as bounds. Raise it where '
                    'delays are milliseconds (QEMU TCG guests: 18, 100 us '
                    'buckets up to 12.8 ms).'),
    cfg.FloatOpt('generator_rate_tolerance',
                 default=0.01,
                 min=0, max=0.5,
                 help='How far the rate the generator offered may be from '
                      'the one asked before the trial is an error rather '
                      'than a measurement (relative). 1 % on a dedicated '
                      'generator; raise it where the generator shares its '
                      'CPUs (guests under QEMU/TCG pace by a few percent '
                      'off). The results record the value used.'),
]


def list_opts():
    """Options for oslo-config-generator and the documentation."""
    yield service_available_group.name, ServiceAvailableGroup
    yield epa_chain_group.name, EpaChainGroup
