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

"""What the single-host cloud's `openstack` client answered, replayed.

fixtures/preflight/single-host-cloud.json holds the client's JSON for
each command preflight asks, recorded from tools/single-host-cloud;
ReplayedClient stands in for subprocess.run under OpenStackCLI, so the
parsing of that JSON is under test too. A test changes one answer to
make a variant (a host with PCPU, a non-admin user).
"""

import json
import os
import subprocess

from epa_chain.tests import repo

RECORDED = os.path.join(repo.FIXTURES, 'preflight', 'single-host-cloud.json')
# The recorded cloud's one compute host in Placement.
PROVIDER = '2c5de283-effb-4318-a19f-087e76c60f0e'
INVENTORY = 'resource provider inventory list -f json -- ' + PROVIDER


def answers():
    """{the client's arguments after --os-cloud: answer}, a fresh copy."""
    with open(RECORDED) as stream:
        return json.load(stream)['answers']


class ReplayedClient:
    """subprocess.run for OpenStackCLI: answers by argument text."""

    def __init__(self, answers):
        self.answers = answers
        self.asked = []

    def __call__(self, argv, **kwargs):
        self.asked.append(argv)
        key = ' '.join(argv[3:])
        answer = self.answers.get(key)
        if answer is None and key.startswith(
                'network list --provider-network-type'):
            # No network holds that VLAN.
            answer = {'returncode': 0, 'stdout': [], 'stderr': ''}
        if answer is None:
            return subprocess.CompletedProcess(
                argv, 2, '', 'openstack: %r is not an openstack command'
                % key)
        stdout = ('' if answer['stdout'] is None
                  else json.dumps(answer['stdout']))
        return subprocess.CompletedProcess(argv, answer['returncode'],
                                           stdout, answer['stderr'])
