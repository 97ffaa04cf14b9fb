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

import ctypes
import ipaddress
import os
import re
import signal
import stat
import subprocess
import threading
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


# ptrace(2) requests, and waitpid's flag for threads of other processes.
_PTRACE_SEIZE = 0x4206
_PTRACE_INTERRUPT = 0x4207
_PTRACE_DETACH = 17
_WALL = 0x40000000
_NOVA_NAME = "<nova:name>%s</nova:name>"
_DOMAIN_PID = re.compile(r"<domstatus [^>]*\bpid='(\d+)'")
_CONSOLE_LOG = re.compile(r"<log file='([^']+/console\.log)'")
# The kernel line after which the guest's second vCPU runs.
_SMP_UP = 'smp: Brought up'


def running_domain(server_name, run_dir='/run/libvirt/qemu'):
    """(QEMU pid, console log) of a Nova server's running domain, or None.

    Read from libvirt's status files (no client, no API): the test asks
    while `stack create` is still making the server.
    """
    wanted = _NOVA_NAME % server_name
    for entry in sorted(os.listdir(run_dir)):
        if not entry.endswith('.xml'):
            continue
        try:
            with open(os.path.join(run_dir, entry)) as stream:
                text = stream.read()
        except OSError:
            continue
        pid, log = _DOMAIN_PID.search(text), _CONSOLE_LOG.search(text)
        if wanted in text and pid and log:
            return int(pid.group(1)), log.group(1)
    return None


def vcpu_thread(pid, index, proc='/proc'):
    """The thread id of a QEMU's vCPU `index` ('CPU 1/TCG'), or None."""
    tasks = os.path.join(proc, str(pid), 'task')
    for tid in os.listdir(tasks):
        try:
            with open(os.path.join(tasks, tid, 'comm')) as stream:
                name = stream.read().strip()
        except OSError:
            continue
        if name.startswith('CPU %d/' % index):
            return int(tid)
    return None


class VcpuStall(threading.Thread):
    """Holds one vCPU of a booting guest still: a kernel stall, for real.

    Under TCG each vCPU is a QEMU thread; a ptrace stop holds that thread
    alone (SIGSTOP would stop the whole process). The other vCPU soon
    waits on it for good: the guest's kernel reports an RCU stall after
    21 s and soft lockups after that, as the rare hang under emulation
    does. The thread stays stopped until its QEMU exits (a hard reboot
    kills it; the stopped thread is reaped here so that QEMU can go) or
    `release()`; the whole stall is bounded by `timeout_s`. `stopped_at`
    (time.monotonic()) is set once the vCPU stopped; `error` says why it
    did not.
    """

    def __init__(self, server_name, vcpu=1, timeout_s=900.0):
        super().__init__(name='vcpu-stall', daemon=True)
        self.server_name = server_name
        self.vcpu = vcpu
        self.stopped_at = None
        self.error = None
        self._deadline = time.monotonic() + timeout_s
        self._released = threading.Event()

    def release(self, join_s=10.0):
        """Let the vCPU go (if its QEMU still runs) and end the thread."""
        self._released.set()
        self.join(join_s)

    def _wait(self, found):
        """found()'s first true answer, or None at release or deadline."""
        while (not self._released.is_set() and
               time.monotonic() < self._deadline):
            value = found()
            if value:
                return value
            self._released.wait(0.5)
        return None

    def run(self):
        try:
            domain = self._wait(lambda: running_domain(self.server_name))
            if domain is None:
                self.error = 'no running domain of %s' % self.server_name
                return
            pid, console = domain
            if not self._wait(lambda: _file_has(console, _SMP_UP)):
                self.error = '%s never printed %r' % (console, _SMP_UP)
                return
            tid = vcpu_thread(pid, self.vcpu)
            if tid is None:
                self.error = 'QEMU %d has no vCPU %d thread' % (
                    pid, self.vcpu)
                return
            self._hold(tid)
        except OSError as exc:
            self.error = str(exc)

    def _hold(self, tid):
        libc = ctypes.CDLL(None, use_errno=True)
        for request in (_PTRACE_SEIZE, _PTRACE_INTERRUPT):
            if libc.ptrace(request, tid, None, None) != 0:
                self.error = 'ptrace(%#x, %d): %s' % (
                    request, tid, os.strerror(ctypes.get_errno()))
                return
        self.stopped_at = time.monotonic()
        # Reaped when its QEMU is killed: the process cannot end before.
        if self._wait(lambda: _exited(tid)) is None:
            # Released, or the bound passed: the vCPU runs again.
            libc.ptrace(_PTRACE_DETACH, tid, None, None)


def _file_has(path, text):
    try:
        with open(path, errors='replace') as stream:
            return text in stream.read()
    except OSError:
        return False


def _exited(tid):
    """Whether a traced thread has exited (and is now reaped)."""
    try:
        done, status = os.waitpid(tid, os.WNOHANG | _WALL)
    except ChildProcessError:
        return True
    return done == tid and (os.WIFEXITED(status) or
                            os.WIFSIGNALED(status))
