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

"""What a resolved chain stack asks of a cloud, read once.

The servers with their images and flavors (a flavor the stack creates,
with its vCPUs, RAM and EPA extra specs, or an existing one by name),
the provider VLAN networks, the networks it names, the server-group
policy, and which parameter set each value: what preflight asks the
cloud about, from the offline resolve (hot/resolve.py).
"""

import dataclasses
import typing

from epa_chain.chain import topology


@dataclasses.dataclass(frozen=True)
class Flavor:
    """A flavor as the chain needs it: created by the stack or existing."""

    # The stack's flavor resource, or the name of an existing flavor.
    source: str
    vcpus: int
    ram_mb: int
    extra_specs: typing.Mapping[str, str]

    @property
    def cpu_class(self):
        """Placement's resource class the vCPUs are taken from."""
        policy = str(self.extra_specs.get('hw:cpu_policy', 'shared'))
        return 'PCPU' if policy == 'dedicated' else 'VCPU'

    def demand(self):
        return {self.cpu_class: self.vcpus, 'MEMORY_MB': self.ram_mb}


@dataclasses.dataclass(frozen=True)
class Server:
    resource: str
    image: str
    # A flavor resource's ID (created by the stack) or an existing name.
    flavor: str


@dataclasses.dataclass(frozen=True)
class ProviderNetwork:
    resource: str
    name: str
    physical_network: str
    vlan: int


@dataclasses.dataclass(frozen=True)
class Needs:
    """What a resolved stack asks of the cloud, read once."""

    servers: typing.Tuple[Server, ...]
    # {flavor resource ID: Flavor} of the flavors the stack creates.
    created_flavors: typing.Mapping[str, Flavor]
    networks: typing.Tuple[ProviderNetwork, ...]
    # Existing networks named by the stack (the management network).
    named_networks: typing.Tuple[str, ...]
    server_group_policy: str
    # {value: the parameters set to it}: where the user changes what
    # blocks (one name can be both an image's and a flavor's).
    parameters: typing.Mapping[str, typing.Tuple[str, ...]]
    # {Neutron quota (network, subnet, port): how many the stack creates}
    neutron: typing.Mapping[str, int] = dataclasses.field(
        default_factory=dict)
    # chain.yaml's chain_count and chain_vlan_stride; 1 and None for a
    # template without them.
    chain_count: int = 1
    vlan_stride: typing.Optional[int] = None
    # {Neutron quota: how many one chain (its chain 0) creates}
    chain_neutron: typing.Mapping[str, int] = dataclasses.field(
        default_factory=dict)

    def of_chain(self, items, index):
        """The servers or networks of chain `index` (None: of no chain)."""
        return [item for item in items
                if topology.chain_index(item.resource) == index]


#: Neutron's quota of each resource type a chain stack creates
NEUTRON_QUOTAS = {'OS::Neutron::ProviderNet': 'network',
                  'OS::Neutron::Net': 'network',
                  'OS::Neutron::Subnet': 'subnet',
                  'OS::Neutron::Port': 'port'}


def needs_of(resolved):
    """The Needs of a hot.resolve.Resolved stack."""
    realisation = resolved.realisation
    flavors = {}
    for res in realisation.of_type('OS::Nova::Flavor'):
        props = res.properties
        flavors[res.resource_id] = Flavor(
            source=res.dotted, vcpus=int(props['vcpus']),
            ram_mb=int(props['ram']),
            extra_specs={k: str(v) for k, v in
                         (props.get('extra_specs') or {}).items()})
    servers = tuple(
        Server(resource=res.dotted, image=str(res.properties['image']),
               flavor=str(res.properties['flavor']))
        for res in realisation.of_type('OS::Nova::Server'))
    networks = tuple(
        ProviderNetwork(resource=res.dotted, name=res.properties['name'],
                        physical_network=res.properties['physical_network'],
                        vlan=int(res.properties['segmentation_id']))
        for res in realisation.of_type('OS::Neutron::ProviderNet'))
    policies = [policy for res in realisation.of_type('OS::Nova::ServerGroup')
                for policy in res.properties.get('policies') or []]
    in_stack = {res.resource_id for res in realisation.resources.values()}
    named = tuple(sorted({lookup.value for lookup in resolved.skipped
                          if lookup.constraint == 'neutron.network' and
                          lookup.value not in in_stack}))
    parameters = {}
    for name, value in sorted(realisation.parameters.items()):
        if isinstance(value, str) and value:
            parameters[value] = parameters.get(value, ()) + (name,)
    neutron, chain_neutron = {}, {}
    for resource_type, quota in NEUTRON_QUOTAS.items():
        found = realisation.of_type(resource_type)
        neutron[quota] = neutron.get(quota, 0) + len(found)
        chain_neutron[quota] = chain_neutron.get(quota, 0) + len(
            [res for res in found if topology.chain_index(res.dotted) == 0])
    values = realisation.parameters
    return Needs(servers=servers, created_flavors=flavors, networks=networks,
                 named_networks=named,
                 server_group_policy=policies[0] if policies else '',
                 parameters=parameters, neutron=neutron,
                 chain_count=int(values.get('chain_count') or 1),
                 vlan_stride=(int(values['chain_vlan_stride'])
                              if values.get('chain_vlan_stride') else None),
                 chain_neutron=chain_neutron)
