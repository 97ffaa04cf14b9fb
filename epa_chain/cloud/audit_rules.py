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

"""Asked against given, one server at a time: the audit's findings.

A throughput figure from a guest that silently runs unpinned, on small
pages or across NUMA nodes is a wrong figure with nothing to show it
(seed 004: -50 % cross-NUMA). Per aspect of a server (cpu, pages, numa,
pmd) what was asked is set against what Nova, libvirt and Open vSwitch
gave: `invalidates` (asked dedicated, got floating; asked large pages,
got small: a measurement of this chain is not of what was asked),
`warning` (memory on another NUMA node than the PMD polling its ports),
`info` (what was given, as asked). Then, for a stack of several chains
(chain_count), what each pair of chains shares: host CPUs, PMD cores,
NUMA nodes. Pure: the values come read (audit_model, host_readers).
"""

import itertools
import re

from epa_chain.cloud import audit_model

INVALIDATES = audit_model.INVALIDATES
WARNING = audit_model.WARNING
INFO = audit_model.INFO
#: chain.yaml names chain K's servers STACK-chainK-ROLE (chain 0: STACK-ROLE)
_CHAIN_NAME = re.compile(r'-chain([0-9]+)-')


def audit_server(name, shown, domain=None, rxqs=None,
                 image_properties=None):
    """The Findings of one server.

    `shown`: the server as `openstack --os-compute-api-version 2.78
    server show --topology` gives it; `domain`: its
    host_readers.DomainGiven, or None (the host not reachable); `rxqs`:
    host_readers.rxqs_of the host's OVS, or None; `image_properties`:
    its image's hw_* properties, or None.
    """
    asked = audit_model.Asked.of_server(shown, image_properties)
    nova = audit_model.NovaGiven.of_server(shown)
    rows = (_cpu(asked, nova, domain) + _pages(asked, nova, domain) +
            _numa(asked, nova) + _pmds(nova, domain, rxqs))
    return [audit_model.Finding(name, *row) for row in rows]


def _cpu(asked, nova, domain):
    """[(aspect, asked, given, severity, message)] of the CPU policy."""
    if nova is None:
        return [('cpu', asked.cpu_policy, 'unknown', WARNING,
                 'Nova shows no topology (compute API 2.78 and admin '
                 'needed)')]
    if asked.cpu_policy == 'dedicated':
        if nova.pinning and (domain is None or domain.pinned):
            return [('cpu', 'dedicated', _pins(nova.pinning), INFO,
                     'each vCPU pinned to its own host CPU, as asked')]
        return [('cpu', 'dedicated', _floating(domain), INVALIDATES,
                 'asked dedicated CPUs, got floating ones: a measurement '
                 'of this server is not of a pinned guest')]
    if asked.sources.get('cpu_policy') == 'default':
        message = ('shared CPUs: neither the flavor nor the image asked '
                   'for a CPU policy')
    else:
        message = 'shared CPUs, as %s asked (cpu policy %s)' % (
            asked.asked_by('cpu_policy'), asked.cpu_policy)
    return [('cpu', asked.cpu_policy, _floating(domain), INFO, message)]


def _pages(asked, nova, domain):
    """The page size: libvirt's when read, else Nova's."""
    given_kib = nova.pagesize_kb if nova is not None else None
    if domain is not None:
        given_kib = domain.page_kib
    if not asked.large_pages:
        return [('pages', asked.mem_page_size or 'any', _page_size(given_kib),
                 WARNING if not given_kib else INFO,
                 'no page size asked: OVS-DPDK\'s vhost-user ports need '
                 'the guest memory on huge pages' if not given_kib else
                 'huge pages without asking for them')]
    if given_kib and given_kib >= 2048:
        return [('pages', asked.mem_page_size, _page_size(given_kib), INFO,
                 'guest memory on %s pages, as asked'
                 % _page_size(given_kib))]
    if nova is None and domain is None:
        return [('pages', asked.mem_page_size, 'unknown', WARNING,
                 'neither Nova nor the host showed the page size')]
    return [('pages', asked.mem_page_size, _page_size(given_kib),
             INVALIDATES, 'asked large pages, got small ones: vhost-user '
             'needs shared huge-page memory, and a measurement on small '
             'pages is not of what was asked')]


def _numa(asked, nova):
    if nova is None or not asked.numa_nodes:
        return []
    count = len(nova.host_nodes)
    same = count == asked.numa_nodes
    return [('numa', str(asked.numa_nodes), '%d (host node %s)' % (
        count, ','.join(map(str, nova.host_nodes))),
        INFO if same else WARNING,
        'guest NUMA nodes as asked' if same else
        'asked %d guest NUMA node(s), got %d' % (asked.numa_nodes, count))]


def _pmds(nova, domain, rxqs):
    """The PMDs polling each vhost-user port, and their NUMA node."""
    if domain is None or rxqs is None:
        return []
    memory_nodes = domain.memory_nodes or frozenset(
        nova.host_nodes if nova else ())
    return [_pmd(port, rxqs.get(port), memory_nodes)
            for port in domain.vhost_user_ports]


def _pmd(port, polled, memory_nodes):
    if not polled:
        return ('pmd', port, 'no PMD', WARNING,
                'no PMD thread polls %s' % port)
    given = ', '.join('core %d (NUMA %d%s)' % (
        rxq.pmd_core, rxq.pmd_numa, ', %d %%' % rxq.usage_percent
        if rxq.usage_percent is not None else '') for rxq in polled)
    if memory_nodes and any(rxq.pmd_numa not in memory_nodes
                            for rxq in polled):
        return ('pmd', port, given, WARNING,
                'the PMD polling %s is on another NUMA node than the guest '
                'memory (%s): every frame crosses the interconnect'
                % (port, ','.join(map(str, sorted(memory_nodes)))))
    return ('pmd', port, given, INFO,
            'polled on the guest memory\'s NUMA node')


def _page_size(kib):
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


def chain_of(name):
    """K of a server of chain.yaml's chain K, by its name (0 if none)."""
    found = _CHAIN_NAME.search(name)
    return int(found.group(1)) if found else 0


def between_chains(read):
    """What chains side by side share, one Finding per pair of chains.

    `read`: [(server name, DomainGiven or None, rxqs or None)] of the
    servers whose host part was read. Host CPUs two chains may both run
    on, PMD cores polling both chains' ports, NUMA nodes holding both
    chains' memory: a noisy neighbour's paths. Pinned CPUs two chains
    share are a warning (dedicated means nobody else's); the rest is
    what a measurement beside neighbours should say.
    """
    chains = {}
    for name, domain, rxqs in read:
        if domain is not None:
            chains.setdefault(chain_of(name), []).append((domain, rxqs))
    return [_shared(a, b, chains[a], chains[b])
            for a, b in itertools.combinations(sorted(chains), 2)]


def _uses(servers):
    """(host CPUs, pinned CPUs, PMD cores, NUMA nodes) of a chain."""
    cpus, pinned, cores, nodes = set(), set(), set(), set()
    for domain, rxqs in servers:
        for allowed in domain.vcpu_pins.values():
            cpus |= allowed
            if len(allowed) == 1:
                pinned |= allowed
        nodes |= domain.memory_nodes
        for port in domain.vhost_user_ports:
            cores |= {rxq.pmd_core for rxq in (rxqs or {}).get(port, ())}
    return cpus, pinned, cores, nodes


def _shared(a, b, servers_a, servers_b):
    (cpus_a, pinned_a, cores_a, nodes_a), (cpus_b, pinned_b, cores_b,
                                           nodes_b) = (_uses(servers_a),
                                                       _uses(servers_b))
    parts = [('host CPUs', cpus_a & cpus_b), ('PMD cores', cores_a & cores_b),
             ('NUMA nodes', nodes_a & nodes_b)]
    given = '; '.join('%s %s' % (what, ','.join(map(str, sorted(found))))
                      for what, found in parts if found) or 'nothing'
    both_pinned = pinned_a & pinned_b
    if both_pinned:
        return audit_model.Finding(
            'chains %d,%d' % (a, b), 'shared', 'apart', given, WARNING,
            'pinned CPUs %s run both chains: a dedicated CPU that is not; '
            'each chain\'s figures include the other\'s load' % ','.join(
                map(str, sorted(both_pinned))))
    return audit_model.Finding(
        'chains %d,%d' % (a, b), 'shared', 'apart', given, INFO,
        'chains %d and %d share %s: measured together, each is the other\'s '
        'neighbour there' % (a, b, given) if given != 'nothing' else
        'chains %d and %d share no CPU, PMD core or NUMA node' % (a, b))
