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

"""Where the tests find the source tree's artefacts.

Tests read the shipped templates, presets, TOSCA files and scripts from
the checkout they run in, never from an installed copy.
"""

import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TEMPLATES = os.path.join(ROOT, 'templates')
CHAIN = os.path.join(TEMPLATES, 'chain.yaml')
TOSCA = os.path.join(ROOT, 'tosca')
FIXTURES = os.path.join(ROOT, 'epa_chain', 'tests', 'fixtures')
# The presets templates/presets/ ships; tests check the directory holds
# exactly these, so a new preset cannot slip past the tests.
PRESETS = ['pvp-unidir', 'pvp-bidir', 'pvvp-unidir', 'pvvp-bidir',
           'vecpe-unidir', 'vecpe-bidir']
