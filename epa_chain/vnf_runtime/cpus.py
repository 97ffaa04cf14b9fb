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
first CPU that is not a worker.
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


def layout(sysfs, workers_needed, field='epa_chain.forwarding_cores'):
    """Pick the master and worker CPUs; SystemSetupError if too few."""
    online = parse_cpu_list(sysfs.read('devices/system/cpu/online',
                                       default='0'))
    isolated = [cpu for cpu in parse_cpu_list(
        sysfs.read('devices/system/cpu/isolated', default=''))
        if cpu in online]
    if len(online) < workers_needed + 1:
        raise errors.SystemSetupError(
            '%s: the engine needs %d CPUs (a master and %d workers), the '
            'guest has %d: give the flavor more vCPUs or use fewer '
            'forwarding cores' % (field, workers_needed + 1,
                                  workers_needed, len(online)))
    use_isolated = len(isolated) >= workers_needed and any(
        cpu not in isolated for cpu in online)
    pool = isolated if use_isolated else [c for c in online if c != online[0]]
    workers = tuple(pool[:workers_needed])
    master = next(cpu for cpu in online if cpu not in workers)
    return CoreLayout(master=master, workers=workers, isolated=use_isolated)
