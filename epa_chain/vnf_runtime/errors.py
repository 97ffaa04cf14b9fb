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


"""Why the runtime stopped: every failure carries a one-line reason.

The reason is what the console line `EPA-CHAIN FAILED <name>: <reason>`
shows, so it names the file and the field at fault and, where there is
one, the fix.
"""


class RuntimeFailure(Exception):
    """The node cannot be brought up; `reason` says why, in one line."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class MetadataError(RuntimeFailure):
    """A config-drive file is missing or says something unusable."""

    def __init__(self, path, field, message):
        self.path = path
        self.field = field
        self.message = message
        where = '%s: %s' % (path, field) if field else path
        super().__init__('%s: %s' % (where, message))


class SystemSetupError(RuntimeFailure):
    """The guest cannot provide what the engine needs (driver, pages...)."""


class Stopped(Exception):
    """SIGTERM or SIGINT arrived: wind down, this is not a failure."""
