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

"""Traffic generators by name: the one list of generator kinds.

Owns the registry: each kind names the module and class that implement
`epa_chain.measurement.trial.Generator`, says what it is and whether
`epa-chain local` runs it on its bed. `epa-chain local --generator`,
the local plan and `epa-chain measure` take their choices from here.
Modules are imported only when asked for, so choosing the model never
imports the PROX client.

    generator = create('model', ndr_fps=1e6)

Modules:

- `model`: ModelGenerator, a simulated system under test (virtual clock).
- `options`: the options of each generator `epa-chain measure` builds,
  declared once and typed at the edge.

The others live with what they drive: 'prox' in epa_chain/prox/generator.py
(the bed's PROX in epa_chain/local/prox_generator.py), 'afpacket' in
epa_chain/local/afpacket.py.
"""

import dataclasses
import importlib
import typing
import warnings


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of generator."""

    name: str
    module: str
    cls: str
    what: str
    #: `epa-chain local` can run it on its bed (--generator NAME)
    local: bool = False


KINDS = (
    Kind('model', 'epa_chain.generators.model', 'ModelGenerator',
         'a simulated system under test (no traffic, virtual clock)'),
    Kind('prox', 'epa_chain.prox.generator', 'ProxGenerator',
         'a PROX generator driven over its TCP control port', local=True),
    Kind('afpacket', 'epa_chain.local.afpacket', 'AfPacketGenerator',
         'paced AF_PACKET traffic in a network namespace (epa-chain '
         'local)', local=True),
)
_BY_NAME = {kind.name: kind for kind in KINDS}
#: old name -> name, kept for a release with a DeprecationWarning
DEPRECATED = {'local': 'afpacket'}


def names():
    """Registered generator names, sorted (deprecated aliases left out)."""
    return sorted(_BY_NAME)


def local_kinds():
    """The kinds `epa-chain local` runs on its bed, in registry order."""
    return tuple(kind.name for kind in KINDS if kind.local)


def kind(name, warn=True):
    """The Kind called `name` (or a deprecated alias of it); ValueError."""
    if name in DEPRECATED:
        if warn:
            warnings.warn('generator %r is %r now' % (
                name, DEPRECATED[name]), DeprecationWarning, stacklevel=3)
        name = DEPRECATED[name]
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise ValueError('unknown generator %r: choose one of %s'
                         % (name, ', '.join(names()))) from None


def known(name):
    """Whether `name` is a generator kind or a deprecated alias of one."""
    return name in _BY_NAME or name in DEPRECATED


def describe(name):
    """One line saying what generator `name` is."""
    return kind(name).what


def generator_class(name) -> typing.Type:
    """The class registered as `name`; imports its module."""
    found = kind(name)
    return getattr(importlib.import_module(found.module), found.cls)


def create(name, **options):
    """A new generator `name` built with `options`."""
    return generator_class(name)(**options)
