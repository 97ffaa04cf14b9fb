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

"""The TOSCA presets, translated and realised once per test process.

Translating takes tosca-parser and heat-translator about 0.15 s a
template, realising a stack Heat's engine about 0.1 s after its ~4 s
start: the test modules share the results through these caches.
"""

import atexit
import functools
import os
import shutil
import tempfile
import unittest

from epa_chain.tests import repo

REPO = repo.ROOT
TOSCA = repo.TOSCA
TEMPLATES = repo.TEMPLATES
PRESETS = repo.PRESETS


def require_translator():
    """Skip the calling test class when the translation extra is absent."""
    try:
        import toscaparser  # noqa: F401
        import translator  # noqa: F401
    except ImportError as exc:
        raise unittest.SkipTest('tosca-parser/heat-translator not installed '
                                '(the translation extra): %s' % exc)


def service_template(preset):
    """tosca/pvp.yaml for pvp-bidir: the preset's name up to the dash."""
    return os.path.join(TOSCA, preset.rsplit('-', 1)[0] + '.yaml')


def inputs_file(preset):
    return os.path.join(TOSCA, 'presets', preset + '.yaml')


@functools.lru_cache(maxsize=None)
def _workdir():
    path = tempfile.mkdtemp(prefix='epa-chain-tosca-')
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.lru_cache(maxsize=None)
def translated(preset, chain_count=1):
    """(Translation, path of the written HOT) for a TOSCA preset.

    chain_count other than 1 is added to the preset's inputs.
    """
    from epa_chain.tosca import translate

    inputs = inputs_file(preset)
    name = preset
    if chain_count != 1:
        name = '%s-%d-chains' % (preset, chain_count)
        inputs = os.path.join(_workdir(), name + '-inputs.yaml')
        with open(inputs_file(preset)) as source, open(inputs, 'w') as f:
            f.write(source.read() + '\nchain_count: %d\n' % chain_count)
    result = translate.translate(service_template(preset), inputs)
    path = os.path.join(_workdir(), name + '.yaml')
    with open(path, 'w') as f:
        f.write(result.to_yaml())
    return result, path


@functools.lru_cache(maxsize=None)
def realised_translation(preset, chain_count=1):
    return realise(translated(preset, chain_count)[1], ())


@functools.lru_cache(maxsize=None)
def realised_hot_preset(preset, chain_count=1):
    environments = [os.path.join(TEMPLATES, 'presets', preset + '.yaml')]
    if chain_count != 1:
        environments.append(os.path.join(
            _workdir(), 'chain-count-%d.yaml' % chain_count))
        with open(environments[-1], 'w') as f:
            f.write('parameters:\n  chain_count: %d\n' % chain_count)
    return realise(os.path.join(TEMPLATES, 'chain.yaml'),
                   tuple(environments))


def realise(template, environments):
    """A template realised with Heat's engine, as validation does."""
    from epa_chain.hot import files
    from epa_chain.hot import offline
    from epa_chain.hot import realise as realiser

    template_set = files.load(template, list(environments))
    stack = offline.parse_stack(template_set)
    stack.validate()
    return realiser.realise(stack, template_set)
