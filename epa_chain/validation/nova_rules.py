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

Loading Nova takes most of a second. `loaded_aside` loads it in a process
of its own, on another CPU, while this one loads Heat's engine: within
it, this process and every process forked from it ask that one, which
runs the same Nova code on the same values.
"""

import contextlib
import functools
import multiprocessing
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


# While loaded_aside: (connection to the Nova process, its lock).
_aside = None


@contextlib.contextmanager
def loaded_aside():
    """Nova loaded and asked in a forked process while the block runs.

    Forked before anything heavy is loaded here; processes forked inside
    the block ask it too, one question at a time (its lock).
    """
    global _aside
    context = multiprocessing.get_context('fork')
    ours, theirs = context.Pipe()
    process = context.Process(target=_serve, args=(theirs,), daemon=True)
    process.start()
    theirs.close()
    _aside = ours, context.Lock()
    try:
        yield
    finally:
        _aside = None
        try:
            ours.send(None)
        except OSError:
            pass    # it is gone already; its end was said when asked
        ours.close()
        process.join()


def _serve(connection):
    try:
        _nova()
    except Exception as exc:
        # Nova missing or broken: each question gets what loading it
        # here would have raised.
        failed = exc
    else:
        failed = None
    asked = {'invalid_extra_specs': _invalid_extra_specs,
             'numa_constraints': _numa_constraints}
    while True:
        try:
            question = connection.recv()
        except EOFError:
            return
        if question is None:
            return
        name, args = question
        try:
            if failed is not None:
                raise failed
            answer = True, asked[name](*args)
        except Exception as exc:
            answer = False, exc
        connection.send(answer)


def _asked(name, local, *args):
    aside = _aside
    if aside is None:
        return local(*args)
    connection, lock = aside
    with lock:
        connection.send((name, args))
        answered, answer = connection.recv()
    if not answered:
        raise answer
    return answer


def invalid_extra_specs(extra_specs):
    """[(key, message)] for every key or value Nova's API would refuse."""
    return _asked('invalid_extra_specs', _invalid_extra_specs,
                  extra_specs)


def numa_constraints(vcpus, ram, extra_specs):
    """Nova's reading of the extra specs as a whole.

    Returns (complaint, page_size_kib): complaint is Nova's error text or
    None; page_size_kib the explicit huge page size asked for, or None.
    """
    return _asked('numa_constraints', _numa_constraints, vcpus, ram,
                  extra_specs)


def _invalid_extra_specs(extra_specs):
    return list(_refused(extra_specs))


def _refused(extra_specs):
    validators, _, _ = _nova()
    for key, value in sorted(extra_specs.items()):
        try:
            validators.validate(key, str(value))
        except Exception as exc:
            yield key, _message(exc)


def _numa_constraints(vcpus, ram, extra_specs):
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
