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

"""Bring a LocalPlan up on this host; what a bed holds now (status).

`up` follows the order a cloud creates the stack in: networks (bridges),
ports, servers (VNF runtimes), then waits for every VNF's READY line as
the Tempest plugin waits for it on the console. Each step is recorded in
the bed's state before it acts (state.py), so `down` (teardown.py) can
undo a bed whose owner was killed at any point; `down` is also what `up`
runs on failure.
"""

import json
import os
import subprocess
import sys
import time

from epa_chain.chain import readiness
from epa_chain.local import config_drive
from epa_chain.local import host

READY_TIMEOUT_S = 120
MAC_AGING_S = 3600      # longer than any run: receive-only ports stay known
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class BedError(RuntimeError):
    """The bed could not be brought up; the message says where and why."""


def summary(plan):
    """The plan as JSON, for the state record and the results file."""
    return {
        'prefix': plan.prefix,
        'bridges': [{'name': b.name, 'physical_network': b.physical_network}
                    for b in plan.bridges],
        'ports': [{'name': p.name, 'bridge': p.bridge, 'vlan': p.vlan,
                   'mac': p.mac, 'owner': p.owner, 'role': p.role,
                   'network': p.network, 'kind': p.kind}
                  for p in plan.ports],
        'vnfs': [{'name': v.name, 'engine': v.config.engine,
                  'cpus': list(v.cpus), 'pinned': v.pinned}
                 for v in plan.vnfs],
        'generator': plan.generator.name,
        'generator_kind': plan.generator.kind,
        'chains': [{'chain': g.chain, 'generator': g.name, 'netns': g.netns,
                    'vnfs': [v.name for v in plan.vnfs if v.chain == g.chain]}
                   for g in plan.generators],
        'directions': list(plan.directions),
        'hugepages_2mb': plan.hugepages, 'pmd_cpus': list(plan.pmd_cpus),
        'flavors': list(plan.flavors), 'notes': list(plan.notes),
    }


class Bed:
    """One bed: the plan, its record, and handles on what runs."""

    def __init__(self, plan, state, progress, engine_binary=None,
                 ready_timeout_s=READY_TIMEOUT_S, prox_binary=None):
        self.plan = plan
        self.state = state
        self.progress = progress
        self.engine_binary = engine_binary
        self.prox_binary = prox_binary
        self.ready_timeout_s = ready_timeout_s
        self.switch = None
        #: one per chain, in chain order, as they start
        self.generators = []
        self.timings = {}
        self.throttled = None

    # ---- up ---------------------------------------------------------------

    def up(self):
        started = time.monotonic()
        plan, state = self.plan, self.state
        if state.exists():
            raise BedError('%s exists: a bed with prefix %r is up or was '
                           'killed; run `epa-chain local down --prefix %s` '
                           'first' % (state.path, plan.prefix, plan.prefix))
        state.begin(summary(plan))
        self._namespaces()
        self._hugepages()
        self._switch()
        self._bridges_and_ports()
        self._start_vnfs()
        self._wait_ready()
        for generator in plan.generators:
            if generator.kind == 'prox':
                self._start_prox_generator(generator)
            else:
                self.generators.append(self._make_generator(generator))
        state.set(phase='up')
        self.timings['up_s'] = time.monotonic() - started
        self.progress('up in %.1f s' % self.timings['up_s'])
        return self

    def _namespaces(self):
        plan, state = self.plan, self.state
        wanted = [plan.ovs_netns] + [g.netns for g in plan.generators]
        for name in wanted:
            if name in host.namespaces():
                raise BedError('network namespace %s exists: run `epa-chain '
                               'local down --prefix %s`' % (name,
                                                            plan.prefix))
            state.add_namespace(name)
            host.add_namespace(name)
        self.progress('namespaces %s' % ', '.join(wanted))

    def _hugepages(self):
        from epa_chain.local import hugepages

        plan, state = self.plan, self.state
        # the intent first: down gives back what a killed reserve took
        state.set(hugepages={'intent': plan.hugepages,
                             'nr_before': hugepages.total(),
                             'mount_point': state.hugepage_mount})
        state.set(hugepages=hugepages.reserve(plan.hugepages,
                                              state.hugepage_mount))
        self.progress('huge pages: %d x 2 MB for OVS and %d VNF(s)'
                      % (plan.hugepages, len(plan.vnfs)))

    def _switch(self):
        from epa_chain.local import switch as switch_mod

        plan, state = self.plan, self.state
        self.switch = switch_mod.PrivateSwitch(
            state.switch_dir, plan.ovs_netns, prefix=plan.prefix,
            pmd_cpus=plan.pmd_cpus, huge_dir=state.hugepage_mount)
        state.set(switch_dir=state.switch_dir)
        self.switch.start()
        versions = self.switch.versions()
        state.set(versions=versions)
        self.progress('OVS %s with DPDK %s (userspace datapath, PMD on CPU '
                      '%s) in %s' % (
                          versions.get('ovs_version'),
                          versions.get('dpdk_version'),
                          ','.join(str(c) for c in plan.pmd_cpus),
                          plan.ovs_netns))

    def _bridges_and_ports(self):
        plan = self.plan
        for bridge in plan.bridges:
            self.switch.add_bridge(bridge.name, mac_aging_s=MAC_AGING_S)
        os.makedirs(self.state.socket_dir, exist_ok=True)
        for port in plan.ports:
            if port.kind == 'vhost':
                self.switch.add_vhost_client_port(port.bridge, port.name,
                                                  port.vlan, port.socket)
            else:
                self._add_veth(port)
        self.progress('bridges %s; %d ports' % (
            ', '.join(_bridge_label(plan, b) for b in plan.bridges),
            len(plan.ports)))

    def _add_veth(self, port):
        plan = self.plan
        host.run(['ip', '-n', plan.ovs_netns, 'link', 'add', port.name,
                  'type', 'veth', 'peer', 'name', port.peer, 'netns',
                  port.netns])
        host.run(['ip', '-n', port.netns, 'link', 'set',
                  port.peer, 'address', port.mac])
        for netns, name in ((plan.ovs_netns, port.name),
                            (port.netns, port.peer)):
            host.run(['ip', '-n', netns, 'link', 'set', name, 'up'])
        self.switch.add_system_port(port.bridge, port.name, port.vlan)

    def _runtime_argv(self, vnf):
        directory = self.state.vnf_dir(vnf.name)
        argv = [sys.executable, '-m', 'epa_chain.vnf_runtime', 'run',
                '--config-drive', os.path.join(directory, 'config-drive'),
                '--run-dir', os.path.join(directory, 'run'),
                '--console', os.path.join(directory, 'console.log'),
                '--status', os.path.join(directory, 'status.json'),
                '--cpus', ','.join(str(c) for c in vnf.cpus)]
        for port in vnf.ports:
            argv += ['--virtio-user', '%s=%s' % (port.mac, port.socket)]
        if self.engine_binary:
            argv += ['--%s' % vnf.config.engine, self.engine_binary]
        if vnf.config.engine == 'prox':
            # PROX's control socket is always /tmp/prox.sock: each PROX VNF
            # gets a /tmp of its own.
            from epa_chain.local import private_tmp
            keep = [self.state.directory, PACKAGE_ROOT]
            if self.engine_binary:
                keep.append(os.path.dirname(os.path.abspath(
                    self.engine_binary)))
            argv = private_tmp.wrap(argv, os.path.join(directory, 'tmp'),
                                    keep)
        return argv

    def _start_vnfs(self):
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join(
            [PACKAGE_ROOT] + ([env['PYTHONPATH']] if env.get('PYTHONPATH')
                              else []))
        self._processes = {}
        for vnf in self.plan.vnfs:
            directory = self.state.vnf_dir(vnf.name)
            os.makedirs(directory, exist_ok=True)
            config_drive.write(os.path.join(directory, 'config-drive'), vnf)
            argv = self._runtime_argv(vnf)
            with open(os.path.join(directory, 'runtime.log'), 'ab') as log:
                # A session of its own: the terminal's Ctrl-C reaches this
                # process only, which then stops the VNFs in order.
                process = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    env=env, start_new_session=True)
            # the runtime, whatever wraps it (private_tmp) execs into it
            self.state.add_process(vnf.name, process.pid, [sys.executable],
                                   os.path.join(directory, 'status.json'))
            self._processes[vnf.name] = process
        for vnf in self.plan.vnfs:
            self.progress('started the runtime of %s (%s, CPUs %s)' % (
                vnf.name, vnf.config.engine, ','.join(map(str, vnf.cpus))))

    def _wait_ready(self):
        nodes = [readiness.Node(v.name, v.config.engine)
                 for v in self.plan.vnfs]

        def poll(node):
            console = _read(self._console(node.name))
            code = self._processes[node.name].poll()
            return console, (None if code is None else
                             'runtime exited with %s' % code)

        try:
            readiness.wait_until_ready(
                nodes, poll, self.ready_timeout_s, interval=0.2,
                on_ready=lambda node: self.progress('%s: %s' % (
                    node.name, readiness.ready_line(node.name,
                                                    node.engine))))
        except readiness.NotReadyError as exc:
            raise BedError('%s (see %s)' % (exc, ', '.join(
                '%s, %s' % (self._console(n.name), os.path.join(
                    self.state.vnf_dir(n.name), 'runtime.log'))
                for n in exc.nodes)))

    def _console(self, name):
        return os.path.join(self.state.vnf_dir(name), 'console.log')

    @property
    def generator(self):
        """Chain 0's generator (prove and measure take self.generators)."""
        return self.generators[0] if self.generators else None

    def _start_prox_generator(self, planned):
        from epa_chain.local import prox_generator
        from epa_chain.local import prox_setup

        plan = self.plan
        if not self.prox_binary:
            raise BedError('the PROX generator needs a PROX binary: give '
                           '--prox-binary or --prox-source, or use '
                           '--generator afpacket')
        # PROX's TCP control port, reached from this process only
        host.run(['ip', '-n', planned.netns, 'link', 'set', 'lo', 'up'])
        generator = prox_generator.LocalProxGenerator(
            prox_setup.setup(planned, planned.cpus), planned.netns,
            cpu_notes=[n for n in plan.notes
                       if n.startswith('PROX generator')])
        # Closed by close_generator() and, if this process dies, by down
        # (the processes are recorded and run in the bed's namespaces).
        self.generators.append(generator)
        name, directory = _generator_record(planned.chain)
        generator.start(self.prox_binary, self.state.sub(*directory),
                        self.state.hugepage_mount,
                        plan.prefix + ('g%d' % planned.chain
                                       if planned.chain else ''),
                        lambda _name, pid, argv: self.state.add_process(
                            name, pid, argv), self.progress)
        return generator

    def _make_generator(self, planned):
        from epa_chain.local import afpacket

        config = planned.config
        endpoints = [afpacket.Endpoint(
            name=p.role, interface=p.peer, mac=p.mac)
            for p in planned.ports]
        # The last hop of each direction: frames from any other source
        # reached the generator without crossing the chain.
        last_hop = {hop.direction: hop.src for hop in
                    self.plan.for_chain(planned.chain).hops()}
        streams = [afpacket.Stream(
            direction=f.direction, tx=f.tx_port, rx=f.rx_port,
            dst_mac=f.next_hop_mac, last_hop_mac=last_hop.get(f.direction))
            for f in config.flows]
        return afpacket.AfPacketGenerator(planned.netns, endpoints, streams)

    # ---- what the measurement reads ----------------------------------------

    def throttle(self, throttle):
        """Hold one VNF (runtime and engine) to a share of one CPU."""
        from epa_chain.local import teardown
        from epa_chain.local import throttle as throttle_mod

        vnf = self.plan.vnfs[throttle.vnf - 1]
        record = next(p for p in self.state.data['processes']
                      if p['name'] == vnf.name)
        pids = [record['pid']]
        engine = teardown.engine_pid(record.get('status'),
                                     self.state.directory)
        if engine is None:
            raise BedError('%s: its runtime records no engine pid in %s; '
                           'nothing to throttle' % (vnf.name,
                                                    record.get('status')))
        pids.append(engine)
        group = throttle_mod.apply(throttle, self.state, pids)
        self.throttled = {'vnf': vnf.name, 'index': throttle.vnf,
                          'percent': throttle.percent,
                          'period_us': throttle_mod.PERIOD_US,
                          'cgroup': group}
        self.progress('throttled %s (runtime %d, engine %d) to %g %% of one '
                      'CPU: %s' % (vnf.name, pids[0], engine,
                                   throttle.percent, group))

    def loss_paths(self, chain=0):
        """{direction: (hop_loss.Hop, ...)} of a chain, by switch port."""
        from epa_chain.measurement import hop_loss

        owners = {port.name: port.owner for port in self.plan.ports}
        paths = {}
        for hop in self.plan.for_chain(chain).hops():
            paths.setdefault(hop.direction, []).append(hop_loss.Hop(
                owners[hop.in_port], hop.in_port,
                owners.get(hop.out_port, hop.out_port), hop.out_port))
        return {direction: tuple(hops) for direction, hops in paths.items()}

    def port_counters(self):
        """{switch port: counters} of every bridge, read now."""
        counters = {}
        for bridge in self.plan.bridges:
            counters.update(self.switch.port_counters(bridge.name))
        return counters

    def close_generator(self):
        while self.generators:
            self.generators.pop().close()


def _generator_record(chain):
    """A chain's generator: its process record and directory parts."""
    if not chain:
        return 'generator', ('generator',)
    return 'generator-%d' % chain, ('generators', str(chain))


def _bridge_label(plan, bridge):
    vlans = sorted({p.vlan for p in plan.ports if p.bridge == bridge.name})
    return '%s (VLAN %s)' % (bridge.name, ', '.join(map(str, vlans)))


def _read(path):
    try:
        with open(path, errors='replace') as stream:
            return stream.read()
    except OSError:
        return ''


def status(state):
    """What a bed holds now: record, processes alive, namespaces.

    Reads only; ValueError naming the record if it cannot be read.
    """
    from epa_chain.local import teardown

    try:
        present = host.namespaces()
    except host.HostError:
        present = []    # `ip` did not answer: status must not hang
    if not state.exists():
        return {'prefix': state.prefix, 'up': False,
                'leftovers': [n for n in state.namespaces if n in present]}
    try:
        state.load()
    except OSError as exc:
        raise ValueError('%s: cannot be read: %s' % (
            state.path, exc.strerror or exc)) from None
    processes = []
    for process in state.data['processes']:
        item = dict(process, alive=teardown.is_ours(
            process['pid'], process.get('argv0'), state.directory))
        item['status'] = _status_file(process.get('status'),
                                      state.directory)
        processes.append(item)
    return {'prefix': state.prefix, 'up': state.data.get('phase') == 'up',
            'phase': state.data.get('phase'),
            'directory': state.directory,
            'namespaces': [n for n in state.namespaces if n in present],
            'hugepages': state.data.get('hugepages'),
            'versions': state.data.get('versions'),
            'processes': processes, 'plan': state.data.get('plan')}


def _status_file(path, directory):
    """A VNF's status.json, read only inside the bed's directory."""
    if not isinstance(path, str) or not os.path.normpath(path).startswith(
            directory + os.sep):
        return None
    try:
        with open(path) as stream:
            data = json.load(stream)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {key: data.get(key) for key in ('state', 'engine', 'restarts',
                                           'pid', 'reason')}
