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

"""The chain on a real single-host OpenStack (tools/single-host-cloud).

Run with ``tox -e cloud``: root, tens of minutes, the distribution's
OpenStack packages installed and started on this host, then taken down.

images    the VNF image the test uploads: built once per content.
host      what the test reads off the host: listeners, file modes,
          processes.
"""
