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

"""The [epa_chain] options: declared once here, read once into typed values.

This is the one list of the options the cloud benchmark reads (the
deployment, which scenarios run, the hop check, the generator; the
campaign's come from measurement/options.py's table, shared with the
command line). Everything else is derived from it:

- the Tempest plugin registers list_opts() (its config.py adds only its
  own: the Heat endpoint and the test timeout);
- devstack writes any of them from EPA_CHAIN_TEMPEST_<NAME>
  (devstack/lib/epa_chain, checked against list_opts() by a test);
- doc/source/tempest_plugin.rst's option list is generated from them
  (tools/option_docs.py; a test keeps it current);
- an option that sets a chain.yaml parameter (TEMPLATE_PARAMETERS) takes
  that parameter's default from chain.yaml, so that Tempest deploys what
  `openstack stack create` does; other defaults come from the module
  that owns them (the hop check's, the PROX generator's).

ChainOptions.from_conf turns oslo.config's values into checked, typed
values - segments, a direction tuple per scenario direction, the campaign
as a measurement Campaign - once; the scenarios work with those only.
What oslo.config cannot check fails with OptionError naming the option.
Nothing here talks to a cloud.
"""

import dataclasses
import functools
import ipaddress
import re
import typing

from oslo_config import cfg
from oslo_config import types

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import node_config
from epa_chain.cloud import hop_check
from epa_chain.hot import shipped
from epa_chain.measurement import campaign as campaign_mod
from epa_chain.measurement import kpi
from epa_chain.measurement import options as campaign_options
from epa_chain.prox import generator as prox_generator

GROUP = 'epa_chain'
MAX_SEGMENTS = 4
SEGMENT_RE = re.compile(r'^(?P<physnet>[A-Za-z0-9_.-]+):(?P<vlan>[0-9]+)$')
DIRECTION_WORDS = tuple(chain_directions.WORDS.values())
CHAIN_LENGTHS = (1, 2, 3)
# A generator that misses the asked rate by more is not pacing at all.
MAX_RATE_TOLERANCE = 0.5


# Option -> the chain.yaml parameter it sets (cloud/stack.py passes it).
TEMPLATE_PARAMETERS = {name: name for name in (
    'vnf_image', 'generator_image', 'vnf_engine', 'cpu_policy',
    'cpu_thread_policy', 'mem_page_size', 'numa_nodes',
    'management_network', 'management_allowed_cidr', 'key_name',
    'generator_control_port', 'generator_latency_bucket_shift',
    'server_group_policy', 'vnf_availability_zone',
    'generator_availability_zone', 'chain_count', 'chain_vlan_stride')}
TEMPLATE_PARAMETERS.update(vnf_flavor='vnf_existing_flavor',
                           generator_flavor='generator_existing_flavor')


def template_defaults(directory=None):
    """{option: default} of TEMPLATE_PARAMETERS: chain.yaml owns them.

    `directory` holds chain.yaml (default: the shipped templates).
    """
    return dict(_read_template_defaults(directory))


@functools.lru_cache(maxsize=None)
def _read_template_defaults(directory):
    # ChainOptions' defaults ask for the options often: read chain.yaml once.
    found = shipped.parameter_defaults(
        tuple(TEMPLATE_PARAMETERS.values()), directory)
    return tuple((option, found[parameter])
                 for option, parameter in TEMPLATE_PARAMETERS.items())


def deployment_opts(directory=None):
    """chain.yaml's parameters a scenario sets, and where it finds them.

    The defaults are chain.yaml's, in `directory` (default: shipped).
    """
    defaults = template_defaults(directory)
    return (_images_and_flavors(defaults) +
            _networks_and_generator(defaults) + _placement(defaults))


def _images_and_flavors(defaults):
    return [
        cfg.StrOpt('template_dir', default='',
                   help='Directory holding chain.yaml, lib/ and presets/. '
                        'Empty: the templates installed with the epa-chain '
                        'package (share/epa-chain/templates), or the source '
                        'tree\'s templates/ when run from a checkout.'),
        cfg.StrOpt('vnf_image', default=defaults['vnf_image'],
                   help='Glance image (name or ID) of the VNFs, built by '
                        'vnf_images/ for the VNF role.'),
        cfg.StrOpt('generator_image',
                   default=defaults['generator_image'],
                   help='Glance image (name or ID) of the in-stack PROX '
                        'traffic generator.'),
        cfg.StrOpt('vnf_engine', default=defaults['vnf_engine'],
                   choices=[('prox', 'PROX l2fwd tasks'),
                            ('testpmd', 'DPDK testpmd in mac forwarding '
                                        'mode')],
                   help='Forwarding engine the VNFs run.'),
        cfg.StrOpt('vnf_flavor', default=defaults['vnf_flavor'],
                   help='Existing flavor for the VNFs. Empty: the stack '
                        'creates an EPA flavor from cpu_policy, '
                        'cpu_thread_policy, mem_page_size and numa_nodes '
                        '(creating flavors is admin-only).'),
        cfg.StrOpt('generator_flavor',
                   default=defaults['generator_flavor'],
                   help='Existing flavor for the generator. Empty: the '
                        'stack creates one with the same EPA extra specs.'),
        cfg.StrOpt('cpu_policy', default=defaults['cpu_policy'],
                   choices=['dedicated', 'shared'],
                   help='hw:cpu_policy of the flavors the stack creates.'),
        cfg.StrOpt('cpu_thread_policy',
                   default=defaults['cpu_thread_policy'],
                   choices=['prefer', 'isolate', 'require'],
                   help='hw:cpu_thread_policy of the flavors the stack '
                        'creates.'),
        cfg.StrOpt('mem_page_size', default=defaults['mem_page_size'],
                   choices=['large', '2MB', '1GB'],
                   help='hw:mem_page_size of the flavors the stack '
                        'creates; vhost-user ports need huge pages.'),
        cfg.IntOpt('numa_nodes', default=defaults['numa_nodes'],
                   min=1, max=8,
                   help='hw:numa_nodes of the flavors the stack creates.'),
    ]


def _networks_and_generator(defaults):
    return [
        cfg.ListOpt('segments', default=[],
                    help='Chain segments net0, net1, ... as physnet:vlan '
                         '(at most %d). A chain of N VNFs uses the first '
                         'N+1. Empty: the presets\' segments, from '
                         'physnet1:1001,physnet1:1002,physnet2:2001,'
                         'physnet2:2002 (seed 000 Table 8-3).'
                         % MAX_SEGMENTS),
        cfg.StrOpt('management_network',
                   default=defaults['management_network'],
                   help='Existing network for SSH and the generator\'s '
                        'PROX control socket. The host running Tempest '
                        'must reach addresses on it.'),
        cfg.StrOpt('management_allowed_cidr',
                   default=defaults['management_allowed_cidr'],
                   help='Source range the stack\'s management security '
                        'group admits to SSH and the generator\'s control '
                        'port (chain.yaml management_allowed_cidr, whose '
                        'default this is). On a real cloud give the address '
                        'range the host running Tempest reaches '
                        'management_network from (e.g. its router '
                        'gateway\'s, 172.24.4.0/24 on devstack); the control '
                        'socket has no authentication, keep it narrow.'),
        cfg.StrOpt('key_name', default=defaults['key_name'],
                   help='Nova key pair installed on every server; empty '
                        'for none.'),
        cfg.PortOpt('generator_control_port',
                    default=defaults['generator_control_port'],
                    help='TCP port of the generator\'s PROX control socket '
                         '(chain.yaml generator_control_port, whose default '
                         'this is; no authentication: the stack admits only '
                         'management clients).'),
        cfg.IntOpt('generator_latency_bucket_shift',
                   default=defaults['generator_latency_bucket_shift'],
                   min=node_config.MIN_LATENCY_BUCKET_SHIFT,
                   max=node_config.MAX_LATENCY_BUCKET_SHIFT,
                   help='Width of the generator\'s latency histogram '
                        'buckets, 2^N TSC cycles (PROX\'s `latency bucket '
                        'size`; chain.yaml generator_latency_bucket_shift, '
                        'whose default this is: 128 buckets of 1.6 us at '
                        '2.6 GHz cover 200 us). A percentile beyond the '
                        'last bucket is reported only as bounds. Raise it '
                        'where delays are milliseconds (QEMU TCG guests: '
                        '18, 100 us buckets up to 12.8 ms).'),
    ]


def _placement(defaults):
    return _chains(defaults) + [
        cfg.StrOpt('server_group_policy',
                   default=defaults['server_group_policy'],
                   choices=[('', 'no server group: Nova places each server'),
                            ('affinity', 'every server on one compute host '
                                         '(intra-node)'),
                            ('anti-affinity', 'each server on its own host '
                                              '(inter-node)'),
                            ('soft-affinity', 'one host as far as Nova can'),
                            ('soft-anti-affinity', 'own hosts as far as Nova '
                                                   'can')],
                   help='Nova server-group policy over the chain\'s servers '
                        '(chain.yaml server_group_policy). Where each server '
                        'ran is recorded in the results (cloud.placement).'),
        cfg.StrOpt('vnf_availability_zone',
                   default=defaults['vnf_availability_zone'],
                   help='Availability zone of the VNFs, or zone:host to '
                        'name their compute host (admins only; chain.yaml '
                        'vnf_availability_zone). Empty: Nova\'s default.'),
        cfg.StrOpt('generator_availability_zone',
                   default=defaults['generator_availability_zone'],
                   help='Availability zone (or zone:host) of the in-stack '
                        'generator: another host than the VNFs\' makes the '
                        'chain cross hosts. Empty: Nova\'s default.'),
    ]


def _chains(defaults):
    return [
        cfg.IntOpt('chain_count', default=defaults['chain_count'], min=1,
                   max=64,
                   help='Chains side by side in every scenario\'s stack '
                        '(chain.yaml chain_count, NFVbench\'s service chain '
                        'count): each on VLANs of its own, with its own VNFs '
                        'and generator; every chain is proven on its own, '
                        'then all are measured together, the search on the '
                        'aggregate and each chain\'s counters kept '
                        '(directions[].chains in the results). `epa-chain '
                        'preflight` says how many the cloud holds.'),
        cfg.IntOpt('chain_vlan_stride',
                   default=defaults['chain_vlan_stride'], min=1, max=4093,
                   help='How many VLAN IDs chain K+1\'s segments are past '
                        'chain K\'s (chain.yaml chain_vlan_stride); every '
                        'one must be inside the provider ranges.'),
        cfg.BoolOpt('density_sweep', default=False,
                    help='With chain_count N above 1, measure with 1, 2, '
                         '.. N of the deployed chains carrying traffic (the '
                         'others idle), each count in a chains-K directory '
                         'of the run, and write the density curve '
                         '(density.json, density.txt): aggregate and '
                         'per-chain throughput against the number of '
                         'chains. Off: the N chains together only.'),
    ]


def selection_opts():
    """Which scenarios run."""
    return [
        cfg.ListOpt('chain_lengths',
                    item_type=types.Integer(min=min(CHAIN_LENGTHS),
                                            max=max(CHAIN_LENGTHS)),
                    default=list(CHAIN_LENGTHS),
                    help='Chain lengths (VNF count) to benchmark: 1 (PVP), '
                         '2 (PVVP), 3 (the vE-CPE chain). Scenarios for '
                         'other lengths skip.'),
        cfg.ListOpt('directions',
                    item_type=types.String(choices=DIRECTION_WORDS),
                    default=list(DIRECTION_WORDS),
                    help='Traffic directions to benchmark. Scenarios for '
                         'other directions skip.'),
    ]


def _campaign_opt(option, default):
    """The oslo.config option of one row of measurement/options.py."""
    text = option.help.format(mix='/')
    text = text[0].upper() + text[1:] + '.'
    bounds = {}
    if option.low is not None:
        bounds['min'] = option.low
    if option.high is not None:
        bounds['max'] = option.high
    if option.kind == 'choice':
        return cfg.StrOpt(option.conf, default=default, help=text,
                          choices=list(option.choices))
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
    """The measurement campaign's, from its table (measurement/options)."""
    defaults = campaign_options.conf_defaults()
    opts = []
    for option in campaign_options.for_front_end(campaign_options.TEMPEST):
        if option.field != 'loss_goals':
            opts.append(_campaign_opt(option, defaults[option.conf]))
            continue
        for name, _ratio, what in campaign_options.LOSS_GOALS:
            conf = campaign_options.goal_conf_name(name)
            opts.append(cfg.FloatOpt(
                conf, default=defaults[conf],
                min=campaign_options.LOSS_RATIO_LOW,
                max=campaign_options.LOSS_RATIO_HIGH,
                help='Loss ratio %s allows, in [%g, %g).' % (
                    what, campaign_options.LOSS_RATIO_LOW,
                    campaign_options.LOSS_RATIO_HIGH)))
    return opts


def run_opts():
    """Where results go, how long each step may take, the hop check."""
    return _results_and_timeouts() + _hop_check() + _trial_checks()


def _results_and_timeouts():
    return [
        cfg.StrOpt('results_dir', default='/tmp/epa-chain-results',
                   help='Where each scenario writes its results: one '
                        'directory per run with a JSON document and text '
                        'tables per frame size and flow count.'),
        cfg.IntOpt('stack_create_timeout', default=1800, min=1,
                   help='Seconds to wait for the stack to reach '
                        'CREATE_COMPLETE.'),
        cfg.IntOpt('stack_delete_timeout', default=600, min=1,
                   help='Seconds the deletion of the stack may take, both '
                        'attempts together (a DELETE_FAILED is retried '
                        'once). Reserved out of the test timeout before '
                        'measuring.'),
        cfg.IntOpt('vnf_ready_timeout', default=600, min=1,
                   help='Seconds to wait, once the stack is complete, for '
                        'every VNF and the generator to print "EPA-CHAIN '
                        'READY" on their consoles.'),
    ]


def _hop_check():
    load_low, load_high = hop_check.LOAD_FRACTION_RANGE
    attempts_low, attempts_high = hop_check.ATTEMPTS_RANGE
    return [
        cfg.FloatOpt('hop_check_load_fraction',
                     default=hop_check.LOAD_FRACTION,
                     min=load_low, max=load_high,
                     help='Load of the hop check (one %g-second trial of '
                          '64-byte frames per direction before measuring), '
                          'as a fraction of line rate. Lower it on hosts '
                          'that forward slowly (QEMU TCG guests).'
                          % hop_check.DURATION_S),
        cfg.FloatOpt('hop_check_max_loss_ratio',
                     default=hop_check.MAX_LOSS_RATIO, min=0.0,
                     # oslo.config's bound is inclusive, the check's not.
                     max=hop_check.MAX_LOSS_RATIO_BELOW - 1e-9,
                     help='Loss the hop check tolerates per direction, '
                          'below %g: more fails the attempt.'
                          % hop_check.MAX_LOSS_RATIO_BELOW),
        cfg.IntOpt('hop_check_attempts', default=hop_check.ATTEMPTS,
                   min=attempts_low, max=attempts_high,
                   help='Trials the hop check may run per direction, %g s '
                        'apart, before failing the scenario with the hops '
                        'of that direction: a path just brought up can '
                        'drop frames for a moment. The results keep every '
                        'failed attempt.' % hop_check.SETTLE_S),
    ]


def _trial_checks():
    return [
        cfg.FloatOpt('generator_rate_tolerance',
                     default=prox_generator.RATE_TOLERANCE, min=0,
                     max=MAX_RATE_TOLERANCE,
                     help='How far the rate the generator offered may be '
                          'from the one asked before the trial is an error '
                          'rather than a measurement (relative). 1 % on a '
                          'dedicated generator; raise it where the '
                          'generator shares its CPUs (guests under '
                          'QEMU/TCG pace by a few percent off). The results '
                          'record the value used.'),
        cfg.StrOpt('kpi_file', default='',
                   help='A KPI file (YAML: throughput floors, latency and '
                        'PDV ceilings, loss; doc/source/measurement.rst). '
                        'Every case is judged against it, the verdicts go '
                        'into its results (kpi) and tables, and a KPI not '
                        'met fails the scenario with the verdict table. '
                        'Empty: no verdicts.'),
    ]


def list_opts():
    """Every [epa_chain] option epa-chain reads, in documentation order."""
    return (deployment_opts() + selection_opts() + campaign_opts() +
            run_opts())


class OptionError(ValueError):
    """An [epa_chain] option value that cannot be used."""

    def __init__(self, option, message):
        super().__init__('[%s] %s: %s' % (GROUP, option, message))
        self.option = option


@dataclasses.dataclass(frozen=True)
class Segment:
    """A provider VLAN segment of the chain (a netK of chain.yaml)."""

    physical_network: str
    vlan: int

    @property
    def network_name(self):
        # The presets' naming: net-phys1-1001 is physnet1, VLAN 1001.
        return 'net-%s-%d' % (self.physical_network, self.vlan)


def parse_segments(values):
    segments = []
    for value in values:
        match = SEGMENT_RE.match(value.strip())
        if not match or not 1 <= int(match.group('vlan')) <= 4094:
            raise OptionError(
                'segments', '%r is not physnet:vlan with a VLAN ID in '
                '1..4094 (example: physnet1:1001)' % value)
        segments.append(Segment(match.group('physnet'),
                                int(match.group('vlan'))))
    if len(segments) > MAX_SEGMENTS:
        raise OptionError(
            'segments', '%d segments given; chain.yaml has %d (net0..net3)'
            % (len(segments), MAX_SEGMENTS))
    if len(set(segments)) != len(segments):
        raise OptionError(
            'segments', 'a physnet:vlan pair appears twice; every segment '
            'needs its own VLAN')
    return tuple(segments)


def parse_kpi_file(value):
    """kpi_file read once: its KPIs, or None when empty."""
    if not value:
        return None
    try:
        return kpi.load(value)
    except ValueError as error:
        raise OptionError('kpi_file', str(error)) from None


def parse_cidr(value):
    """management_allowed_cidr as Heat's net_cidr constraint takes it."""
    try:
        if '/' not in value:
            raise ValueError('no prefix length')
        return str(ipaddress.ip_network(value.strip(), strict=False))
    except ValueError:
        raise OptionError(
            'management_allowed_cidr', '%r is not a CIDR; give the range '
            'of the host running Tempest, e.g. 192.0.2.10/32' % (value,)
        ) from None


def campaign_error(error):
    """A campaign FieldError as an OptionError naming the option."""
    return OptionError(campaign_options.conf_name(error.field),
                       '%r: %s' % (error.value, error.fix))


def parse_campaign(conf_values, results_dir):
    """The campaign of [epa_chain]'s values, parsed and checked once.

    Per case, the benchmark replaces frame sizes, flows, directions and
    the partial-results directory with typed values.
    """
    for name in ('frame_sizes', 'flow_counts'):
        if not conf_values[name]:
            raise OptionError(name, 'empty; give at least one')
    try:
        values = campaign_options.values_from_conf(conf_values)
        return campaign_mod.Campaign(results_dir=results_dir, **values)
    except campaign_options.FieldError as error:
        raise campaign_error(error) from None


def _defaults():
    return {opt.dest: opt.default for opt in list_opts()}


def _default(name):
    return dataclasses.field(default_factory=lambda: _defaults()[name])


@dataclasses.dataclass(frozen=True)
class ChainOptions:
    """Everything the scenarios read from [epa_chain], typed.

    The defaults are the options' (list_opts); from_conf reads a
    registered group.
    """

    template_dir: str = _default('template_dir')
    vnf_image: str = _default('vnf_image')
    generator_image: str = _default('generator_image')
    vnf_engine: str = _default('vnf_engine')
    vnf_flavor: str = _default('vnf_flavor')
    generator_flavor: str = _default('generator_flavor')
    cpu_policy: str = _default('cpu_policy')
    cpu_thread_policy: str = _default('cpu_thread_policy')
    mem_page_size: str = _default('mem_page_size')
    numa_nodes: int = _default('numa_nodes')
    segments: typing.Tuple[Segment, ...] = ()
    management_network: str = _default('management_network')
    management_allowed_cidr: str = _default('management_allowed_cidr')
    key_name: str = _default('key_name')
    generator_control_port: int = _default('generator_control_port')
    generator_latency_bucket_shift: int = _default(
        'generator_latency_bucket_shift')
    server_group_policy: str = _default('server_group_policy')
    vnf_availability_zone: str = _default('vnf_availability_zone')
    generator_availability_zone: str = _default(
        'generator_availability_zone')
    chain_count: int = _default('chain_count')
    chain_vlan_stride: int = _default('chain_vlan_stride')
    density_sweep: bool = _default('density_sweep')
    chain_lengths: typing.Tuple[int, ...] = tuple(CHAIN_LENGTHS)
    # chain_directions.UNIDIRECTIONAL and/or .BIDIRECTIONAL
    directions: typing.Tuple[typing.Tuple[str, ...], ...] = (
        chain_directions.UNIDIRECTIONAL, chain_directions.BIDIRECTIONAL)
    # The campaign's options, one measurement Campaign.
    campaign: campaign_mod.Campaign = dataclasses.field(
        default_factory=lambda: parse_campaign(
            campaign_options.conf_defaults(), _defaults()['results_dir']))
    results_dir: str = _default('results_dir')
    stack_create_timeout: int = _default('stack_create_timeout')
    stack_delete_timeout: int = _default('stack_delete_timeout')
    vnf_ready_timeout: int = _default('vnf_ready_timeout')
    hop_check_load_fraction: float = _default('hop_check_load_fraction')
    hop_check_max_loss_ratio: float = _default('hop_check_max_loss_ratio')
    hop_check_attempts: int = _default('hop_check_attempts')
    generator_rate_tolerance: float = _default('generator_rate_tolerance')
    # kpi_file, parsed: the KPIs each case is judged against, or None.
    kpi_file: typing.Optional[kpi.Kpis] = None

    @classmethod
    def from_conf(cls, group):
        """Read a registered [epa_chain] group (CONF.epa_chain) once."""
        read = {}
        for field in dataclasses.fields(cls):
            if field.name != 'campaign':
                read[field.name] = getattr(group, field.name)
        read['segments'] = parse_segments(read['segments'] or [])
        read['chain_lengths'] = tuple(read['chain_lengths'])
        read['directions'] = tuple(chain_directions.parse(word)
                                   for word in read['directions'])
        read['management_allowed_cidr'] = parse_cidr(
            read['management_allowed_cidr'])
        read['kpi_file'] = parse_kpi_file(read['kpi_file'])
        read['campaign'] = parse_campaign(
            {name: getattr(group, name)
             for name in campaign_options.conf_defaults()},
            read['results_dir'])
        return cls(**read)

    def measured_chain_counts(self):
        """How many of the chains carry traffic, run by run.

        1 .. chain_count with density_sweep, else chain_count alone.
        """
        if self.density_sweep:
            return tuple(range(1, self.chain_count + 1))
        return (self.chain_count,)

    def segments_for(self, chain_length):
        """The configured segments net0..net<chain_length>.

        () when none are configured: the presets' own apply.
        """
        if not self.segments:
            return ()
        needed = chain_length + 1
        if len(self.segments) < needed:
            raise OptionError(
                'segments', '%d given; a chain of %d VNF(s) needs %d '
                '(net0..net%d): add segments, or remove %d from '
                '[%s] chain_lengths' % (len(self.segments), chain_length,
                                        needed, chain_length, chain_length,
                                        GROUP))
        return self.segments[:needed]

    def case_campaign(self, frame_size, flows, direction, chain_length,
                      partial_dir):
        """The campaign of one frame size and flow count of a scenario."""
        try:
            return dataclasses.replace(
                self.campaign, frame_sizes=[frame_size], flow_counts=[flows],
                directions=direction, results_dir=partial_dir,
                chain_length=chain_length)
        except campaign_options.FieldError as error:
            raise campaign_error(error) from None


def service_skip_reason(conf):
    """Why no scenario can run on this cloud, or None.

    `conf` is Tempest's CONF. [service_available] heat belongs to
    heat-tempest-plugin: it is honoured when registered.
    """
    available = conf.service_available
    if not available.epa_chain:
        return ('epa-chain benchmarks are disabled: set [service_available] '
                'epa_chain = True on a cloud with OVS-DPDK provider VLAN '
                'networks and the epa-chain images')
    if getattr(available, 'heat', True) is False:
        return ('the epa-chain benchmarks deploy with Heat, and '
                '[service_available] heat is False')
    return None


def case_skip_reason(options, chain_length, direction):
    """Why one scenario (chain length x direction tuple) is not selected.

    None when it is.
    """
    if chain_length not in options.chain_lengths:
        return ('chain length %d is not in [%s] chain_lengths (%s)'
                % (chain_length, GROUP,
                   ','.join(str(n) for n in options.chain_lengths)))
    if direction not in options.directions:
        return ('direction %s is not in [%s] directions (%s)'
                % (chain_directions.word(direction), GROUP,
                   ','.join(chain_directions.word(d)
                            for d in options.directions)))
    return None
