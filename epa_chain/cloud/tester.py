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

"""Seed 000's external tester, where its Ixia was: on the provider bridges.

A chain created with `endpoints: external` (the vecpe presets as shipped)
ends at a tester outside the stack: seed 000 plugged an Ixia into the two
physical networks (Table 8-3, Figure 8-11: tenant port 1 on physnet1,
tenant port 2 on physnet2, sending from 00:11:00:00:00:10 and
00:22:00:00:00:10). On a compute host this module attaches that tester
the way a physical NIC is attached to a provider bridge:

- one Open vSwitch dpdkvhostuserclient port on the bridge of each end's
  physical network (the devstack plugin's OVS_BRIDGE_MAPPINGS), a trunk
  port allowing that end's VLAN only (trunks=VLAN, no tag), so the tester
  sees its provider VLAN tagged on the wire as a tester on a physical
  switch's trunk port does. The allowed list is a switch port's
  "trunk allowed vlan": PROX's lat task counts every frame bearing its
  signature, and a frame flooded on another VLAN of the physical network
  (the chain's own segment between two VNFs, while the switch relearns a
  MAC) reached an open trunk and was counted as received;
- the generator runtime of the images (epa_chain.vnf_runtime, role
  generator) on the host, its data ports virtio-user devices on those
  ports, its frames 802.1Q-tagged with each end's VLAN (node config
  `tagged`), from the stack's external MACs to the first VNF's left and
  the last VNF's right port, as the stack's forward_chain and
  reverse_chain outputs say;
- its PROX control socket relayed on 127.0.0.1 only (a shared lab host),
  where `epa-chain prove --generator-endpoint` and `epa-chain measure
  --generator prox --prox-endpoint` drive it.

Everything `up` makes is recorded in the state directory (0700) before it
is made; `down`, and a failed `up`, remove it in reverse order, each step
bounded: the runtime (SIGTERM: it stops PROX and gives back the huge
pages it took), the OVS ports, the directory.
"""

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import typing
import uuid

from epa_chain.chain import config_drive
from epa_chain.chain import node_config
from epa_chain.chain import readiness
from epa_chain.cloud import ovs_hops

NAME = 'external-tester'
DEFAULT_STATE_DIR = '/var/lib/epa-chain-tester'
DEFAULT_CONTROL_PORT = 8474
CONTROL_ADDRESS = '127.0.0.1'
STATE_FILE = 'state.json'
#: OVS interface names (15 bytes at most), by the tester's port role
OVS_PORTS = {'left': 'epa-tester-l', 'right': 'epa-tester-r'}
# A MAC of no NIC: network_data's link for the management address.
MANAGEMENT_MAC = '02:00:00:00:00:01'
READY_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
OVS_TIMEOUT_S = 30.0
_BRIDGE = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,14}')
_PHYSNET = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}')
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class TesterError(Exception):
    """The tester cannot be planned, attached or removed; says why."""


@dataclasses.dataclass(frozen=True)
class End:
    """One end of the chain as the tester sees it."""

    role: str                   # left (sends forward) or right
    mac: str                    # the tester's port
    network: str
    vlan: int
    physical_network: str
    bridge: str
    next_hop_mac: typing.Optional[str]   # None: this end only receives


@dataclasses.dataclass(frozen=True)
class Plan:
    stack: str
    ends: typing.Tuple[End, End]
    control_port: int
    latency_bucket_shift: typing.Optional[int] = None

    def node_config(self):
        """The tester's node config (chain/node_config.py's schema)."""
        left, right = self.ends
        flows = [{'direction': 'forward', 'rx_port': 'right',
                  'tx_port': 'left', 'next_hop_mac': left.next_hop_mac}]
        if right.next_hop_mac:
            flows.append({'direction': 'reverse', 'rx_port': 'left',
                          'tx_port': 'right',
                          'next_hop_mac': right.next_hop_mac})
        return {
            'schema_version': node_config.SCHEMA_VERSION,
            'role': 'generator', 'name': NAME, 'engine': 'prox',
            'forwarding_cores': 1, 'control_port': self.control_port,
            'latency_bucket_shift': self.latency_bucket_shift,
            'ports': {end.role: {'mac': end.mac, 'network': end.network,
                                 'vlan': end.vlan, 'tagged': True}
                      for end in self.ends},
            'flows': flows}

    def user_data(self):
        # JSON is YAML: the document the templates write, flow style.
        text = '#cloud-config\nepa_chain: %s\n' % json.dumps(
            self.node_config(), sort_keys=True)
        node_config.parse_user_data(text)   # NodeConfigError if bad
        return text

    @property
    def endpoint(self):
        return '%s:%d' % (CONTROL_ADDRESS, self.control_port)

    def describe(self):
        return '; '.join(
            '%s %s on %s (%s, VLAN %d, trunk)%s' % (
                end.role, end.mac, end.bridge, end.physical_network,
                end.vlan, ' -> %s' % end.next_hop_mac
                if end.next_hop_mac else ', receives only')
            for end in self.ends)


def parse_bridge_mappings(text):
    """{physnet: bridge} of 'physnet1:br-physnet1,...' (OVS_BRIDGE_MAPPINGS).

    ValueError names the mapping; a bridge name never starts with '-'.
    """
    mappings = {}
    for item in (text or '').split(','):
        physnet, sep, bridge = item.strip().rpartition(':')
        if not sep or not _PHYSNET.fullmatch(physnet) or not (
                _BRIDGE.fullmatch(bridge)):
            raise ValueError(
                '--bridge-mappings %r: give PHYSNET:BRIDGE[,...] as the '
                'devstack plugin\'s OVS_BRIDGE_MAPPINGS, e.g. physnet1:'
                'br-physnet1,physnet2:br-physnet2' % text)
        mappings[physnet] = bridge
    return mappings


def _external_ends(stack, outputs, parameters):
    """The forward and reverse chains of a stack with external ends."""
    forward = outputs.get('forward_chain') or []
    reverse = outputs.get('reverse_chain') or []
    if len(forward) < 4 or any(
            hop.get('server') != ovs_hops.EXTERNAL_TESTER
            for hop in (forward[0], forward[-1])):
        raise TesterError(
            'stack %s does not end at an external tester (its parameter '
            'endpoints is %r): the tester is for endpoints=external, e.g. '
            'the vecpe presets as shipped' % (
                stack, parameters.get('endpoints')))
    return forward, reverse


def _physnet_keys(forward):
    """The parameter naming each end's physical network."""
    # Two hops per VNF between the ends. chain.yaml (and a translated
    # TOSCA chain, which has no vnf_count) put the near end on net0 and
    # the far end on net<VNFs>.
    vnf_count = (len(forward) - 2) // 2
    return {'left': 'net0_physical_network',
            'right': 'net%d_physical_network' % vnf_count}


def _next_hops(forward, reverse):
    """Each end sends to the first VNF port of its direction, if it sends."""
    next_hops = {'left': forward[1].get('mac'),
                 'right': reverse[1].get('mac') if len(reverse) > 1
                 else None}
    return {role: str(mac).lower() if mac else None
            for role, mac in next_hops.items()}


def _end(stack, role, hop, key, physnet, bridge_mappings, next_hop_mac):
    """One End of the tester; TesterError naming what it lacks."""
    if not physnet:
        raise TesterError('stack %s has no parameter %s: the tester '
                          'needs the physical network of its %s end'
                          % (stack, key, role))
    if physnet not in bridge_mappings:
        raise TesterError(
            'stack %s: the %s end is on physical network %r, which '
            '--bridge-mappings (%s) gives no bridge: add %s:BRIDGE' % (
                stack, role, physnet, ','.join(
                    '%s:%s' % item for item in sorted(
                        bridge_mappings.items())), physnet))
    vlan = hop.get('vlan')
    if not isinstance(vlan, int) or isinstance(vlan, bool):
        raise TesterError('stack %s: the %s end (network %s) has no '
                          'VLAN segment: the tester sends on provider '
                          'VLANs' % (stack, role, hop.get('network')))
    return End(role=role, mac=str(hop.get('mac')).lower(),
               network=str(hop.get('network')), vlan=vlan,
               physical_network=physnet, bridge=bridge_mappings[physnet],
               next_hop_mac=next_hop_mac)


def _bucket_shift(latency_bucket_shift, parameters):
    """The given shift, else the stack's, else None (PROX's built-in)."""
    if latency_bucket_shift is not None:
        return latency_bucket_shift
    shift = parameters.get('generator_latency_bucket_shift')
    try:
        return int(shift) if shift not in (None, '', 'None') else None
    except ValueError:
        return None


def plan(stack, outputs, parameters, bridge_mappings,
         control_port=DEFAULT_CONTROL_PORT, latency_bucket_shift=None):
    """The tester for a created stack, from its outputs and parameters.

    The histogram's bucket width: `latency_bucket_shift`, else the
    stack's generator_latency_bucket_shift (chain.yaml's; a translated
    TOSCA chain without a generator has none), else PROX's built-in.
    TesterError when the stack has no external ends or an end's physical
    network has no bridge here.
    """
    forward, reverse = _external_ends(stack, outputs, parameters)
    keys = _physnet_keys(forward)
    next_hops = _next_hops(forward, reverse)
    ends = tuple(
        _end(stack, role, hop, keys[role], parameters.get(keys[role]),
             bridge_mappings, next_hops[role])
        for role, hop in (('left', forward[0]), ('right', forward[-1])))
    the_plan = Plan(stack=stack, ends=ends, control_port=control_port,
                    latency_bucket_shift=_bucket_shift(latency_bucket_shift,
                                                       parameters))
    try:
        # The runtime's own check, before anything is made: a MAC or a
        # bucket width from the stack it would refuse.
        the_plan.user_data()
    except node_config.NodeConfigError as exc:
        raise TesterError('stack %s: the tester cannot run its chain: %s'
                          % (stack, exc))
    return the_plan


def plan_for_stack(cli, stack, bridge_mappings,
                   control_port=DEFAULT_CONTROL_PORT,
                   latency_bucket_shift=None):
    """plan() for the stack `stack` as the client (`cli`) shows it.

    TesterError unless the stack is created, or updated since (a
    parameter such as the histogram's bucket width): its outputs are
    then the chain's.
    """
    shown = cli.stack(stack)
    if shown.status not in ('CREATE_COMPLETE', 'UPDATE_COMPLETE'):
        raise TesterError('stack %s is %s' % (stack, shown.status))
    return plan(shown.name or stack, shown.outputs, shown.parameters,
                bridge_mappings, control_port, latency_bucket_shift)


class Tester:
    """The tester's state directory: what up made, for down to remove."""

    def __init__(self, state_dir=DEFAULT_STATE_DIR, run=subprocess.run,
                 progress=None):
        self.state_dir = os.path.abspath(state_dir)
        self._run = run
        self.progress = progress or (lambda message: None)

    # ---- state --------------------------------------------------------

    @property
    def _state_path(self):
        return os.path.join(self.state_dir, STATE_FILE)

    def state(self):
        """What up recorded, or None when no tester is up here."""
        try:
            with open(self._state_path) as stream:
                return json.load(stream)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise TesterError('%s: unreadable (%s): remove the tester by '
                              'hand (ovs-vsctl del-port %s) and the '
                              'directory' % (self._state_path, exc,
                                             ' / '.join(OVS_PORTS.values())))

    def _record(self, state):
        path = self._state_path + '.new'
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as stream:
            json.dump(state, stream, indent=1, sort_keys=True)
        os.replace(path, self._state_path)

    # ---- up -----------------------------------------------------------

    def up(self, the_plan, prox_binary, cpus,
           ready_timeout_s=READY_TIMEOUT_S):
        """Attach the tester; its control endpoint. Undone on failure."""
        if self.state() is not None:
            raise TesterError('a tester is up (%s): run `epa-chain tester '
                              'down` first' % self._state_path)
        if not (os.path.isfile(prox_binary) and
                os.access(prox_binary, os.X_OK)):
            raise TesterError('--prox-binary %s: not an executable file'
                              % prox_binary)
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        os.chmod(self.state_dir, 0o700)
        state = {'stack': the_plan.stack, 'endpoint': the_plan.endpoint,
                 'ovs_ports': [], 'pid': None}
        self._record(state)
        try:
            self._attach(the_plan, state)
            process = self._start(the_plan, prox_binary, cpus, state)
            self._wait_ready(process, ready_timeout_s)
        except BaseException:
            self.down()
            raise
        self.progress('tester up: %s; PROX control at %s' % (
            the_plan.describe(), the_plan.endpoint))
        return the_plan.endpoint

    def _socket(self, role):
        return os.path.join(self.state_dir, '%s.sock' % role)

    def _vsctl(self, *argv):
        try:
            done = self._run(['ovs-vsctl', '--timeout=%d' % OVS_TIMEOUT_S] +
                             list(argv), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True,
                             timeout=OVS_TIMEOUT_S + 5)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TesterError('ovs-vsctl %s: %s' % (argv[0], exc))
        if done.returncode != 0:
            raise TesterError('ovs-vsctl %s: %s' % (
                ' '.join(argv[:3]), ' '.join(done.stderr.split())))
        return done.stdout

    def _attach(self, the_plan, state):
        bridges = self._vsctl('list-br').split()
        for end in the_plan.ends:
            if end.bridge not in bridges:
                raise TesterError(
                    'the %s end\'s bridge %s (%s) is not on this host\'s '
                    'Open vSwitch (it has %s): run the tester on the '
                    'compute host, or fix --bridge-mappings' % (
                        end.role, end.bridge, end.physical_network,
                        ', '.join(bridges) or 'no bridge'))
        for end in the_plan.ends:
            name = OVS_PORTS[end.role]
            # Recorded first: a port half-added is still removed by down.
            state['ovs_ports'].append(name)
            self._record(state)
            self._vsctl('add-port', end.bridge, name,
                        'trunks=%d' % end.vlan, '--', 'set',
                        'Interface', name, 'type=dpdkvhostuserclient',
                        'options:vhost-server-path=%s' % self._socket(
                            end.role))
            self.progress('%s: trunk port %s on %s (%s)' % (
                end.role, name, end.bridge, end.physical_network))

    def _start(self, the_plan, prox_binary, cpus, state):
        from epa_chain.local import private_tmp

        drive = os.path.join(self.state_dir, 'config-drive')
        links = [config_drive.link('management', MANAGEMENT_MAC, 'phy',
                                   'management')]
        links += [config_drive.link('tap-%s' % end.role, end.mac,
                                    'vhostuser', end.role)
                  for end in the_plan.ends]
        config_drive.write(
            drive, config_drive.meta_data(str(uuid.uuid4()), NAME,
                                          availability_zone='host'),
            config_drive.network_data(links, [{
                'id': 'management', 'link': 'management', 'type': 'ipv4',
                'ip_address': CONTROL_ADDRESS, 'netmask': '255.0.0.0'}]),
            the_plan.user_data())
        argv = [sys.executable, '-m', 'epa_chain.vnf_runtime', 'run',
                '--config-drive', drive,
                '--run-dir', os.path.join(self.state_dir, 'run'),
                '--console', self._console,
                '--status', os.path.join(self.state_dir, 'status.json'),
                '--cpus', ','.join(str(cpu) for cpu in cpus),
                '--prox', os.path.abspath(prox_binary)]
        for end in the_plan.ends:
            argv += ['--virtio-user', '%s=%s' % (end.mac,
                                                 self._socket(end.role))]
        # PROX's control socket is always /tmp/prox.sock: a /tmp of its own.
        argv = private_tmp.wrap(
            argv, os.path.join(self.state_dir, 'tmp'),
            [self.state_dir, PACKAGE_ROOT,
             os.path.dirname(os.path.abspath(prox_binary))])
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join(
            [PACKAGE_ROOT] + ([env['PYTHONPATH']] if env.get('PYTHONPATH')
                              else []))
        with open(os.path.join(self.state_dir, 'runtime.log'), 'ab') as log:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                env=env, start_new_session=True)
        state['pid'] = process.pid
        self._record(state)
        self.progress('started the generator runtime (pid %d, CPUs %s)'
                      % (process.pid, ','.join(map(str, cpus))))
        return process

    @property
    def _console(self):
        return os.path.join(self.state_dir, 'console.log')

    def _wait_ready(self, process, timeout_s):
        def poll(_node):
            try:
                with open(self._console, errors='replace') as stream:
                    text = stream.read()
            except FileNotFoundError:
                text = ''
            code = process.poll()
            return text, (None if code is None else
                          'runtime exited with %s' % code)

        try:
            readiness.wait_until_ready(
                [readiness.Node(NAME, 'prox')], poll, timeout_s,
                interval=0.5)
        except readiness.NotReadyError as exc:
            raise TesterError('%s (see %s and %s)' % (
                exc, self._console, os.path.join(self.state_dir,
                                                 'runtime.log')))

    # ---- down ---------------------------------------------------------

    def down(self):
        """Remove what up made; True if there was a tester to remove."""
        state = self.state()
        if state is None:
            if os.path.isdir(self.state_dir):
                shutil.rmtree(self.state_dir, ignore_errors=True)
            return False
        left = []
        if state.get('pid'):
            left += self._stop(int(state['pid']))
        for name in reversed(state.get('ovs_ports') or []):
            try:
                self._vsctl('--if-exists', 'del-port', name)
            except TesterError as exc:
                left.append(str(exc))
        if left:
            raise TesterError('tester down left: %s (state kept in %s)'
                              % ('; '.join(left), self.state_dir))
        shutil.rmtree(self.state_dir, ignore_errors=True)
        self.progress('tester down: runtime stopped, ports %s removed'
                      % ', '.join(state.get('ovs_ports') or []) or 'none')
        return True

    def _stop(self, pid):
        """Stop the runtime's process group; what could not be stopped."""
        if not _is_runtime(pid):
            return []       # gone (or the pid is another program's now)
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            return []
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            if not _is_runtime(pid):
                return []
            time.sleep(0.2)
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            return []
        time.sleep(1.0)
        return (['runtime pid %d survives SIGKILL' % pid]
                if _is_runtime(pid) else [])


def _is_runtime(pid):
    """The process `pid` is alive and is the runtime up started.

    Its own session (start_new_session) and, in its command line, the
    runtime or what wraps it until it execs: a pid reused by another
    program is left alone.
    """
    try:
        if os.getsid(pid) != pid:
            return False
        with open('/proc/%d/cmdline' % pid, 'rb') as stream:
            cmdline = stream.read()
        with open('/proc/%d/stat' % pid) as stream:
            zombie = stream.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except (OSError, IndexError, ProcessLookupError):
        return False
    if zombie:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return any(word in cmdline for word in (
        b'epa_chain.vnf_runtime', b'epa_chain.local.private_tmp',
        b'unshare'))
