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

"""The PROX generator against a real PROX.

Two network namespaces joined by two veth pairs, as in the recorded
capture (fixtures/prox/): a generator PROX started from the configuration
`epa_chain.prox.gen_config.render` writes (af_packet ports, no huge
pages), and an l2fwd PROX forwarding both directions back to it. The
tests drive the generator with `ProxGenerator` and check what PROX
reports and what crosses the wire.

Needs root (namespaces, af_packet) and PROX: EPA_CHAIN_PROX_BINARY, or
EPA_CHAIN_PROX_SOURCE to build it from (epa_chain.tests.prox_binary,
doc/source/prox.rst). With four or more CPUs the generator runs
bidirectionally on the standard layout; with two or three, on the compact
layout (both gen tasks and both lat tasks on one worker), which needs a
PROX built by epa_chain.prox.build (its flow tables are named per task);
a binary given by path that aborts on that layout runs forward only, the
lat tasks sharing the gen core. PROX's workers poll their CPUs while
their tasks run: the forwarder runs only during a test, and the trials
are a few seconds long.
"""

import contextlib
import ctypes
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest
import uuid

import testtools
import testtools.content

from epa_chain.chain import node_config
from epa_chain.measurement import guards
from epa_chain.measurement import trial
from epa_chain.prox import build
from epa_chain.prox import client as prox_client
from epa_chain.prox import gen_config
from epa_chain.prox import generator as prox_generator
from epa_chain.prox import traffic
from epa_chain.tests import prox_binary

_CLONE_NEWNET = 0x40000000
_ETH_P_ALL = 0x0003
_PACKET_OUTGOING = 4
_SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
_START_TIMEOUT_S = 60.0
# The generator's and the forwarder's MACs (locally administered).
_GEN_MACS = ('02:00:00:00:01:00', '02:00:00:00:01:01')
_FWD_MACS = ('02:00:00:00:02:00', '02:00:00:00:02:01')
# Low rates: af_packet, veths and shared CPUs, not a NIC.
_RATE_FPS = 5000
# Offered against intended rate: busy shared CPUs slow PROX's gen task
# (3 % short at 30,000 frames/s, once 15 % at 5,000, on a loaded 2-CPU
# host); 5e6 frames/s is still far out of reach.
_RATE_TOLERANCE = 0.1
# Frames af_packet rings drop while a starved poller is descheduled (2.8 %
# once on that host): loss is checked for consistency, and bounded.
_MAX_LOSS = 0.05

_FORWARDER_CFG = """\
; l2fwd for the live PROX test: port 0 -> port 1 and back, each direction
; to the generator port on the other side
[eal options]
-n=4
no-output=no
no-pci=yes
no-huge=yes
-m=256
eal=--file-prefix={prefix} --vdev=net_af_packet0,iface={if0} \
--vdev=net_af_packet1,iface={if1}

[port 0]
name=p0
mac=hardware
lsc=no

[port 1]
name=p1
mac=hardware
lsc=no

[defaults]
mempool size=4K

[global]
name=epa-chain-live-forwarder

[core {master}]
mode=master

[core {worker}]
name=fwd
task=0
mode=l2fwd
rx port=p0
tx port=p1
dst mac={to_right}
drop=no
task=1
mode=l2fwd
rx port=p1
tx port=p0
dst mac={to_left}
drop=no
"""

_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd):
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, 'setns: %s' % os.strerror(error))


@contextlib.contextmanager
def network_namespace(name):
    """Open sockets in namespace `name` (this thread only)."""
    own = os.open('/proc/thread-self/ns/net', os.O_RDONLY)
    try:
        target = os.open(os.path.join('/run/netns', name), os.O_RDONLY)
        try:
            _setns(target)
            try:
                yield
            finally:
                _setns(own)
        finally:
            os.close(target)
    finally:
        os.close(own)


def _run(*argv):
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError('%s: %s' % (' '.join(argv),
                                       result.stderr.strip()))
    return result.stdout


class _Capture:
    """Frames arriving on an interface, read by a thread."""

    def __init__(self, namespace, interface, count):
        with network_namespace(namespace):
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                      socket.htons(_ETH_P_ALL))
        # root may exceed net.core.rmem_max: room for every frame
        self.sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, 1 << 24)
        self.sock.bind((interface, 0))
        self.sock.settimeout(0.5)
        self.count = count
        self.frames = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        while not self._stop.is_set() and len(self.frames) < self.count:
            try:
                data, address = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            if address[2] != _PACKET_OUTGOING and data[12:14] == b'\x08\x00':
                self.frames.append(data)

    def close(self):
        self._stop.set()
        self._thread.join(5)
        self.sock.close()
        return self.frames


class TestLiveProx(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        binary, reason = prox_binary.find()
        if binary is None:
            raise unittest.SkipTest('live PROX test: %s' % reason)
        if os.geteuid() != 0:
            raise unittest.SkipTest('live PROX test needs root: network '
                                    'namespaces, veths, af_packet ports')
        if shutil.which('ip') is None:
            raise unittest.SkipTest('live PROX test needs iproute2 (ip)')
        cls.binary = binary
        # built by epa_chain.prox.build: two gen tasks per core must work
        cls.built = not os.environ.get(build.BINARY_VARIABLE)
        cls.cpus = sorted(os.sched_getaffinity(0))
        if len(cls.cpus) < 2:
            raise unittest.SkipTest('live PROX test needs 2 CPUs, this '
                                    'process may use %s' % cls.cpus)
        cls.addClassCleanup(cls._tear_down_lab)
        cls.processes = []
        cls.namespaces = []
        cls._set_up_lab()

    # ---- the lab --------------------------------------------------------

    @classmethod
    def _set_up_lab(cls):
        tag = uuid.uuid4().hex[:6]
        cls.tmp = tempfile.mkdtemp(prefix='epa-prox-live-')
        cls.gen_ns, cls.fwd_ns = 'epa-pg-%s' % tag, 'epa-pf-%s' % tag
        cls.gen_ifs = ('epg0%s' % tag, 'epg1%s' % tag)
        cls.fwd_ifs = ('epf0%s' % tag, 'epf1%s' % tag)
        cls.prefixes = ('epa-pg-%s' % tag, 'epa-pf-%s' % tag)
        for namespace in (cls.gen_ns, cls.fwd_ns):
            _run('ip', 'netns', 'add', namespace)
            cls.namespaces.append(namespace)
            _run('ip', '-n', namespace, 'link', 'set', 'lo', 'up')
        for index in (0, 1):
            _run('ip', 'link', 'add', cls.gen_ifs[index], 'address',
                 _GEN_MACS[index], 'netns', cls.gen_ns, 'type', 'veth',
                 'peer', 'name', cls.fwd_ifs[index], 'address',
                 _FWD_MACS[index], 'netns', cls.fwd_ns)
        for namespace, interfaces in ((cls.gen_ns, cls.gen_ifs),
                                      (cls.fwd_ns, cls.fwd_ifs)):
            for interface in interfaces:
                # no IPv6 router solicitations on the data ports
                _run('ip', 'netns', 'exec', namespace, 'sysctl', '-qw',
                     'net.ipv6.conf.%s.disable_ipv6=1' % interface)
                _run('ip', '-n', namespace, 'link', 'set', interface, 'up')
        cls.devargs = {
            'left': 'net_af_packet0,iface=%s' % cls.gen_ifs[0],
            'right': 'net_af_packet1,iface=%s' % cls.gen_ifs[1]}
        cls.compact = len(cls.cpus) < 4 and (
            cls.built or cls._initializes(cls._node(True), [0, 1],
                                          compact=True)[0] == 0)
        cls.bidirectional = len(cls.cpus) >= 4 or cls.compact
        cls.node = cls._node(cls.bidirectional)
        options = {}
        if len(cls.cpus) >= 4:
            gen_cores = cls.cpus[:4]
            fwd_master, fwd_worker = cls.cpus[0], cls.cpus[-1]
        else:
            # master and worker as in the recorded capture on 2 CPUs
            gen_cores = cls.cpus[:2]
            fwd_master, fwd_worker = cls.cpus[1], cls.cpus[0]
            options = ({'compact': True} if cls.compact
                       else {'shared_lat_core': True})
        cls.gen_cfg = gen_config.render(
            cls.node, cls.devargs, gen_cores, file_prefix=cls.prefixes[0],
            huge_pages=False, **options)
        fwd_cfg = _FORWARDER_CFG.format(
            prefix=cls.prefixes[1], if0=cls.fwd_ifs[0], if1=cls.fwd_ifs[1],
            master=fwd_master, worker=fwd_worker, to_right=_GEN_MACS[1],
            to_left=_GEN_MACS[0])
        cls.forwarder = cls._start_prox('fwd', cls.fwd_ns, fwd_cfg)
        cls._start_prox('gen', cls.gen_ns, cls.gen_cfg)

    @classmethod
    def _initializes(cls, node, cores, **options):
        """(exit status, output) of prox -z on this layout.

        -z: PROX's whole initialization on a dummy CPU topology, so
        layouts wider than this host are checked too.
        """
        name = '-'.join(['bi' if len(node.flows) == 2 else 'uni'] +
                        sorted(options) + [str(len(cores))])
        path = os.path.join(cls.tmp, 'init-%s.cfg' % name)
        with open(path, 'w') as stream:
            stream.write(gen_config.render(
                node, cls.devargs, cores, huge_pages=False,
                file_prefix='%s-z' % cls.prefixes[0], **options))
        try:
            result = subprocess.run(
                ['ip', 'netns', 'exec', cls.gen_ns, cls.binary, '-f',
                 path, '-z', '-o', 'cli', '-l', path + '.log'],
                cwd=cls.tmp, capture_output=True, text=True, timeout=120)
        finally:
            shutil.rmtree('/var/run/dpdk/%s-z' % cls.prefixes[0],
                          ignore_errors=True)
        return result.returncode, result.stdout

    @classmethod
    def _node(cls, bidirectional):
        flows = [{'direction': 'forward', 'tx_port': 'left',
                  'rx_port': 'right', 'next_hop_mac': _FWD_MACS[0]}]
        if bidirectional:
            flows.append({'direction': 'reverse', 'tx_port': 'right',
                          'rx_port': 'left', 'next_hop_mac': _FWD_MACS[1]})
        return node_config.from_dict({
            'schema_version': 1, 'role': 'generator', 'engine': 'prox',
            'name': 'live-generator', 'forwarding_cores': 1,
            'control_port': prox_client.DEFAULT_PORT,
            'ports': {'left': {'mac': _GEN_MACS[0]},
                      'right': {'mac': _GEN_MACS[1]}},
            'flows': flows})

    @classmethod
    def _start_prox(cls, name, namespace, config):
        """Start PROX (-t, cores stopped) and connect a client to it."""
        path = os.path.join(cls.tmp, '%s.cfg' % name)
        with open(path, 'w') as stream:
            stream.write(config)
        output = open(os.path.join(cls.tmp, '%s.out' % name), 'w')
        cls.addClassCleanup(output.close)
        # `ip netns exec` execs PROX: the pid is PROX's
        process = subprocess.Popen(
            ['ip', 'netns', 'exec', namespace, cls.binary, '-f', path, '-t',
             '-e', '-o', 'cli', '-l', os.path.join(cls.tmp, '%s.log' % name)],
            cwd=cls.tmp, stdin=subprocess.DEVNULL, stdout=output,
            stderr=subprocess.STDOUT, start_new_session=True)
        cls.processes.append(process)
        client = prox_client.ProxClient('127.0.0.1', connect_timeout=1.0)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError('%s PROX exited with %d:\n%s' % (
                    name, process.returncode, cls._tail(name)))
            try:
                with network_namespace(namespace):
                    client.connect()
                break
            except prox_client.ProxConnectionError:
                if time.monotonic() > deadline:
                    raise RuntimeError('%s PROX did not listen within %d s:'
                                       '\n%s' % (name, _START_TIMEOUT_S,
                                                 cls._tail(name)))
                time.sleep(0.5)
        cls.addClassCleanup(client.close)
        return client

    @classmethod
    def _tail(cls, name, lines=30):
        with open(os.path.join(cls.tmp, '%s.out' % name)) as stream:
            return ''.join(stream.readlines()[-lines:])

    @classmethod
    def _tear_down_lab(cls):
        for process in getattr(cls, 'processes', []):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)
        for namespace in getattr(cls, 'namespaces', []):
            # takes the veths with it
            subprocess.run(['ip', 'netns', 'del', namespace],
                           capture_output=True)
        for prefix in getattr(cls, 'prefixes', ()):
            shutil.rmtree(os.path.join('/var/run/dpdk', prefix),
                          ignore_errors=True)
        if getattr(cls, 'tmp', None):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # ---- per test -------------------------------------------------------

    def setUp(self):
        super().setUp()
        # the forwarder polls its CPU only while a test runs
        with network_namespace(self.fwd_ns):
            self.forwarder.start()
        self.addCleanup(self._stop_forwarder)
        generator = prox_generator.ProxGenerator(
            '127.0.0.1', rate_tolerance=_RATE_TOLERANCE)
        self.generator = generator
        self.addCleanup(self._in_gen, generator.close)

    def _stop_forwarder(self):
        with network_namespace(self.fwd_ns):
            self.forwarder.stop()

    def _in_gen(self, function, *args):
        with network_namespace(self.gen_ns):
            return function(*args)

    def run_trial(self, frame=64, flows=1, load=_RATE_FPS, duration=2.0,
                  latency=False, directions=('forward',), retry=True):
        """One trial; a rate shortfall is tried once more if `retry`.

        A gen task descheduled by other work on a shared host falls
        short now and then (10 % at 5,000 frames/s was seen); twice in a
        row is a failure.
        """
        spec = trial.TrialSpec(
            profile=trial.TrafficProfile(
                trial.FrameSize.parse(str(frame)), flows, directions),
            load_fps=load, duration_s=duration, measure_latency=latency)
        try:
            return self._in_gen(self.generator.run_trial, spec)
        except trial.GeneratorError as error:
            if not retry or error.cause != guards.RATE_SHORTFALL:
                raise
            self.addDetail('retried after', testtools.content.text_content(
                str(error)))
            return self._in_gen(self.generator.run_trial, spec)

    # ---- tests ----------------------------------------------------------

    def generator_layout(self):
        return gen_config.layout_from_config(self.gen_cfg)

    def test_layout_and_version_read_from_prox(self):
        version = self._in_gen(self.generator.connect)
        self.assertRegex(version.prox, r'^[0-9]+\.[0-9]+')
        self.assertRegex(version.dpdk, r'^[0-9]+\.[0-9]+\.[0-9]+$')
        # the layout came from PROX (echo $epa_chain_layout)
        self.assertEqual(gen_config.layout_from_config(self.gen_cfg),
                         self.generator.layout)
        description = self.generator.describe()
        self.assertEqual(version.prox, description['prox_version'])

    def test_every_standard_layout_initializes(self):
        layouts = [
            ('uni', self._node(False), [0, 1, 2], {}),
            ('uni-shared', self._node(False), [0, 1],
             {'shared_lat_core': True}),
            ('bi', self._node(True), [0, 1, 2, 3], {}),
            ('bi-shared', self._node(True), [0, 1, 2],
             {'shared_lat_core': True})]
        compact = [
            ('uni-compact', self._node(False), [0, 1], {'compact': True}),
            ('bi-compact', self._node(True), [0, 1], {'compact': True})]
        if self.built:
            # the build's source edit: two gen tasks on one core
            layouts += compact
        for name, node, cores, options in layouts:
            returncode, output = self._initializes(node, cores, **options)
            self.assertEqual(0, returncode, '%s:\n%s' % (
                name, output[-3000:]))
            self.assertIn('Initialization sequence completed', output, name)
        if self.built:
            found = {}
            with open(os.path.join(self.tmp, 'init-bi-compact-2.cfg.log'),
                      errors='replace') as stream:
                for line in stream:
                    if 'hash table name = ' in line:
                        name = line.split('hash table name = ')[1].strip()
                        found[name] = found.get(name, 0) + 1
            # one flow table per gen task, each named after core and task
            self.assertEqual({'A001_00_hash_gen_table': 1,
                              'A001_01_hash_gen_table': 1}, found)

    def test_lossless_trial_with_latency(self):
        result = self.run_trial(frame=64, duration=3.0, latency=True)
        (forward,) = result.directions
        self.assertGreater(forward.tx_frames, 0.8 * 3.0 * _RATE_FPS)
        self.assertLessEqual(forward.rx_frames, forward.tx_frames)
        self.assertLessEqual(result.loss_ratio, _MAX_LOSS)
        self.assertEqual((forward.tx_frames - forward.rx_frames) /
                         forward.tx_frames, result.loss_ratio)
        self.assertAlmostEqual(
            forward.offered_fps * forward.rx_frames / forward.tx_frames,
            forward.achieved_fps)
        self.assertLess(abs(forward.offered_fps - _RATE_FPS),
                        _RATE_TOLERANCE * _RATE_FPS)
        latency = forward.latency
        self.assertIsNotNone(latency, result.notes)
        self.assertGreater(latency.min_ns, 0)
        self.assertLessEqual(latency.min_ns, latency.avg_ns)
        self.assertLessEqual(latency.avg_ns, latency.max_ns)
        in_histogram = sum(count for _low, _high, count in latency.histogram)
        self.assertGreater(in_histogram, 0)
        # only this trial's samples (the lat task keeps the tail of the
        # previous one until frames arrive: the generator drops it)
        self.assertLessEqual(in_histogram, forward.rx_frames)
        self.assertIn('offered rate from', '\n'.join(result.notes))

    def test_frame_size_and_flows_on_the_wire(self):
        # 512-byte frames after 64-byte ones: pkt_size plus the IPv4 and
        # UDP length fix; 1000 flows: a range over the UDP source port.
        self.run_trial(frame=64, duration=1.0)
        capture = _Capture(self.gen_ns, self.gen_ifs[1], 3000)
        try:
            result = self.run_trial(frame=512, flows=1000, duration=2.0)
        finally:
            frames = capture.close()
        self.assertIn('1000 flows requested, 1000 generated',
                      '\n'.join(result.notes))
        ours = [f for f in frames if f[26:30] == socket.inet_aton(
            gen_config.ADDRESSES['forward'][0])]
        self.assertGreaterEqual(len(ours), 2000)
        # 512 with FCS; af_packet hands over frames without it
        self.assertEqual({508}, {len(f) for f in ours})
        self.assertEqual({494}, {struct.unpack('!H', f[16:18])[0]
                                 for f in ours})
        self.assertEqual({474}, {struct.unpack('!H', f[38:40])[0]
                                 for f in ours})
        sources = {struct.unpack('!H', f[34:36])[0] for f in ours}
        first = traffic.UDP_SOURCE_PORT
        self.assertEqual(set(range(first, first + 1000)), sources)
        self.assertEqual({traffic.UDP_DESTINATION_PORT},
                         {struct.unpack('!H', f[36:38])[0] for f in ours})

    def test_rate_it_cannot_reach(self):
        error = self.assertRaises(trial.GeneratorError, self.run_trial,
                                  load=5e6, duration=1.0, retry=False)
        self.assertEqual(guards.RATE_SHORTFALL, error.cause)
        # PROX is left stopped and answers the next trial
        result = self.run_trial(duration=1.0)
        self.assertLessEqual(result.loss_ratio, _MAX_LOSS)

    def test_bidirectional_trial(self):
        if not self.bidirectional:
            self.skipTest('bidirectional needs 4 CPUs (master, a gen core '
                          'per direction, a latency core) or a PROX that '
                          'runs two gen tasks on one core (built by '
                          'epa_chain.prox.build); this process may use %d '
                          'and %s aborts on that layout'
                          % (len(self.cpus), self.binary))
        if self.compact:
            # every gen and lat task on one worker
            self.assertEqual({self.cpus[1]}, {
                ref.core for d in self.generator_layout().directions
                for ref in (d.gen, d.lat)})
        # 4 s: with four tasks on one core, 2 s trials ended 4 times in
        # 6 before the lat tasks handed over a sample after the stale
        # ones were dropped (latency None); 4 s passed 3 of 3.
        result = self.run_trial(directions=('forward', 'reverse'),
                                latency=True, duration=4.0)
        self.assertEqual(['forward', 'reverse'],
                         [d.direction for d in result.directions])
        for direction in result.directions:
            # both gen tasks send at the asked rate, even on one core
            self.assertGreater(direction.tx_frames, 0.8 * 4.0 * _RATE_FPS)
            self.assertLessEqual(direction.loss_ratio, _MAX_LOSS)
            self.assertIsNotNone(direction.latency, result.notes)
            self.addDetail(direction.direction,
                           testtools.content.text_content(
                               'tx %d rx %d offered %.0f fps latency avg %d '
                               'max %d ns' % (
                                   direction.tx_frames, direction.rx_frames,
                                   direction.offered_fps,
                                   direction.latency.avg_ns,
                                   direction.latency.max_ns)))
