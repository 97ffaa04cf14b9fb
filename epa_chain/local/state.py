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
rewritten atomically. `down` (teardown.py) undoes what the record names,
and what the prefix's naming rules imply if the record is unreadable.

Layout of a bed's directory (one per prefix)::

    state.json          this record
    ovs/                the private Open vSwitch (db, pidfiles, logs)
    hugepages/          the hugetlbfs mount OVS and DPDK use
    sockets/            vhost-user sockets
    vnfs/NAME/          config-drive/, run/, console.log, status.json
    generator/          the PROX generator's configuration and logs

`down` (teardown.py) removes these entries and nothing else.
"""

import json
import os
import stat
import time

from epa_chain.local import names

SCHEMA = 'epa-chain/local-state/1'
DEFAULT_ROOT = '/run/epa-chain-local'
RECORD = 'state.json'
# Everything a bed creates in its directory: what `down` removes.
LAYOUT = frozenset((RECORD, RECORD + '.tmp', 'ovs', 'hugepages', 'sockets',
                    'vnfs', 'generator', 'generators'))


class BedState:
    """The record of one bed (prefix) under `root`."""

    def __init__(self, root, prefix):
        self.root = root
        self.prefix = prefix
        self.directory = os.path.join(root, prefix)
        self.path = os.path.join(self.directory, RECORD)
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

    def foreign(self):
        """What the bed's directory holds that no bed makes (sorted)."""
        try:
            found = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return sorted(name for name in found if name not in LAYOUT)

    def load(self):
        """Read the record; ValueError naming the file if it is not one.

        A record a kill cut short may lack fields: they keep their empty
        defaults, and malformed process entries are dropped, so that
        `down` undoes what the rest names.
        """
        data = _read_record(self.path)
        if not isinstance(data, dict) or data.get('schema') != SCHEMA:
            raise ValueError('%s: schema %r, expected %s (a bed from another '
                             'version: remove it by hand)' % (
                                 self.path, data.get('schema') if isinstance(
                                     data, dict) else None, SCHEMA))
        self.data.update(data)
        self.data['namespaces'] = [
            name for name in _list(data.get('namespaces'))
            if name in names.namespaces(self.prefix)]
        self.data['processes'] = [
            process for process in _list(data.get('processes'))
            if _is_process(process)]
        for key in ('hugepages', 'plan', 'versions'):
            if not isinstance(self.data.get(key), (dict, type(None))):
                self.data[key] = None
        return self

    def save(self):
        temporary = self.path + '.tmp'
        with open(temporary, 'w') as stream:
            json.dump(self.data, stream, indent=1, sort_keys=True)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, self.path)

    def begin(self, plan_summary):
        # Mode 0755 whatever the umask: names.py refuses a state root others
        # may write; its parent exists (checked there too).
        for path in (self.root, self.directory):
            try:
                os.mkdir(path, 0o755)
            except FileExistsError:
                pass
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
        return list(dict.fromkeys(self.data['namespaces'] +
                                  names.namespaces(self.prefix)))


def _list(value):
    return value if isinstance(value, list) else []


def _is_process(process):
    return (isinstance(process, dict) and
            isinstance(process.get('name'), str) and
            type(process.get('pid')) is int and process['pid'] > 1 and
            isinstance(process.get('argv0'), (str, type(None))) and
            isinstance(process.get('status'), (str, type(None))))


# A record is a few kB: anything far larger is not one.
MAX_RECORD_BYTES = 1024 * 1024


def _read_record(path):
    """The JSON of state.json; ValueError naming it if it is not a record.

    A FIFO or device there would block or never end `down` and `status`:
    only a regular file is read, and only so much of it.
    """
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise ValueError('%s: cannot read the bed\'s record: %s' % (
            path, error.strerror or error)) from None
    with os.fdopen(handle, 'rb') as stream:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            raise ValueError('%s: not a regular file, so not a bed\'s '
                             'record; remove it by hand' % path)
        data = stream.read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError('%s: larger than a bed\'s record can be; remove '
                         'it by hand' % path)
    try:
        return json.loads(data.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ValueError('%s: not a bed\'s record (%s); remove it by '
                         'hand' % (path, type(error).__name__)) from None
