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


"""PROX l2fwd configuration for a VNF: seed 000's handle_l2fwd.cfg, generated.

One l2fwd task per direction (8.2.5 unidirectional, 8.2.6 bidirectional),
each writing its direction's next hop as destination MAC (`dst mac=`, the
step the seed's operator did by hand) and the transmit port's own MAC as
source (PROX's default). Directions share the forwarding cores round
robin: with one forwarding core both tasks run on it, as in the seed.
Ports are numbered as DPDK numbers them (PCI address order) and named
after the data port they carry, so the tasks read `rx port=left`.

Virtio-user ports (on a host) are DPDK vdevs that PROX passes through to
EAL with `eal=` (PROX's own `[port N] vdev=` key is something else: a
kernel tap beside the port); `no-pci=yes` keeps the PCI bus out of it.
"""

from epa_chain.chain import learning_frame
from epa_chain.vnf_runtime import switch_learning
from epa_chain.vnf_runtime import virtio_user

MEMPOOL_SIZE = '4K'     # seed 000, handle_l2fwd.cfg
START_TIME_S = 5        # idem


def render(node, ports, cores):
    """The PROX .cfg text for a VNF.

    node: NodeConfig (role vnf); ports: name -> devices.PortDevice;
    cores: cpus.CoreLayout with at least one worker.
    """
    by_dpdk = sorted(ports.values(), key=lambda p: p.dpdk_port)
    lines = [
        '; PROX l2fwd for %s, written at boot by epa_chain.vnf_runtime'
        % node.name,
        '; from the config drive: change the Heat stack, not this file.',
    ]
    vdevs = any(port.virtio_user for port in by_dpdk)
    for port in by_dpdk:
        data = node.ports[port.name]
        device = ('virtio-user %s' % port.virtio_user if port.virtio_user
                  else 'PCI %s' % port.pci)
        lines.append(';   %-5s = DPDK port %d, %s, MAC %s, %s VLAN %s'
                     % (port.name, port.dpdk_port, device, port.mac,
                        data.network, data.vlan))
    lines += ['', '[eal options]', '-n=4', 'no-output=no']
    if vdevs:
        # PROX splits eal= at spaces: socket paths must have none.
        lines += ['no-pci=yes', 'eal=' + ' '.join(
            a for a in virtio_user.eal_args(by_dpdk) if a != '--no-pci')]
    else:
        lines.append('eal=' + ' '.join('-a %s' % p.pci for p in by_dpdk))
    for port in by_dpdk:
        lines += ['', '[port %d]' % port.dpdk_port, 'name=%s' % port.name,
                  'mac=hardware', 'promiscuous=no']
        if port.virtio_user:
            # Link state by polling: no interrupt to wait for on a vdev.
            lines.append('lsc=no')
    lines += ['', '[defaults]', 'mempool size=%s' % MEMPOOL_SIZE,
              '', '[global]', 'start time=%d' % START_TIME_S,
              'name=%s' % node.name,
              '', '[core %d]' % cores.master, 'mode=master']
    for core, tasks in _tasks_by_core(node, ports, cores):
        lines += ['', '[core %d]' % core,
                  'name=%s' % '+'.join(t[0] for t in tasks)]
        for index, (_, body) in enumerate(tasks):
            lines.append('task=%d' % index)
            lines.extend(body)
    return '\n'.join(lines) + '\n'


def _tasks_by_core(node, ports, cores):
    workers = cores.workers
    assigned = {core: [] for core in workers}
    for index, direction in enumerate(
            d for d in ('forward', 'reverse') if node.flow(d)):
        flow = node.flow(direction)
        assigned[workers[index % len(workers)]].append((direction, [
            'mode=l2fwd',
            'rx port=%s' % flow.rx_port,
            'tx port=%s' % flow.tx_port,
            'dst mac=%s' % flow.next_hop_mac,
        ]))
    learning_core = _learning_core(assigned, workers)
    for name in switch_learning.prox_gen_ports(node):
        port = ports[name]
        assigned[learning_core].append(('learn-%s' % name, [
            '; switch learning: source = destination = this port, '
            'dropped by OVS',
            'mode=gen',
            'tx port=%s' % name,
            'bps=%d' % switch_learning.prox_bps(),
            'pkt inline=%s' % switch_learning.prox_inline(
                learning_frame.frame(port.mac, name)),
        ]))
    receiving = {node.flow(d).rx_port for d in ('forward', 'reverse')
                 if node.flow(d)}
    for name in sorted(set(ports) - receiving):
        # A port no task receives on gets PROX's dummy RX mempool, whose
        # buffers virtio refuses ("RxQ mbuf pool object size is too
        # small"): PROX aborts at start. A task that drains and drops
        # gives the port a real RX queue.
        assigned[learning_core].append(('drain-%s' % name, [
            '; gives the send-only port a real RX queue (virtio)',
            'mode=nop',
            'rx port=%s' % name,
            'drop=yes',
        ]))
    return [(core, tasks) for core, tasks in sorted(assigned.items())
            if tasks]


def _learning_core(assigned, workers):
    """An idle worker if there is one, else the last busy one."""
    for core in workers:
        if not assigned[core]:
            return core
    return workers[-1]
