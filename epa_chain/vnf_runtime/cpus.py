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


"""Which guest CPUs the engine runs on.

The engine needs a master core plus its workers (NodeConfig.cores_needed).
Workers go on the CPUs the kernel was told to isolate (isolcpus= on the
image's kernel command line) when there are enough of them, so that
nothing else is scheduled where packets are moved; the master goes on the
first CPU that is not a worker. On a host (`--cpus LIST`) the pool is
the CPUs the node was given, as a hypervisor gives a guest its vCPUs: the
online and isolated CPUs outside that list do not exist for the node.

A kernel booted with maxcpus= (an image built with it on its command
line) leaves the other vCPUs present but offline: with --online-cpus the
runtime brings them online before it lays out the cores.
"""

import dataclasses
import typing

from epa_chain.vnf_runtime import errors


@dataclasses.dataclass(frozen=True)
class CoreLayout:
    master: int
    workers: typing.Tuple[int, ...]
    isolated: bool     # the workers are isolated CPUs

    @property
    def all(self):
        return (self.master,) + self.workers


def parse_cpu_list(text):
    """'0-2,5' -> [0, 1, 2, 5] (the kernel's cpulist format)."""
    cpus = []
    for part in (text or '').strip().split(','):
        part = part.strip()
        if not part:
            continue
        if '-' in part:
            first, last = part.split('-', 1)
            cpus.extend(range(int(first), int(last) + 1))
        else:
            cpus.append(int(part))
    return sorted(set(cpus))


def format_cpu_list(cpus):
    """[0, 1, 2, 5] -> '0-2,5'."""
    ranges = []
    for cpu in sorted(set(cpus)):
        if ranges and ranges[-1][1] == cpu - 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ','.join(str(a) if a == b else '%d-%d' % (a, b)
                    for a, b in ranges)


def bring_online(sysfs):
    """Bring every present but offline CPU online; the CPUs it brought."""
    present = parse_cpu_list(sysfs.read('devices/system/cpu/present',
                                        default='0'))
    online = parse_cpu_list(sysfs.read('devices/system/cpu/online',
                                       default='0'))
    brought = []
    for cpu in present:
        if cpu in online:
            continue
        knob = 'devices/system/cpu/cpu%d/online' % cpu
        try:
            sysfs.write(knob, '1')
        except OSError as exc:
            raise errors.SystemSetupError(
                '%s: CPU %d did not come online (%s): boot the image '
                'without maxcpus= on its kernel command line'
                % (sysfs.path(knob), cpu, exc.strerror or exc))
        brought.append(cpu)
    return brought


def layout(sysfs, workers_needed, field='epa_chain.forwarding_cores',
           allowed=None, workers_wanted=None):
    """Pick the master and worker CPUs; SystemSetupError if too few.

    `allowed` (--cpus) replaces the online CPUs as the pool; each of them
    must be online. `workers_wanted`: take up to that many workers when
    the pool has them (the generator), at least `workers_needed`.
    """
    online = parse_cpu_list(sysfs.read('devices/system/cpu/online',
                                       default='0'))
    if allowed is not None:
        offline = [cpu for cpu in allowed if cpu not in online]
        if offline:
            raise errors.SystemSetupError(
                '--cpus %s: CPU %s not online (online: %s): name online '
                'CPUs only' % (format_cpu_list(allowed),
                               format_cpu_list(offline) + (
                                   ' is' if len(offline) == 1 else ' are'),
                               format_cpu_list(online)))
        online = sorted(set(allowed))
    isolated = [cpu for cpu in parse_cpu_list(
        sysfs.read('devices/system/cpu/isolated', default=''))
        if cpu in online]
    if len(online) < workers_needed + 1:
        if allowed is not None:
            raise errors.SystemSetupError(
                '--cpus %s: the engine needs %d CPUs (a master and %d '
                'workers for %s), --cpus names %d: name more CPUs or use '
                'fewer forwarding cores' % (
                    format_cpu_list(allowed), workers_needed + 1,
                    workers_needed, field, len(online)))
        raise errors.SystemSetupError(
            '%s: the engine needs %d CPUs (a master and %d workers), the '
            'guest has %d: give the flavor more vCPUs or use fewer '
            'forwarding cores' % (field, workers_needed + 1,
                                  workers_needed, len(online)))
    workers_needed = max(workers_needed, min(
        workers_wanted or 0, len(online) - 1))
    use_isolated = len(isolated) >= workers_needed and any(
        cpu not in isolated for cpu in online)
    pool = isolated if use_isolated else [c for c in online if c != online[0]]
    workers = tuple(pool[:workers_needed])
    master = next(cpu for cpu in online if cpu not in workers)
    return CoreLayout(master=master, workers=workers, isolated=use_isolated)
