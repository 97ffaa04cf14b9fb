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

"""Every setting has one owner: the others read it, tests check the rest.

A template parameter's default that code also needs is read from
chain.yaml (hot.shipped.parameter_default); nested templates get the
value passed and state no default of their own; bounds the guest checks
(chain/node_config.py) are the templates' constraints too.
"""

import os

import testtools
import yaml

from epa_chain.chain import node_config
from epa_chain.cloud import options as cloud_options
from epa_chain.hot import shipped
from epa_chain.tests import repo

# chain.yaml parameter -> the nested template parameter it is passed to.
PASSED_TO_NODES = {'generator_control_port': 'control_port',
                   'generator_latency_bucket_shift': 'latency_bucket_shift'}


def _parameters(relative):
    with open(os.path.join(repo.TEMPLATES, relative)) as stream:
        return yaml.safe_load(stream)['parameters']


class TemplateDefaultsTest(testtools.TestCase):

    def test_nested_templates_state_no_default_of_their_own(self):
        nested = _parameters(os.path.join('lib', 'chain_server.yaml'))
        for name in PASSED_TO_NODES.values():
            self.assertNotIn('default', nested[name], name)

    def test_the_options_read_chain_yamls_defaults(self):
        chain = _parameters('chain.yaml')
        declared = {opt.dest: opt for opt in cloud_options.list_opts()}
        for name in PASSED_TO_NODES:
            self.assertEqual(chain[name]['default'],
                             shipped.parameter_default(name))
            self.assertEqual(chain[name]['default'], declared[name].default)

    def test_the_bucket_bounds_are_the_guests(self):
        low, high = (node_config.MIN_LATENCY_BUCKET_SHIFT,
                     node_config.MAX_LATENCY_BUCKET_SHIFT)
        for relative, name in (
                ('chain.yaml', 'generator_latency_bucket_shift'),
                (os.path.join('lib', 'chain_server.yaml'),
                 'latency_bucket_shift')):
            (constraint,) = _parameters(relative)[name]['constraints']
            self.assertEqual({'min': low, 'max': high}, constraint['range'],
                             relative)

    def test_a_missing_default_names_the_template_and_parameter(self):
        error = self.assertRaises(shipped.PresetError,
                                  shipped.parameter_default, 'vnf_count_x')
        self.assertIn('chain.yaml: parameter vnf_count_x has no default',
                      str(error))
