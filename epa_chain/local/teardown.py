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

"""Take a bed down: what its record names, inside its directory only.

`down` runs as root on a shared host, after a run that may have been
killed at any point, on a directory the command line named (checked by
names.py). What it touches:

- a process only if the bed's record names it (state.json, or the
  status.json of a VNF runtime it names, for that runtime's engine) or it
  runs in one of the bed's namespaces, and in every case only while its
  command line still names the bed's directory as a path
  (host.names_directory) and starts with the recorded program where one
  was recorded: a pid reused since, or a process that merely mentions the
  path, is left alone; a process that names the directory but no record
  names is reported, not stopped;
- the namespaces its record names (PREFIX-ovs, PREFIX-gen), or those the
  prefix implies when the record is there but unreadable; never without a
  record (`up` records each before creating it: one that exists without
  may belong to a bed of the same prefix under another state root);
- in the bed's directory, only the entries a bed creates (state.LAYOUT),
  the record last; a directory without a record that holds anything else
  is not a bed and is left whole; anything else is left and named.

Every wait is bounded (process stops, `ip`, ovs-appctl, umount). A step
that fails does not stop the next one: what could not be undone is
reported (`gave up on: ...`) and the rest is still undone.
"""

import json
import os
import shutil
import stat
import subprocess
import time

from epa_chain.local import host
from epa_chain.local import state as state_mod

GRACE_S = 8.0           # a VNF runtime stops its engine on SIGTERM
LEFTOVER_GRACE_S = 5.0


class _Report:

    def __init__(self):
        self.stopped = set()
        self.namespaces = []
        self.hugepages = None
        self.left = []          # not ours: left alone, named
        self.gave_up = []       # ours, but could not be undone

    def step(self, what, function, *args):
        """Run one step; a failure is reported and the next step runs."""
        from epa_chain.local import hugepages
        from epa_chain.local import switch
        from epa_chain.local import throttle

        try:
            function(*args)
        except (OSError, ValueError, KeyError, TypeError,
                subprocess.SubprocessError, host.HostError,
                switch.SwitchError, hugepages.HugepageError,
                throttle.ThrottleError) as exc:
            # KeyError, TypeError: a record edited or cut short.
            self.gave_up.append('%s: %s' % (what, exc))

    def as_dict(self):
        return {'processes': len(self.stopped),
                'namespaces': list(self.namespaces),
                'hugepages': self.hugepages, 'left': list(self.left),
                'gave_up': list(self.gave_up)}


def is_ours(pid, argv0, directory, proc_root='/proc'):
    """Whether `pid` still runs a program of the bed in `directory`."""
    if pid == os.getpid():
        return False
    argv = host.cmdline(pid, proc_root)
    return (bool(argv) and (argv0 is None or argv[0] == argv0) and
            host.names_directory(argv, directory))


def down(state, progress):
    """Undo everything a bed holds; idempotent. A dict of what was done.

    'left' names what was found but is not the bed's; 'gave_up' what is
    the bed's but could not be undone (empty when all was).
    """
    started = time.monotonic()
    report = _Report()
    directory = state.directory
    exists = _is_directory(directory)
    if os.path.lexists(directory) and not exists:
        report.left.append('%s is not a directory: left alone' % directory)
    # No record, no namespace of ours: up records each before creating it.
    namespaces = []
    if exists and state.exists():
        try:
            state.load()
            namespaces = list(state.data['namespaces'])
        except (OSError, ValueError) as exc:
            progress('state record unreadable (%s): cleaning up by name'
                     % exc)
            namespaces = state.namespaces
    if exists:
        # 1. The VNF runtimes and the generator first: on SIGTERM each
        # runtime stops its engine and gives back what it took.
        report.step('processes', _stop_recorded, state, report)
        # 2. What is left: engines whose runtime was killed, processes in
        # the bed's namespaces; then OVS by its pidfiles.
        report.step('leftover processes', _stop_leftovers, state,
                    namespaces, report)
        if _is_directory(state.switch_dir):
            from epa_chain.local import switch
            report.step('Open vSwitch', switch.PrivateSwitch.stop_in,
                        state.switch_dir)
        # A throttled VNF's CPU cgroup (throttle.py), empty by now.
        report.step('CPU cgroup', _remove_throttle, state, progress)
    # 3. Namespaces: their veths, bridge taps and ovs-netdev go with them.
    report.step('namespaces', _delete_namespaces, state, namespaces,
                report)
    if exists:
        # 4. Huge pages back, hugetlbfs unmounted.
        report.step('huge pages', _release_hugepages, state, report)
        report.step('processes', _name_strangers, state, report)
        # 5. Sockets, config drives, the record itself; logs are kept.
        report.step('files', _remove_files, state, report)
    for line in report.left:
        progress('left alone: %s' % line)
    for line in report.gave_up:
        progress('gave up on %s' % line)
    progress('down in %.1f s: %d process(es) stopped, namespaces %s, huge '
             'pages %s%s' % (
                 time.monotonic() - started, len(report.stopped),
                 ', '.join(report.namespaces) or 'none left',
                 report.hugepages or 'none held',
                 '; gave up on %d thing(s) (above)' % len(report.gave_up)
                 if report.gave_up else ''))
    return report.as_dict()


def _is_directory(path):
    """A directory itself, not a symbolic link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _stop(report, pids, grace_s):
    stopped, survived = host.stop_processes(pids, grace_s)
    report.stopped.update(stopped)
    if survived:
        report.gave_up.append('pid(s) %s: survived SIGKILL' % ', '.join(
            map(str, survived)))


def _stop_recorded(state, report):
    ours = [p['pid'] for p in state.data['processes']
            if is_ours(p['pid'], p.get('argv0'), state.directory)]
    _stop(report, ours, GRACE_S)


def _stop_leftovers(state, namespaces, report):
    candidates = [pid for pid in (
        engine_pid(p.get('status'), state.directory)
        for p in state.data['processes']) if pid]
    try:
        present = host.namespaces()
        for name in namespaces:
            if name in present:
                candidates += host.namespace_pids(name)
    except host.HostError as exc:
        report.gave_up.append('processes in namespaces: %s' % exc)
    ours = []
    for pid in sorted(set(candidates)):
        if is_ours(pid, None, state.directory):
            ours.append(pid)
        elif host.alive(pid) and pid != os.getpid():
            report.left.append('pid %d (%s) does not name %s' % (
                pid, ' '.join(host.cmdline(pid) or ['?'])[:80],
                state.directory))
    _stop(report, ours, LEFTOVER_GRACE_S)


def _remove_throttle(state, progress):
    from epa_chain.local import throttle

    done = throttle.remove(state)
    if done:
        progress(done)


def engine_pid(status_path, directory):
    """The engine pid a runtime's status.json records, if in the bed."""
    if not isinstance(status_path, str):
        return None
    path = os.path.normpath(status_path)
    if not path.startswith(directory + os.sep) or \
            os.path.realpath(path) != path:
        return None
    try:
        with open(path) as stream:
            pid = json.load(stream).get('pid')
    except (OSError, ValueError, AttributeError):
        return None
    return pid if type(pid) is int and pid > 1 else None


def _delete_namespaces(state, namespaces, report):
    present = host.namespaces()
    for name in state.namespaces:
        if name not in present:
            continue
        if name not in namespaces:
            report.left.append(
                'namespace %s: no record of the bed at %s names it (a bed '
                'under another state root?); `ip netns delete %s` if it is '
                'a leftover' % (name, state.directory, name))
            continue
        try:
            host.delete_namespace(name)
            report.namespaces.append(name)
        except host.HostError as exc:
            report.gave_up.append('namespace %s: %s' % (name, exc))


def _release_hugepages(state, report):
    from epa_chain.local import hugepages

    record = state.data.get('hugepages')
    if record and 'added' not in record and 'intent' in record:
        # Killed while the pages were being reserved.
        record = hugepages.interrupted_record(record, state.hugepage_mount)
        state.data['hugepages'] = record
    if record and 'added' in record:
        if type(record['added']) is not int or record['added'] < 0:
            raise ValueError('the record\'s pages added are %r, not a '
                             'count: lower nr_hugepages by hand'
                             % (record['added'],))
        # The bed mounts in its own directory only, whatever a record says.
        record['mount_point'] = state.hugepage_mount
        owed = record['added']
        try:
            hugepages.release(record)
        finally:
            if state.exists():
                state.save()    # release() updated it: never give back twice
        report.hugepages = '%d given back%s' % (
            owed - record['added'], ', %d still in use by others'
            % record['added'] if record['added'] else '')
    elif os.path.ismount(state.hugepage_mount):
        host.run(['umount', state.hugepage_mount],
                 timeout=hugepages.COMMAND_TIMEOUT_S)


def _name_strangers(state, report):
    for pid in host.pids_mentioning(state.directory):
        report.left.append('pid %d (%s) names %s but no record of the bed '
                           'does: not stopped' % (
                               pid, ' '.join(host.cmdline(pid) or ['?'])[:80],
                               state.directory))


def _remove_files(state, report):
    """The bed's own entries; its directory if nothing else is there."""
    found = os.listdir(state.directory)
    others = state.foreign()
    if others and not state.exists():
        report.left.append('%s: holds %s and no state.json: not a bed, left '
                           'whole' % (state.directory, ', '.join(others)))
        return
    _keep_logs(state)
    mounted = False
    # The record last: a down cut short here can be run again.
    for name in sorted(set(found) - set(others),
                       key=lambda name: (name == state_mod.RECORD, name)):
        path = os.path.join(state.directory, name)
        if os.path.ismount(path):
            report.gave_up.append('%s: still mounted' % path)
            mounted = True
        elif _is_directory(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    if others:
        report.left.append('%s: %s, not made by a bed' % (
            state.directory, ', '.join(others)))
    elif not mounted:
        os.rmdir(state.directory)


def _keep_logs(state):
    """Copy the bed's logs (regular files only) to <directory>.logs."""
    logs = state.directory + '.logs'
    if os.path.islink(logs) or os.path.isfile(logs):
        os.unlink(logs)
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs, exist_ok=True)
    for root, _dirs, files in os.walk(state.directory):
        for name in files:
            source = os.path.join(root, name)
            if not name.endswith('.log') or os.path.islink(source) or \
                    os.path.ismount(root):
                continue
            relative = os.path.relpath(source, state.directory)
            try:
                shutil.copyfile(source, os.path.join(
                    logs, relative.replace(os.sep, '_')))
            except OSError:
                pass    # a log is a nicety: down goes on
