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


"""dpdk-testpmd arguments for a VNF: MAC forwarding to the next hop.

testpmd pairs the two ports and forwards each one's frames out of the
other (`--forward-mode=mac`), writing the transmit port's MAC as source and
`--eth-peer` as destination. The peer of the port that sends a direction is
that direction's next hop. A port that sends no direction (the receiving
port of a unidirectional chain) gets its own MAC as peer, so whatever
testpmd ever sends from it, starting with the `--tx-first` burst, is a
switch-learning frame that OVS drops. Ports are numbered in DPDK's PCI
order, which is also the order of the `-a` arguments; virtio-user ports
(on a host) in the order of their `--vdev` arguments.
"""

from epa_chain.vnf_runtime import virtio_user

MBUFS = 16384       # enough for two 1024-slot rings each way, not 300 MB
READY_LINE = 'Press enter to exit'   # printed once forwarding has started
STREAMS = 2         # paired ports: one stream each way


def peers(node, ports):
    """DPDK port number -> destination MAC for frames it sends."""
    found = {}
    for name, port in ports.items():
        flow = next((f for f in node.flows if f.tx_port == name), None)
        found[port.dpdk_port] = flow.next_hop_mac if flow else port.mac
    return found


def argv(binary, node, ports, cores):
    """The full command line (EAL arguments, then testpmd's)."""
    by_dpdk = sorted(ports.values(), key=lambda p: p.dpdk_port)
    workers = cores.workers[:STREAMS]
    lcores = sorted((cores.master,) + workers)
    args = [binary, '-l', ','.join(str(c) for c in lcores),
            '--main-lcore', str(cores.master), '-n', '4']
    if any(port.virtio_user for port in by_dpdk):
        args += virtio_user.eal_args(by_dpdk)
    else:
        for port in by_dpdk:
            args += ['-a', port.pci]
    args += ['--', '--forward-mode=mac']
    for port_id, mac in sorted(peers(node, ports).items()):
        args.append('--eth-peer=%d,%s' % (port_id, mac))
    args += ['--nb-cores=%d' % len(workers), '--rxq=1', '--txq=1',
             '--total-num-mbufs=%d' % MBUFS, '--auto-start', '--tx-first']
    return args
