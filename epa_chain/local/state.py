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

"""What a test bed has created, on disk before it is created.

`down` must undo a run that was killed at any point, so every step
records its intent in state.json *before* it acts (the namespace name, the
huge pages about to be added, the process started) and the record is
rewritten atomically. `down` undoes what the record names and, for what
a kill may have left unrecorded, what the prefix's naming rules imply.

Layout of a bed's directory (one per prefix)::

    state.json          this record
    ovs/                the private Open vSwitch (db, pidfiles, logs)
    hugepages/          the hugetlbfs mount OVS and DPDK use
    sockets/            vhost-user sockets
    vnfs/NAME/          config-drive/, run/, console.log, status.json
"""

import json
import os
import time

SCHEMA = 'epa-chain/local-state/1'
DEFAULT_ROOT = '/run/epa-chain-local'


class BedState:
    """The record of one bed (prefix) under `root`."""

    def __init__(self, root, prefix):
        self.root = root
        self.prefix = prefix
        self.directory = os.path.join(root, prefix)
        self.path = os.path.join(self.directory, 'state.json')
        self.data = {'schema': SCHEMA, 'prefix': prefix,
                     'namespaces': [], 'hugepages': None, 'processes': [],
                     'phase': None, 'plan': None, 'created': None}

    # ---- layout -----------------------------------------------------------

    def sub(self, *parts):
        return os.path.join(self.directory, *parts)

    @property
    def switch_dir(self):
        return self.sub('ovs')

    @property
    def hugepage_mount(self):
        return self.sub('hugepages')

    @property
    def socket_dir(self):
        return self.sub('sockets')

    def vnf_dir(self, name):
        return self.sub('vnfs', name)

    # ---- the record -------------------------------------------------------

    def exists(self):
        return os.path.exists(self.path)

    def load(self):
        with open(self.path) as stream:
            data = json.load(stream)
        if data.get('schema') != SCHEMA:
            raise ValueError('%s: schema %r, expected %s (a bed from another '
                             'version: remove it by hand)' % (
                                 self.path, data.get('schema'), SCHEMA))
        self.data = data
        return self

    def save(self):
        os.makedirs(self.directory, exist_ok=True)
        temporary = self.path + '.tmp'
        with open(temporary, 'w') as stream:
            json.dump(self.data, stream, indent=1, sort_keys=True)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, self.path)

    def begin(self, plan_summary):
        os.makedirs(self.directory, exist_ok=True)
        self.data.update(phase='starting', plan=plan_summary,
                         created=time.time(), owner_pid=os.getpid())
        self.save()

    def set(self, **fields):
        self.data.update(fields)
        self.save()

    def add_namespace(self, name):
        if name not in self.data['namespaces']:
            self.data['namespaces'].append(name)
            self.save()

    def add_process(self, name, pid, argv, status=None):
        self.data['processes'].append({'name': name, 'pid': pid,
                                       'argv0': argv[0], 'status': status})
        self.save()

    @property
    def namespaces(self):
        """Recorded namespaces plus those the naming rules imply."""
        implied = ['%s-ovs' % self.prefix, '%s-gen' % self.prefix]
        return list(dict.fromkeys(self.data['namespaces'] + implied))
