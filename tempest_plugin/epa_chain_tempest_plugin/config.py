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

"""Tempest options of the epa-chain scenarios: registration only.

`[service_available] epa_chain` says the cloud can run them at all
(OVS-DPDK provider networks, the epa-chain images). `[epa_chain]` holds
the deployment and the measurement, declared once in epa-chain itself
(epa_chain.cloud.options: the package that reads them), plus the few only
this plugin reads: the Heat endpoint of its client and its test timeout.
The devstack plugin writes them with iniset at test-config.
"""

from oslo_config import cfg

from epa_chain.cloud import options as cloud_options

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

epa_chain_group = cfg.OptGroup(
    name=cloud_options.GROUP,
    title='epa-chain data-plane benchmark options',
    help='Deployment (templates/chain.yaml parameters) and measurement '
         '(search, frame sizes, flows, latency) of the epa-chain '
         'benchmark scenarios.')

# Read by this plugin only (its Heat client, its test class).
PLUGIN_OPTS = [
    cfg.IntOpt('timeout_scaling_factor',
               default=4,
               min=1,
               help='Multiplies OS_TEST_TIMEOUT for the benchmark scenarios '
                    '(Tempest\'s TIMEOUT_SCALING_FACTOR). Stack creation, '
                    'readiness, the shortest possible campaign and the '
                    'deletion must fit in the product, or the scenario '
                    'fails before creating anything.'),
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
]

EpaChainGroup = cloud_options.list_opts() + PLUGIN_OPTS


def list_opts():
    """Options for oslo-config-generator and the documentation."""
    yield service_available_group.name, ServiceAvailableGroup
    yield epa_chain_group.name, EpaChainGroup
