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

"""Did the cloud give each server what its flavor asked? (EPA audit.)

A throughput figure from a guest that silently runs unpinned, on small
pages or across NUMA nodes is a wrong figure with nothing to show it
(seed 004: -50 % cross-NUMA). Per server, what was asked (the flavor's
extra specs, as Nova embeds them in the server) is set against what was
given: Nova's server topology (API 2.78: NUMA nodes, host node, CPU
pinning, page size) and, where the compute host is this host, libvirt's
domain (vCPU and emulator pinning, memory backing, NUMA tuning) and Open
vSwitch's PMDs (which PMD thread and NUMA node poll each vhost-user
port, and how busy). Each difference is a Finding with a severity:
`invalidates` (asked dedicated, got floating; asked large pages, got
small: a measurement of this chain is not of what was asked), `warning`
(memory on another NUMA node than the PMD polling its ports), `info`
(what was given, as asked).

The readers take the text each source gives and are pure;
audit_servers reads the host (bounded commands, Nova's domain names
only) for `epa-chain audit` (commands/audit.py, the openstack client)
and the Tempest scenarios (their admin compute client), which record the
document in every results file.
"""

import dataclasses
import re
import shutil
import socket
import subprocess
import typing
import xml.etree.ElementTree as ElementTree

from epa_chain.cloud import text_table

SCHEMA = 'epa-chain/audit/1'
INVALIDATES, WARNING, INFO = 'invalidates', 'warning', 'info'
SEVERITIES = (INVALIDATES, WARNING, INFO)
# Nova's libvirt domain names (instance_name_template's default form);
# anything else is not passed to virsh.
INSTANCE_NAME = re.compile(r'instance-[0-9a-f]{8}')
# `ovs-appctl dpif-netdev/pmd-rxq-show`: a PMD thread, then its queues.
_PMD = re.compile(r'pmd thread numa_id (\d+) core_id (\d+):')
_RXQ = re.compile(r'port:\s+(\S+)\s+queue-id:\s+(\d+).*?pmd usage:\s+'
                  r'(\d+|NOT AVAIL)')
_LARGE = ('large', '2MB', '2048', '1GB', '1048576')


@dataclasses.dataclass(frozen=True)
class Asked:
    """What a server asked of Nova.

    Its flavor's EPA extra specs, and its image's hw_* properties where
    the flavor leaves the choice open.
    """

    cpu_policy: str
    mem_page_size: str
    numa_nodes: int
    emulator_threads_policy: str
    #: {'cpu_policy' | 'mem_page_size': 'flavor' | 'image' | 'default'}
    sources: typing.Mapping[str, str] = dataclasses.field(
        default_factory=dict)

    @classmethod
    def of_server(cls, shown, image_properties=None):
        specs = (shown.get('flavor') or {}).get('extra_specs') or {}
        image = image_properties or {}
        sources = {}

        def pick(key, spec, prop, default, open_values=()):
            # The flavor decides; the image where the flavor sets nothing
            # or leaves a choice (hw:mem_page_size any/large: Nova takes
            # the image's size).
            flavor_value = specs.get(spec)
            image_value = image.get(prop)
            if image_value not in (None, '') and (
                    flavor_value in (None, '') or
                    str(flavor_value) in open_values):
                sources[key] = 'image'
                return str(image_value)
            if flavor_value not in (None, ''):
                sources[key] = 'flavor'
                return str(flavor_value)
            sources[key] = 'default'
            return default

        return cls(cpu_policy=pick('cpu_policy', 'hw:cpu_policy',
                                   'hw_cpu_policy', 'shared'),
                   mem_page_size=pick('mem_page_size', 'hw:mem_page_size',
                                      'hw_mem_page_size', '',
                                      ('any', 'large')),
                   numa_nodes=int(pick('numa_nodes', 'hw:numa_nodes',
                                       'hw_numa_nodes', '0') or 0),
                   emulator_threads_policy=pick(
                       'emulator_threads_policy',
                       'hw:emulator_threads_policy',
                       'hw_emulator_threads_policy', ''),
                   sources=sources)

    def asked_by(self, key):
        """'the flavor', 'the image' or 'nobody' for messages."""
        return {'flavor': 'the flavor', 'image': 'the image'}.get(
            self.sources.get(key), 'nobody')

    @property
    def large_pages(self):
        return self.mem_page_size in _LARGE


@dataclasses.dataclass(frozen=True)
class NovaGiven:
    """Nova's server topology (compute API 2.78, admin for pinning)."""

    host_nodes: typing.Tuple[int, ...]
    # {vCPU: host CPU}; empty when the vCPUs float.
    pinning: typing.Mapping[int, int]
    pagesize_kb: typing.Optional[int]

    @classmethod
    def of_server(cls, shown):
        """None when the server shows no topology (API before 2.78)."""
        topology = shown.get('topology')
        if not topology:
            return None
        nodes = topology.get('nodes') or []
        pinning = {}
        for node in nodes:
            for vcpu, cpu in (node.get('cpu_pinning') or {}).items():
                pinning[int(vcpu)] = int(cpu)
        return cls(host_nodes=tuple(node.get('host_node') for node in nodes),
                   pinning=pinning, pagesize_kb=topology.get('pagesize_kb'))


@dataclasses.dataclass(frozen=True)
class DomainGiven:
    """What libvirt runs: the domain XML of the server."""

    # {vCPU: the host CPUs it may run on}
    vcpu_pins: typing.Mapping[int, typing.FrozenSet[int]]
    emulator_pin: typing.FrozenSet[int]
    # Huge page size of the guest's memory in KiB; None: small pages.
    page_kib: typing.Optional[int]
    # Host NUMA nodes its memory is bound to.
    memory_nodes: typing.FrozenSet[int]
    vhost_user_ports: typing.Tuple[str, ...]

    @classmethod
    def of_xml(cls, text):
        root = ElementTree.fromstring(text)
        pins = {int(pin.get('vcpu')): _cpuset(pin.get('cpuset'))
                for pin in root.findall('./cputune/vcpupin')}
        emulator = root.find('./cputune/emulatorpin')
        page = root.find('./memoryBacking/hugepages/page')
        page_kib = None
        if page is not None:
            page_kib = _kib(int(page.get('size')), page.get('unit', 'KiB'))
        elif root.find('./memoryBacking/hugepages') is not None:
            page_kib = 2048  # libvirt's default huge page size
        memory = root.find('./numatune/memory')
        ports = tuple(
            target.get('dev') for target in root.findall(
                "./devices/interface[@type='vhostuser']/target"))
        return cls(vcpu_pins=pins,
                   emulator_pin=_cpuset(emulator.get('cpuset'))
                   if emulator is not None else frozenset(),
                   page_kib=page_kib,
                   memory_nodes=_cpuset(memory.get('nodeset'))
                   if memory is not None else frozenset(),
                   vhost_user_ports=ports)

    @property
    def pinned(self):
        """Each vCPU on one host CPU of its own."""
        cpus = [pins for pins in self.vcpu_pins.values()]
        return bool(cpus) and all(len(pins) == 1 for pins in cpus) and \
            len({min(pins) for pins in cpus}) == len(cpus)


@dataclasses.dataclass(frozen=True)
class Rxq:
    """A vhost-user port's receive queue and the PMD thread polling it."""

    port: str
    queue: int
    pmd_core: int
    pmd_numa: int
    # PMD cycles this queue took over the last minute; None: not known.
    usage_percent: typing.Optional[int]


def rxqs_of(text):
    """{port: [Rxq]} of `ovs-appctl dpif-netdev/pmd-rxq-show` output."""
    found = {}
    numa = core = None
    for line in text.splitlines():
        pmd = _PMD.search(line)
        if pmd:
            numa, core = int(pmd.group(1)), int(pmd.group(2))
            continue
        rxq = _RXQ.search(line)
        if rxq and core is not None:
            usage = rxq.group(3)
            found.setdefault(rxq.group(1), []).append(Rxq(
                port=rxq.group(1), queue=int(rxq.group(2)), pmd_core=core,
                pmd_numa=numa,
                usage_percent=None if not usage.isdigit() else int(usage)))
    return found


@dataclasses.dataclass(frozen=True)
class Finding:
    server: str
    aspect: str
    asked: str
    given: str
    severity: str
    message: str

    def as_dict(self):
        return dataclasses.asdict(self)


def audit_server(name, shown, domain=None, rxqs=None,
                 image_properties=None):
    """The Findings of one server.

    `shown`: the server as `openstack --os-compute-api-version 2.78
    server show --topology` gives it; `domain`: its DomainGiven, or None
    (the host not reachable); `rxqs`: rxqs_of the host's OVS, or None;
    `image_properties`: its image's hw_* properties, or None.
    """
    asked = Asked.of_server(shown, image_properties)
    nova = NovaGiven.of_server(shown)
    findings = []

    def add(aspect, asked_text, given, severity, message):
        findings.append(Finding(name, aspect, asked_text, given, severity,
                                message))

    # CPUs.
    if nova is None:
        add('cpu', asked.cpu_policy, 'unknown', WARNING,
            'Nova shows no topology (compute API 2.78 and admin needed)')
    elif asked.cpu_policy == 'dedicated':
        pinned = bool(nova.pinning) and (domain is None or domain.pinned)
        if pinned:
            add('cpu', 'dedicated', _pins(nova.pinning), INFO,
                'each vCPU pinned to its own host CPU, as asked')
        else:
            add('cpu', 'dedicated', _floating(domain), INVALIDATES,
                'asked dedicated CPUs, got floating ones: a measurement '
                'of this server is not of a pinned guest')
    else:
        add('cpu', asked.cpu_policy, _floating(domain), INFO,
            'shared CPUs, as %s asked (cpu policy %s)'
            % (asked.asked_by('cpu_policy'), asked.cpu_policy)
            if asked.sources.get('cpu_policy') != 'default' else
            'shared CPUs: neither the flavor nor the image asked for a '
            'CPU policy')
    # Memory pages.
    given_kib = nova.pagesize_kb if nova is not None else None
    if domain is not None:
        given_kib = domain.page_kib
    if asked.large_pages:
        if given_kib and given_kib >= 2048:
            add('pages', asked.mem_page_size, _pages(given_kib), INFO,
                'guest memory on %s pages, as asked' % _pages(given_kib))
        elif nova is None and domain is None:
            add('pages', asked.mem_page_size, 'unknown', WARNING,
                'neither Nova nor the host showed the page size')
        else:
            add('pages', asked.mem_page_size, _pages(given_kib),
                INVALIDATES, 'asked large pages, got small ones: '
                'vhost-user needs shared huge-page memory, and a '
                'measurement on small pages is not of what was asked')
    else:
        add('pages', asked.mem_page_size or 'any', _pages(given_kib),
            WARNING if not given_kib else INFO,
            'no page size asked: OVS-DPDK\'s vhost-user ports need the '
            'guest memory on huge pages' if not given_kib else
            'huge pages without asking for them')
    # NUMA nodes.
    if nova is not None and asked.numa_nodes:
        count = len(nova.host_nodes)
        add('numa', str(asked.numa_nodes), '%d (host node %s)' % (
            count, ','.join(map(str, nova.host_nodes))),
            INFO if count == asked.numa_nodes else WARNING,
            'guest NUMA nodes as asked' if count == asked.numa_nodes else
            'asked %d guest NUMA node(s), got %d' % (asked.numa_nodes,
                                                     count))
    # The PMDs polling its vhost-user ports, and their NUMA node.
    if domain is not None and rxqs is not None:
        memory_nodes = domain.memory_nodes or frozenset(
            node for node in (nova.host_nodes if nova else ()))
        for port in domain.vhost_user_ports:
            polled = rxqs.get(port)
            if not polled:
                add('pmd', port, 'no PMD', WARNING,
                    'no PMD thread polls %s' % port)
                continue
            given = ', '.join('core %d (NUMA %d%s)' % (
                rxq.pmd_core, rxq.pmd_numa, ', %d %%' % rxq.usage_percent
                if rxq.usage_percent is not None else '') for rxq in polled)
            cross = memory_nodes and any(rxq.pmd_numa not in memory_nodes
                                         for rxq in polled)
            add('pmd', port, given, WARNING if cross else INFO,
                'the PMD polling %s is on another NUMA node than the '
                'guest memory (%s): every frame crosses the interconnect'
                % (port, ','.join(map(str, sorted(memory_nodes))))
                if cross else 'polled on the guest memory\'s NUMA node')
    return findings


# ---- a stack's servers, with the host's part where they run --------------

HOST_PART = ('auto', 'yes', 'no')
# Bounds of each host command: a wedged libvirtd or ovs-vswitchd must not
# hang the audit.
HOST_COMMAND_TIMEOUT_S = 60


class HostError(RuntimeError):
    """A host command failed or is missing."""


def audit_servers(shown, host='auto', here=None, run=None,
                  image_properties=None):
    """(findings, names of the servers whose host part was read).

    `shown`: {server id: the server as server_topology shows it}; `host`
    one of HOST_PART: auto reads libvirt and Open vSwitch for the servers
    Nova says run on `here` (this host's name) when virsh is installed;
    `image_properties(image id)`: the image's hw_* properties (None: the
    flavor alone is what was asked). HostError when a host command fails.
    """
    images = {}
    here = socket.gethostname() if here is None else here
    rxqs = None
    findings = []
    host_checked = []
    for _server_id, server in sorted(shown.items(),
                                     key=lambda item: item[1]['name']):
        domain = None
        if _host_part(host, server, here):
            if rxqs is None:
                rxqs = rxqs_of(host_command(
                    ['ovs-appctl', '--timeout=10',
                     'dpif-netdev/pmd-rxq-show'], run))
            domain = DomainGiven.of_xml(domain_xml(server, run))
            host_checked.append(server['name'])
        image_id = image_of(server)
        if image_properties is not None and image_id is not None:
            if image_id not in images:
                images[image_id] = image_properties(image_id)
        findings += audit_server(server['name'], server, domain, rxqs,
                                 images.get(image_id))
    return findings, host_checked


_UUID = re.compile(r'[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}')


def image_of(server):
    """The server's image ID (None: booted from a volume).

    The compute API gives {'id': ...}; the openstack client prints
    'name (id)'.
    """
    image = server.get('image')
    if isinstance(image, dict):
        image = image.get('id')
    if not isinstance(image, str):
        return None
    found = _UUID.findall(image)
    return found[-1] if found else None


def hw_properties(properties):
    """The hw_* properties of an image, as strings."""
    return {key: str(value) for key, value in (properties or {}).items()
            if isinstance(key, str) and key.startswith('hw_')}


def _host_part(choice, server, here):
    if choice == 'no':
        return False
    if choice == 'yes':
        return True
    return (server.get('OS-EXT-SRV-ATTR:host') == here and
            shutil.which('virsh') is not None)


def domain_xml(server, run=None):
    """libvirt's XML of a server's domain, by Nova's name for it."""
    name = server.get('OS-EXT-SRV-ATTR:instance_name') or ''
    # Nova's own name for the domain; anything else never reaches virsh.
    if not INSTANCE_NAME.fullmatch(name):
        raise HostError('server %s: libvirt domain name %r is not Nova\'s '
                        'instance-XXXXXXXX form (admin credentials show '
                        'it)' % (server.get('name'), name))
    return host_command(['virsh', '-c', 'qemu:///system', 'dumpxml',
                         '--domain', name], run)


def host_command(argv, run=None):
    try:
        done = (run or subprocess.run)(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=HOST_COMMAND_TIMEOUT_S)
    except FileNotFoundError:
        raise HostError('%s: not found on this host (--host no skips the '
                        'host part)' % argv[0])
    except subprocess.TimeoutExpired:
        raise HostError('%s did not answer in %d s' % (
            ' '.join(argv), HOST_COMMAND_TIMEOUT_S))
    if done.returncode != 0:
        raise HostError('%s failed: %s' % (' '.join(argv),
                                           done.stderr.strip()))
    return done.stdout


def invalidating(findings):
    return [f for f in findings if f.severity == INVALIDATES]


def document(stack, findings, host_checked):
    return {'schema': SCHEMA, 'stack': stack, 'host_checked': host_checked,
            'valid': not invalidating(findings),
            'findings': [f.as_dict() for f in findings]}


def table(findings):
    """"EPA: asked vs given", one row per server and aspect."""
    return 'EPA: asked vs given\n' + text_table.columns(
        ('SERVER', 'ASPECT', 'ASKED', 'GIVEN', 'SEVERITY', 'WHAT'),
        [(f.server, f.aspect, f.asked, f.given, f.severity.upper(),
          f.message) for f in findings])


def _cpuset(text):
    """frozenset of libvirt's cpuset syntax ('0-3,^2,6')."""
    included, excluded = set(), set()
    for part in (text or '').split(','):
        part = part.strip()
        if not part:
            continue
        target = excluded if part.startswith('^') else included
        part = part.lstrip('^')
        low, _, high = part.partition('-')
        target.update(range(int(low), int(high or low) + 1))
    return frozenset(included - excluded)


def _kib(size, unit):
    factor = {'b': 1 / 1024, 'bytes': 1 / 1024, 'k': 1, 'kib': 1,
              'm': 1024, 'mib': 1024, 'g': 1024 ** 2, 'gib': 1024 ** 2}
    return int(size * factor.get(unit.lower(), 1))


def _pages(kib):
    if not kib:
        return 'small (4 KiB)'
    return '%d MB' % (kib // 1024) if kib < 1048576 else '%d GB' % (
        kib // 1048576)


def _pins(pinning):
    return ', '.join('vCPU %d -> CPU %d' % item
                     for item in sorted(pinning.items()))


def _floating(domain):
    if domain is None or not domain.vcpu_pins:
        return 'floating'
    cpus = sorted(set().union(*domain.vcpu_pins.values()))
    return 'floating over CPUs %s' % ','.join(map(str, cpus))
