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


"""What to run: the engine's command line, its config file and readiness.

VNF + prox     PROX with the l2fwd config of prox_l2fwd, its tasks
               parked (-e) until started over the control socket when the
               node config says so (tasks_at_ready), else forwarding
VNF + testpmd  dpdk-testpmd with the arguments of testpmd
generator      PROX with the gen/lat config of epa_chain.prox.gen_config,
               tasks stopped until the measurement client starts them

PROX always gets its UNIX control socket (-u): readiness is PROX answering
there (its engine initialised, whether its tasks run or wait), and the
control relay of a parked node talks to it.
"""

import dataclasses
import os
import shutil
import typing

from epa_chain.prox import gen_config
from epa_chain.vnf_runtime import control_relay
from epa_chain.vnf_runtime import errors
from epa_chain.vnf_runtime import hugepages
from epa_chain.vnf_runtime import prox_l2fwd
from epa_chain.vnf_runtime import supervisor
from epa_chain.vnf_runtime import testpmd
from epa_chain.vnf_runtime import virtio_user

RUN_DIR = '/run/epa-chain'
BINARIES = {
    'prox': ('prox', '/usr/local/bin/prox', '/opt/prox/prox'),
    'testpmd': ('dpdk-testpmd', 'testpmd', '/usr/local/bin/dpdk-testpmd'),
}


@dataclasses.dataclass
class EnginePlan:
    engine: str
    argv: typing.List[str]
    config_path: typing.Optional[str]
    config_text: typing.Optional[str]
    ready: typing.Callable
    hugepages_mb: int
    # what the operator should know about the plan (console and status)
    note: typing.Optional[str] = None
    layout: typing.Optional[str] = None


def find_binary(engine, override=None):
    """Path of the engine's executable, or None if the image lacks it."""
    for candidate in ((override,) if override else BINARIES[engine]):
        found = shutil.which(candidate)
        if found:
            return found
    return None


def workers_needed(node):
    return node.cores_needed - 1


def workers_wanted(node):
    """Workers the engine uses when the guest has CPUs for them."""
    return node.cores_wanted - 1


def plan(node, ports, cores, binary, run_dir=RUN_DIR):
    """The EnginePlan for this node (pure: nothing is started)."""
    if node.role == 'generator':
        return _generator(node, ports, cores, binary, run_dir)
    if node.engine == 'testpmd':
        return EnginePlan(
            engine='testpmd',
            argv=testpmd.argv(binary, node, ports, cores),
            config_path=None, config_text=None,
            ready=supervisor.output_ready(testpmd.READY_LINE),
            hugepages_mb=hugepages.VNF_MB)
    path = os.path.join(run_dir, 'prox.cfg')
    return EnginePlan(
        engine='prox',
        argv=_prox_argv(binary, path, run_dir, autostart=not node.parked),
        config_path=path, config_text=prox_l2fwd.render(node, ports, cores),
        ready=supervisor.prox_socket_ready(control_relay.PROX_SOCKET),
        hugepages_mb=hugepages.VNF_MB)


def _generator_devargs(ports):
    """({port: PCI address or vdev}, extra EAL words) of the data ports.

    virtio-user ports (a generator on a host: the external tester,
    epa_chain.cloud.tester) are vdevs on their vhost-user sockets, with
    the EAL memory options vhost-user needs; all or none.
    """
    virtio = [port.virtio_user for port in ports.values()]
    if not any(virtio):
        return {name: port.pci for name, port in ports.items()}, ()
    if not all(virtio):
        raise errors.SystemSetupError(
            '--virtio-user: give both of the generator\'s data ports, or '
            'neither')
    devargs = {name: virtio_user.vdev_arg(port.dpdk_port, port)[
        len('--vdev='):] for name, port in ports.items()}
    return devargs, tuple(a for a in virtio_user.EAL_ARGS
                          if a != '--no-pci')


def _generator(node, ports, cores, binary, run_dir):
    path = os.path.join(run_dir, 'prox.cfg')
    devargs, eal_extra = _generator_devargs(ports)
    try:
        # The best layout the guest's CPUs allow (Nova may give fewer
        # vCPUs than the standard layout wants, e.g. on a small host).
        name = gen_config.choose_layout(len(node.flows), len(cores.all))
        options = gen_config.layout_options(name)
        # The histogram's bucket width is the node config's (the stack's
        # choice: guests under QEMU TCG see milliseconds), if it has one.
        text = gen_config.render(node, devargs, list(cores.all),
                                 eal_extra=eal_extra, **options)
        note = gen_config.describe_layout(name, gen_config.layout_for(
            node, devargs, list(cores.all), **options))
    except ValueError as exc:   # gen_config.GenConfigError
        raise errors.SystemSetupError('generator configuration: %s' % exc)
    return EnginePlan(
        engine='prox',
        argv=_prox_argv(binary, path, run_dir, autostart=False),
        config_path=path, config_text=text,
        ready=supervisor.prox_socket_ready(control_relay.PROX_SOCKET),
        hugepages_mb=hugepages.GENERATOR_MB, note=note, layout=name)


PROX_LOG = 'prox.log'


def _prox_argv(binary, config_path, run_dir, autostart):
    # The supervisor runs PROX in run_dir: a relative log name stays under
    # PROX's limit wherever the run directory is (a host's state root).
    argv = [binary, '-f', config_path, '-o', 'cli', '-u', '-l', PROX_LOG]
    if not autostart:
        argv.append('-e')
    return argv
