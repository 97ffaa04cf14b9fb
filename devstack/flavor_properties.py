#!/usr/bin/env python3
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

"""Print the extra specs chain.yaml's defaults give a stack's VNF flavor.

    flavor_properties.py [TEMPLATE_DIR]

One line of `hw:key=value` words, what `openstack flavor create
--property` takes: devstack's EPA_CHAIN_FLAVOR_PROPERTIES when left
empty (lib/epa_chain), so that the flavors Tempest boots carry what
`openstack stack create` would give. The specs are not written here:
templates/chain.yaml's vnf_flavor and lib/epa_flavor.yaml's extra_specs
are evaluated with chain.yaml's defaults (get_param, str_replace,
map_merge, if and its conditions: what that template uses). Only
PyYAML: devstack runs it before epa-chain is installed anywhere.
TEMPLATE_DIR defaults to the templates/ next to devstack/.
"""

import os
import sys

import yaml

FLAVOR = 'vnf_flavor'


class Unsupported(ValueError):
    """A HOT function this evaluator does not know."""


def evaluate(value, scope):
    """A HOT value with `scope`'s parameters and conditions resolved."""
    if isinstance(value, list):
        return [evaluate(item, scope) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1 or next(iter(value)) not in FUNCTIONS:
        return {key: evaluate(item, scope) for key, item in value.items()}
    name, args = next(iter(value.items()))
    return FUNCTIONS[name](args, scope)


def _str_replace(args, scope):
    text = str(evaluate(args['template'], scope))
    for key, item in evaluate(args['params'], scope).items():
        text = text.replace(key, str(item))
    return text


def _map_merge(args, scope):
    merged = {}
    for item in evaluate(args, scope):
        merged.update(item)
    return merged


def _if(args, scope):
    condition, true, false = args
    return evaluate(true if _condition(condition, scope) else false, scope)


def _condition(condition, scope):
    if isinstance(condition, str):
        return _condition(scope['conditions'][condition], scope)
    return bool(evaluate(condition, scope))


FUNCTIONS = {
    'get_param': lambda name, scope: scope['parameters'][name],
    'str_replace': _str_replace,
    'map_merge': _map_merge,
    'if': _if,
    'equals': lambda args, scope: len({
        str(item) for item in evaluate(args, scope)}) == 1,
    'not': lambda arg, scope: not _condition(arg, scope),
}


def _load(path):
    with open(path) as stream:
        return yaml.safe_load(stream)


def flavor_specs(directory):
    """{extra spec: value} of chain.yaml's vnf_flavor with its defaults."""
    chain = _load(os.path.join(directory, 'chain.yaml'))
    defaults = {name: definition.get('default') for name, definition in
                chain['parameters'].items()}
    resource = chain['resources'][FLAVOR]
    nested = _load(os.path.join(directory, resource['type']))
    scope = {'parameters': evaluate(resource.get('properties') or {},
                                    {'parameters': defaults}),
             'conditions': nested.get('conditions') or {}}
    flavor = next(item for item in nested['resources'].values()
                  if item['type'] == 'OS::Nova::Flavor')
    return evaluate(flavor['properties']['extra_specs'], scope)


def main(argv):
    directory = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        'templates')
    try:
        specs = flavor_specs(directory)
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError,
            StopIteration) as exc:
        print('%s: cannot read the flavor\'s extra specs from chain.yaml: '
              '%s: %s' % (directory, type(exc).__name__, exc),
              file=sys.stderr)
        return 1
    print(' '.join('%s=%s' % item for item in specs.items()))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
