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


"""Tell the world how the node is doing: a console line and a status file.

The console (/dev/console: the serial log `openstack console log show`
returns) gets exactly one verdict line per outcome, in the format of
chain/readiness.py (what waits for the node reads it with that module),
plus lower-case `epa-chain:` notes (engine restarts, learning problems).
The status file (/run/epa-chain/status.json) says the same for programs
on the guest, with the details: ports, cores, command, restarts.
"""

import datetime
import json
import os
import sys

from epa_chain.chain import readiness as verdict

STATUS_FILE = '/run/epa-chain/status.json'
CONSOLE = '/dev/console'
SCHEMA = 'epa-chain/vnf-status/1'
STATES = ('starting', 'ready', 'restarting', 'failed', 'stopped')


class Reporter:

    def __init__(self, console=CONSOLE, status_file=STATUS_FILE,
                 stderr=None, now=None):
        self.console = console
        self.status_file = status_file
        self.stderr = stderr or sys.stderr
        self.now = now or (lambda: datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec='seconds'))
        self.status = {'schema': SCHEMA, 'state': 'starting'}

    def update(self, **fields):
        self.status.update(fields)
        self.status['updated'] = self.now()
        if not self.status_file:
            return
        directory = os.path.dirname(self.status_file)
        if directory:
            os.makedirs(directory, exist_ok=True)
        temporary = self.status_file + '.tmp'
        with open(temporary, 'w') as stream:
            json.dump(self.status, stream, indent=2, sort_keys=True)
            stream.write('\n')
        os.replace(temporary, self.status_file)

    def ready(self, name, engine, **fields):
        self.update(state='ready', name=name, engine=engine, reason=None,
                    **fields)
        self._console(verdict.ready_line(name, engine))

    def boot(self, name, timeline):
        """Where the guest's boot went (boot_timeline), before READY."""
        self.update(boot_timeline=timeline)
        self._console(verdict.boot_line(name, timeline))

    def failed(self, name, reason, **fields):
        self.update(state='failed', name=name, reason=reason, **fields)
        self._console(verdict.failed_line(name, reason))

    def note(self, message):
        self._console('epa-chain: ' + ' '.join(str(message).split()))

    def _console(self, line):
        self.stderr.write(line + '\n')
        self.stderr.flush()
        if not self.console:
            return
        try:
            with open(self.console, 'a') as stream:
                stream.write(line + '\n')
        except OSError as exc:
            self.stderr.write('epa-chain: cannot write to %s: %s\n'
                              % (self.console, exc))
