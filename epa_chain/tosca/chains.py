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

"""Chains side by side in a translation: chain K unrolled from chain 0.

templates/chain.yaml puts chain_count chains side by side in a
ResourceGroup of lib/chain_instance.yaml. TOSCA cannot repeat a topology
and a translation is one file, so chain K (K = 1 .. chain_count-1) is a
copy of every resource of chain 0 but the shared ones (flavors, the
management security groups), named <resource>_chainK, and differs from
chain 0 exactly where lib/chain_instance.yaml's chain K does:

- names: servers and ports <stack>-chainK-..., segments <name>-chainK;
- VLANs: netN_vlan + K * chain_vlan_stride, on the same physical networks
  (the yaql expression of lib/provider_segment.yaml);
- MACs: a fixed MAC is chain 0's only (Neutron chooses chain K's).

The `chains` output lists every chain's outputs as chain.yaml's does.
"""

import copy

SHARED_TYPES = ('OS::Nova::Flavor', 'OS::Neutron::SecurityGroup')
PORT_TYPE = 'OS::Neutron::Port'
CHAIN_OUTPUTS = ('forward_chain', 'reverse_chain', 'management_addresses',
                 'vnf_control_endpoints', 'generator_control_endpoint')
# As lib/provider_segment.yaml computes chain K's VLAN.
VLAN_EXPRESSION = '$.data.vlan + $.data.index * $.data.stride'
STACK_NAME = {'get_param': 'OS::stack_name'}
# A literal VLAN is replaced only where a VLAN is written; a number
# elsewhere (a port, a size) may equal it by chance.
VLAN_KEYS = ('vlan', 'segmentation_id')


def unroll(hot, chain, count):
    """Add chains 1 .. count-1 and the `chains` output; return changes."""
    resources = hot.setdefault('resources', {})
    own = [name for name, resource in resources.items()
           if resource.get('type') not in SHARED_TYPES]
    segments = _data_segments(chain)
    changes = []
    outputs = hot.setdefault('outputs', {})
    entries = [_chain_entry(0, outputs)]
    for index in range(1, count):
        chain_k = _ChainK(index, own, segments)
        for name in own:
            resources[chain_k.resource(name)] = chain_k.resource_copy(
                resources[name])
        changes.append('chain %d: %d resources added (%s)' % (
            index, len(own), ', '.join(chain_k.resource(n) for n in own)))
        entries.append(chain_k.copy(_chain_entry(index, outputs)))
    outputs['chains'] = {
        'description': "Every chain's outputs, in index order: index, %s "
                       '(as below, for that chain).'
                       % ', '.join(CHAIN_OUTPUTS),
        'value': entries}
    changes.append('outputs.chains: %d chain(s)' % count)
    return changes


def _data_segments(chain):
    """(name, VLAN) expressions of every segment a data port is on."""
    used = {port.network for port in chain.ports.values()
            if not port.management}
    return [(network.name, network.segmentation_id)
            for node, network in chain.networks.items() if node in used]


def _chain_entry(index, outputs):
    entry = {'index': index}
    for name in CHAIN_OUTPUTS:
        entry[name] = copy.deepcopy((outputs.get(name) or {}).get('value'))
    return entry


class _ChainK:
    """How chain K's copy of a chain 0 value differs."""

    def __init__(self, index, own, segments):
        self.index = index
        self.own = frozenset(own)
        self.suffix = 'chain%d' % index
        self.names = [name for name, _ in segments]
        self.vlans = [vlan for _, vlan in segments if vlan is not None]

    def resource(self, name):
        return '%s_%s' % (name, self.suffix)

    def resource_copy(self, resource):
        copied = self.copy(resource)
        if copied.get('type') == PORT_TYPE:
            # repair_data_ports writes a fixed MAC as value_specs only.
            (copied.get('properties') or {}).pop('value_specs', None)
        if 'depends_on' in copied:
            depends = copied['depends_on']
            copied['depends_on'] = (
                self._renamed(depends) if isinstance(depends, str)
                else [self._renamed(d) for d in depends])
        return copied

    def copy(self, value, key=None):
        """value with chain K's names, VLANs and resources."""
        replaced = self._replacement(value, key)
        if replaced is not None:
            return replaced
        if isinstance(value, dict):
            return self._copy_mapping(value)
        if isinstance(value, list):
            return [self.copy(item) for item in value]
        return value

    def _copy_mapping(self, value):
        if list(value) == ['get_resource']:
            return {'get_resource': self._renamed(value['get_resource'])}
        if list(value) == ['get_attr'] and isinstance(value['get_attr'],
                                                      list):
            first, *rest = value['get_attr']
            return {'get_attr': [self._renamed(first)] + self.copy(rest)}
        return {k: self.copy(v, k) for k, v in value.items()}

    def _replacement(self, value, key):
        if value == STACK_NAME:
            return {'list_join': ['-', [dict(STACK_NAME), self.suffix]]}
        if self._matches(value, self.names, key, None):
            return {'list_join': ['-', [copy.deepcopy(value), self.suffix]]}
        if self._matches(value, self.vlans, key, VLAN_KEYS):
            return {'yaql': {'expression': VLAN_EXPRESSION, 'data': {
                'vlan': copy.deepcopy(value), 'index': self.index,
                'stride': {'get_param': 'chain_vlan_stride'}}}}
        return None

    @staticmethod
    def _matches(value, expressions, key, literal_keys):
        if isinstance(value, dict):
            return value in expressions
        if isinstance(value, bool) or literal_keys and key not in (
                literal_keys):
            return False
        return value in expressions

    def _renamed(self, name):
        return self.resource(name) if name in self.own else name
