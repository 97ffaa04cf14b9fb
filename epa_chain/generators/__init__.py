# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and
# limitations under the License.

"""Traffic generators by name: `create('model')`, `create('prox', ...)`.

Each entry names the module and class that implement
`epa_chain.measurement.trial.Generator`; modules are imported only when
asked for, so choosing the model never imports the PROX client.
"""

import importlib

_REGISTRY = {
    # name: (module, class, what it is)
    'model': ('epa_chain.generators.model', 'ModelGenerator',
              'a simulated system under test (no traffic, virtual clock)'),
    'prox': ('epa_chain.prox.generator', 'ProxGenerator',
             'a PROX generator driven over its TCP control port'),
    'local': ('epa_chain.local.generator', 'LocalGenerator',
              'paced AF_PACKET traffic in a network namespace (epa-chain '
              'local)'),
}


def names():
    """Registered generator names, sorted."""
    return sorted(_REGISTRY)


def describe(name):
    """One line saying what generator `name` is."""
    return _REGISTRY[name][2]


def generator_class(name):
    """The class registered as `name`; imports its module."""
    try:
        module_name, class_name, _doc = _REGISTRY[name]
    except KeyError:
        raise ValueError('unknown generator %r: choose one of %s'
                         % (name, ', '.join(names()))) from None
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError('generator %r is not available: %s (module %s)'
                         % (name, error, module_name)) from error
    return getattr(module, class_name)


def create(name, **options):
    """A new generator `name` built with `options`."""
    return generator_class(name)(**options)
