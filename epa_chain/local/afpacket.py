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

"""The AF_PACKET generator of the local bed: paced frames in a netns.

`epa-chain local` puts the generator's ports - veth ends, `left` and
`right` - in a network namespace of their own; this generator sends and
receives on them (see doc/source/local.rst):

- frames are Ethernet + IPv4 + UDP with a signature, a stream tag, a
  sequence number and the transmit time (traffic.frames);
- each trial forks one sender process for all streams and one receiver
  process for all receiving ports (traffic.workers), on AF_PACKET
  sockets opened inside the namespace (traffic.netns, traffic.sockets);
- the sender follows a schedule, frame i at t0 + i / rate, so the count
  is exact and a slow host shows as a lower offered rate
  (traffic.pacing), which is an error beyond `rate_tolerance`;
- the receiver takes the kernel's receive timestamp (SO_TIMESTAMPNS):
  one-way delay = receive time - transmit time on the host's one clock;
  after the sender stops it drains for `drain_s` (less once every frame
  has arrived).

Rates are Python's: some 10^5 frames/s per host, far below a 10 Gbit/s
link. `calibrate()` measures what this host reaches, so that the bed can
cap the search's maximum load below it.
"""

import dataclasses
import json
import re

from epa_chain.chain import directions as chain_directions
from epa_chain.chain import learning_frame
from epa_chain.local.traffic import frames
from epa_chain.local.traffic import netns as netns_lib
from epa_chain.local.traffic import pacing
from epa_chain.local.traffic import receiver
from epa_chain.local.traffic import results
from epa_chain.local.traffic import sender
from epa_chain.local.traffic import sockets
from epa_chain.local.traffic import workers
from epa_chain.measurement import trial

DEFAULT_SAMPLE_CAP = 250000  # per direction: ~30 MB as Python tuples
CALIBRATION_PLAN_FPS = 4e6   # sequence space the receiver tracks
WORKER_TIMEOUT_SLACK_S = 10.0
UNSUPPORTED_TRIAL = 'the AF_PACKET generator cannot run this trial'
CLOSED = 'the AF_PACKET generator is closed'
_MAC = re.compile(r'^[0-9a-f]{2}(:[0-9a-f]{2}){5}$')


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """A generator port: a kernel interface in the generator's netns."""

    name: str        # 'left' | 'right' (the generator's ports in user_data)
    interface: str   # kernel interface inside the netns, e.g. 'left'
    mac: str         # its MAC (already set on the interface by the bed)


@dataclasses.dataclass(frozen=True)
class Stream:
    """One direction: from endpoint `tx` to endpoint `rx`.

    `last_hop_mac`, when given, is the source MAC frames should arrive
    with (the last VNF's port); others are counted and noted.
    """

    direction: str   # 'forward' | 'reverse'
    tx: str          # endpoint name that sends
    rx: str          # endpoint name that receives
    dst_mac: str     # destination MAC of sent frames: the first hop
    last_hop_mac: str = None


def _option_error(field, value, fix):
    return ValueError('AF_PACKET generator option %s=%r: %s'
                      % (field, value, fix))


def _mac(field, value):
    text = str(value).lower()
    if not _MAC.match(text):
        raise _option_error(field, value, 'write a MAC as aa:bb:cc:dd:ee:ff')
    return text


def _coerce(kind, item, field):
    if isinstance(item, kind):
        return item
    if isinstance(item, dict):
        names = {f.name for f in dataclasses.fields(kind)}
        unknown = sorted(set(item) - names)
        if unknown:
            raise _option_error(field, item, 'unknown keys %s; use %s'
                                % (', '.join(unknown),
                                   ', '.join(sorted(names))))
        try:
            return kind(**item)
        except TypeError as exc:
            raise _option_error(field, item, str(exc)) from None
    raise _option_error(field, item, 'give a %s or a dict'
                        % kind.__name__)


def _items(field, value):
    """A list of endpoints or streams, or that list as JSON text.

    JSON is how `epa-chain measure --generator-option` can pass it.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise _option_error(field, value, 'not JSON (%s)' % exc) \
                from None
    if value is None:
        return []
    if isinstance(value, dict) or not isinstance(value, (list, tuple)):
        raise _option_error(field, value, 'give a list')
    return value


def _number(field, value, low, high=None, kind=float):
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise _option_error(field, value, 'not a %s' % kind.__name__) \
            from None
    if number < low or (high is not None and number > high):
        raise _option_error(field, value, 'must be within [%s, %s]'
                            % (low, high if high is not None else 'inf'))
    return number


class AfPacketGenerator(trial.Generator):
    """Paced AF_PACKET traffic between endpoints in namespace `netns`."""

    name = 'afpacket'

    def __init__(self, netns, endpoints, streams, link_bps=10e9,
                 rate_tolerance=0.02, drain_s=0.5,
                 max_latency_samples=DEFAULT_SAMPLE_CAP,
                 learn_before_trial=True):
        if not netns or not isinstance(netns, str) or '/' in netns:
            raise _option_error('netns', netns, 'give the name of a network '
                                'namespace (ip netns list)')
        self.netns = netns
        self.endpoints = {}
        for item in _items('endpoints', endpoints):
            endpoint = _coerce(Endpoint, item, 'endpoints')
            if endpoint.name in self.endpoints:
                raise _option_error('endpoints', endpoint.name,
                                    'endpoint names must be unique')
            self.endpoints[endpoint.name] = dataclasses.replace(
                endpoint, mac=_mac('endpoints[%s].mac' % endpoint.name,
                                   endpoint.mac))
        if not self.endpoints:
            raise _option_error('endpoints', endpoints,
                                'give at least one endpoint')
        self.streams = {}
        for item in _items('streams', streams):
            stream = _coerce(Stream, item, 'streams')
            if stream.direction not in chain_directions.DIRECTIONS:
                raise _option_error('streams[].direction', stream.direction,
                                    'choose one of %s'
                                    % ', '.join(chain_directions.DIRECTIONS))
            if stream.direction in self.streams:
                raise _option_error('streams[].direction', stream.direction,
                                    'one stream per direction')
            for field in ('tx', 'rx'):
                if getattr(stream, field) not in self.endpoints:
                    raise _option_error(
                        'streams[%s].%s' % (stream.direction, field),
                        getattr(stream, field), 'name one of the endpoints '
                        '(%s)' % ', '.join(sorted(self.endpoints)))
            stream = dataclasses.replace(
                stream, dst_mac=_mac('streams[%s].dst_mac' % stream.direction,
                                     stream.dst_mac),
                last_hop_mac=_mac('streams[%s].last_hop_mac'
                                  % stream.direction, stream.last_hop_mac)
                if stream.last_hop_mac else None)
            self.streams[stream.direction] = stream
        if not self.streams:
            raise _option_error('streams', streams, 'give at least one stream')
        self._link_bps = _number('link_bps', link_bps, 1e6)
        self.rate_tolerance = _number('rate_tolerance', rate_tolerance,
                                      0.0, 0.5)
        self.drain_s = _number('drain_s', drain_s, 0.0, 60.0)
        self.max_latency_samples = _number(
            'max_latency_samples', max_latency_samples, 0, kind=int)
        self.learn_before_trial = bool(learn_before_trial)
        self.last_calibration = None
        self._trials = 0
        self._frames = {}
        self._workers = []
        self._closed = False

    @property
    def link_bps(self):
        return self._link_bps

    def describe(self):
        described = super().describe()
        described.update({
            'netns': self.netns,
            'endpoints': [dataclasses.asdict(e)
                          for e in self.endpoints.values()],
            'streams': [dataclasses.asdict(s) for s in self.streams.values()],
            'timestamping': 'SO_TIMESTAMPNS (kernel rx)',
            'transmit_time': 'time.time_ns() before send (user space)',
            'pacing': 'schedule t0 + i / rate, sleep then spin the last '
                      '%d us, bursts of at most %d when late'
                      % (pacing.SPIN_S * 1e6, pacing.MAX_BURST),
            'processes': 'one sender (all streams), one receiver (all '
                         'receiving ports), forked per trial',
            'rate_tolerance': self.rate_tolerance,
            'drain_s': self.drain_s,
            'max_latency_samples': self.max_latency_samples,
            'learn_before_trial': self.learn_before_trial,
            'frame': 'Ethernet/IPv4/UDP, UDP port %d, 198.18.0.0/15'
                     % frames.SIGNATURE_PORT,
        })
        if self.last_calibration:
            described['calibration'] = dict(self.last_calibration)
        return described

    # ---- public operations -------------------------------------------

    def learn(self):
        """One switch-learning frame from every endpoint (src = dst)."""
        self._check_open()
        self._in_netns(_send_learning_frames, list(self.endpoints.values()))

    def run_trial(self, spec):
        self._check_open()
        streams = self._streams_for(spec.profile.directions)
        try:
            schedule = pacing.Schedule(spec.load_fps, spec.duration_s,
                                       self.rate_tolerance)
        except ValueError as exc:
            raise trial.GeneratorError(UNSUPPORTED_TRIAL, str(exc)) from None
        planned, sent, received = self._run(
            spec.profile.frame_size, spec.profile.flows, streams, schedule,
            self.max_latency_samples if spec.measure_latency else 0)
        return results.assemble(spec, planned, sent, received,
                                self.rate_tolerance)

    def calibrate(self, frame_size, seconds=0.5, directions=None, flows=1):
        """Highest frame rate this host's sender sustains, per direction.

        Measured by sending unpaced for `seconds` through the real path,
        all directions at once; the bed uses it to cap the search's
        maximum load.

        When the receiver cannot keep up (its socket overflowed) the
        figure is lowered to the share of frames it did read. Details
        land in `last_calibration` and in describe().
        """
        self._check_open()
        if not isinstance(frame_size, trial.FrameSize):
            frame_size = trial.FrameSize.parse(frame_size)
        seconds = _number('seconds', seconds, 0.05, 60.0)
        streams = self._streams_for(directions or tuple(self.streams))
        schedule = pacing.Schedule(None, seconds)
        planned, sent, received = self._run(
            frame_size, flows, streams, schedule, 0,
            planned_frames=pacing.planned_frames(CALIBRATION_PLAN_FPS,
                                                 seconds))
        results.check_sender(sent)
        if 'error' in received:
            results.check_receiver(received)
        seconds_by_stream = sender.sending_seconds(sent)
        sender_fps = min(pacing.offered_fps(tx, took) for tx, took in
                         zip(sent['tx'], seconds_by_stream))
        received_frames = sum(received['streams'][p.tag]['rx']
                              for p in planned)
        dropped = sum(received['kernel_dropped'].values())
        receiver_fps = sender_fps
        if dropped:
            receiver_fps = sender_fps * received_frames / (
                received_frames + dropped)
        fps = min(sender_fps, receiver_fps)
        self.last_calibration = {
            'frame_size': frame_size.label, 'seconds': seconds,
            'directions': [s.direction for s in streams],
            'sender_fps': sender_fps, 'receiver_fps': receiver_fps,
            'tx_frames': list(sent['tx']), 'rx_frames': received_frames,
            'receiver_kernel_dropped': dropped, 'fps': fps}
        return fps

    def close(self):
        """Kill any worker still running; idempotent."""
        workers_left, self._workers = self._workers, []
        for worker in workers_left:
            worker.kill()
        self._closed = True

    # ---- one run: sockets, workers, reports ------------------------------

    def _check_open(self):
        if self._closed:
            raise trial.GeneratorError(CLOSED, 'create a new generator')

    def _streams_for(self, directions):
        missing = [d for d in directions if d not in self.streams]
        if missing:
            raise trial.GeneratorError(
                UNSUPPORTED_TRIAL, 'no stream for direction %s; this '
                'generator has %s' % (', '.join(missing),
                                      ', '.join(self.streams)))
        return [self.streams[d] for d in chain_directions.DIRECTIONS
                if d in directions]

    def _stream_frames(self, stream, frame_size, flows, tag):
        key = (stream.direction, frame_size.mix, flows)
        built = self._frames.get(stream.direction)
        if built is None or built[0] != key:
            built = (key, frames.StreamFrames(
                frame_size.mix, flows, stream.dst_mac,
                self.endpoints[stream.tx].mac, stream.direction, tag))
            self._frames[stream.direction] = built
        built[1].retag(tag)
        return built[1]

    def _run(self, frame_size, flows, streams, schedule, sample_cap,
             planned_frames=None):
        """Fork, send, drain: (planned streams, sender, receiver report)."""
        trial_index = self._trials
        self._trials += 1
        planned = []
        built = []
        for stream in streams:
            index = chain_directions.DIRECTIONS.index(stream.direction)
            tag = frames.stream_tag(trial_index, index)
            planned.append(results.PlannedStream(
                stream.direction, tag, planned_frames or schedule.total))
            built.append(self._stream_frames(stream, frame_size, flows, tag))
        largest = max(size for size, _weight in frame_size.mix)
        opened = self._in_netns(_open_sockets, self.endpoints, streams,
                                largest, self.learn_before_trial)
        if isinstance(opened, str):
            raise trial.GeneratorError(UNSUPPORTED_TRIAL, opened)
        tx_socks, rx_socks = opened
        all_socks = list(tx_socks) + [s for s, _i in rx_socks.values()]
        rx_worker = tx_worker = None
        try:
            receiving = []
            for name, (sock, ignores_outgoing) in rx_socks.items():
                counters = {
                    p.tag: receiver.StreamCounter(p.direction, p.planned,
                                                  sample_cap, s.last_hop_mac)
                    for p, s in zip(planned, streams) if s.rx == name}
                receiving.append(receiver.Endpoint(
                    name, sock, self.endpoints[name].mac, counters,
                    ignores_outgoing))
            rx_worker = self._start(
                'receiver', _receive_main, receiving, self.drain_s,
                before=_closer(tx_socks))
            tx_worker = self._start(
                'sender', _send_main,
                [(sock.send, stream_frames)
                 for sock, stream_frames in zip(tx_socks, built)],
                schedule, before=_closer(s for s, _i in rx_socks.values()))
            for sock in all_socks:
                sock.close()
            sent = _report(tx_worker, schedule.cutoff_s)
            rx_worker.tell(receiver.encode_stop(
                {p.tag: count for p, count in
                 zip(planned, sent.get('tx', [0] * len(planned)))}))
            received = _report(rx_worker, self.drain_s)
        finally:
            for worker in (tx_worker, rx_worker):
                if worker is not None:
                    worker.kill()
                    if worker in self._workers:
                        self._workers.remove(worker)
            for sock in all_socks:
                sock.close()
        return planned, sent, received

    def _in_netns(self, function, *args):
        try:
            return netns_lib.run_in(self.netns, function, *args)
        except (OSError, ValueError) as exc:
            raise trial.GeneratorError(
                results.SOCKET_ERROR, 'network namespace %s: %s; is the '
                'test bed up (epa-chain local status)?' % (self.netns, exc)) \
                from None

    def _start(self, name, function, *args, before=None):
        worker = workers.Worker(name, function, *args, before=before)
        self._workers.append(worker)
        return worker


# ---- run inside the namespace (a thread) or in the workers -------------

def _report(worker, seconds):
    """A worker's report, or the GeneratorError its death is."""
    try:
        return worker.report(seconds + WORKER_TIMEOUT_SLACK_S)
    except workers.WorkerFailed as exc:
        raise trial.GeneratorError(results.PROCESS_FAILED, str(exc)) \
            from None


def _open_sockets(endpoints, streams, largest_frame, learn):
    """Sending sockets per stream, receiving sockets per endpoint.

    Returns a string saying what is wrong instead when a frame would not
    fit an interface's MTU.
    """
    opened = []
    try:
        tx_socks = []
        for stream in streams:
            endpoint = endpoints[stream.tx]
            sock = sockets.open_sender(endpoint.interface)
            opened.append(sock)
            tx_socks.append(sock)
            mtu = sockets.interface_mtu(sock, endpoint.interface)
            needed = frames.wire_bytes(largest_frame) - frames.ETH_HEADER
            if needed > mtu:
                for item in opened:
                    item.close()
                return ('%d-byte frames need an MTU of %d on %s (%s), it has '
                        '%d; raise it (ip link set %s mtu %d) or send '
                        'smaller frames' % (largest_frame, needed,
                                            endpoint.interface,
                                            endpoint.name, mtu,
                                            endpoint.interface, needed))
        rx_socks = {}
        for name in sorted({stream.rx for stream in streams}):
            sock, ignores_outgoing = sockets.open_receiver(
                endpoints[name].interface)
            opened.append(sock)
            rx_socks[name] = (sock, ignores_outgoing)
        if learn:
            _send_learning_frames(
                [endpoints[name] for name in sorted(rx_socks)])
    except BaseException:
        for item in opened:
            item.close()
        raise
    return tx_socks, rx_socks


def _send_learning_frames(endpoints):
    for endpoint in endpoints:
        with sockets.open_sender(endpoint.interface) as sock:
            sock.send(learning_frame.frame(endpoint.mac, endpoint.name))


def _closer(socks):
    socks = list(socks)

    def close():
        for sock in socks:
            sock.close()
    return close


def _send_main(_control_fd, senders, schedule):
    sender.tighten_timer_slack()
    return sender.send(senders, schedule)


def _receive_main(control_fd, endpoints, drain_s):
    return receiver.receive(endpoints, control_fd, drain_s)
