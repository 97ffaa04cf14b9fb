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

"""Can this cloud host the chain? Asked before `openstack stack create`.

A stack that cannot be created says so late and vaguely: "No valid host
was found" after minutes, with no word of PCPU or of the environment that
would have worked. Preflight reads what the resolved stack needs (the
offline resolve: every server's image and flavor, every provider
network's physnet and VLAN, the server-group policy) and asks the cloud,
with the user's credentials, whether it has it. Each answer is a Finding
naming the stack's resource, the key and the fix; `blocks` when the
create would fail, `unchecked` when the API cannot tell (free huge pages
per NUMA node are in no API; Placement and provider attributes answer
admins only by default), `ok` otherwise. Nothing is created.

The cloud is seen through the `openstack` client (cloud/openstack_cli),
as prove sees it; Placement through its osc-placement plugin. Each
question is a client process whose start-up and token take seconds, so
the checks after the flavors (which the others need) are asked at once.
"""

from concurrent import futures
import dataclasses
import typing

from epa_chain.chain import topology
from epa_chain.cloud import cloud_answers
from epa_chain.cloud import density
from epa_chain import findings as finding_model
from epa_chain.validation import placement_rules

SCHEMA = 'epa-chain/preflight/1'
BLOCKS, UNCHECKED, OK = 'blocks', 'unchecked', 'ok'
VERDICTS = (BLOCKS, UNCHECKED, OK)
# The checks, in the order they are asked and reported.
CHECKS = ('images', 'flavors', 'networks', 'capacity', 'quotas', 'density')
#: openstack clients asking about VLANs at once (each a process)
MAX_VLAN_QUERIES = 4
SMALL_HOST = 'templates/environments/small-host.yaml'
# Preflight fails closed; this option, the command's, lets it pass.
ALLOW_UNCHECKED = '--allow-unchecked'
UNREACHED_FIX = ('check the clouds.yaml entry and its credentials '
                 '(`openstack token issue` with the same --os-cloud must '
                 'work), or pass %s to create unchecked' % ALLOW_UNCHECKED)
UNANSWERED_FIX = ('ask with credentials the cloud answers (admin for '
                  'Placement and provider networks), or pass %s to create '
                  'unchecked' % ALLOW_UNCHECKED)
INTRA_NODE = 'templates/environments/intra-node.yaml'
# Preflight's words on the one scale (epa_chain/findings.py).
SOURCE = finding_model.Source(
    'preflight', SCHEMA, ((BLOCKS, finding_model.FAILS),
                          (UNCHECKED, finding_model.UNANSWERED),
                          (OK, finding_model.PASSES)),
    'verdict', (('check', 'CHECK'), ('resource', 'RESOURCE'),
                ('key', 'KEY')))


@dataclasses.dataclass(frozen=True)
class Finding:
    check: str
    # The stack's resource ('vnf1.server') or the parameter it comes from.
    resource: str
    key: str
    verdict: str
    message: str
    fix: str = ''
    # Why the cloud did not answer, as it said it (unchecked findings).
    reason: str = ''

    def finding(self):
        """This finding in the one model (epa_chain/findings.py)."""
        return finding_model.Finding(
            SOURCE, self.resource, self.verdict, self.message, self.fix,
            (('check', self.check), ('resource', self.resource),
             ('key', self.key), ('reason', self.reason)))

    def as_dict(self):
        return self.finding().as_dict()


def check(needs, cloud):
    """Every Finding of `needs` on `cloud` (a CloudView), in CHECKS order."""
    findings = []
    flavors = _flavors(needs, cloud, findings)
    steps = ((_images, needs, cloud, flavors), (_networks, needs, cloud),
             (_capacity, needs, cloud, flavors),
             (_quotas, needs, cloud, flavors),
             (_network_quotas, needs, cloud))
    with futures.ThreadPoolExecutor(len(steps)) as pool:
        # each step's findings in its own list, joined in step order
        for found in pool.map(_found_by, steps):
            findings += found
    # After the others: from the answers they had (cloud_answers asks once).
    _density(needs, cloud, flavors, findings)
    return sorted(findings, key=lambda f: CHECKS.index(f.check))


def _found_by(step):
    found = []
    step[0](*step[1:], found)
    return found


def passed(findings, allow_unchecked=False):
    """Nothing blocks, and (fail closed) the cloud answered every check."""
    return gate(findings, allow_unchecked).passed


@dataclasses.dataclass(frozen=True)
class Gate:
    """What a preflight's findings let through, and why not.

    Fails closed: a check of which the cloud answered nothing (every
    finding unchecked: a typo'd cloud, Placement refused) is no pass;
    allow_unchecked lets it through for credentials that cannot ask.
    """

    findings: int
    blockers: int
    unchecked: int
    # The CHECKS of which nothing was answered, in CHECKS order.
    unanswered: typing.Tuple[str, ...]
    # Why, as the cloud said it: the first unanswered finding's reason.
    reason: str
    allow_unchecked: bool = False

    @property
    def reached(self):
        """Whether the cloud answered anything at all."""
        return self.unchecked < self.findings

    @property
    def passed(self):
        return not self.blockers and (self.allow_unchecked or (
            self.reached and not self.unanswered))

    def summary(self, cloud='the cloud'):
        """One line: the verdict, how much went unchecked, the fix.

        `cloud` names the cloud asked ('cloud mycloud').
        """
        if self.blockers:
            return '%d blocker%s' % (self.blockers,
                                     '' if self.blockers == 1 else 's')
        counted = '%d of %d unchecked' % (self.unchecked, self.findings)
        if self.passed:
            return 'nothing blocks the create (%s%s)' % (
                counted, ', allowed by ' + ALLOW_UNCHECKED
                if self.unanswered or not self.reached else '')
        asked = ('could not ask %s' % cloud if not self.reached else
                 '%s answered nothing for %s' % (
                     cloud, ', '.join(self.unanswered)))
        return '%s: %s (%s); fix: %s' % (
            asked, self.reason or 'nothing was asked', counted,
            UNREACHED_FIX if not self.reached else UNANSWERED_FIX)


def gate(findings, allow_unchecked=False):
    """The Gate of `findings` (preflight.check's)."""
    unanswered = tuple(
        kind for kind in CHECKS
        if any(f.check == kind for f in findings) and
        all(f.verdict == UNCHECKED for f in findings if f.check == kind))
    return Gate(
        findings=len(findings),
        blockers=sum(f.verdict == BLOCKS for f in findings),
        unchecked=sum(f.verdict == UNCHECKED for f in findings),
        unanswered=unanswered,
        reason=next((f.reason for f in findings
                     if f.check in unanswered and f.reason), ''),
        allow_unchecked=allow_unchecked)


def _parameter(needs, value, kind):
    """The parameter that set `value` for a `kind` of thing, else `kind`.

    Of several parameters with that value, the one whose name says the
    kind ('image': vnf_image, not vnf_existing_flavor of the same name).
    """
    names = needs.parameters.get(value, ())
    return next((name for name in names if kind in name),
                names[0] if names else kind)


def _flavors(needs, cloud, findings):
    """{server resource: Flavor}; findings of flavor creation and lookup."""
    if needs.created_flavors:
        sources = ', '.join(sorted(f.source for f in
                                   needs.created_flavors.values()))
        try:
            admin = cloud.is_admin()
        except cloud_answers.Unanswered as exc:
            findings.append(_unchecked(
                'flavors', sources, 'OS::Nova::Flavor',
                'whether these credentials may create flavors (Nova\'s '
                'os_compute_api:os-flavor-manage:create, admin by '
                'default)', exc))
        else:
            findings.append(Finding(
                'flavors', sources, 'OS::Nova::Flavor',
                OK if admin else BLOCKS,
                'the stack creates its flavors: these credentials %s the '
                'admin role' % ('have' if admin else 'lack'),
                '' if admin else 'create the stack as an admin, or name '
                'flavors an admin made (vnf_existing_flavor, '
                'generator_existing_flavor)'))
    per_server = {}
    existing = {}
    for server in needs.servers:
        flavor = needs.created_flavors.get(server.flavor)
        if flavor is None:
            if server.flavor not in existing:
                existing[server.flavor] = _existing_flavor(
                    needs, cloud, server, findings)
            flavor = existing[server.flavor]
        if flavor is not None:
            per_server[server.resource] = flavor
    return per_server


def _existing_flavor(needs, cloud, server, findings):
    parameter = _parameter(needs, server.flavor, 'flavor')
    try:
        shown = cloud.flavor(server.flavor)
    except cloud_answers.Unanswered as exc:
        findings.append(_unchecked('flavors', server.resource, parameter,
                                   'flavor %r' % server.flavor, exc))
        return None
    if shown is None:
        findings.append(Finding(
            'flavors', server.resource, parameter, BLOCKS,
            'flavor %r does not exist (or is not visible to this project)'
            % server.flavor,
            'create it with the EPA extra specs, or leave %s empty so the '
            'stack creates one' % parameter))
        return None
    flavor, specs = shown, shown.extra_specs
    if 'hw:mem_page_size' not in specs:
        findings.append(Finding(
            'flavors', server.resource, parameter, BLOCKS,
            'flavor %r has no hw:mem_page_size: a guest on OVS-DPDK\'s '
            'vhost-user ports needs its memory on huge pages' % server.flavor,
            'openstack flavor set --property hw:mem_page_size=large %s'
            % server.flavor))
    else:
        findings.append(Finding(
            'flavors', server.resource, parameter, OK,
            'flavor %r: %d vCPUs (%s), %d MB, %s' % (
                server.flavor, flavor.vcpus, flavor.cpu_class, flavor.ram_mb,
                ', '.join('%s=%s' % item for item in sorted(specs.items())
                          if item[0].startswith('hw:')))))
    return flavor


def _images(needs, cloud, flavors, findings):
    seen = set()
    for server in needs.servers:
        if server.image in seen:
            continue
        seen.add(server.image)
        parameter = _parameter(needs, server.image, 'image')
        try:
            image = cloud.image(server.image)
        except cloud_answers.Unanswered as exc:
            findings.append(_unchecked('images', server.resource,
                                       parameter, 'image %r' % server.image,
                                       exc))
            continue
        if image is None:
            findings.append(Finding(
                'images', server.resource, parameter, BLOCKS,
                'image %r is not in Glance (or not visible to this '
                'project)' % server.image,
                'build it (vnf_images/) and upload it as %r, or set %s to '
                'an image that is' % (server.image, parameter)))
            continue
        status = image.get('status')
        small = [s.resource for s in needs.servers
                 if s.image == server.image and s.resource in flavors and
                 int(image.get('min_ram') or 0) > flavors[s.resource].ram_mb]
        if status != 'active':
            findings.append(Finding(
                'images', server.resource, parameter, BLOCKS,
                'image %r is %s, not active' % (server.image, status),
                'wait for the upload to finish or upload it again'))
        elif small:
            findings.append(Finding(
                'images', ', '.join(small), parameter, BLOCKS,
                'image %r asks min_ram %s MB, more than the flavor gives'
                % (server.image, image.get('min_ram')),
                'raise the flavor\'s RAM (vnf_ram, generator_ram)'))
        else:
            findings.append(Finding('images', server.resource, parameter, OK,
                                    'image %r is active' % server.image))


def _networks(needs, cloud, findings):
    for name in needs.named_networks:
        findings.append(_named_network(needs, cloud, name))
    if not needs.networks or _provider_networks_refused(needs, cloud,
                                                        findings):
        return
    ranges = _vlan_ranges(needs, cloud, findings)
    # One client call per segment (Neutron lists no segment IDs): asked
    # side by side, as the checks are; N chains have 2N+ segments.
    with futures.ThreadPoolExecutor(min(len(needs.networks),
                                        MAX_VLAN_QUERIES)) as pool:
        findings.extend(pool.map(lambda network: _vlan(cloud, network,
                                                       ranges),
                                 needs.networks))


def _named_network(needs, cloud, name):
    parameter = _parameter(needs, name, 'network')
    try:
        shown = cloud.network(name)
    except cloud_answers.Unanswered as exc:
        return _unchecked('networks', parameter, 'name',
                          'network %r' % name, exc)
    return Finding(
        'networks', parameter, 'name', OK if shown else BLOCKS,
        'network %r %s' % (name, 'exists' if shown else
                           'does not exist (or is not visible)'),
        '' if shown else 'create it, or set %s to an existing network'
        % parameter)


def _provider_networks_refused(needs, cloud, findings):
    """Whether these credentials may not create the provider networks.

    Neutron's provider attributes are admin-only by default: to create
    them, and to see which VLANs other networks hold. An unanswered
    admin question is left to the VLAN questions, which say it.
    """
    try:
        admin = cloud.is_admin()
    except cloud_answers.Unanswered:
        return False
    if not admin:
        findings.append(Finding(
            'networks', ', '.join(n.resource for n in needs.networks),
            'physical_network, segmentation_id', BLOCKS,
            'the stack creates provider VLAN networks, which Neutron lets '
            'admins only create', 'create the stack as an admin, or have '
            'an admin create the networks and set use_existing_networks'))
    return not admin


def _vlan_ranges(needs, cloud, findings):
    """Neutron's {physnet: [(min, max)]}, or None (and why, unchecked)."""
    try:
        return cloud.vlan_ranges()
    except cloud_answers.Unanswered as exc:
        physnets = sorted({n.physical_network for n in needs.networks})
        findings.append(_unchecked(
            'networks', ', '.join(n.resource for n in needs.networks),
            'physical_network', 'whether Neutron knows %s'
            % ', '.join(physnets), exc,
            'each must be in [ml2_type_vlan] network_vlan_ranges of '
            'Neutron\'s ml2 configuration'))
        return None


def _vlan(cloud, network, ranges):
    """The Finding of one provider network's physnet and VLAN."""
    if ranges is not None and network.physical_network not in ranges:
        return Finding(
            'networks', network.resource, 'physical_network', BLOCKS,
            'Neutron has no VLAN range on %r (it has %s)' % (
                network.physical_network,
                ', '.join(sorted(map(str, ranges))) or 'none'),
            'add %s to [ml2_type_vlan] network_vlan_ranges, or use a '
            'physnet it has' % network.physical_network)
    where = 'VLAN %d on %s' % (network.vlan, network.physical_network)
    try:
        holders = cloud.vlan_networks(network.physical_network,
                                      network.vlan)
    except cloud_answers.Unanswered as exc:
        return _unchecked('networks', network.resource, 'segmentation_id',
                          'whether %s is free' % where, exc)
    if holders:
        return Finding(
            'networks', network.resource, 'segmentation_id', BLOCKS,
            '%s is taken by network %s' % (where,
                                           ', '.join(map(str, holders))),
            'choose a free VLAN (%s), delete that network, or attach '
            'to it with use_existing_networks' % _vlan_parameters(network))
    return Finding('networks', network.resource, 'segmentation_id', OK,
                   '%s is free%s' % (where, _range_note(ranges, network)))


def _vlan_parameters(network):
    """The parameters that set a segment's VLAN.

    netN_vlan, and for a chain after the first (chains.K.netN.network)
    chain_vlan_stride.
    """
    path = network.resource.split('.')
    segment = path[-2] if len(path) > 1 else path[0]
    if topology.chain_index(network.resource):
        return '%s_vlan or chain_vlan_stride' % segment
    return '%s_vlan' % segment


def _range_note(ranges, network):
    if ranges is None:
        return ''
    inside = [r for r in ranges[network.physical_network]
              if r[0] <= network.vlan <= r[1]]
    if inside:
        return ' (in Neutron\'s range %d-%d)' % inside[0]
    # ML2 lets an admin's provider network use any VLAN of a physnet it
    # has a range on; the range is what tenant networks are given.
    return ' (outside Neutron\'s tenant ranges, which a provider network ' \
        'may use)'


def _capacity(needs, cloud, flavors, findings):
    demands = [(server.resource, flavors[server.resource])
               for server in needs.servers if server.resource in flavors]
    if not demands:
        return
    pages = sorted({f.extra_specs.get('hw:mem_page_size') for _, f in demands
                    if f.extra_specs.get('hw:mem_page_size')})
    if pages:
        findings.append(Finding(
            'capacity', 'hw:mem_page_size', ', '.join(pages), UNCHECKED,
            'free huge pages per NUMA node are in no OpenStack API: '
            'Placement counts MEMORY_MB only',
            'see /sys/devices/system/node/node*/hugepages on the compute '
            'hosts'))
    try:
        providers = cloud.providers()
    except cloud_answers.Unanswered as exc:
        findings.append(_unchecked(
            'capacity', 'Placement', 'PCPU, VCPU, MEMORY_MB',
            'compute capacity', exc,
            'run preflight with admin credentials (Placement\'s default '
            'policy) and osc-placement installed'))
        return
    pinned = [(resource, flavor) for resource, flavor in demands
              if flavor.cpu_class == 'PCPU']
    if pinned and not any(p.resources.get('PCPU', (0, 0))[0] > 0
                          for p in providers):
        sources = sorted({flavor.source for _, flavor in pinned})
        findings.append(Finding(
            'capacity', ', '.join(sources), 'hw:cpu_policy', BLOCKS,
            'the flavors ask dedicated CPUs (PCPU) and no compute host '
            'reports PCPU: Nova\'s [compute] cpu_dedicated_set is unset on '
            'every host (%d in Placement)' % len(providers),
            'set [compute] cpu_dedicated_set on the compute hosts, or '
            'create with -e %s (cpu_policy: shared)' % SMALL_HOST))
        return
    verdict, message = _fit(demands, providers, needs.server_group_policy)
    findings.append(Finding(
        'capacity', ', '.join(resource for resource, _ in demands),
        'PCPU, VCPU, MEMORY_MB', verdict, message,
        '' if verdict == OK else _capacity_fix(needs, demands, providers)))


def _capacity_fix(needs, demands, providers):
    if (needs.server_group_policy == 'anti-affinity' and
            len(providers) < len(demands)):
        return ('anti-affinity puts each of the %d servers on its own '
                'compute host and Placement has %d: create with -e %s, or '
                'set %s to soft-anti-affinity' % (
                    len(demands), len(providers), INTRA_NODE,
                    placement_rules.POLICY_PARAMETER))
    return ('free capacity on the compute hosts, or ask less (vnf_vcpus, '
            'vnf_ram, generator_vcpus, generator_ram; -e %s)' % SMALL_HOST)


def _fit(demands, providers, policy):
    """(verdict, message): do the servers fit the providers' free room?"""
    free = {p.name: {rc: p.free(rc) for rc in cloud_answers.RESOURCE_CLASSES}
            for p in providers}
    total = {}
    for _, flavor in demands:
        for rc, amount in flavor.demand().items():
            total[rc] = total.get(rc, 0) + amount
    asked = ', '.join('%s %d' % item for item in sorted(total.items()))
    room = '; '.join('%s: %s' % (name, ', '.join(
        '%s %d' % (rc, amount) for rc, amount in sorted(left.items())))
        for name, left in sorted(free.items())) or 'no compute host'

    def fits(left, demand):
        return all(left.get(rc, 0) >= amount for rc, amount in demand.items())

    if policy == 'affinity':
        hosts = [name for name, left in free.items() if fits(left, total)]
        ok = bool(hosts)
        shape = 'one host with %s (affinity)' % asked
    else:
        # First fit, largest first: a host per server under anti-affinity.
        ordered = sorted(demands, key=lambda d: -sum(d[1].demand().values()))
        left = {name: dict(room_) for name, room_ in free.items()}
        used_hosts = set()
        ok = True
        for _, flavor in ordered:
            demand = flavor.demand()
            for name in sorted(left):
                if policy == 'anti-affinity' and name in used_hosts:
                    continue
                if fits(left[name], demand):
                    for rc, amount in demand.items():
                        left[name][rc] -= amount
                    used_hosts.add(name)
                    break
            else:
                ok = False
        shape = '%s over %s' % (asked, 'a host per server (anti-affinity)'
                                if policy == 'anti-affinity' else
                                'the hosts')
    return (OK if ok else BLOCKS,
            '%s %s; free: %s' % ('room for' if ok else 'no room for',
                                 shape, room))


def _density(needs, cloud, flavors, findings):
    """N_max: how many chains of this shape fit.

    Blocks when fewer than chain_count. Nothing is said for a template
    without chain_count, when the cloud answered none of the limits, or
    when not even one chain fits: the check that found why blocks.
    """
    chain = needs.of_chain(needs.servers, 0)
    if not chain or needs.vlan_stride is None:
        return
    answered = [_capacity_limit(needs, cloud, flavors, chain)]
    answered += _quota_limits(needs, cloud, flavors, chain)
    if not any(answered):
        return
    least, limiting = density.n_max(answered + [
        density.by_vlan_ids(network, needs.vlan_stride)
        for network in needs.of_chain(needs.networks, 0)])
    if least == 0:
        return
    blocked = least < needs.chain_count
    findings.append(Finding(
        'density', 'chains', 'chain_count', BLOCKS if blocked else OK,
        density.describe(least, limiting, needs.chain_count),
        'ask chain_count %d or less, or free what limits it' % least
        if blocked else ''))


def _capacity_limit(needs, cloud, flavors, chain):
    try:
        providers = cloud.providers()
    except cloud_answers.Unanswered:
        return None         # said by the capacity check
    shared = [(s.resource, flavors[s.resource])
              for s in needs.of_chain(needs.servers, None)
              if s.resource in flavors]
    one = [(s.resource, flavors[s.resource]) for s in chain
           if s.resource in flavors]
    if not one:
        return None

    def fits(count):
        verdict, _ = _fit(shared + one * count, providers,
                          needs.server_group_policy)
        return verdict == OK
    return density.by_capacity(fits)


def _quota_limits(needs, cloud, flavors, chain):
    one = [flavors[s.resource] for s in chain if s.resource in flavors]
    per_chain = {'cores': sum(f.vcpus for f in one),
                 'ram': sum(f.ram_mb for f in one),
                 'instances': len(chain)}
    found = []
    for answers, asked in ((cloud.compute_limits, per_chain),
                           (cloud.network_quotas, needs.chain_neutron)):
        try:
            quotas = answers()
        except cloud_answers.Unanswered:
            continue        # said by the quota checks
        for name, amount in sorted(asked.items()):
            if name in quotas:
                limit, used = quotas[name]
                left, _ = _room(0, limit, used)
                found.append(density.by_quota(name, amount, left))
    return found


def _quotas(needs, cloud, flavors, findings):
    demands = [flavors[s.resource] for s in needs.servers
               if s.resource in flavors]
    try:
        limits = cloud.compute_limits()
    except cloud_answers.Unanswered as exc:
        findings.append(_unchecked('quotas', 'compute',
                                   'cores, ram, instances',
                                   'Nova\'s limits', exc))
        return
    asked = {'cores': sum(f.vcpus for f in demands),
             'ram': sum(f.ram_mb for f in demands),
             'instances': len(needs.servers)}
    for name, amount in asked.items():
        if name not in limits:
            continue
        limit, used = limits[name]
        left, blocked = _room(amount, limit, used)
        findings.append(Finding(
            'quotas', 'compute', name, BLOCKS if blocked else OK,
            '%s: the chain asks %d%s, the project has %s left' % (
                name, amount, ' MB' if name == 'ram' else '',
                'unlimited' if left is None else left),
            'raise the project\'s quota (openstack quota set --%s)' % name
            if blocked else ''))


def _room(amount, limit, used):
    """(what a quota leaves, None if unlimited; whether `amount` exceeds it).

    -1 is unlimited, in Nova's limits and Neutron's quotas alike.
    """
    left = limit - used if limit >= 0 else None
    return left, left is not None and amount > left


def _network_quotas(needs, cloud, findings):
    asked = {name: count for name, count in sorted(needs.neutron.items())
             if count}
    if not asked:
        return
    try:
        quotas = cloud.network_quotas()
    except cloud_answers.Unanswered as exc:
        findings.append(_unchecked('quotas', 'network', ', '.join(asked),
                                   'Neutron\'s quotas', exc))
        return
    for name, amount in asked.items():
        if name not in quotas:
            continue
        limit, used = quotas[name]
        left, blocked = _room(amount, limit, used)
        findings.append(Finding(
            'quotas', 'network', name, BLOCKS if blocked else OK,
            '%ss: the chain creates %d, the project has %s left' % (
                name, amount, 'unlimited' if left is None else left),
            'raise the project\'s quota (openstack quota set --%ss %d)'
            % (name, used + amount) if blocked else ''))


def _unchecked(check_, resource, key, what, exc, fix=''):
    """An unchecked Finding: `what` was asked, `exc` (Unanswered) is why."""
    said = _first_line(exc)
    # The message keeps the client's command ('openstack ... failed: ');
    # the reason is what the cloud said, the same for every call when
    # the cloud is not reached.
    return Finding(check_, resource, key, UNCHECKED,
                   '%s: %s' % (what, said), fix,
                   said.rpartition(' failed: ')[2])


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def document(findings, template='', allow_unchecked=False):
    """The JSON results document of a preflight (the one findings shape)."""
    verdict = gate(findings, allow_unchecked)
    return finding_model.document(
        SOURCE, [f.finding() for f in findings], verdict.passed,
        template=template, unchecked=verdict.unchecked,
        unanswered=list(verdict.unanswered),
        allow_unchecked=allow_unchecked)


def table(findings):
    """The findings as a text table, blockers first within each check."""
    ordered = sorted(findings, key=lambda f: (CHECKS.index(f.check),
                                              VERDICTS.index(f.verdict)))
    return finding_model.table(SOURCE, [f.finding() for f in ordered])
