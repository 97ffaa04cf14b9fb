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

"""The PROX client against replayed real transcripts and broken replies.

Sequence numbers (#n) are entries of
fixtures/prox/prox-control-transcript.json.
"""

import socket
import threading
import time
import warnings

import testtools

from epa_chain.prox import client as prox_client
from epa_chain.tests.unit import prox_replay

REPLAY = prox_replay.Transcript()
# The recorded start/stop holds (564 ms, 222 ms) shrunk to keep tests fast.
SCALE = 0.1


class ReplayTestCase(testtools.TestCase):

    def serve(self, seqs=(), extra=(), responder=None, **client_options):
        """A replay server and a client for it.

        The server answers transcript entries `seqs`, then the `extra`
        (line, Reply) pairs, or uses `responder`.
        """
        if responder is None:
            responder = prox_replay.Script(REPLAY, (0,) + tuple(seqs),
                                           SCALE)
            for line, reply in extra:
                responder.add(line, reply)
        server = prox_replay.ReplayServer(responder, REPLAY.version_reply)
        server.__enter__()
        self.addCleanup(server.__exit__, None, None, None)
        options = {'reply_timeout': 2.0, 'drain_timeout': 2.0}
        options.update(client_options)
        client = prox_client.ProxClient('127.0.0.1', server.port, **options)
        self.addCleanup(client.close)
        return server, client

    def assertAllServed(self, server):
        self.assertEqual([], server.unexpected)


class TestRecordedReplies(ReplayTestCase):

    def test_version_is_decoded(self):
        server, client = self.serve()
        version = client.connect()
        self.assertEqual('22.12', version.prox)
        self.assertEqual('22.11.11', version.dpdk)
        self.assertEqual((144965632, 369822563), version.raw)
        self.assertEqual(['version'], server.received)

    def test_tot_stats_idle_and_running(self):
        server, client = self.serve([2, 35])
        idle = client.tot_stats()
        running = client.tot_stats()
        self.assertEqual((0, 0, 2600000000), (idle.rx, idle.tx, idle.hz))
        self.assertEqual((94031, 94032), (running.rx, running.tx))
        self.assertGreater(running.last_tsc, idle.last_tsc)
        # every query is followed by the version barrier
        self.assertEqual(['version', 'tot stats', 'version', 'tot stats',
                          'version'], server.received)
        self.assertAllServed(server)

    def test_port_stats_rate_over_the_refresh_interval(self):
        server, client = self.serve([36])
        stats = client.port_stats(0)
        self.assertEqual(94032, stats.tx_total)
        self.assertEqual(16892, stats.tx_packets_diff)
        # 0.2 % of 10 Gbit/s in 128-byte frames is 16891.9 frames/s
        self.assertAlmostEqual(16892.2, stats.tx_rate_pps(2600000000),
                               delta=0.1)
        self.assertEqual(124, stats.tx_bytes_diff // stats.tx_packets_diff)

    def test_multi_port_core_and_ierrors(self):
        server, client = self.serve([38, 39, 43])
        ports = client.multi_port_stats([0, 1])
        self.assertEqual([0, 1], [p.port for p in ports])
        self.assertEqual((0, 110930), (ports[0].rx_total, ports[0].tx_total))
        self.assertEqual((110929, 0), (ports[1].rx_total, ports[1].tx_total))
        core = client.core_stats(1, 0)
        self.assertEqual((0, 110930, 0), (core.rx, core.tx, core.drop))
        ierrors, last_tsc, hz = client.tot_ierrors()
        self.assertEqual((0, 2600000000), (ierrors, hz))

    def test_dp_core_stats_split_across_reads(self):
        entry = REPLAY.entry(40)
        self.assertEqual(2, len(entry['reads']))  # the recording split it
        server, client = self.serve([40])
        stats = client.dp_core_stats(1, [0, 1])
        gen, lat = stats[(1, 0)], stats[(1, 1)]
        self.assertEqual(110930, gen.tx)
        self.assertEqual((110929, 0, 110929), (lat.rx, lat.rx_non_dp,
                                               lat.rx_dp))
        self.assertEqual(1, lat.core)
        self.assertLess(gen.last_tsc, lat.last_tsc)

    def test_lat_stats_and_histogram_split_across_reads(self):
        self.assertEqual([57, 1940], [n for _ms, n in
                                      REPLAY.entry(74)['reads']])
        server, client = self.serve([73, 74])
        stats = client.lat_stats(1, [1])[(1, 1)]
        self.assertEqual((3920, 4980, 4485), (stats.min_us, stats.max_us,
                                              stats.avg_us))
        histogram = client.lat_all_stats(1, 1, bucket_shift=11)
        self.assertEqual(stats, histogram.stats)
        self.assertEqual(128, len(histogram.buckets))
        # every sample above the 127 buckets of 787.7 ns: overflow bucket
        self.assertEqual(351, histogram.buckets[127])
        self.assertEqual(351, sum(histogram.buckets))
        self.assertAlmostEqual(787.69, histogram.bucket_width_ns, places=2)

    def test_histogram_matches_the_lat_stats_minimum(self):
        server, client = self.serve([42])
        histogram = client.lat_all_stats(1, 1)
        first = next(i for i, n in enumerate(histogram.buckets) if n)
        width = histogram.bucket_width_ns
        # min 4 us lies in the first non-empty bucket
        self.assertLessEqual(first * width, 4000)
        self.assertGreater((first + 1) * width, 4000)
        self.assertEqual(12932, histogram.buckets[5])

    def test_stats_paths_and_the_no_value_sentinel(self):
        server, client = self.serve([44, 21, 21])
        self.assertEqual([0, 144712, 2600000000], client.stats(
            ['port(0).rx.packets', 'port(0).tx.packets', 'hz']))
        error = self.assertRaises(prox_client.ProxNoValueError,
                                  client.stats, ['nosuch.path'])
        self.assertIn('nosuch.path', str(error))
        self.assertIn('18446744073709551615', str(error))
        self.assertEqual([None], client.stats(['nosuch.path'],
                                              allow_no_value=True))
        # stats always answers: no barrier after it
        self.assertNotIn('version', server.received[1:])


def whole_instance(instance):
    """Every recorded exchange with one PROX instance, in order.

    [(script steps, the command the client sends for them)].
    """
    plan = []
    for entry in REPLAY.entries:
        if entry['instance'] != instance or entry['seq'] in (0, 1):
            continue  # #0, #1: the connection's own version exchange
        raw = entry.get('sent_raw', entry['sent'] + '\n')
        lines = [line for line in raw.replace('\r', '').split('\n')
                 if line]
        if not lines:
            continue  # #99: the client never sends an empty line
        if len(lines) == 1:
            plan.append(([(lines[0], REPLAY.reply(entry['seq'], SCALE))],
                         lines[0]))
            continue
        # the timing probes: two commands in one write
        first, second = lines
        replies = entry['reply'].splitlines(True)
        if first in ('start all', 'stop all'):
            hold = entry['first_byte_ms'] / 1000.0 * SCALE
            plan.append(([(first, prox_replay.Reply(hold_s=hold)),
                          (second, prox_replay.Reply.lines(replies[0]))],
                         first))
        elif first == 'reset stats':
            plan.append(([(first, prox_replay.NO_REPLY)], first))
            plan.append(([(second, prox_replay.Reply.lines(replies[0]))],
                         second))
        else:
            plan.append(([(first, prox_replay.Reply.lines(replies[0]))],
                         first))
            plan.append(([(second, prox_replay.Reply.lines(replies[1]))],
                         second))
    return plan


def client_call(client, command):
    """The client method that sends `command`, with its arguments."""
    words = command.split()

    def ids(text):
        return [int(part) for part in text.split(',')]
    fixed = {'version': client.version, 'tot stats': client.tot_stats,
             'tot ierrors tot': client.tot_ierrors,
             'start all': client.start, 'stop all': client.stop,
             'quit': client.quit}
    if command in fixed:
        return fixed[command], ()
    if words[0] == 'port_stats':
        return client.port_stats, (int(words[1]),)
    if command.startswith('multi port stats '):
        return client.multi_port_stats, (ids(words[3]),)
    if command.startswith('core stats '):
        return client.core_stats, (int(words[2]), int(words[3]))
    if command.startswith('dp core stats '):
        return client.dp_core_stats, (int(words[3]), ids(words[4]))
    if command.startswith('lat all stats '):
        return client.lat_all_stats, (int(words[3]), int(words[4]))
    if command.startswith('lat stats ') and len(words) == 4:
        return client.lat_stats, (int(words[2]), ids(words[3]))
    if words[0] == 'stats':
        return client.stats, (words[1].split(','),)
    if words[0] == 'stop':
        return client.stop, ([int(words[1])], int(words[2]))
    if command.startswith(('reset stats', 'pkt_size', 'set value',
                           'speed')):
        return client.silent, (command,)
    return client.command, (command,)


class TestWholeTranscript(ReplayTestCase):
    """Every exchange of the recording, in order, on one connection."""

    def replay(self, instance):
        plan = whole_instance(instance)
        script = prox_replay.Script(REPLAY, [0 if instance == 'gen' else 1],
                                    SCALE)
        for steps, _command in plan:
            for line, reply in steps:
                script.add(line, reply)
        server, client = self.serve(responder=script)
        client.connect()
        outcomes = []
        for steps, command in plan:
            method, args = client_call(client, command)
            try:
                value = method(*args)
            except prox_client.ProxError as exc:
                outcomes.append((command, type(exc).__name__))
                continue
            outcomes.append((command, 'ok'))
            if method not in (client.silent, client.start, client.stop,
                              client.quit):
                self.assertIsNotNone(value, command)
        self.assertEqual([], server.unexpected)
        self.assertEqual([], script.steps)
        self.assertFalse(client.connected)  # the recording ends with quit
        return outcomes

    def test_generator_instance(self):
        outcomes = dict(self.replay('gen'))
        self.assertEqual('ProxNoReplyError', outcomes['foo bar'])
        self.assertEqual('ProxNoReplyError', outcomes['core stats 5 0'])
        self.assertEqual('ProxNoReplyError', outcomes['port_stats 9'])
        self.assertEqual('ProxCommandError', outcomes['lat stats 1 0'])
        self.assertEqual('ProxCommandError', outcomes['dp core stats 5 0,1'])
        self.assertEqual('ProxCommandError', outcomes['lat stats'])
        self.assertEqual('ProxNoValueError', outcomes['stats nosuch.path'])
        failed = {c for c, o in outcomes.items() if o != 'ok'}
        self.assertEqual({'foo bar', 'core stats 5 0', 'port_stats 9',
                          'lat stats 1 0', 'lat stats 5 1',
                          'lat all stats 1 0', 'dp core stats 5 0,1',
                          'dp core stats 1 7', 'lat stats',
                          'stats nosuch.path'}, failed)

    def test_forwarder_instance(self):
        outcomes = dict(self.replay('fwd'))
        failed = {c for c, o in outcomes.items() if o != 'ok'}
        self.assertEqual({'lat stats 0 1', 'lat stats 0 0', 'lat stats 1 1',
                          'core stats 1 0', 'dp core stats 1 0,1'}, failed)
        self.assertEqual('ProxNoReplyError', outcomes['core stats 1 0'])


class TestRecordedErrors(ReplayTestCase):

    def test_unknown_command_has_no_reply_and_is_detected_at_once(self):
        server, client = self.serve([12], reply_timeout=5.0)
        client.connect()
        started = time.monotonic()
        error = self.assertRaises(prox_client.ProxNoReplyError,
                                  client.command, 'foo bar')
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertEqual('foo bar', error.command)
        self.assertIn('only in its log', str(error))
        self.assertAllServed(server)

    def test_bad_core_and_bad_port_have_no_reply(self):
        server, client = self.serve([16, 19])
        self.assertRaises(prox_client.ProxNoReplyError, client.core_stats,
                          5, 0)
        self.assertRaises(prox_client.ProxNoReplyError, client.port_stats, 9)
        # the connection is still in step
        self.assertEqual('22.12', client.version().prox)

    def test_error_replies(self):
        server, client = self.serve([13, 14, 17, 18, 20])
        error = self.assertRaises(prox_client.ProxCommandError,
                                  client.lat_stats, 1, [0])
        self.assertIn('not measuring latency', str(error))
        self.assertRaises(prox_client.ProxCommandError, client.lat_stats,
                          5, [1])
        error = self.assertRaises(prox_client.ProxCommandError,
                                  client.dp_core_stats, 5, [0, 1])
        self.assertIn('invalid core 5, task 0', str(error))
        self.assertIn('invalid core 5, task 1', str(error))
        self.assertRaises(prox_client.ProxCommandError,
                          client.dp_core_stats, 1, [7])
        error = self.assertRaises(prox_client.ProxCommandError,
                                  client.command, 'lat stats')
        self.assertIn('invalid syntax', str(error))
        self.assertAllServed(server)

    def test_lat_all_stats_on_a_gen_task(self):
        server, client = self.serve([15])
        self.assertRaises(prox_client.ProxCommandError,
                          client.lat_all_stats, 1, 0)


class TestRecordedControl(ReplayTestCase):

    def test_trial_setup_sends_the_recorded_commands(self):
        # #28-#34: the recording's phase 1 set-up, none of which answers
        server, client = self.serve(range(28, 35))
        client.stop()
        client.reset_stats()
        client.frame_size(1, 0, 128)
        # 0.2 % of 10 Gbit/s in 128-byte frames (148 on the wire).
        fps = 0.2 * prox_client.SPEED_BYTES_PER_PERCENT / (128 + 20)
        self.assertEqual(0.2, round(client.rate_fps(1, 0, fps, 128), 9))
        started = time.monotonic()
        client.start()
        # start keeps PROX's loop busy; the barrier waits for it
        self.assertGreaterEqual(time.monotonic() - started,
                                REPLAY.holds['start all'] * SCALE * 0.9)
        commands = [line for line in server.received if line != 'version']
        self.assertEqual(['stop all', 'reset stats', 'pkt_size 1 0 124',
                          'set value 1 0 16 110 2', 'set value 1 0 38 90 2',
                          'speed 1 0 0.2', 'start all'], commands)
        self.assertAllServed(server)

    def test_quit_waits_for_prox_to_close(self):
        server, client = self.serve([102])
        client.connect()
        started = time.monotonic()
        client.quit()
        self.assertGreaterEqual(time.monotonic() - started, 0.09)
        self.assertFalse(client.connected)

    def test_speed_units(self):
        # 100 % is 10 Gbit/s including 20 bytes per frame on the wire
        self.assertAlmostEqual(100.0, prox_client.speed_percent(
            10e9 / ((64 + 20) * 8), 64))
        self.assertAlmostEqual(100.0, prox_client.speed_percent(
            10e9 / ((1518 + 20) * 8), 1518))
        # PROX pads below 64 bytes
        self.assertEqual(prox_client.speed_percent(1000, 64),
                         prox_client.speed_percent(1000, 60))
        self.assertAlmostEqual(10.0, prox_client.speed_percent(844594.6,
                                                               128),
                               places=6)

    def test_out_of_range_values_are_refused_before_sending(self):
        server, client = self.serve()
        client.connect()
        self.assertRaises(ValueError, client.speed, 1, 0, 1000.5)
        self.assertRaises(ValueError, client.frame_size, 1, 0, 63)
        self.assertRaises(ValueError, client.frame_size, 1, 0, 1519)
        self.assertRaises(ValueError, client.set_random, 1, 0, 34, 'XX')
        self.assertRaises(ValueError, client.imix, 1, 0, [64] * 129)
        self.assertRaises(ValueError, client.command, 'version\nquit')
        self.assertRaises(ValueError, client.dp_core_stats, -1, [0])
        self.assertEqual(['version'], server.received)


class TestLatency(ReplayTestCase):

    def test_replies_in_several_writes_do_not_wait_for_delayed_acks(self):
        # Like PROX, the replay server writes each part with its own send
        # and leaves Nagle on; the client ACKs at once (TCP_QUICKACK), or
        # every command would wait ~40 ms for a delayed ACK.
        if prox_client._QUICKACK is None:
            self.skipTest('TCP_QUICKACK is Linux only')
        recorded = prox_replay.Reply.lines(REPLAY.entry(35)['reply'])

        def responder(line):
            return recorded if line == 'tot stats' else None
        server, client = self.serve(responder=responder)
        client.connect()
        started = time.monotonic()
        for _ in range(10):
            self.assertEqual(94032, client.tot_stats().tx)
        self.assertLess(time.monotonic() - started, 0.3)


class TestBrokenReplies(ReplayTestCase):

    def _one(self, command_reply, **options):
        line, text = command_reply
        return self.serve(extra=[(line, prox_replay.Reply.lines(text))],
                          **options)

    def test_wrong_field_count_names_command_and_bytes(self):
        server, client = self._one(('tot stats', '1,2,3\n'))
        error = self.assertRaises(prox_client.ProxProtocolError,
                                  client.tot_stats)
        self.assertEqual('tot stats', error.command)
        self.assertIn("'1,2,3'", str(error))
        self.assertIn('4 comma-separated', str(error))

    def test_non_numeric_and_negative_fields(self):
        for text in ('1,2,x,4\n', '1,-2,3,4\n', '1, 2,3,4\n', '\n'):
            server, client = self._one(('tot stats', text))
            self.assertRaises(prox_client.ProxProtocolError,
                              client.tot_stats)

    def test_non_ascii_reply(self):
        server, client = self._one(('tot stats', '1,2,3,\xe94\n'))
        error = self.assertRaises(prox_client.ProxProtocolError,
                                  client.tot_stats)
        self.assertIn('not ASCII', str(error))

    def test_histogram_with_a_bucket_out_of_order(self):
        good = REPLAY.entry(42)['reply']
        broken = good.replace('Bucket [6]:', 'Bucket [7]:', 1)
        server, client = self._one(('lat all stats 1 1', broken))
        error = self.assertRaises(prox_client.ProxProtocolError,
                                  client.lat_all_stats, 1, 1)
        self.assertIn('Bucket [6]', str(error))

    def test_histogram_cut_short(self):
        good = REPLAY.entry(42)['reply']
        cut = ''.join(good.splitlines(True)[:100])
        server, client = self._one(('lat all stats 1 1', cut))
        error = self.assertRaises(prox_client.ProxProtocolError,
                                  client.lat_all_stats, 1, 1)
        self.assertIn('expected 129 lines, got 100', str(error))

    def test_stats_for_another_task(self):
        line = '0,1,0,0,0,0,5,2600000000,1,3\n'
        server, client = self._one(('dp core stats 1 0', line))
        error = self.assertRaises(prox_client.ProxProtocolError,
                                  client.dp_core_stats, 1, [0])
        self.assertIn('core 1 task 3 instead of core 1 task 0', str(error))

    def test_reply_to_a_command_that_never_answers(self):
        server, client = self._one(('reset stats', '0,0\n'))
        error = self.assertRaises(prox_client.ProxProtocolError,
                                  client.reset_stats)
        self.assertIn('should answer nothing', str(error))

    def test_extra_lines(self):
        server, client = self._one(('tot stats', '1,2,3,4\n1,2,3,4\n'))
        self.assertRaises(prox_client.ProxProtocolError, client.tot_stats)

    def test_connection_closed_mid_reply(self):
        reply = prox_replay.Reply([(0.0, b'0,0,96')], close_after_s=0.0)
        server, client = self.serve(extra=[('tot stats', reply)])
        error = self.assertRaises(prox_client.ProxConnectionError,
                                  client.tot_stats)
        self.assertIn("b'0,0,96'", str(error))
        self.assertIn('closed the connection', str(error))
        # and it stays unusable
        self.assertRaises(prox_client.ProxConnectionError, client.tot_stats)

    def test_over_long_line(self):
        reply = prox_replay.Reply([(0.0, b'1' * 70000)])
        server, client = self.serve(extra=[('tot stats', reply)])
        self.assertRaises(prox_client.ProxProtocolError, client.tot_stats)


class TestTimeouts(ReplayTestCase):

    def test_late_reply_is_drained_not_shifted_onto_the_next_command(self):
        late = prox_replay.Reply([(0.5, b'1,1,1,2600000000\n')])
        server, client = self.serve(
            extra=[('tot stats', late),
                   ('tot stats', prox_replay.Reply.lines(
                       '2,2,2,2600000000\n'))],
            reply_timeout=0.2)
        error = self.assertRaises(prox_client.ProxTimeoutError,
                                  client.tot_stats)
        self.assertIn('within 0.2 s', str(error))
        self.assertEqual(2, client.tot_stats().rx)

    def test_silence_after_a_timeout_puts_the_connection_out_of_step(self):
        never = prox_replay.Reply([(1.0, b'1,1,1,2600000000\n')])
        server, client = self.serve(extra=[('tot stats', never)],
                                    reply_timeout=0.1, drain_timeout=0.2)
        self.assertRaises(prox_client.ProxTimeoutError, client.tot_stats)
        error = self.assertRaises(prox_client.ProxConnectionError,
                                  client.tot_stats)
        self.assertIn('out of step', str(error))
        self.assertRaises(prox_client.ProxConnectionError, client.version)

    def test_close_reads_what_is_still_owed(self):
        # Closing with a reply on its way would make PROX write to a
        # closed socket, and PROX dies of SIGPIPE.
        late = prox_replay.Reply([(0.4, b'1,1,1,2600000000\n')])
        server, client = self.serve(extra=[('tot stats', late)],
                                    reply_timeout=0.1)
        self.assertRaises(prox_client.ProxTimeoutError, client.tot_stats)
        client.close()
        self.assertTrue(server.closed_by_client.wait(2))
        self.assertFalse(server.write_failed)
        self.assertFalse(client.connected)

    def test_reconnect_after_falling_out_of_step(self):
        never = prox_replay.Reply([(0.3, b'1,1,1,2600000000\n')])
        server, client = self.serve(extra=[('tot stats', never)],
                                    reply_timeout=0.05, drain_timeout=0.05)
        self.assertRaises(prox_client.ProxTimeoutError, client.tot_stats)
        self.assertRaises(prox_client.ProxConnectionError, client.version)
        # the fake serves one connection at a time: give it time to notice
        client.reply_timeout = 2.0
        self.assertEqual('22.12', client.reconnect().prox)
        self.assertEqual('22.11.11', client.version().dpdk)
        self.assertEqual(2, server.connections)

    def test_a_listener_that_comes_late_is_reached(self):
        # A guest READY before its address is reachable from here: the
        # connection is tried again within connect_timeout.
        server = socket.socket()
        self.addCleanup(server.close)
        server.bind(('127.0.0.1', 0))
        port = server.getsockname()[1]
        timer = threading.Timer(1.2, server.listen)
        timer.start()
        self.addCleanup(timer.cancel)
        client = prox_client.ProxClient('127.0.0.1', port,
                                        connect_timeout=5.0)
        started = time.monotonic()
        sock = client._open()
        sock.close()
        self.assertGreater(time.monotonic() - started, 1.0)

    def test_nothing_listening(self):
        probe = socket.socket()
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
        probe.close()
        client = prox_client.ProxClient('127.0.0.1', port,
                                        connect_timeout=1.0)
        error = self.assertRaises(prox_client.ProxConnectionError,
                                  client.connect)
        self.assertIn('127.0.0.1:%d' % port, str(error))
        self.assertIn('listening there', str(error))


class TestNames(testtools.TestCase):

    def test_the_old_name_of_prox_builtin_shift_still_works(self):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            self.assertEqual(prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT,
                             prox_client.DEFAULT_LATENCY_BUCKET_SHIFT)
        self.assertEqual([DeprecationWarning],
                         [w.category for w in caught])
        self.assertIn('PROX_BUILTIN_LATENCY_BUCKET_SHIFT',
                      str(caught[0].message))
        self.assertRaises(AttributeError, getattr, prox_client, 'NO_SUCH')
