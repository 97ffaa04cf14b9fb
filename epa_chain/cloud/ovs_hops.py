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

"""Hop-by-hop counters of a chain, read from the compute host's OVS.

Neutron names each port's OVS interface in external_ids:iface-id, so on
the host that runs the chain (a single-host cloud, an all-in-one devstack)
every hop of a chain output maps to an interface whose counters show what
crossed it. OVS counts from the switch's side: rx_packets are frames the
guest sent on the port, tx_packets frames OVS delivered to it. A chain
forwards hop by hop when each node's ingress port was delivered the
frames and its egress port sent them on.
"""

import dataclasses
import json
import subprocess
import time


class OVSError(RuntimeError):
    """The OVS database could not be read or lacks a chain port."""


def _ovsdb_value(value):
    """An OVSDB JSON value as Python ({} for maps)."""
    if isinstance(value, list) and value and value[0] == 'map':
        return {k: _ovsdb_value(v) for k, v in value[1]}
    if isinstance(value, list) and value and value[0] == 'set':
        return [_ovsdb_value(v) for v in value[1]]
    return value


def parse_interfaces(text):
    """{neutron port id: (interface, rx_packets, tx_packets)}."""
    table = json.loads(text)
    columns = table['headings']
    ports = {}
    for row in table['data']:
        record = dict(zip(columns, (_ovsdb_value(v) for v in row)))
        external_ids = record.get('external_ids') or {}
        port_id = external_ids.get('iface-id') if isinstance(
            external_ids, dict) else None
        if not port_id:
            continue
        stats = record.get('statistics') or {}
        if not isinstance(stats, dict):
            stats = {}
        ports[port_id] = (record['name'], int(stats.get('rx_packets', 0)),
                          int(stats.get('tx_packets', 0)))
    return ports


# ovs-vswitchd writes interface statistics into its database every 5 s
# (other_config:stats-update-interval, never less): a snapshot must be
# taken at least that long after the traffic it is to include.
STATS_UPDATE_INTERVAL_S = 5.0
# How long ovs-vsctl may wait for the database.
OVS_TIMEOUT_S = 30


def settled_snapshot(run=subprocess.run, sleep=time.sleep):
    """A snapshot that includes every frame sent before the call."""
    sleep(STATS_UPDATE_INTERVAL_S + 1.0)
    return snapshot(run)


def snapshot(run=subprocess.run):
    """The counters of every Neutron port on this host's OVS."""
    # ovs-vsctl waits for ovsdb-server without end unless told not to.
    argv = ['ovs-vsctl', '--timeout=%d' % OVS_TIMEOUT_S, '--format=json',
            '--columns=name,external_ids,statistics', 'list', 'Interface']
    try:
        done = run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True, timeout=OVS_TIMEOUT_S + 10)
    except FileNotFoundError:
        raise OVSError('ovs-vsctl not found: the hop counters need the '
                       'compute host\'s Open vSwitch (--no-ovs skips them)')
    except subprocess.TimeoutExpired:
        raise OVSError('%s did not answer in %d s: is ovsdb-server up?'
                       % (' '.join(argv), OVS_TIMEOUT_S + 10))
    if done.returncode != 0:
        raise OVSError('%s failed: %s' % (' '.join(argv),
                                          done.stderr.strip()))
    return parse_interfaces(done.stdout)


@dataclasses.dataclass(frozen=True)
class HopCount:
    """What one hop of a direction saw during its trial."""

    server: str
    role: str
    port: str
    interface: str
    # 'sent' (the node transmitted here) or 'delivered' (OVS handed the
    # frames to the node here).
    counted: str
    frames: int

    def as_dict(self):
        return dataclasses.asdict(self)


#: chain.yaml's name for the tester outside the stack (endpoints=external)
EXTERNAL_TESTER = 'external-tester'


def hop_counts(hops, before, after):
    """Per-hop frame counts of a chain output between two snapshots.

    `hops` alternate egress and ingress ports along the direction: the
    first is where the generator sends, then each VNF's ingress and
    egress, the last is where the generator receives. An external
    tester's hops (no Neutron port) are left to the tester's own
    counters.
    """
    counts = []
    for index, hop in enumerate(hops):
        port = hop.get('port')
        if port is None and hop.get('server') == EXTERNAL_TESTER:
            continue
        if port not in after or port not in before:
            raise OVSError('port %s (%s:%s) has no interface on this host\'s '
                           'Open vSwitch: run prove on the compute host, or '
                           'with --no-ovs' % (port, hop.get('server'),
                                              hop.get('role')))
        name, rx_after, tx_after = after[port]
        _name, rx_before, tx_before = before[port]
        if index % 2 == 0:
            counted, frames = 'sent', rx_after - rx_before
        else:
            counted, frames = 'delivered', tx_after - tx_before
        counts.append(HopCount(str(hop.get('server')), str(hop.get('role')),
                               port, name, counted, frames))
    return counts


def first_short_hop(counts, sent, max_loss_ratio):
    """The first hop short of `sent` by more than allowed, or None."""
    floor = sent * (1.0 - max_loss_ratio)
    for count in counts:
        if count.frames < floor:
            return count
    return None


# ---- live counters, for the loss of every trial split by hop -------------

#: OpenFlow versions ovs-ofctl may speak: Neutron's br-int allows 1.3.
OFCTL_PROTOCOLS = 'OpenFlow10,OpenFlow13'
OVS_TIMEOUT_S = 30


def _ovs(run, *argv):
    try:
        done = run(list(argv), stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True, timeout=OVS_TIMEOUT_S)
    except FileNotFoundError:
        raise OVSError('%s not found: the loss split needs the compute '
                       'host\'s Open vSwitch' % argv[0])
    except subprocess.TimeoutExpired:
        raise OVSError('%s did not answer in %d s' % (' '.join(argv),
                                                      OVS_TIMEOUT_S))
    if done.returncode != 0:
        raise OVSError('%s failed: %s' % (' '.join(argv),
                                          done.stderr.strip()))
    return done.stdout


def live_counters(run=subprocess.run):
    """{interface: counters} of every bridge, read from the switch now.

    ovs-ofctl asks ovs-vswitchd itself: no 5 s database refresh to wait
    for, so a read right after a trial includes all of it.
    """
    from epa_chain.local import switch    # OVS's text, parsed once

    counters = {}
    for bridge in _ovs(run, 'ovs-vsctl', '--timeout=%d' % OVS_TIMEOUT_S,
                       'list-br').split():
        names = switch.parse_ofctl_show(_ovs(
            run, 'ovs-ofctl', '-O', OFCTL_PROTOCOLS, 'show', bridge))
        counters.update(switch.parse_dump_ports(_ovs(
            run, 'ovs-ofctl', '-O', OFCTL_PROTOCOLS, 'dump-ports', bridge),
            names))
    return counters


def loss_paths(proof_directions):
    """{direction: (hop_loss.Hop, ...)} from a proof's hop counts.

    `epa-chain prove --json` records, per direction, the OVS interface
    of every hop it counted, alternately where a node sent and where the
    switch delivered to the next one; an external tester's own ends are
    not among them (it has no Neutron port): they become the None ends
    of the first and last hop.
    """
    from epa_chain.measurement import hop_loss

    paths = {}
    for entry in proof_directions:
        counted = entry.get('hop_counts') or []
        sender, sender_port = EXTERNAL_TESTER, None
        hops = []
        for count in counted:
            if count['counted'] == 'sent':
                sender, sender_port = count['server'], count['interface']
            else:
                hops.append(hop_loss.Hop(sender, sender_port,
                                         count['server'],
                                         count['interface']))
                sender, sender_port = None, None
        if sender is not None and sender_port is not None:
            hops.append(hop_loss.Hop(sender, sender_port, EXTERNAL_TESTER,
                                     None))
        if hops:
            paths[entry['direction']] = tuple(hops)
    return paths


def counted_hops(hops, interfaces):
    """A chain output's hops as prove records them: loss_paths' input.

    `hops` alternate where a node sends and where the switch delivers
    (the stack's forward_chain / reverse_chain); `interfaces` is a
    snapshot() of this host's switch. OVSError names a port it lacks.
    """
    counted = []
    for index, hop in enumerate(hops):
        port = hop.get('port')
        if port is None and hop.get('server') == EXTERNAL_TESTER:
            continue
        if port not in interfaces:
            raise OVSError('port %s (%s:%s) has no interface on this '
                           'host\'s Open vSwitch' % (
                               port, hop.get('server'), hop.get('role')))
        counted.append({'server': str(hop.get('server')),
                        'role': str(hop.get('role')), 'port': port,
                        'interface': interfaces[port][0],
                        'counted': 'sent' if index % 2 == 0
                        else 'delivered'})
    return counted
