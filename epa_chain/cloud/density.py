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

"""How many chains of one shape a cloud can host: N_max and what limits it.

chain.yaml's chain K repeats chain 0 (its servers, ports and networks) on
VLANs chain_vlan_stride * K further on. Each resource the cloud has a
bounded amount of gives its own largest N: compute capacity (the servers
placed as Nova would, cloud/preflight's fit), Nova's and Neutron's
quotas, and each segment's VLAN IDs. N_max is the least
of them; the limits equal to it are what a larger N is refused for.
Pure arithmetic on answers the preflight checks already had.
"""

import dataclasses

#: chain.yaml's chain_count bound: no search goes past it.
MAX_CHAINS = 64
MAX_VLAN = 4094


@dataclasses.dataclass(frozen=True)
class Limit:
    """One resource's largest chain count, and why."""

    resource: str
    chains: int
    why: str


def by_capacity(fits, limit=MAX_CHAINS):
    """The largest n <= limit with fits(n) (fits is monotonic), as a Limit."""
    n = 0
    while n < limit and fits(n + 1):
        n += 1
    return Limit('compute capacity (Placement)', n,
                 'room for %d chain(s) on the compute hosts' % n)


def by_quota(name, per_chain, left):
    """The Limit of a quota `left` (None: unlimited) at `per_chain` each."""
    if left is None or per_chain <= 0:
        return None
    n = max(0, left // per_chain)
    return Limit('quota %s' % name, n, '%d left, %d per chain'
                 % (left, per_chain))


def by_vlan_ids(network, stride):
    """The Limit of chain 0's `network` (ProviderNetwork) moving by stride.

    Chain K's VLAN is network.vlan + K * stride, on the same physnet, and
    a VLAN ID ends at 4094. Neutron's tenant ranges do not bound it: an
    admin's provider network may take any VLAN of a physnet (preflight's
    networks check says where each lies and whether it is free).
    """
    n = (MAX_VLAN - network.vlan) // stride + 1 if network.vlan <= MAX_VLAN \
        else 0
    return Limit('VLANs of %s' % network.physical_network,
                 min(n, MAX_CHAINS), '%s: VLAN %d + K x %d up to %d' % (
                     network.name, network.vlan, stride, MAX_VLAN))


def n_max(limits):
    """(N_max, the limits that set it) of Limits (None ones ignored)."""
    known = [limit for limit in limits if limit is not None]
    if not known:
        return MAX_CHAINS, []
    least = min(limit.chains for limit in known)
    return least, [limit for limit in known if limit.chains == least]


def describe(least, limiting, asked):
    """The density finding's message: N_max, what limits it, the ask."""
    return 'room for %d chain(s) of this shape (chain_count %d asked)%s' % (
        least, asked, '; limited by %s' % '; '.join(
            '%s: %s' % (limit.resource, limit.why) for limit in limiting)
        if limiting else '')
