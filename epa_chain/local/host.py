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

"""The host the bed runs on: commands, packages, namespaces, processes."""

import os
import re
import shutil
import signal
import subprocess
import time

# What the bed runs, and the Debian package that brings it.
TOOLS = {
    'ip': 'iproute2',
    'ovsdb-server': 'openvswitch-switch',
    'ovs-vsctl': 'openvswitch-switch',
    'ovs-appctl': 'openvswitch-switch',
    'ovs-ofctl': 'openvswitch-switch',
    '/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk':
        'openvswitch-switch-dpdk',
    'dpdk-testpmd': 'dpdk-dev',
}
_ARGUMENT_PARTS = re.compile(r'[=,:]')


class HostError(RuntimeError):
    """The host cannot run the bed: what is wrong and how to fix it."""


def run(argv, check=True, timeout=60, env=None):
    """Run a command; HostError naming it and its stderr on failure."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise HostError('%s: not installed' % argv[0]) from None
    except subprocess.TimeoutExpired:
        raise HostError('%s: no answer after %d s' % (' '.join(argv),
                                                      timeout)) from None
    if check and done.returncode != 0:
        raise HostError('%s failed (exit %d): %s' % (
            ' '.join(argv), done.returncode,
            (done.stderr or done.stdout).strip()[-400:]))
    return done


def missing_packages():
    """Debian packages whose tools are absent."""
    missing = []
    for tool, package in TOOLS.items():
        found = os.access(tool, os.X_OK) if tool.startswith('/') \
            else shutil.which(tool)
        if not found and package not in missing:
            missing.append(package)
    return missing


def install_packages(packages, progress):
    """apt-get install, without starting the distribution's OVS service.

    The bed runs its own OVS in a private directory; the package's service
    must not grab huge pages or create bridges, so a policy-rc.d refuses
    service starts while apt runs (machines without systemd would try).
    """
    if not packages:
        return
    if not shutil.which('apt-get'):
        raise HostError('missing %s and no apt-get: install them by hand'
                        % ', '.join(packages))
    progress('installing %s (apt-get)' % ' '.join(packages))
    policy = '/usr/sbin/policy-rc.d'
    placed = not os.path.exists(policy)
    if placed:
        with open(policy, 'w') as stream:
            stream.write('#!/bin/sh\nexit 101\n')
        os.chmod(policy, 0o755)
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    install = ['apt-get', 'install', '-y', '-q', '--no-install-recommends']
    try:
        if run(install + packages, check=False, timeout=900,
               env=env).returncode:
            run(['apt-get', 'update', '-q'], timeout=600, env=env)
            run(install + packages, timeout=900, env=env)
    finally:
        if placed:
            os.unlink(policy)


def online_cpus():
    with open('/sys/devices/system/cpu/online') as stream:
        text = stream.read().strip()
    cpus = []
    for part in text.split(','):
        first, _, last = part.partition('-')
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


# ---- namespaces ------------------------------------------------------------

def namespaces():
    done = run(['ip', 'netns', 'list'], check=False)
    return [line.split()[0] for line in done.stdout.splitlines() if line]


def add_namespace(name):
    run(['ip', 'netns', 'add', name])
    # No router solicitations or other multicast: the flood witness must
    # see only frames NORMAL could not deliver.
    run(['ip', 'netns', 'exec', name, 'sysctl', '-qw',
         'net.ipv6.conf.all.disable_ipv6=1',
         'net.ipv6.conf.default.disable_ipv6=1'])
    run(['ip', '-n', name, 'link', 'set', 'lo', 'up'])


def delete_namespace(name):
    if name in namespaces():
        run(['ip', 'netns', 'delete', name])
        return True
    return False


def namespace_pids(name):
    done = run(['ip', 'netns', 'pids', name], check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()]


# ---- processes -------------------------------------------------------------

def cmdline(pid, proc_root='/proc'):
    """The command line of `pid` as strings; None once it is gone."""
    try:
        with open(os.path.join(proc_root, str(pid), 'cmdline'), 'rb') as f:
            return [arg.decode(errors='replace')
                    for arg in f.read().split(b'\0') if arg]
    except OSError:
        return None


def names_directory(argv, directory):
    """Whether an argument of `argv` is `directory` or a path below it.

    Arguments are split at '=', ',' and ':' (--pidfile=PATH, a DPDK
    vdev's path=PATH, unix:PATH) and each part that is an absolute path is
    compared as a normalised path, never as a substring: /x/bed-old,
    /y/x/bed and /x/bed/../z do not name /x/bed.
    """
    directory = os.path.normpath(directory)
    for arg in argv:
        for part in _ARGUMENT_PARTS.split(arg):
            if part.startswith('/'):
                path = os.path.normpath(part)
                if path == directory or path.startswith(directory + os.sep):
                    return True
    return False


def pids_mentioning(directory, proc_root='/proc'):
    """Processes whose command line names `directory` (names_directory)."""
    found = []
    for entry in os.listdir(proc_root):
        if entry.isdigit() and int(entry) != os.getpid():
            argv = cmdline(int(entry), proc_root)
            if argv and names_directory(argv, directory):
                found.append(int(entry))
    return found


def alive(pid, proc_root='/proc'):
    """True unless gone or a zombie (containers may not reap them)."""
    try:
        with open(os.path.join(proc_root, str(pid), 'stat')) as stream:
            stat = stream.read()
    except OSError:
        return False
    return stat.rpartition(')')[2].split()[:1] != ['Z']


def stop_processes(pids, grace_s=8.0, *, proc_root='/proc', kill=os.kill,
                   sleep=time.sleep):
    """SIGTERM, then SIGKILL what is left after `grace_s`.

    Returns (the pids that were running, those that survived SIGKILL).
    """
    pids = [p for p in pids if alive(p, proc_root)]
    pending = list(pids)
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5)):
        for pid in pending:
            try:
                kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait_s
        while True:
            pending = [p for p in pending if alive(p, proc_root)]
            if not pending or time.monotonic() >= deadline:
                break
            sleep(0.05)
        if not pending:
            break
    return pids, pending
