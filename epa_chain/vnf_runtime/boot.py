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


"""The boot sequence: read and check everything, then configure, then run.

Nothing touches the guest until the config drive, the NICs, the CPUs, the
huge pages and the engine's configuration have all been checked: a bad or
missing field fails the node with a console line naming the file and the
field, and nothing is half-configured. Each step that changes the guest
registers its undo; a failure (or SIGTERM) undoes them in reverse order.

On a host (`--virtio-user`, `--cpus`) the data ports are virtio-user
devices on vhost-user sockets: there is then nothing to bind and no kernel
interface to send learning frames from, and the CPUs are the ones given.
"""

import dataclasses
import os
import shlex
import signal
import subprocess
import sys
import threading
import traceback
import typing

from epa_chain.vnf_runtime import boot_timeline
from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import control_relay
from epa_chain.vnf_runtime import cpus
from epa_chain.vnf_runtime import devices
from epa_chain.vnf_runtime import dpdk_binding
from epa_chain.vnf_runtime import engine
from epa_chain.vnf_runtime import errors
from epa_chain.vnf_runtime import guest
from epa_chain.vnf_runtime import hugepages
from epa_chain.vnf_runtime import management
from epa_chain.vnf_runtime import readiness
from epa_chain.vnf_runtime import supervisor
from epa_chain.vnf_runtime import switch_learning
from epa_chain.vnf_runtime import sysfs as sysfs_mod
from epa_chain.vnf_runtime import virtio_user


@dataclasses.dataclass
class Options:
    config_drive: typing.Optional[str] = None
    sysfs: str = '/sys'
    console: str = readiness.CONSOLE
    status: str = readiness.STATUS_FILE
    dry_run: bool = False
    driver: str = 'auto'
    run_dir: str = engine.RUN_DIR
    prox: typing.Optional[str] = None
    testpmd: typing.Optional[str] = None
    # MAC -> vhost-user socket of data ports that are virtio-user devices
    virtio_user: dict = dataclasses.field(default_factory=dict)
    cpus: typing.Optional[typing.List[int]] = None   # --cpus, else online
    # --manage-guest: host name, management NIC and SSH keys (no
    # cloud-init in the image), for --login-user
    manage_guest: bool = False
    login_user: str = 'epa'
    # --online-cpus: vCPUs the kernel left offline (maxcpus=) come up
    online_cpus: bool = False


@dataclasses.dataclass
class Prepared:
    """Everything checked and rendered; nothing changed yet."""

    drive: config_drive.ConfigDrive
    node: typing.Any
    links: list
    nics: list
    ports: dict
    cores: cpus.CoreLayout
    plan: engine.EnginePlan
    pages: hugepages.Plan
    learning: dict
    driver: typing.Optional[dpdk_binding.DriverChoice]  # None: virtio-user
    known: dict
    management: typing.Optional[typing.Tuple[str, str]]
    virtio_user: bool = False       # every data port is a virtio-user one
    cpus: typing.Optional[typing.List[int]] = None
    guest_plan: typing.Optional[guest.Plan] = None   # --manage-guest


def read_drive(options):
    if options.config_drive:
        return config_drive.read(options.config_drive)
    return config_drive.Locator().read()


def plan_guest(options, sysfs, drive):
    """The --manage-guest plan (guest.Plan), or None without the option."""
    if not options.manage_guest:
        return None
    return guest.plan(drive, drive.node_config(), drive.links(),
                      devices.scan(sysfs), options.login_user)


def prepare(options, sysfs, binder, drive,
            unix_sockets=virtio_user.UNIX_SOCKETS):
    """Check and render; RuntimeFailure on the first problem."""
    node = drive.node_config()
    links = drive.links()
    known_records = binder.known()
    known = {}
    for mac, record in known_records.items():
        nic = devices.pci_nic(sysfs, mac, record.get('pci'),
                              record.get('queues') or 1)
        if nic:
            known[mac] = nic
    nics = devices.scan(sysfs)
    ports = devices.match(node, links, nics, known,
                          virtio_user=options.virtio_user)
    virtio_only = bool(ports) and all(p.virtio_user for p in ports.values())
    if virtio_only:
        virtio_user.check_sockets(ports.values(), unix_sockets)
    cores = cpus.layout(sysfs, engine.workers_needed(node),
                        allowed=options.cpus,
                        workers_wanted=engine.workers_wanted(node))
    override = getattr(options, node.engine)
    binary = engine.find_binary(node.engine, override)
    if binary is None:
        if not options.dry_run:
            looked = override or ', '.join(engine.BINARIES[node.engine])
            if node.role == 'generator':
                fix = 'boot the generator image (vnf_images/build-generator)'
            else:
                fix = ('use an image built with it, or the other engine '
                       '(vnf_engine)')
            raise errors.SystemSetupError(
                'epa_chain.engine: %s is not installed in this image '
                '(looked for %s): %s' % (node.engine, looked, fix))
        binary = engine.BINARIES[node.engine][0]
    plan = engine.plan(node, ports, cores, binary, options.run_dir)
    pages = hugepages.plan(sysfs, plan.hugepages_mb)
    mgmt = None
    if node.parked:
        link = management.link(node, links)
        interface = next((n.interface for n in nics if n.mac == link.mac),
                         None)
        mgmt = (management.static_address(drive, link), interface)
    guest_plan = plan_guest(options, sysfs, drive)
    return Prepared(
        drive=drive, node=node, links=links, nics=nics, ports=ports,
        cores=cores, plan=plan, pages=pages,
        learning=switch_learning.plan(node, node.engine,
                                      boot_frames=not virtio_only),
        driver=(None if virtio_only
                else dpdk_binding.describe_choice(sysfs, options.driver)),
        known=known, management=mgmt, virtio_user=virtio_only,
        cpus=options.cpus, guest_plan=guest_plan)


def describe(prepared):
    """The dry-run report: what would be done, then the engine config."""
    node, plan = prepared.node, prepared.plan
    lines = ['# epa-chain vnf_runtime dry run for %s: role %s, engine %s'
             % (node.name, node.role, node.engine),
             '# config drive: %s' % prepared.drive.source]
    if prepared.guest_plan is not None:
        lines.append('# guest: %s' % prepared.guest_plan.describe())
    for name, port in sorted(prepared.ports.items()):
        data = node.ports[name]
        if port.virtio_user:
            lines.append(
                '# port %s: MAC %s, virtio-user %s%s, DPDK port %d, %s VLAN '
                '%s' % (name, port.mac, port.virtio_user,
                        ' (a stale socket file: removed at start)'
                        if virtio_user.stale(port.virtio_user) else '',
                        port.dpdk_port, data.network, data.vlan))
        else:
            lines.append(
                '# port %s: MAC %s, %s, PCI %s (%s), DPDK port %d, %s VLAN '
                '%s' % (name, port.mac, port.nic.interface or
                        'bound to DPDK', port.pci,
                        port.nic.driver or 'no driver', port.dpdk_port,
                        data.network, data.vlan))
        lines.append('#   switch learning: %s'
                     % prepared.learning[name].method)
    cores = prepared.cores
    lines.append('# cores: master %d, workers %s%s%s' % (
        cores.master, ','.join(str(c) for c in cores.workers),
        ' (isolated)' if cores.isolated else '',
        ' from --cpus %s' % cpus.format_cpu_list(prepared.cpus)
        if prepared.cpus is not None else ''))
    if plan.note:
        lines.append('# %s' % plan.note)
    lines.append('# huge pages: %s' % prepared.pages.describe())
    if prepared.virtio_user:
        lines.append('# DPDK driver: none (virtio-user ports: nothing to '
                     'bind, no PCI scan)')
        lines.append('# EAL: %s' % shlex.join(
            virtio_user.eal_args(prepared.ports.values())))
    else:
        lines.append('# DPDK driver: %s (%s)' % (prepared.driver.driver,
                                                 prepared.driver.detail))
    if prepared.management is not None:
        address, interface = prepared.management
        lines.append('# control socket: %s:%d on %s, relayed to %s' % (
            address or '<DHCP address>', node.control_port,
            interface or '<management NIC>', control_relay.PROX_SOCKET))
    lines.append('# command: %s' % shlex.join(plan.argv))
    if plan.config_text is not None:
        lines.append('# ---- %s ----' % plan.config_path)
        lines.append(plan.config_text.rstrip('\n'))
    return '\n'.join(lines) + '\n'


class Runtime:
    """Brings the node up and keeps its engine running until stopped."""

    def __init__(self, options, out=None, reporter=None, binder=None,
                 learning_sender=switch_learning.send_boot_frames,
                 supervisor_factory=supervisor.Supervisor,
                 relay_factory=control_relay.ControlRelay,
                 address_of=management.interface_address,
                 run=subprocess.run, mounts='/proc/mounts',
                 unix_sockets=virtio_user.UNIX_SOCKETS, guest_manager=None,
                 timeline=boot_timeline.read):
        self.options = options
        self.run_command = run
        self.mounts = mounts
        self.unix_sockets = unix_sockets
        self.out = out or sys.stdout
        self.sysfs = sysfs_mod.Sysfs(options.sysfs)
        self.reporter = reporter or readiness.Reporter(
            console=options.console, status_file=options.status)
        self.binder = binder or dpdk_binding.Binder(
            self.sysfs, run=run,
            state_file=os.path.join(options.run_dir, 'bindings.json'))
        self.learning_sender = learning_sender
        self.supervisor_factory = supervisor_factory
        self.relay_factory = relay_factory
        self.address_of = address_of
        self.guest_manager = guest_manager or guest.Manager(run=run)
        self.timeline = timeline
        self._undo = []
        self._stop = threading.Event()
        self._supervisor = None
        self._ready_once = False

    def request_stop(self, *_):
        self._stop.set()
        if self._supervisor:
            self._supervisor.stop_requested()

    def _sleep(self, seconds):
        """time.sleep that SIGTERM cuts short."""
        if self._stop.wait(seconds):
            raise errors.Stopped()

    def _check_stop(self):
        if self._stop.is_set():
            raise errors.Stopped()

    def run(self):
        name = None
        try:
            drive = read_drive(self.options)
            name = drive.server_name
            if not self.options.dry_run:
                self._manage_guest(drive)
                self._online_cpus()
            prepared = prepare(self.options, self.sysfs, self.binder, drive,
                               unix_sockets=self.unix_sockets)
            name = prepared.node.name
            if self.options.dry_run:
                self.out.write(describe(prepared))
                return 0
            self._bring_up(prepared)
            self._supervisor.watch()
            raise errors.Stopped()
        except errors.Stopped:
            self._undo_all()
            self.reporter.update(state='stopped')
            return 0
        except (errors.RuntimeFailure, supervisor.EngineFailed) as exc:
            return self._fail(name or getattr(exc, 'server_name', None),
                              exc.reason)
        except Exception as exc:  # a bug: still undo, still say so
            traceback.print_exc(file=sys.stderr)
            return self._fail(name, 'internal error: %s: %s (traceback in '
                              'the journal)' % (type(exc).__name__, exc))

    def _fail(self, name, reason):
        problems = self._undo_all()
        reason += ''.join('; undo: ' + p for p in problems)
        self.reporter.failed(name or os.uname().nodename or 'unknown',
                             reason)
        return 1

    def _bring_up(self, prepared):
        node = prepared.node
        self._report_starting(prepared)
        if not prepared.virtio_user:
            # Virtio-user ports have no kernel side: testpmd's --tx-first
            # burst is their first learning frame.
            self._learn_before_start(prepared.ports)
        self._check_stop()
        self._claim_memory_and_ports(prepared)
        self._check_stop()
        self._start_engine(prepared.plan)
        control = None
        if prepared.management is not None:
            control = self._relay_control(prepared)
        if not prepared.virtio_user:
            # A guest (not a process on a host): where its boot went.
            self.reporter.boot(node.name, self.timeline())
        self.reporter.ready(node.name, node.engine, pid=self._supervisor.pid,
                            control=control)
        self._ready_once = True

    def _online_cpus(self):
        """The vCPUs a lean boot left offline, before cores are laid out."""
        if not self.options.online_cpus:
            return
        brought = cpus.bring_online(self.sysfs)
        if brought:
            self.reporter.note('brought CPU %s online'
                               % cpus.format_cpu_list(brought))

    def _manage_guest(self, drive):
        """Name, management address and SSH keys, before anything else.

        First: the control sockets bind that address, and a node whose
        engine cannot be set up stays reachable to find out why.
        """
        planned = plan_guest(self.options, self.sysfs, drive)
        if planned is not None:
            self.guest_manager.apply(planned)
            self.reporter.update(guest=planned.describe())

    def _report_starting(self, prepared):
        """The node, its ports, cores and command, before anything runs."""
        node, plan = prepared.node, prepared.plan
        self.reporter.update(
            state='starting', name=node.name, role=node.role,
            engine=node.engine, reason=None,
            ports={name: {'mac': p.mac, 'pci': p.pci,
                          'interface': p.nic.interface,
                          'virtio_user': p.virtio_user,
                          'dpdk_port': p.dpdk_port,
                          'switch_learning': prepared.learning[name].method}
                   for name, p in prepared.ports.items()},
            cores={'master': prepared.cores.master,
                   'workers': list(prepared.cores.workers)},
            command=plan.argv, config_file=plan.config_path,
            generator_layout=plan.layout,
            switch_learning={'interval_s': switch_learning.INTERVAL_S,
                             'mac_aging_s': switch_learning.MAC_AGING_S})
        if plan.note:
            self.reporter.note(plan.note)

    def _learn_before_start(self, ports):
        kernel_ports = [(p.nic.interface, p.mac, name)
                        for name, p in sorted(ports.items())
                        if p.nic.interface]
        for problem in self.learning_sender(kernel_ports):
            self.reporter.note('switch learning before start: ' + problem)

    def _claim_memory_and_ports(self, prepared):
        """Huge pages, their mount, and the data ports for DPDK (undone)."""
        self._push(hugepages.reserve(self.sysfs, prepared.pages))
        self._push(hugepages.ensure_mount(prepared.pages.page_kb,
                                          mounts=self.mounts,
                                          run=self.run_command))
        if prepared.virtio_user:
            for port in sorted(prepared.ports.values(),
                               key=lambda p: p.dpdk_port):
                self._push(virtio_user.claim(port.virtio_user))
            self.reporter.update(driver=None)
        else:
            choice = self.binder.prepare(self.options.driver)
            self._push(self.binder.bind(prepared.ports.values(),
                                        choice.driver, prepared.known))
            self.reporter.update(driver=choice.driver)

    def _start_engine(self, plan):
        """Write the engine's config and start it under the supervisor."""
        os.makedirs(self.options.run_dir, exist_ok=True)
        if plan.config_path:
            os.makedirs(os.path.dirname(plan.config_path), exist_ok=True)
            with open(plan.config_path, 'w') as stream:
                stream.write(plan.config_text)
        self._supervisor = self.supervisor_factory(
            plan.argv, plan.ready, cwd=self.options.run_dir,
            log_path=os.path.join(self.options.run_dir, 'engine.log'),
            on_state=self._engine_state)
        self._push(self._supervisor.stop)
        self._check_stop()
        self._supervisor.start()

    def _relay_control(self, prepared):
        """The generator's control port on its management address."""
        node = prepared.node
        address, interface = management.resolve(
            prepared.drive, node, prepared.links, prepared.nics,
            address_of=self.address_of, sleep=self._sleep)
        relay = self.relay_factory(address, node.control_port,
                                   interface=interface,
                                   log=self.reporter.note)
        self._push(relay.stop)
        relay.start(sleep=self._sleep)
        return {'address': address, 'port': node.control_port,
                'interface': interface}

    def _engine_state(self, state, detail):
        fields = {'state': state, 'engine_detail': detail}
        if self._supervisor is not None:
            fields.update(pid=self._supervisor.pid,
                          restarts=self._supervisor.restarts)
        if not self._ready_once:
            # Until the whole node is up, only bring_up says "ready".
            if state != 'ready':
                self.reporter.update(**fields)
            return
        if state == 'restarting':
            self.reporter.note('engine ' + (detail or 'restarting'))
        elif state == 'ready':
            self.reporter.note('engine ready again (%s)' % detail)
        self.reporter.update(**fields)

    def _push(self, undo):
        if undo is not None:
            self._undo.append(undo)

    def _undo_all(self):
        problems = []
        while self._undo:
            undo = self._undo.pop()
            try:
                undo()
            except Exception as exc:  # keep undoing the rest regardless
                problems.append(str(exc))
        return problems


def install_signal_handlers(runtime):
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, runtime.request_stop)
