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

"""What the cloud test reads off the host: listeners, file modes, processes.

The single-host cloud runs on a shared lab host whose address 10.0.0.1 is
also the guests' gateway on the management network: nothing of the cloud
may listen beyond loopback, nothing holding a password may be readable by
others, and a test run that is stopped must stop what it started.
"""

import ipaddress
import os
import re
import signal
import stat
import subprocess
import time

# The programs of the cloud (process names as the kernel keeps them, 15
# characters): their listeners must be on loopback.
CLOUD_PROGRAMS = re.compile(
    r'^(uwsgi|keystone|glance|placement|nova|neutron|heat|beam\.smp|epmd|'
    r'erl_child|mysqld|mariadbd|memcached|libvirtd|virtlogd|qemu|ovs|'
    r'dnsmasq)')
_USERS = re.compile(r'\("([^"]+)",pid=(\d+)')


def listeners(ss_output):
    """[(address, port, [(process name, pid)...])] of `ss -Hltunp`."""
    found = []
    for line in ss_output.splitlines():
        fields = line.split()
        if len(fields) < 6:
            continue
        local = fields[4]
        address, _, port = local.rpartition(':')
        address = address.strip('[]').split('%')[0]
        users = _USERS.findall(line)
        found.append((address, port, [(name, int(pid))
                                      for name, pid in users]))
    return found


def is_loopback(address):
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        # '*' and '0.0.0.0' style wildcards are every address.
        return False


def exposed(ss_output):
    """'address:port (program pid)' of cloud programs beyond loopback."""
    found = []
    for address, port, users in listeners(ss_output):
        if is_loopback(address):
            continue
        for name, pid in users:
            if CLOUD_PROGRAMS.match(name):
                found.append('%s:%s (%s %d)' % (address, port, name, pid))
    return found


def readable_by_others(paths):
    """The paths among `paths` any user but the owner (and group) reads."""
    found = []
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            continue
        if mode & (stat.S_IROTH | stat.S_IWOTH):
            found.append('%s (%o)' % (path, stat.S_IMODE(mode)))
    return found


def descendants(pid, proc='/proc'):
    """Every live process below `pid`, children before grandchildren."""
    children = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, 'stat')) as stream:
                text = stream.read()
        except OSError:
            continue
        # The name may hold spaces and parentheses: ppid follows the last ')'.
        parent = int(text.rsplit(')', 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop(0)
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def stop_descendants(pid, grace_s=10.0):
    """TERM every process below `pid`, then KILL what outlives the grace."""
    victims = descendants(pid)
    for victim in victims:
        _signal(victim, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(map(_alive, victims)):
        time.sleep(0.2)
    for victim in victims:
        _signal(victim, signal.SIGKILL)
    return victims


def _signal(pid, number):
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as stream:
            # A zombie has exited: its parent just has not read it yet.
            return stream.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def process_users(name):
    """The user names running processes called `name`."""
    done = subprocess.run(['ps', '-C', name, '-o', 'user='],
                          stdout=subprocess.PIPE, text=True)
    return sorted(set(done.stdout.split()))


def _argv(pid, proc):
    """A process's arguments, as bytes."""
    with open(os.path.join(proc, str(pid), 'cmdline'), 'rb') as stream:
        return stream.read().split(b'\0')


def _option(argv, flag):
    """The word after FLAG in argv, decoded; None without it."""
    for index, word in enumerate(argv[:-1]):
        if word == flag:
            return argv[index + 1].decode()
    return None


def qemu_pids(proc='/proc'):
    """{libvirt domain name: pid} of the QEMU processes on this host."""
    found = {}
    for pid in filter(str.isdigit, os.listdir(proc)):
        try:
            argv = _argv(pid, proc)
        except OSError:
            continue
        if not argv or b'qemu-system' not in argv[0]:
            continue
        # guest=instance-00000001,debug-threads=on
        for part in (_option(argv, b'-name') or '').split(','):
            name = part.split('=', 1)[-1]
            if name and (part.startswith('guest=') or '=' not in part):
                found[name] = int(pid)
                break
    return found


def kernel_cmdline(pid, proc='/proc'):
    """The -append argument of a QEMU booting its kernel directly."""
    return _option(_argv(pid, proc), b'-append')


def cpu_share(pids, seconds=10.0, proc='/proc'):
    """{pid: share of one host CPU} each process used over `seconds`."""
    def used(pid):
        with open(os.path.join(proc, str(pid), 'stat')) as stream:
            fields = stream.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf(
            'SC_CLK_TCK')

    before = {pid: used(pid) for pid in pids}
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    return {pid: round((used(pid) - before[pid]) / elapsed, 3)
            for pid in pids}
