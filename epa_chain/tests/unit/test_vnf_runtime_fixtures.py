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


"""The runtime's config-drive fixtures are what the shipped templates write.

Every preset is realised with Heat's own engine offline and each server's
drive compared, byte for byte, with fixtures/vnf_runtime: the runtime is
tested against exactly what a stack created from the templates delivers.
"""

import os

import testtools
import yaml

from epa_chain.tests.unit import vnf_runtime_fixtures as fixtures
from epa_chain.vnf_runtime import config_drive


def _heat_missing():
    try:
        import heat  # noqa: F401
        import heatclient  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


class TestFixturesMatchTemplates(testtools.TestCase):

    def setUp(self):
        super().setUp()
        missing = _heat_missing()
        if missing:
            self.skipTest('needs openstack-heat (the validation extra) to '
                          'realise the templates: %s' % missing)

    def test_every_preset_has_fixtures(self):
        found = sorted(entry for entry in os.listdir(fixtures.FIXTURES)
                       if os.path.isdir(os.path.join(fixtures.FIXTURES,
                                                     entry)))
        self.assertEqual(fixtures.PRESETS, found)
        self.assertEqual(6, len(found))

    def test_drives_are_what_heat_writes(self):
        for preset in fixtures.PRESETS:
            realised = fixtures.realise(preset)
            on_disk = fixtures.node_dirs(preset)
            self.assertEqual(sorted(realised), sorted(on_disk), preset)
            for node, drive_files in realised.items():
                for relative, text in drive_files.items():
                    path = os.path.join(fixtures.drive_dir(on_disk[node]),
                                        relative)
                    with open(path) as stream:
                        self.assertEqual(text, stream.read(),
                                         '%s %s %s: regenerate with python '
                                         '-m epa_chain.tests.unit.'
                                         'vnf_runtime_fixtures'
                                         % (preset, node, relative))

    def test_testpmd_drives_differ_only_in_the_engine(self):
        for preset in fixtures.PRESETS:
            for node, drive_files in fixtures.realise(
                    preset, 'testpmd').items():
                path = os.path.join(fixtures.drive_dir(
                    fixtures.node_dirs(preset)[node]),
                    config_drive.USER_DATA)
                with open(path) as stream:
                    expected = fixtures.with_engine(stream.read(), 'testpmd')
                actual = yaml.safe_load(drive_files[config_drive.USER_DATA])
                self.assertEqual(expected, actual, '%s %s' % (preset, node))
                role = actual['epa_chain']['role']
                self.assertEqual('prox' if role == 'generator' else 'testpmd',
                                 actual['epa_chain']['engine'])
