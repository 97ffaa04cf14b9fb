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

"""A guest whose kernel stalls before READY is hard-rebooted once.

The single-host cloud test stalls a real guest's vCPU (SIGSTOP on its
QEMU thread) and proves the stack through the reboot; here the wait's
decisions, on consoles as a Debian 6.1 guest kernel prints them.
"""

import datetime

import testtools

from epa_chain.cloud import readiness
from epa_chain.cloud import workflow
from epa_chain.tests import fake_clock

BOOTING = '[    3.100000] Run /init as init process\n'
SOFT_LOCKUP = ('[   41.002311] watchdog: BUG: soft lockup - CPU#1 stuck for '
               '26s! [kworker/1:1:52]\n')
RCU_STALL = ('[   62.114001] rcu: INFO: rcu_preempt detected stalls on '
             'CPUs/tasks:\n[   62.114002] rcu:     1-...0: (1 GPs behind)\n')
BOOT_LINE = ('EPA-CHAIN BOOT n1 initramfs_at=2.0 init_at=5.0 runtime_at=9.0 '
             'ready_at=12.5 kernel_started=2026-11-30T04:00:03+00:00\n')
READY = BOOT_LINE + 'EPA-CHAIN READY n1 prox\n'
REBOOTED_AT = datetime.datetime(2026, 11, 30, 4, 0, 0,
                                tzinfo=datetime.timezone.utc)


class StallingCompute:
    """Nova's answers for one server: a console per poll, its reboots.

    After a hard reboot the console goes on with `after_reboot` (Nova
    keeps the log across the reboot, the new boot appended).
    """

    def __init__(self, consoles, after_reboot=(), refuse=None):
        self.consoles = list(consoles)
        self.after_reboot = list(after_reboot)
        self.refuse = refuse
        self.rebooted = []

    def server_status(self, server_id):
        return 'ACTIVE', None

    def console_output(self, server_id):
        texts = self.consoles
        return texts.pop(0) if len(texts) > 1 else texts[0]

    def hard_reboot(self, server_id):
        if self.refuse:
            raise readiness.RebootFailed(self.refuse)
        self.rebooted.append(server_id)
        old = self.consoles[-1]
        self.consoles = [old + text for text in self.after_reboot] or [old]


class KernelStallTest(testtools.TestCase):

    def test_the_kernels_words_for_a_stall(self):
        self.assertIn('soft lockup - CPU#1 stuck',
                      readiness.kernel_stall(BOOTING + SOFT_LOCKUP))
        self.assertIn('rcu_preempt detected stalls',
                      readiness.kernel_stall(RCU_STALL))
        self.assertIn('self-detected stall', readiness.kernel_stall(
            'rcu: INFO: rcu_sched self-detected stall on CPU'))
        self.assertIn('Kernel panic', readiness.kernel_stall(
            '[ 2.1] Kernel panic - not syncing: VFS: Unable to mount root'))

    def test_boot_noise_about_rcu_and_watchdogs_is_no_stall(self):
        self.assertIsNone(readiness.kernel_stall(
            'rcu: Preemptible hierarchical RCU implementation.\n'
            'NMI watchdog: Perf NMI watchdog permanently disabled\n'
            'rcu: RCU CPU stall warnings timeout set to 21 (rcu_cpu_stall_'
            'timeout).\n' + BOOTING))
        self.assertIsNone(readiness.kernel_stall(None))


class StallRecoveryTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = fake_clock.FakeClock()
        self.said = []
        self.node = readiness.Node('id1', 'n1', 'prox')

    def wait(self, compute, timeout=300):
        recovery = readiness.StallRecovery(
            compute, say=self.said.append, grace_s=30, clock=self.clock,
            utcnow=lambda: REBOOTED_AT)
        timelines = readiness.wait_until_ready(
            [self.node], compute, timeout, interval=10, clock=self.clock,
            sleep=self.clock.sleep, recovery=recovery)
        return timelines, recovery.restarts

    def test_a_stalled_guest_is_rebooted_after_the_grace_and_comes_up(self):
        stalled = BOOTING + SOFT_LOCKUP
        compute = StallingCompute(
            [BOOTING, stalled, stalled + RCU_STALL, stalled + RCU_STALL,
             stalled + RCU_STALL * 2],
            after_reboot=[BOOTING, READY])
        timelines, restarts = self.wait(compute)
        # First seen at 10 s, still stalled at 40 s: rebooted then, READY
        # on the second poll after it.
        self.assertEqual(['id1'], compute.rebooted)
        self.assertEqual(60, self.clock.now)
        self.assertEqual({'n1': {
            'reason': SOFT_LOCKUP.strip().replace('   ', ' '),
            'rebooted_at': REBOOTED_AT.isoformat()}}, restarts)
        self.assertEqual(12.5, timelines['n1']['ready_at'])
        self.assertEqual(1, len(self.said))
        self.assertIn('n1: its kernel stalled before READY', self.said[0])

    def test_a_stall_it_recovers_from_in_the_grace_is_left_alone(self):
        stalled = BOOTING + RCU_STALL
        compute = StallingCompute([stalled, stalled + 'systemd[1]: ...\n',
                                   stalled + READY])
        _timelines, restarts = self.wait(compute)
        self.assertEqual([], compute.rebooted)
        self.assertEqual({}, restarts)

    def test_a_guest_ready_despite_an_old_stall_is_never_rebooted(self):
        # The console keeps the stall report; READY is its verdict.
        compute = StallingCompute([SOFT_LOCKUP + READY])
        clock_at = self.clock.now
        self.wait(compute)
        self.assertEqual([], compute.rebooted)
        self.assertEqual(clock_at, self.clock.now)

    def test_one_reboot_per_guest_then_the_timeout(self):
        stalled = BOOTING + SOFT_LOCKUP
        compute = StallingCompute([stalled],
                                  after_reboot=[BOOTING, SOFT_LOCKUP])
        error = self.assertRaises(readiness.NotReadyError, self.wait,
                                  compute, 200)
        self.assertEqual(['id1'], compute.rebooted)
        self.assertIn('not ready after 200 s', str(error))
        self.assertIn('soft lockup', str(error))

    def test_a_refused_reboot_is_the_error_and_names_the_stall(self):
        compute = StallingCompute([BOOTING + RCU_STALL],
                                  refuse='Cannot reboot (HTTP 409)')
        error = self.assertRaises(readiness.NotReadyError, self.wait,
                                  compute)
        self.assertIn('n1 stalled before READY (', str(error))
        self.assertIn('rcu_preempt detected stalls', str(error))
        self.assertIn('hard reboot failed: Cannot reboot (HTTP 409)',
                      str(error))
        self.assertEqual(30, self.clock.now)


class RestartInTheBootRecordTest(testtools.TestCase):

    def test_phases_count_from_the_reboot_and_say_why(self):
        timelines = {'n1': {'initramfs_at': 2.0, 'init_at': 5.0,
                            'runtime_at': 9.0, 'ready_at': 12.5,
                            'kernel_started': '2026-11-30T04:00:03+00:00'},
                     'n2': {'initramfs_at': 2.0, 'init_at': 5.0,
                            'runtime_at': 9.0, 'ready_at': 12.5,
                            'kernel_started': '2026-11-30T04:00:03+00:00'}}
        launched = {readiness.LAUNCHED_AT: '2026-11-30T03:58:00.000000'}
        restarts = {'n1': {'reason': 'watchdog: BUG: soft lockup',
                           'rebooted_at': REBOOTED_AT.isoformat()}}
        record = readiness.boot_record(
            timelines, {'n1': launched, 'n2': launched}, restarts)
        # n1 from its reboot at 04:00:00, n2 from Nova's launch.
        self.assertEqual(3.0, record['n1']['firmware'])
        self.assertEqual(15.5, record['n1']['ready_s'])
        self.assertEqual(restarts['n1'], record['n1']['restart'])
        self.assertEqual(123.0, record['n2']['firmware'])
        self.assertNotIn('restart', record['n2'])
        lines = readiness.describe_boot(record)
        self.assertIn('n1 READY 15.5 s after its reboot', lines[0])
        self.assertIn('hard-rebooted at 2026-11-30T04:00:00+00:00 after '
                      'its kernel stalled (watchdog: BUG: soft lockup)',
                      lines[0])
        self.assertIn('n2 READY 135.5 s after its start', lines[1])

    def test_wait_ready_records_the_reboot(self):
        stalled = BOOTING + SOFT_LOCKUP
        compute = StallingCompute([stalled] * 5,
                                  after_reboot=[BOOTING, READY])
        clock = fake_clock.FakeClock()
        said = []
        ready = workflow.wait_ready(
            compute, [readiness.Node('id1', 'n1', 'prox')], {}, 300,
            said.append, clock=clock, sleep=clock.sleep)
        self.assertEqual(['id1'], compute.rebooted)
        self.assertIn('restart', ready.boot['n1'])
        self.assertTrue(any('hard-rebooting it once' in line
                            for line in said), said)
        self.assertTrue(any('after its reboot' in line for line in said),
                        said)
