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

"""Where the shipped templates are: a source checkout or the install."""

import os
import site
import sys

TEMPLATE = 'chain.yaml'


def template_dir_candidates():
    """templates/ of a source checkout, then the installed copies.

    setup.cfg installs the templates as data files: under the environment
    (sys.prefix/share), or the user base for `pip install --user`.
    """
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    return [
        os.path.join(package_root, 'templates'),
        os.path.join(sys.prefix, 'share', 'epa-chain', 'templates'),
        os.path.join(site.getuserbase(), 'share', 'epa-chain', 'templates'),
    ]


def template_dir():
    """The first candidate holding chain.yaml, or None."""
    for candidate in template_dir_candidates():
        if os.path.isfile(os.path.join(candidate, TEMPLATE)):
            return candidate
    return None


def presets(directory):
    """Preset names (file stems) in directory/presets, sorted."""
    folder = os.path.join(directory, 'presets')
    if not os.path.isdir(folder):
        return []
    return sorted(name[:-5] for name in os.listdir(folder)
                  if name.endswith('.yaml'))
