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


"""Reads and writes under a sysfs root, so that tests can use a fake tree.

Every path is relative to the root ('class/net/eth1/address'); the root is
/sys on a real guest and a temporary directory in the tests.
"""

import os


class Sysfs:

    def __init__(self, root='/sys'):
        self.root = root

    def path(self, relative):
        return os.path.join(self.root, relative)

    def exists(self, relative):
        return os.path.exists(self.path(relative))

    def read(self, relative, default=None):
        try:
            with open(self.path(relative)) as stream:
                return stream.read().strip()
        except OSError:
            if default is not None:
                return default
            raise

    def write(self, relative, value):
        # sysfs attributes take one write() each; no buffering games.
        with open(self.path(relative), 'w') as stream:
            stream.write(value)

    def listdir(self, relative):
        try:
            return sorted(os.listdir(self.path(relative)))
        except OSError:
            return []

    def link_name(self, relative):
        """The last component of a symlink's target (a driver's name)."""
        try:
            return os.path.basename(os.readlink(self.path(relative)))
        except OSError:
            return None

    def realpath(self, relative):
        return os.path.realpath(self.path(relative))
