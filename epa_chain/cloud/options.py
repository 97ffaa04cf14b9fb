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

"""The [epa_chain] options as typed values, with errors naming the option.

oslo.config checks types and ranges; what it cannot check (a segment's
physnet:vlan form, a frame size or IMIX, enough segments for a chain
length) is checked here, where the scenarios and the unit tests read the
options. Nothing here talks to a cloud.
"""

import dataclasses
import ipaddress
import re
import typing

from epa_chain.measurement import options as campaign_options
from epa_chain.measurement import trial

GROUP = 'epa_chain'
MAX_SEGMENTS = 4
SEGMENT_RE = re.compile(r'^(?P<physnet>[A-Za-z0-9_.-]+):(?P<vlan>[0-9]+)$')
# The campaign options' defaults, by [epa_chain] name (one table:
# measurement/options.py).
_CAMPAIGN = campaign_options.conf_defaults()


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


def parse_frame_size(value):
    """A frame size from '64', 'imix' or '64:7/570:4/1518:1'.

    A ListOpt item cannot hold the commas FrameSize.parse puts between
    mix entries, hence '/'.
    """
    values = campaign_options.BY_FIELD['frame_sizes'].from_conf([value])
    try:
        (frame_size,) = campaign_options.check('frame_sizes', values)
    except campaign_options.FieldError as error:
        raise OptionError('frame_sizes', '%r: %s; join the pairs of a mix '
                          'with "/", e.g. 64:7/570:4/1518:1'
                          % (value, error.fix)) from None
    return frame_size


@dataclasses.dataclass(frozen=True)
class ChainOptions:
    """Everything the scenarios read from [epa_chain]."""

    template_dir: str = ''
    vnf_image: str = 'epa-chain-vnf'
    generator_image: str = 'epa-chain-generator'
    vnf_engine: str = 'prox'
    vnf_flavor: str = ''
    generator_flavor: str = ''
    cpu_policy: str = 'dedicated'
    cpu_thread_policy: str = 'prefer'
    mem_page_size: str = 'large'
    numa_nodes: int = 1
    segments: typing.Tuple[Segment, ...] = ()
    management_network: str = 'private'
    # chain.yaml's default; on a real cloud the Tempest host's range.
    management_allowed_cidr: str = '10.0.0.0/8'
    key_name: str = ''
    chain_lengths: typing.Tuple[int, ...] = (1, 2, 3)
    directions: typing.Tuple[str, ...] = ('unidirectional', 'bidirectional')
    # The campaign's options, with the table's defaults.
    frame_sizes: typing.Tuple[trial.FrameSize, ...] = tuple(
        parse_frame_size(v) for v in _CAMPAIGN['frame_sizes'])
    flow_counts: typing.Tuple[int, ...] = tuple(_CAMPAIGN['flow_counts'])
    trial_duration: float = _CAMPAIGN['trial_duration']
    search_method: str = _CAMPAIGN['search_method']
    search_resolution: float = _CAMPAIGN['search_resolution']
    repetitions: int = _CAMPAIGN['repetitions']
    # None: the search spans up to line rate, from 0.1 % of its highest.
    max_load_fps: typing.Optional[float] = _CAMPAIGN['max_load_fps']
    min_load_fps: typing.Optional[float] = _CAMPAIGN['min_load_fps']
    ndr_loss_ratio: float = _CAMPAIGN['ndr_loss_ratio']
    pdr_loss_ratio: float = _CAMPAIGN['pdr_loss_ratio']
    latency_load_fraction: float = _CAMPAIGN['latency_load_fraction']
    latency_duration: float = _CAMPAIGN['latency_duration']
    latency_soak_duration: float = _CAMPAIGN['latency_soak_duration']
    invalid_trial_retries: int = _CAMPAIGN['invalid_trial_retries']
    results_dir: str = '/tmp/epa-chain-results'
    stack_create_timeout: int = 1800
    vnf_ready_timeout: int = 600
    stack_delete_timeout: int = 600
    generator_control_port: int = 8474
    # PROX's `latency bucket size` on the generator (chain.yaml's
    # generator_latency_bucket_shift): 2**N TSC cycles a bucket.
    generator_latency_bucket_shift: int = 12
    # How far the offered rate may miss the asked one (the PROX generator's
    # rate_tolerance; the results' generator section records it).
    generator_rate_tolerance: float = 0.01
    # The hop check (hop_check.py): the seeds' 1 % of line rate, 1 % loss,
    # up to three trials per direction.
    hop_check_load_fraction: float = 0.01
    hop_check_max_loss_ratio: float = 0.01
    hop_check_attempts: int = 3

    @classmethod
    def from_conf(cls, group):
        """Read a registered [epa_chain] group (CONF.epa_chain)."""
        values = {}
        for field in dataclasses.fields(cls):
            values[field.name] = getattr(group, field.name)
        values['segments'] = parse_segments(values['segments'] or [])
        values['frame_sizes'] = tuple(
            parse_frame_size(v) for v in values['frame_sizes'])
        if not values['frame_sizes']:
            raise OptionError('frame_sizes', 'empty; give at least one')
        if not values['flow_counts']:
            raise OptionError('flow_counts', 'empty; give at least one')
        for name in ('chain_lengths', 'directions', 'flow_counts'):
            values[name] = tuple(values[name])
        values['management_allowed_cidr'] = parse_cidr(
            values['management_allowed_cidr'])
        return cls(**values)

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
    """Why one scenario (chain length x direction) is not selected.

    None when it is.
    """
    if chain_length not in options.chain_lengths:
        return ('chain length %d is not in [%s] chain_lengths (%s)'
                % (chain_length, GROUP,
                   ','.join(str(n) for n in options.chain_lengths)))
    if direction not in options.directions:
        return ('direction %s is not in [%s] directions (%s)'
                % (direction, GROUP, ','.join(options.directions)))
    return None
