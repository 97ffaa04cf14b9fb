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


class HostError(RuntimeError):
    """The host cannot run the bed: what is wrong and how to fix it."""


def run(argv, check=True, timeout=60, env=None):
    """Run a command; HostError naming it and its stderr on failure."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout, env=env)
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

def cmdline(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as stream:
            return stream.read().split(b'\0')
    except OSError:
        return None


def pids_mentioning(text):
    """Processes whose command line contains `text` (a bed's directory)."""
    needle = text.encode()
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit() and int(entry) != os.getpid():
            argv = cmdline(int(entry))
            if argv and any(needle in arg for arg in argv):
                found.append(int(entry))
    return found


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours is dead for our purposes.
    try:
        with open('/proc/%d/stat' % pid) as stream:
            return stream.read().split(') ', 1)[1][0] != 'Z'
    except (OSError, IndexError):
        return False


def stop_processes(pids, grace_s=8.0):
    """SIGTERM, then SIGKILL what is left after `grace_s`; the pids."""
    pids = [p for p in pids if alive(p)]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    killed = []
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(alive(p) for p in killed):
        time.sleep(0.05)
    return pids
