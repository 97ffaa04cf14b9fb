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

"""libvirt's domain XML and Open vSwitch's PMD text, read into values.

Pure: each reader takes the text its source gives (`virsh dumpxml`,
`ovs-appctl dpif-netdev/pmd-rxq-show`); host_commands runs them. A
domain XML that does not parse raises ElementTree.ParseError, which
epa_audit names with its source.
"""

import dataclasses
import re
import typing
import xml.etree.ElementTree as ElementTree

# `ovs-appctl dpif-netdev/pmd-rxq-show`: a PMD thread, then its queues.
_PMD = re.compile(r'pmd thread numa_id (\d+) core_id (\d+):')
_RXQ = re.compile(r'port:\s+(\S+)\s+queue-id:\s+(\d+).*?pmd usage:\s+'
                  r'(\d+|NOT AVAIL)')
ParseError = ElementTree.ParseError


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
