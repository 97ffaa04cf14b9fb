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

"""Nova's own rules for flavor extra specs, run offline.

Key names and values are checked by Nova's extra-spec validator registry
(what `openstack flavor set --property` runs), and their consistency by
nova.virt.hardware.numa_get_constraints (what the scheduler runs). Both come
from the `nova` package of the validation extra.
"""

import functools
import warnings

from epa_chain.hot import memo


@functools.lru_cache(maxsize=None)
def _nova():
    warnings.filterwarnings('ignore')
    from oslo_config import cfg
    # Nova and Heat both register options such as `host` on oslo.config's
    # global CONF, with different definitions. Nova only needs its own
    # defaults here: give it a private ConfigOpts while it imports.
    shared, cfg.CONF = cfg.CONF, cfg.ConfigOpts()
    with memo.resident():
        try:
            from nova.api.validation.extra_specs import validators
            from nova import objects
            from nova.virt import hardware
        finally:
            cfg.CONF = shared
        objects.register_all()
        validators.load_validators()
    return validators, objects, hardware


def invalid_extra_specs(extra_specs):
    """Yield (key, message) for every key or value Nova's API would refuse."""
    validators, _, _ = _nova()
    for key, value in sorted(extra_specs.items()):
        try:
            validators.validate(key, str(value))
        except Exception as exc:
            yield key, _message(exc)


def numa_constraints(vcpus, ram, extra_specs):
    """Nova's reading of the extra specs as a whole.

    Returns (complaint, page_size_kib): complaint is Nova's error text or
    None; page_size_kib the explicit huge page size asked for, or None.
    """
    _, objects, hardware = _nova()
    flavor = objects.Flavor(
        vcpus=vcpus, memory_mb=ram, name='epa-chain', flavorid='epa-chain',
        root_gb=1, ephemeral_gb=0, swap=0,
        extra_specs={k: str(v) for k, v in extra_specs.items()})
    image_meta = objects.ImageMeta.from_dict({'properties': {}})
    try:
        topology = hardware.numa_get_constraints(flavor, image_meta)
    except Exception as exc:
        return _message(exc), None
    sizes = [c.pagesize for c in (topology.cells if topology else [])
             if c.pagesize and c.pagesize > 0]
    return None, (sizes[0] if sizes else None)


def _message(exc):
    text = getattr(exc, 'message', None) or str(exc)
    return str(text).replace('Validation failed; ', '').strip()
