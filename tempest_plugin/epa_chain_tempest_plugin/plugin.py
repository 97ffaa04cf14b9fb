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

"""The entry point Tempest finds in the `tempest.test_plugins` group."""

import os

from tempest import config
from tempest.test_discover import plugins

from epa_chain_tempest_plugin import config as epa_config

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
SCENARIOS_DIR = os.path.join(PACKAGE_DIR, 'tests', 'scenario')
# The directory holding the package: test ids are module paths from there
# (epa_chain_tempest_plugin.tests.scenario.test_...).
TOP_LEVEL_DIR = os.path.dirname(PACKAGE_DIR)


class EpaChainTempestPlugin(plugins.TempestPlugin):
    """epa-chain's benchmark scenarios and their options."""

    def load_tests(self):
        # Only tests/scenario/: the unit tests next to it (tests/unit/)
        # must not be discovered by Tempest (they fake its config).
        return SCENARIOS_DIR, TOP_LEVEL_DIR

    def register_opts(self, conf):
        config.register_opt_group(conf, epa_config.service_available_group,
                                  epa_config.ServiceAvailableGroup)
        config.register_opt_group(conf, epa_config.epa_chain_group,
                                  epa_config.EpaChainGroup)

    def get_opt_lists(self):
        return [(epa_config.epa_chain_group.name, epa_config.EpaChainGroup),
                (epa_config.service_available_group.name,
                 epa_config.ServiceAvailableGroup)]
