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

"""A created stack, seen through the `openstack` command line client.

`epa-chain prove` works after `openstack stack create`, where the user
already has the client and a clouds.yaml entry: it asks the same client
(python-openstackclient with the Heat plugin) rather than adding an SDK
to epa-chain's requirements. Provides what cloud.readiness expects of a
compute service: server_status() and console_output(); the readiness
wait asks them every few seconds, through the client's own library in
this process where it imports (readiness_compute, sdk_compute).

Names and IDs (a stack the user named, servers the cloud listed) always
follow `--`, which ends the client's options: a name starting with `-`
is never read as one.
"""

import dataclasses
import json
import re
import subprocess

from epa_chain.cloud import readiness

SERVER_TYPE = 'OS::Nova::Server'
# The compute API version that shows a server's NUMA topology.
TOPOLOGY_MICROVERSION = '2.78'
# Heat's stack names (heat.engine.stack), or a stack ID.
STACK_NAME = re.compile(r'[A-Za-z][A-Za-z0-9_.-]{0,254}')
STACK_ID = re.compile(r'[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}')
# keystoneauth sets no HTTP timeout: a cloud that accepts the connection
# and never answers would hold the client forever. Every call here is one
# API question (no --wait); the client's start-up and token take seconds.
CALL_TIMEOUT_S = 180


def check_stack_reference(text):
    """ValueError unless `text` is a Heat stack name or ID."""
    if not (STACK_NAME.fullmatch(text) or STACK_ID.fullmatch(text)):
        raise ValueError(
            'stack %r: not a Heat stack name (a letter, then up to 254 '
            'letters, digits, "_", "-" or ".") nor a stack ID' % text)


@dataclasses.dataclass(frozen=True)
class Stack:
    """What prove needs of a stack: its state, outputs, parameters."""

    status: str
    reason: str
    outputs: dict
    # As Heat resolved them, as strings.
    parameters: dict
    # Heat's name for it (the user may have given its ID).
    name: str = ''


class CLIError(RuntimeError):
    """The client failed; the message has its command and stderr."""


class OpenStackCLI:

    def __init__(self, cloud=None, command='openstack', run=subprocess.run):
        if cloud is not None and (not cloud or cloud.startswith('-')):
            raise ValueError('--os-cloud %r: give the name of a clouds.yaml '
                             'entry' % (cloud,))
        # The clouds.yaml entry, or None for the OS_* variables.
        self.cloud = cloud or None
        self.base = [command] + (['--os-cloud', cloud] if cloud else [])
        self._run = run

    def readiness_compute(self):
        """What the readiness wait asks each round: in process where it can.

        The client's start costs seconds of CPU a question (sdk_compute).
        A client given its own `run` (a recording, a wrapper) answers
        every question itself.
        """
        if self._run is not subprocess.run:
            return self
        from epa_chain.cloud import sdk_compute

        return sdk_compute.readiness_compute(self.cloud, self, CLIError)

    def call(self, *args, names=()):
        """Run the client; its stdout. CLIError when it fails.

        `args` are the command and its options; `names` (stacks, servers)
        come after `--`.
        """
        argv = self.base + list(args) + (['--'] + list(names)
                                         if names else [])
        try:
            done = self._run(argv, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             timeout=CALL_TIMEOUT_S)
        except FileNotFoundError:
            raise CLIError('%s: not found; install python-openstackclient '
                           'and python-heatclient' % self.base[0])
        except subprocess.TimeoutExpired:
            raise CLIError('%s failed: no answer in %d s (subprocess killed);'
                           ' is the cloud\'s API reachable and up?'
                           % (' '.join(argv), CALL_TIMEOUT_S))
        if done.returncode != 0:
            raise CLIError('%s failed: %s' % (' '.join(argv),
                                              done.stderr.strip()))
        return done.stdout

    def json(self, *args, names=()):
        return json.loads(self.call(*(args + ('-f', 'json')), names=names))

    def stack(self, stack):
        """The stack as `stack show` gives it, read once."""
        shown = self.json('stack', 'show', names=[stack])
        return Stack(
            status=shown['stack_status'],
            reason=shown.get('stack_status_reason'),
            outputs={item['output_key']: item['output_value']
                     for item in shown.get('outputs') or []},
            parameters=shown.get('parameters') or {},
            name=shown.get('stack_name') or '')

    def created_from(self, stack):
        """(template, environment, files map) the stack was created from.

        As Heat holds them (the files map keyed by the file:// URLs the
        creating client uploaded): what hot.files.from_heat takes.
        """
        template = self.json('stack', 'template', 'show', names=[stack])
        environment = self.json('stack', 'environment', 'show',
                                names=[stack])
        files = self.json('stack', 'file', 'list', names=[stack])
        return template, environment, (files.get('files')
                                       if isinstance(files, dict) else files)

    def stack_servers(self, stack):
        """{server id: `server show`} of every server, nested stacks too."""
        resources = self.json('stack', 'resource', 'list', '--nested-depth',
                              '5', '--filter', 'type=' + SERVER_TYPE,
                              names=[stack])
        servers = {}
        for item in resources:
            server_id = item.get('physical_resource_id')
            # Heat's type filter matches a prefix: OS::Nova::ServerGroup
            # comes too.
            if server_id and item.get('resource_type') == SERVER_TYPE:
                servers[server_id] = self.json('server', 'show',
                                               names=[server_id])
        return servers

    def server_topology(self, server_id):
        """`server show --topology` at compute API 2.78.

        The flavor with its extra specs, and the NUMA topology Nova gave
        the server (its host CPUs and page size to admins).
        """
        return self.json('--os-compute-api-version', TOPOLOGY_MICROVERSION,
                         'server', 'show', '--topology', names=[server_id])

    def image_properties(self, image_id):
        """The image's hw_* properties (the EPA audit's other input)."""
        from epa_chain.cloud import epa_audit

        shown = self.json('image', 'show', names=[image_id])
        return epa_audit.hw_properties(shown.get('properties'))

    def server_status(self, server_id):
        shown = self.json('server', 'show', names=[server_id])
        fault = shown.get('fault') or {}
        return shown.get('status'), (fault.get('message')
                                     if isinstance(fault, dict) else fault)

    def hard_reboot(self, server_id):
        try:
            self.call('server', 'reboot', '--hard', names=[server_id])
        except CLIError as exc:
            raise readiness.RebootFailed(str(exc))

    def console_output(self, server_id):
        try:
            return self.call('console', 'log', 'show', names=[server_id])
        except CLIError as exc:
            # Nova's 409 (building) and 404 (no log yet): ask again later.
            raise readiness.ConsoleUnavailable(str(exc))
