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

"""Resolve a whole stack with Heat's own functions, without creating it.

Heat resolves get_attr only for resources that exist. To see what a stack
*would* hand its servers (the user_data with every neighbour's MAC, say),
each resource is given, in Heat's dependency order, a synthetic ID and
synthetic attributes from a `Synthesiser`; Heat's own code then evaluates
every intrinsic function. Nested template resources are parsed by Heat
from their resolved properties and strictly validated with those values,
as the engine does at create time, then realised recursively; their
outputs become the parent resource's attributes.
"""

import dataclasses
import typing
import uuid

from epa_chain.hot import nested as nested_mod
from epa_chain.hot import offline

GROUP_TYPE = 'OS::Heat::ResourceGroup'
_NAMESPACE = uuid.UUID('5a0e3d1c-6f43-4f9c-9a57-6b0c2c7e4a11')


class RealisationError(Exception):
    """Heat rejected a resource once real values flowed into it."""

    def __init__(self, path, template, error):
        self.path = tuple(path)
        self.template = template
        self.error = error
        super().__init__('%s (%s): %s' % ('.'.join(path), template, error))


@dataclasses.dataclass
class RealisedResource:
    """A resource as the cloud would see it: resolved properties, IDs."""

    path: typing.Tuple[str, ...]
    type: str
    template: str
    properties: dict
    given: typing.FrozenSet[str]
    resource_id: str
    attributes: dict
    metadata: dict

    @property
    def name(self):
        return self.path[-1]

    @property
    def parent(self):
        return self.path[:-1]

    @property
    def dotted(self):
        return '.'.join(self.path)


@dataclasses.dataclass
class Realisation:
    resources: typing.Dict[typing.Tuple[str, ...], RealisedResource]
    outputs: dict
    # The top-level template (as shown) and its parameters' values.
    template: str = ''
    parameters: dict = dataclasses.field(default_factory=dict)
    # Each parameter's declared type (number, string, json, ...).
    parameter_types: dict = dataclasses.field(default_factory=dict)

    def of_type(self, *types):
        return [r for r in self.resources.values() if r.type in types]

    def get(self, path):
        return self.resources.get(tuple(path))


class Synthesiser:
    """Invents the IDs and attributes a cloud would return.

    MACs come from Neutron's default base (fa:16:3e) unless a port fixes
    its own; addresses come from TEST-NET-1 (RFC 5737).
    """

    def __init__(self):
        self._macs = 0
        self._addresses = 0

    def resource_id(self, path):
        return str(uuid.uuid5(_NAMESPACE, '/'.join(path)))

    def attributes(self, res_type, path, properties, resource_id):
        make = {
            'OS::Neutron::Port': self._port,
            'OS::Nova::Server': self._server,
        }.get(res_type)
        values = {'show': dict(properties, id=resource_id)}
        if 'name' in properties:
            values['name'] = properties['name']
        if make:
            values.update(make(properties, resource_id))
        return values

    def next_mac(self):
        self._macs += 1
        return 'fa:16:3e:%02x:%02x:%02x' % (
            (self._macs >> 16) & 0xff, (self._macs >> 8) & 0xff,
            self._macs & 0xff)

    def next_address(self):
        self._addresses += 1
        return '192.0.2.%d' % (self._addresses % 254 + 1)

    def _port(self, properties, resource_id):
        mac = fixed_mac(properties) or self.next_mac()
        return {
            'mac_address': mac,
            'fixed_ips': [{'ip_address': self.next_address(),
                           'subnet_id': resource_id}],
            'network_id': properties.get('network'),
            'port_security_enabled': properties.get('port_security_enabled'),
        }

    def _server(self, properties, resource_id):
        address = self.next_address()
        return {'first_address': address, 'networks': {},
                'addresses': {}, 'accessIPv4': address}


def fixed_mac(port_properties):
    """The MAC an OS::Neutron::Port's properties fix, or None.

    Heat puts value_specs into Neutron's port body over the properties, so
    a mac_address there (how the shipped templates fix MACs: a false
    two-argument `if` on mac_address crashes Heat 19) wins over the
    mac_address property.
    """
    specs = port_properties.get('value_specs') or {}
    return specs.get('mac_address') or (
        port_properties.get('mac_address') or None)


def realise(stack, template_set, synthesiser=None):
    """Realise a parsed stack; return every resource and the outputs."""
    synthesiser = synthesiser or Synthesiser()
    found = {}
    top = template_set.display_path(template_set.template_path)
    _realise_stack(stack, (), top, template_set, synthesiser, found)
    outputs = {}
    for name in stack.outputs:
        try:
            outputs[name] = stack.outputs[name].get_value()
        except Exception as exc:
            raise RealisationError(('outputs', name), top, exc)
    # Without Heat's pseudo parameters (OS::stack_name, ...).
    names = [name for name in stack.parameters if '::' not in name]
    parameters = {name: stack.parameters[name] for name in names}
    types = {name: stack.parameters.params[name].schema.type
             for name in names}
    return Realisation(found, outputs, top, parameters, types)


def _realise_stack(stack, prefix, template, template_set, synthesiser,
                   found):
    h = offline.heat()
    for res in _creation_order(stack):
        path = prefix + (res.name,)
        try:
            if isinstance(res, h.stack_resource.StackResource):
                attributes, properties = _realise_nested(
                    res, path, template_set, synthesiser, found)
                resource_id = synthesiser.resource_id(path)
                if res.type() == GROUP_TYPE:
                    attributes = _group_attributes(path, found)
            else:
                res.properties.validate(with_value=True)
                properties = _resolved_properties(res)
                resource_id = synthesiser.resource_id(path)
                attributes = synthesiser.attributes(
                    res.type(), path, properties, resource_id)
            metadata = res.t.metadata() or {}
        except RealisationError:
            raise
        except Exception as exc:
            raise RealisationError(path, template, exc)
        _mark_created(res, resource_id, attributes, h)
        # What Heat's legacy create path does after each resource: publish
        # its reference ID and attributes to the functions that use them.
        h.stk_defn.update_resource_data(
            stack.defn, res.name, res.node_data(for_outputs=True))
        found[path] = RealisedResource(
            path=path, type=res.type(), template=template,
            properties=properties,
            given=frozenset(res.t._properties or {}),
            resource_id=resource_id, attributes=attributes,
            metadata=metadata)


def _creation_order(stack):
    """Heat's dependency order, ties broken by name: reproducible IDs."""
    graph = {res: set(requires)
             for res, requires in stack.dependencies.graph().items()}
    while graph:
        ready = sorted((r for r, req in graph.items() if not req),
                       key=lambda r: r.name)
        if not ready:
            raise RuntimeError('circular dependency among %s'
                               % sorted(r.name for r in graph))
        res = ready[0]
        del graph[res]
        for requires in graph.values():
            requires.discard(res)
        yield res


def _realise_nested(res, path, template_set, synthesiser, found):
    params = res.child_params()
    nested = res._parse_nested_stack('-'.join(path), res.child_template(),
                                     params)
    template = template_set.display_path(res.template_url)
    # Heat validates nested stacks without their parent's values at
    # validate time; at create time it has them. Do the create-time check.
    nested.strict_validate = True
    strict_key = nested_mod.key(
        nested.name, res.template_url, res.child_template(), dict(params),
        nested.env.user_env_as_dict(), nested.nested_depth, True,
        files=nested.t.files)
    try:
        offline.NESTED.validate(strict_key, nested.validate)
    except Exception as exc:
        raise RealisationError(path, template, exc)
    _realise_stack(nested, path, template, template_set, synthesiser, found)
    outputs = {}
    for name in nested.outputs:
        try:
            outputs[name] = nested.outputs[name].get_value()
        except Exception as exc:
            raise RealisationError(path + ('outputs', name), template, exc)
    return outputs, dict(params)


def _group_attributes(path, found):
    """A ResourceGroup's attributes, from its realised members.

    As Heat answers get_attr on a group: `resource.N` is member N's
    attributes (a template member's are its outputs), `refs` and
    `refs_map` its members' IDs, and any other name the list of that
    attribute over the members, in index order.
    """
    members = sorted((res for key, res in found.items()
                      if key[:-1] == path), key=lambda res: int(res.name))
    attributes = {'refs': [m.resource_id for m in members],
                  'refs_map': {m.name: m.resource_id for m in members}}
    for member in members:
        attributes['resource.' + member.name] = member.attributes
        for name, value in member.attributes.items():
            attributes.setdefault(name, []).append(value)
    return attributes


def _resolved_properties(res):
    return {key: res.properties[key] for key in res.properties}


def _mark_created(res, resource_id, attributes, h):
    def get_attribute(key, *path):
        if key not in attributes and key not in res.attributes_schema:
            raise h.exception.InvalidTemplateAttribute(resource=res.name,
                                                       key=key)
        value = attributes.get(key)
        if value is None:
            # An attribute the synthesiser has no model for: say so in the
            # value instead of pretending to know it.
            value = '<%s.%s>' % (res.name, key)
        return h.attributes.select_from_attribute(value, path)

    res.resource_id = resource_id
    res.action, res.status = res.CREATE, res.COMPLETE
    res.get_attribute = get_attribute
    res.get_reference_id = lambda: resource_id
