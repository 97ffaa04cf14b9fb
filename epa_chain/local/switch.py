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

"""A private Open vSwitch with the DPDK userspace datapath.

Its ovsdb-server and ovs-vswitchd keep every file (database, sockets,
pidfiles, logs, bridge management sockets) in one directory, and
ovs-vswitchd runs inside a network namespace, so the taps it creates (the
datapath's ovs-netdev, one per bridge) and the system ports it drives never
meet the host's own networking, nor a system Open vSwitch. Bridges behave
as Neutron's provider bridges: netdev datapath, action NORMAL (MAC
learning), one VLAN tag per access port.

`stop_in` works from the directory alone, for `epa-chain local down` after
the process that started the switch was killed.
"""

import dataclasses
import glob
import json
import os
import re
import shutil
import subprocess
import time

from epa_chain.local import host

SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema'
DPDK_RUN_DIR = '/var/run/dpdk'
STATE_FILE = 'switch.json'
DAEMONS = ('ovs-vswitchd', 'ovsdb-server')
QUIET_TIMEOUT_S = 30    # ovs-appctl, ip: a stopping switch must not hang
_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$')
_FIXES = {
    'ovs-vswitchd-dpdk': 'apt-get install openvswitch-switch-dpdk',
    'ovs-vsctl': 'apt-get install openvswitch-switch',
    'ovsdb-tool': 'apt-get install openvswitch-switch',
    'ovsdb-server': 'apt-get install openvswitch-switch',
    'ovs-appctl': 'apt-get install openvswitch-switch',
    'ovs-ofctl': 'apt-get install openvswitch-switch',
    'ip': 'apt-get install iproute2',
}


class SwitchError(RuntimeError):
    """An OVS command failed: the command, OVS's own words, the fix."""


@dataclasses.dataclass(frozen=True)
class FdbEntry:
    port: str
    vlan: int
    mac: str
    age_s: int


@dataclasses.dataclass(frozen=True)
class PortCounters:
    rx_packets: int
    tx_packets: int
    rx_dropped: int
    tx_dropped: int


@dataclasses.dataclass(frozen=True)
class DatapathFlow:
    in_port: str
    eth_src: str
    eth_dst: str
    packets: int
    outputs: tuple
    raw: str


# -- parsers of OVS's text output (pure, tested on captured outputs) -------

_OFCTL_PORT = re.compile(r'^\s*(\d+|LOCAL)\((.+?)\): addr:', re.M)
_FDB_LINE = re.compile(
    r'^\s*(\S+)\s+(\d+)\s+([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5})\s+(\d+)\s*$')
_DUMP_PORT = re.compile(
    r'port\s+"?([^":]+?)"?:\s*rx\s+(.*?)\n\s*tx\s+(.*?)(?:\n|$)')
_COUNTER = re.compile(r'(\w+)=(\?|\d+)')
_IN_PORT = re.compile(r'(?:^|,)in_port\(([^)]*)\)')
_ETH = re.compile(r'(?:^|,)eth\(src=([0-9a-fA-F:]+),dst=([0-9a-fA-F:]+)\)')
_PACKETS = re.compile(r'(?:^|,\s)packets:(\d+)')
# Actions without parentheses that are not an output port.
_BARE_ACTIONS = frozenset(('drop', 'pop_vlan', 'pop_eth', 'pop_nsh',
                           'pop_mpls', 'ct_clear', 'lb_output'))


def parse_ofctl_show(text):
    """OpenFlow port number ('1', ..., 'LOCAL') -> port name."""
    return {number: name for number, name in _OFCTL_PORT.findall(text)}


def parse_fdb(text, port_names):
    """`ovs-appctl fdb/show BRIDGE` -> [FdbEntry] with port names.

    `port_names` maps the port numbers fdb/show prints to names (see
    parse_ofctl_show); an unknown number is kept as it is.
    """
    entries = []
    for line in text.splitlines():
        match = _FDB_LINE.match(line)
        if match:
            port, vlan, mac, age = match.groups()
            entries.append(FdbEntry(port=port_names.get(port, port),
                                    vlan=int(vlan), mac=mac.lower(),
                                    age_s=int(age)))
    return entries


def _counter(fields, name):
    value = fields.get(name, '0')
    return 0 if value == '?' else int(value)


def parse_dump_ports(text, port_names=None):
    """`ovs-ofctl dump-ports BRIDGE` -> {port name: PortCounters}."""
    port_names = port_names or {}
    counters = {}
    for port, rx, tx in _DUMP_PORT.findall(text):
        port = port.strip()
        rx_fields = dict(_COUNTER.findall(rx))
        tx_fields = dict(_COUNTER.findall(tx))
        counters[port_names.get(port, port)] = PortCounters(
            rx_packets=_counter(rx_fields, 'pkts'),
            tx_packets=_counter(tx_fields, 'pkts'),
            rx_dropped=_counter(rx_fields, 'drop'),
            tx_dropped=_counter(tx_fields, 'drop'))
    return counters


def _split_top_level(text):
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, []
    for char in text:
        if char == ',' and depth == 0:
            parts.append(''.join(current))
            current = []
            continue
        depth += {'(': 1, ')': -1}.get(char, 0)
        current.append(char)
    parts.append(''.join(current))
    return [part.strip() for part in parts if part.strip()]


def parse_dpctl_flows(text):
    """`ovs-appctl dpctl/dump-flows --names` -> [DatapathFlow].

    The netdev datapath prints one section per PMD thread and one for the
    main thread; all flows are returned, headers skipped.
    """
    flows = []
    for line in text.splitlines():
        line = line.strip()
        head, sep, actions = line.rpartition(' actions:')
        if not sep:
            continue
        in_port = _IN_PORT.search(head)
        eth = _ETH.search(head)
        packets = _PACKETS.search(head)
        outputs = tuple(
            action for action in _split_top_level(actions)
            if '(' not in action and '=' not in action and
            action not in _BARE_ACTIONS)
        flows.append(DatapathFlow(
            in_port=in_port.group(1) if in_port else '',
            eth_src=eth.group(1).lower() if eth else '',
            eth_dst=eth.group(2).lower() if eth else '',
            packets=int(packets.group(1)) if packets else 0,
            outputs=outputs, raw=line))
    return flows


# -- processes named by pidfiles --------------------------------------------

def _read_pid(pidfile):
    try:
        with open(pidfile) as stream:
            return int(stream.read().strip())
    except (OSError, ValueError):
        return None


def is_daemon_of(pid, daemon, directory, proc_root='/proc'):
    """Is `pid` the `daemon` started with a pidfile in `directory`?"""
    argv = host.cmdline(pid, proc_root)
    if not argv:
        return False
    pidfile = '--pidfile=%s' % os.path.join(directory, daemon + '.pid')
    return (os.path.basename(argv[0]).startswith(daemon) and
            pidfile in argv[1:])


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _is_name(name):
    """A name from switch.json fit for `ip` and a path: no '/', no '-x'."""
    return isinstance(name, str) and bool(_NAME.fullmatch(name))


def _quiet(run, argv, timeout_s=QUIET_TIMEOUT_S):
    """A command whose failure is reported, not raised; never hangs."""
    try:
        return run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            argv, 124, '', 'no answer after %d s' % timeout_s)
    except FileNotFoundError:
        return subprocess.CompletedProcess(argv, 127, '',
                                           '%s: not installed' % argv[0])


class PrivateSwitch(object):
    """ovsdb-server and ovs-vswitchd (DPDK) living in `directory`.

    ovs-vswitchd runs in network namespace `netns`, which `start` creates
    unless it exists (then `stop` deletes it).
    """

    VSWITCHD_DPDK = '/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk'

    def __init__(self, directory, netns, *, prefix, pmd_cpus=(1,),
                 socket_mem_mb=1024, huge_dir, vswitchd=VSWITCHD_DPDK,
                 run=subprocess.run, proc_root='/proc', sleep=time.sleep):
        self.directory = os.path.abspath(directory)
        self.netns = netns
        self.prefix = prefix
        self.pmd_cpus = tuple(pmd_cpus)
        self.socket_mem_mb = socket_mem_mb
        self.huge_dir = os.path.abspath(huge_dir)
        self.vswitchd = vswitchd
        self._run_command = run
        self._proc_root = proc_root
        self._sleep = sleep
        self.env = dict(os.environ, OVS_RUNDIR=self.directory,
                        OVS_DBDIR=self.directory,
                        OVS_LOGDIR=self.directory,
                        OVS_SYSCONFDIR=self.directory)
        self.log_path = self._path('ovs-vswitchd.log')
        self.ctl = self._path('ovs-vswitchd.ctl')
        self.db = 'unix:%s' % self._path('db.sock')
        self.start_seconds = None

    def _path(self, name):
        return os.path.join(self.directory, name)

    # -- running commands --------------------------------------------------

    def _run(self, *argv, timeout_s=60, what=None):
        try:
            result = self._run_command(list(argv), capture_output=True,
                                       text=True, env=self.env,
                                       timeout=timeout_s)
        except FileNotFoundError:
            raise SwitchError('%s is not installed: %s' % (
                argv[0], _FIXES.get(os.path.basename(argv[0]),
                                    'install Open vSwitch')))
        except subprocess.TimeoutExpired:
            raise SwitchError('%s: no answer after %d s%s' % (
                ' '.join(argv), timeout_s, self._log_hint()))
        if result.returncode:
            words = (result.stderr or result.stdout or '').strip()
            raise SwitchError('%s%s failed (exit %d): %s%s' % (
                what + ': ' if what else '', ' '.join(argv),
                result.returncode, words, self._log_hint()))
        return result.stdout

    def _log_hint(self):
        return '; see %s' % self.log_path if os.path.exists(
            self.log_path) else ''

    def _vsctl(self, *args, wait=True):
        argv = ['ovs-vsctl', '--db=' + self.db, '--timeout=30']
        if not wait:
            argv.append('--no-wait')
        return self._run(*(argv + list(args)))

    def _appctl(self, *args, target=None):
        return self._run('ovs-appctl', '-t', target or self.ctl,
                         '--timeout=10', *args)

    def _ofctl(self, command, bridge, *args):
        return self._run('ovs-ofctl', command,
                         'unix:%s' % self._path(bridge + '.mgmt'), *args)

    def _netns_exists(self):
        listing = self._run('ip', 'netns', 'list')
        return self.netns in (line.split()[0]
                              for line in listing.splitlines() if line)

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, errors='replace') as stream:
                return ''.join(stream.readlines()[-lines:])
        except OSError:
            return '(no log at %s)' % self.log_path

    def _state(self):
        try:
            with open(self._path(STATE_FILE)) as stream:
                return json.load(stream)
        except (OSError, ValueError):
            return {}

    def _save_state(self, **changes):
        state = self._state()
        state.update(changes)
        with open(self._path(STATE_FILE), 'w') as stream:
            json.dump(state, stream, indent=1, sort_keys=True)

    # -- life cycle --------------------------------------------------------

    def _other_config(self):
        mask = 0
        for cpu in self.pmd_cpus:
            mask |= 1 << cpu
        extra = '--no-pci --file-prefix=%s --huge-dir=%s' % (
            self.prefix, self.huge_dir)
        return {'dpdk-init': 'true', 'dpdk-extra': extra,
                'dpdk-socket-mem': str(self.socket_mem_mb),
                'pmd-cpu-mask': hex(mask), 'pmd-maxsleep': '500'}

    def _ovs_version(self):
        first = self._run(self.vswitchd, '--version').splitlines()[0]
        return first.split()[-1]

    def start(self, timeout_s=60):
        """Start both daemons; return once DPDK is initialised."""
        began = time.monotonic()
        if not os.access(self.vswitchd, os.X_OK):
            raise SwitchError('%s not found: %s' % (
                self.vswitchd, _FIXES['ovs-vswitchd-dpdk']))
        if not os.path.isdir(self.huge_dir):
            raise SwitchError('huge_dir %s does not exist: mount hugetlbfs '
                              'there (epa_chain.local.hugepages.reserve)'
                              % self.huge_dir)
        os.makedirs(self.directory, exist_ok=True)
        for daemon in DAEMONS:
            pid = _read_pid(self._path(daemon + '.pid'))
            if pid and is_daemon_of(pid, daemon, self.directory,
                                    self._proc_root):
                raise SwitchError('%s already runs from %s (pid %d): stop '
                                  'it first' % (daemon, self.directory, pid))
        try:
            self._start_daemons(timeout_s)
            self._wait_dpdk(began + timeout_s)
        except BaseException:
            # Leave nothing running; the logs stay in the directory.
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began
        return self.start_seconds

    def _start_daemons(self, timeout_s):
        previous = self._state()
        exists = self._netns_exists()
        if not exists:
            self._run('ip', 'netns', 'add', self.netns)
        # A namespace an earlier start here created stays ours to delete.
        created = not exists or (previous.get('netns') == self.netns and
                                 previous.get('created_netns', False))
        self._save_state(netns=self.netns, created_netns=created,
                         prefix=self.prefix, huge_dir=self.huge_dir,
                         bridges=[])
        # Before any link is up: router solicitations would be flooded.
        self._run('ip', 'netns', 'exec', self.netns, 'sysctl', '-qw',
                  'net.ipv6.conf.all.disable_ipv6=1',
                  'net.ipv6.conf.default.disable_ipv6=1')
        self._run('ip', '-n', self.netns, 'link', 'set', 'lo', 'up')
        conf = self._path('conf.db')
        if os.path.exists(conf):
            os.unlink(conf)
        self._run('ovsdb-tool', 'create', conf, SCHEMA)
        self._run('ovsdb-server', conf,
                  '--remote=punix:%s' % self._path('db.sock'),
                  '--pidfile=%s' % self._path('ovsdb-server.pid'),
                  '--unixctl=%s' % self._path('ovsdb-server.ctl'),
                  '--log-file=%s' % self._path('ovsdb-server.log'),
                  '--detach')
        self._vsctl('init', wait=False)
        settings = ['other_config:%s=%s' % (key, json.dumps(value))
                    for key, value in self._other_config().items()]
        self._vsctl('set', 'Open_vSwitch', '.',
                    'ovs_version=%s' % json.dumps(self._ovs_version()),
                    *settings, wait=False)
        try:
            self._run('ip', 'netns', 'exec', self.netns, self.vswitchd,
                      self.db, '--pidfile=%s' % self._path(
                          'ovs-vswitchd.pid'),
                      '--unixctl=%s' % self.ctl,
                      '--log-file=%s' % self.log_path, '--detach',
                      timeout_s=timeout_s)
        except SwitchError as error:
            raise SwitchError('%s\nlast lines of %s:\n%s' % (
                error, self.log_path, self.log_tail()))

    def _wait_dpdk(self, deadline):
        while True:
            state = self._vsctl('get', 'Open_vSwitch', '.',
                                'dpdk_initialized', wait=False).strip()
            if state == 'true':
                return
            pid = _read_pid(self._path('ovs-vswitchd.pid'))
            if not pid or not host.alive(pid, self._proc_root):
                raise SwitchError(
                    '%s exited before DPDK was initialised; last lines of '
                    '%s:\n%s' % (self.vswitchd, self.log_path,
                                 self.log_tail()))
            if time.monotonic() > deadline:
                raise SwitchError(
                    'DPDK in %s not initialised in time (dpdk_initialized='
                    '%s); last lines of %s:\n%s' % (
                        self.vswitchd, state, self.log_path,
                        self.log_tail()))
            self._sleep(0.2)

    def stop(self):
        """Stop both daemons and undo `start`; safe to call again."""
        began = time.monotonic()
        for daemon, target in (('ovs-vswitchd', self.ctl),
                               ('ovsdb-server',
                                self._path('ovsdb-server.ctl'))):
            pid = _read_pid(self._path(daemon + '.pid'))
            if pid and is_daemon_of(pid, daemon, self.directory,
                                    self._proc_root):
                # Polite first: --cleanup deletes the datapath's ports.
                args = ('exit', '--cleanup') if daemon == 'ovs-vswitchd' \
                    else ('exit',)
                _quiet(self._run_command, ['ovs-appctl', '-t', target,
                                           '--timeout=10'] + list(args))
        report = self.stop_in(self.directory, proc_root=self._proc_root,
                              run=self._run_command, sleep=self._sleep)
        report['seconds'] = time.monotonic() - began
        return report

    @staticmethod
    def stop_in(directory, *, proc_root='/proc', kill=os.kill,
                run=subprocess.run, sleep=time.sleep, timeout_s=10,
                dpdk_run_dir=DPDK_RUN_DIR):
        """Stop what the pidfiles in `directory` name, then clean up.

        A pid is signalled only if /proc/<pid>/cmdline is that OVS daemon
        with that directory's pidfile: a pid reused since is left alone.
        Returns what was done, per daemon.
        """
        directory = os.path.abspath(directory)
        report = {}
        survivors = []
        for daemon in DAEMONS:
            done, survived = _stop_daemon(daemon, directory, proc_root,
                                          kill, sleep, timeout_s)
            report[daemon] = done
            if survived:
                survivors.append('%s %s' % (daemon, survived))
        state = _read_state(directory)
        netns = _clean_netns(state, run)
        if netns:
            report['netns'] = netns
        _remove_dpdk_leftovers(state, directory, dpdk_run_dir)
        for pattern in ('*.ctl', '*.mgmt', '*.snoop', 'db.sock'):
            for socket_path in glob.glob(os.path.join(
                    glob.escape(directory), pattern)):
                _unlink(socket_path)
        _unlink(os.path.join(directory, STATE_FILE))
        if survivors:
            raise SwitchError('%s survived SIGKILL; the rest of %s was '
                              'cleaned up' % (', '.join(survivors),
                                              directory))
        return report

    # -- bridges and ports -------------------------------------------------

    def add_bridge(self, name, mac_aging_s=None):
        """A netdev bridge whose NORMAL action learns MACs."""
        settings = ['datapath_type=netdev', 'fail_mode=standalone']
        if mac_aging_s is not None:
            settings.append('other_config:mac-aging-time=%d' % mac_aging_s)
        self._vsctl('add-br', name, '--', 'set', 'Bridge', name, *settings)
        bridges = self._state().get('bridges', [])
        self._save_state(bridges=sorted(set(bridges) | {name}))

    @staticmethod
    def _tag(vlan):
        if vlan is None:
            return []
        if not isinstance(vlan, int) or not 1 <= vlan <= 4094:
            raise SwitchError('VLAN must be 1..4094 (or None for a trunk), '
                              'got %r' % (vlan,))
        return ['tag=%d' % vlan]

    def _check_interface(self, name):
        out = self._vsctl('get', 'Interface', name, 'ofport', 'error',
                          wait=False)
        ofport, error = (line.strip() for line in out.splitlines()[:2])
        if ofport in ('-1', '[]') or error != '[]':
            raise SwitchError('port %s was not added (ofport %s): %s%s' % (
                name, ofport, error.strip('"'), self._log_hint()))

    def add_vhost_client_port(self, bridge, name, vlan, socket_path):
        """A dpdkvhostuserclient port on `socket_path`.

        The VNF's virtio-user device is the server; OVS reconnects
        whenever the socket appears again.
        """
        self._vsctl('add-port', bridge, name, *self._tag(vlan), '--',
                    'set', 'Interface', name, 'type=dpdkvhostuserclient',
                    'options:vhost-server-path=%s' % json.dumps(
                        os.path.abspath(socket_path)))
        self._check_interface(name)

    def add_system_port(self, bridge, name, vlan):
        """A kernel device (a veth end) already moved into the namespace."""
        try:
            self._run('ip', '-n', self.netns, 'link', 'set', name, 'up')
        except SwitchError as error:
            raise SwitchError(
                '%s\ndevice %s must be in namespace %s first: ip link set '
                '%s netns %s' % (error, name, self.netns, name, self.netns))
        self._vsctl('add-port', bridge, name, *self._tag(vlan))
        self._check_interface(name)

    # -- what the bridges see ---------------------------------------------

    def port_names(self, bridge):
        return parse_ofctl_show(self._ofctl('show', bridge))

    def fdb(self, bridge):
        text = self._appctl('fdb/show', bridge)
        return parse_fdb(text, self.port_names(bridge))

    def port_counters(self, bridge):
        text = self._ofctl('dump-ports', bridge)
        return parse_dump_ports(text, self.port_names(bridge))

    def flooded_frames(self, bridge):
        """Frames the NORMAL action flooded so far, in any VLAN.

        The LOCAL port is a trunk and gets every flooded frame; its tap is
        down, so they count as tx drops (as tx if someone raised it).
        """
        counters = parse_dump_ports(self._ofctl('dump-ports', bridge,
                                                'LOCAL'))
        local = counters.get('LOCAL')
        if local is None:
            raise SwitchError('no LOCAL port counters for bridge %s' %
                              bridge)
        return local.tx_packets + local.tx_dropped

    def datapath_flows(self):
        return parse_dpctl_flows(self._appctl('dpctl/dump-flows', '--names'))

    def versions(self):
        out = self._vsctl('get', 'Open_vSwitch', '.', 'ovs_version',
                          'dpdk_version', wait=False)
        ovs, dpdk = (line.strip().strip('"') for line in out.splitlines())
        return {'ovs_version': ovs, 'dpdk_version': dpdk}


# ---- stop_in's steps: what a switch directory's files name -----------------

def _stop_daemon(daemon, directory, proc_root, kill, sleep, timeout_s):
    """(what was done, 'pid N' if it survived SIGKILL) for one daemon."""
    pidfile = os.path.join(directory, daemon + '.pid')
    pid = _read_pid(pidfile)
    if pid is None:
        return 'no pidfile', None
    if not host.alive(pid, proc_root):
        done = 'pid %d not running' % pid
    elif not is_daemon_of(pid, daemon, directory, proc_root):
        done = 'pid %d is not %s of %s: left alone' % (pid, daemon,
                                                       directory)
    elif not host.stop_processes([pid], timeout_s, proc_root=proc_root,
                                 kill=kill, sleep=sleep)[1]:
        done = 'stopped pid %d' % pid
    else:
        # Kept with its pidfile for the next stop; the rest is cleaned up
        # all the same.
        return 'pid %d survived SIGKILL' % pid, 'pid %d' % pid
    _unlink(pidfile)  # the daemon may have removed it itself
    return done, None


def _read_state(directory):
    """The switch's state file as a dict ({} when missing or damaged)."""
    try:
        with open(os.path.join(directory, STATE_FILE)) as stream:
            state = json.load(stream)
    except (OSError, ValueError):
        state = {}
    return state if isinstance(state, dict) else {}


def _clean_netns(state, run):
    """The namespace the switch created deleted, or its devices in one.

    What was done; None when no namespace is recorded.
    """
    netns = state.get('netns')
    if not netns:
        return None
    if not _is_name(netns):
        return 'not a namespace name %r: left alone' % (netns,)
    if state.get('created_netns'):
        # Deleting it removes ovs-netdev, bridge taps, moved-in veths.
        result = _quiet(run, ['ip', 'netns', 'delete', netns])
        return 'deleted %s' % netns if not result.returncode \
            else 'not deleted %s: %s' % (netns, result.stderr.strip())
    bridges = state.get('bridges')
    for device in ['ovs-netdev'] + [
            b for b in (bridges if isinstance(bridges, list) else [])
            if _is_name(b)]:
        _quiet(run, ['ip', '-n', netns, 'link', 'delete', device])
    return 'kept %s (not ours), taps removed' % netns


def _remove_dpdk_leftovers(state, directory, dpdk_run_dir):
    """Files a killed DPDK process leaves; they hold huge pages.

    Only in the bed's own mount beside this directory.
    """
    prefix = state.get('prefix')
    if not prefix or not _is_name(prefix):
        return
    huge_dir = state.get('huge_dir')
    if isinstance(huge_dir, str) and os.path.dirname(
            os.path.normpath(huge_dir)) == os.path.dirname(directory):
        for leftover in glob.glob(os.path.join(
                glob.escape(huge_dir), glob.escape(prefix) + 'map_*')):
            _unlink(leftover)
    shutil.rmtree(os.path.join(dpdk_run_dir, prefix), ignore_errors=True)
