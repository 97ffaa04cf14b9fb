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

"""The local bed's PROX generator: instances, configs, routing, binary."""

import dataclasses
import os
import stat
import subprocess
import tempfile
from unittest import mock
import warnings

import testtools

from epa_chain.hot import shipped
from epa_chain.local import private_tmp
from epa_chain.local import prox_generator as pg
from epa_chain.local import prox_setup
from epa_chain.prox import binary
from epa_chain.prox import build
from epa_chain.prox import client as prox_client
from epa_chain.prox import gen_config
from epa_chain.tests import repo
from epa_chain.tests.unit import test_local_plan


def _setup(preset='pvp', cpus=None, **parameters):
    plan = test_local_plan._plan(preset, generator='prox', **parameters)
    return plan, prox_setup.setup(plan.generator,
                                  cpus or plan.generator.cpus)


class TestSetup(testtools.TestCase):

    def test_two_cpus_one_worker_runs_every_task(self):
        plan, found = _setup()
        self.assertEqual((1, (0,)), (found.master, found.workers))
        self.assertEqual(['gen-forward', 'gen-reverse', 'lat-reverse',
                          'lat-forward'], [t.name for t in found.tasks])
        self.assertEqual([0, 1, 2, 3], [t.task for t in found.tasks])
        self.assertTrue(found.needs_shim)
        forward = found.layout.direction('forward')
        self.assertEqual(gen_config.TaskRef(0, 0), forward.gen)
        self.assertEqual(gen_config.TaskRef(0, 3), forward.lat)
        # lat tasks by core then task: lat-reverse is latency(0)
        self.assertEqual(1, forward.latency_index)
        self.assertEqual(0, found.layout.direction('reverse')
                         .latency_index)
        inline = next(t for t in found.tasks if t.name == 'gen-forward')
        first_hop = plan.generator.config.flow('forward').next_hop_mac
        self.assertIn('pkt inline=%s' % ' '.join(first_hop.split(':')),
                      ' '.join(inline.lines))

    def test_two_workers_one_per_port_without_shim(self):
        _plan, found = _setup(cpus=(0, 3, 4))
        self.assertFalse(found.needs_shim)
        self.assertEqual([(3, 'gen-forward'), (3, 'lat-reverse'),
                          (4, 'gen-reverse'), (4, 'lat-forward')],
                         [(t.core, t.name) for t in found.tasks])
        self.assertEqual(gen_config.TaskRef(4, 1),
                         found.layout.direction('forward').lat)

    def test_unidirectional_right_port_sends_learning_frames(self):
        plan, found = _setup('pvp-unidir')
        self.assertEqual(('forward',), found.layout.direction_names)
        learn = next(t for t in found.tasks if t.name == 'learn-right')
        mac = ' '.join(plan.generator.port('right').mac.split(':'))
        # source = destination = the port: OVS learns it and drops it
        self.assertIn('pkt inline=%s %s' % (mac, mac),
                      ' '.join(learn.lines))
        self.assertIn((0, 1), found.gen_tasks)

    def test_render_virtio_user_ports_and_tasks(self):
        plan, found = _setup()
        text = prox_setup.render(found, '/run/b/hugepages', 'epa-gen',
                                 'epa-gen')
        left = plan.generator.port('left')
        self.assertIn('--vdev=net_virtio_user0,path=/run/x/sockets/'
                      'vhu-g-l.sock,server=1,mac=%s,queue_size=1024'
                      % left.mac, text)
        self.assertIn('--huge-dir=/run/b/hugepages', text)
        self.assertIn('[core 1]\nmode=master', text)
        self.assertIn('[core 0]\ntask=0\nname=gen-forward\nmode=gen', text)
        self.assertIn('task=3\nname=lat-forward\nmode=lat\nrx port=right',
                      text)
        self.assertEqual(4, text.count('lat pos=%d' % gen_config.LAT_POS))

    def test_render_refuses_socket_paths_with_spaces(self):
        _plan, found = _setup()
        bad = dataclasses.replace(found, ports=(dataclasses.replace(
            found.ports[0], socket='/run/a b/x.sock'), found.ports[1]))
        self.assertRaises(ValueError, prox_setup.render, bad, '/h', 'p',
                          'n')

    def test_the_bucket_width_is_the_stacks(self):
        # chain.yaml's parameter default, as the stack resolved it
        _plan, found = _setup()
        default = shipped.parameter_default('generator_latency_bucket_shift',
                                            repo.TEMPLATES)
        self.assertEqual(default, found.layout.latency_bucket_shift)
        # a stack's own value reaches PROX and the controller
        _plan, found = _setup(generator_latency_bucket_shift=14)
        self.assertEqual(14, found.layout.latency_bucket_shift)
        lats = [t for t in found.tasks if 'mode=lat' in t.lines]
        self.assertEqual(2, len(lats))
        for task in lats:
            self.assertIn('latency bucket size=14', task.lines)

    def test_a_config_without_a_bucket_width_gets_proxs_own(self):
        plan, _found = _setup()
        generator = dataclasses.replace(plan.generator, config=(
            dataclasses.replace(plan.generator.config,
                                latency_bucket_shift=None)))
        found = prox_setup.setup(generator, generator.cpus)
        self.assertEqual(prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT,
                         found.layout.latency_bucket_shift)
        text = prox_setup.render(found, '/h', 'p', 'n')
        self.assertNotIn('latency bucket size', text)
        self.assertIn('128 buckets of 2^%d TSC cycles'
                      % prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT,
                      ' '.join(pg.section(generator)['caveats']))

    def test_section_states_the_cost_of_a_shared_cpu(self):
        plan, _found = _setup()
        section = pg.section(plan.generator)
        self.assertEqual('prox', section['kind'])
        self.assertEqual({'master': 1, 'gen_lat': [0]}, section['cpus'])
        text = ' '.join(section['caveats'])
        self.assertIn('accuracy limit', text)
        self.assertIn('four gen and lat tasks', text)
        # the stack's bucket width: 128 x 2^shift cycles at 2.6 GHz
        shift = plan.generator.config.latency_bucket_shift
        self.assertIn('128 buckets of 2^%d TSC cycles (about %d us at '
                      '2.6 GHz)' % (shift, float('%.2g' % (
                          128 * 2 ** shift / 2.6e3))), text)


class _Gen:

    def __init__(self, tsc, tx):
        self.last_tsc, self.tx, self.hz = tsc, tx, 1000


class _Snap:

    def __init__(self, tsc, tx):
        self.gen, self.running = _Gen(tsc, tx), True


class TestSteering(testtools.TestCase):

    def test_a_task_that_keeps_up_is_asked_the_rate(self):
        steer = pg.Steering(1000.0)
        snaps = [_Snap(100, 100), _Snap(200, 200)]
        self.assertAlmostEqual(1000.0, steer.next(snaps, 0.1))
        self.assertIsNone(steer.next(snaps, 0.1))    # nothing new

    def test_a_task_behind_is_asked_to_make_it_up(self):
        steer = pg.Steering(1000.0)
        asked = steer.next([_Snap(100, 100), _Snap(200, 150)], 0.1)
        # 50 frames behind: STEER_GAIN x 500 fps more
        self.assertAlmostEqual(1000.0 + pg.STEER_GAIN * 500.0, asked)

    def test_a_task_ahead_is_slowed_down_not_stopped(self):
        steer = pg.Steering(1000.0)
        asked = steer.next([_Snap(100, 100), _Snap(200, 400)], 0.1)
        self.assertEqual(1000.0 * pg.MIN_ASKED, asked)

    def test_catching_up_is_bounded(self):
        steer = pg.Steering(1000.0)
        asked = steer.next([_Snap(100, 100), _Snap(200, 100)], 0.01)
        self.assertEqual(1000.0 * pg.MAX_BOOST, asked)


class TestNetnsClient(testtools.TestCase):

    def test_starts_whole_cores_once(self):
        client = pg.NetnsProxClient('epa-gen', prox_client.DEFAULT_PORT)
        sent = []
        client.silent = lambda command, timeout=None: sent.append(command)
        client.start([0], 3)
        client.start([0], 1)
        client.stop()
        client.start([0], 0)
        self.assertEqual(['start 0', 'stop all', 'start 0'], sent)
        self.assertEqual('127.0.0.1:8474 in netns epa-gen', client.endpoint)


class TestFindBinary(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__('shutil').rmtree(self.directory))
        self.binary = os.path.join(self.directory, 'prox')
        with open(self.binary, 'w') as stream:
            stream.write('#!/bin/sh\n')
        os.chmod(self.binary, stat.S_IRWXU)

    def test_option_then_environment_then_nothing(self):
        self.assertEqual(self.binary, binary.find(
            self.binary, environ={})[0])
        self.assertEqual(self.binary, binary.find(
            environ={build.BINARY_VARIABLE: self.binary})[0])
        path, why = binary.find(environ={})
        self.assertIsNone(path)
        self.assertIn('--prox-source', why)

    def test_a_missing_binary_is_a_clear_error(self):
        error = self.assertRaises(binary.ProxBinaryError, binary.find,
                                  '/nonexistent/prox', environ={})
        self.assertIn('--prox-binary /nonexistent/prox', str(error))

    def test_given_is_checked_at_the_edge_and_a_binary_wins(self):
        self.assertEqual(binary.Given(), binary.given(environ={}))
        # a hostile source is refused by name before anything runs
        for source, environ, option in (
                ('--upload-pack=x', {}, '--prox-source'),
                (None, {build.SOURCE_VARIABLE: 'ext::sh'},
                 build.SOURCE_VARIABLE)):
            error = self.assertRaises(build.InputError, binary.given,
                                      None, source, environ)
            self.assertEqual(option, error.option)
        # ... but not looked at when a binary is given
        found = binary.given(None, '--upload-pack=x',
                             {build.BINARY_VARIABLE: self.binary})
        self.assertEqual((self.binary, None), (found.binary, found.source))
        self.assertEqual('%s %s' % (build.BINARY_VARIABLE, self.binary),
                         found.label)

    def test_a_source_is_built_when_obtained_naming_its_option(self):
        given = binary.given(None, None, {build.SOURCE_VARIABLE: 'x.tgz'})
        self.assertEqual(('x.tgz', build.SOURCE_VARIABLE),
                         (given.source, given.option))
        with mock.patch.object(build, 'build',
                               return_value='/cache/prox') as built:
            self.assertEqual(('/cache/prox', '%s x.tgz (built and cached)'
                              % build.SOURCE_VARIABLE),
                             binary.obtain(given, progress=None))
        self.assertEqual(build.SOURCE_VARIABLE, built.call_args[1]['option'])
        with mock.patch.object(build, 'build', side_effect=build.BuildError(
                'ninja failed')):
            error = self.assertRaises(binary.ProxBinaryError, binary.obtain,
                                      given)
        self.assertEqual('%s x.tgz: ninja failed' % build.SOURCE_VARIABLE,
                         str(error))

    def test_the_old_names_still_work_and_warn(self):
        for old, new in (('find_binary', binary.find),
                         ('ProxBinaryError', binary.ProxBinaryError),
                         ('BINARY_ENV', build.BINARY_VARIABLE),
                         ('SOURCE_ENV', build.SOURCE_VARIABLE),
                         ('setup', prox_setup.setup)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter('always')
                self.assertIs(new, getattr(pg, old))
            self.assertEqual([DeprecationWarning],
                             [w.category for w in caught], old)
        self.assertRaises(AttributeError, getattr, pg, 'nothing_such')

    def _manifest(self, text):
        with open(os.path.join(self.directory, 'manifest.json'), 'w') as f:
            f.write(text)

    def test_preload_only_for_binaries_without_the_build_edit(self):
        # no manifest: a binary from elsewhere, maybe without the edit
        self.assertFalse(binary.built_with_hash_names(self.binary))
        self._manifest('{"source_patches": ["%s"]}'
                       % 'unique gen flow table name per task')
        self.assertTrue(binary.built_with_hash_names(self.binary))
        # an older cache entry, built before the edit
        self._manifest('{"prox_version": "22.12"}')
        self.assertFalse(binary.built_with_hash_names(self.binary))
        self._manifest('not json')
        self.assertFalse(binary.built_with_hash_names(self.binary))


class TestPrivateTmp(testtools.TestCase):

    def test_wrap_keeps_only_paths_under_tmp(self):
        argv = private_tmp.wrap(['python', '-m', 'x'], '/run/b/v1/tmp',
                                ['/tmp/root/epa', '/opt/prox', '/tmp'])
        self.assertEqual(['unshare', '--mount', '--propagation', 'private',
                          '--'], argv[:5])
        marker = argv.index('--', 5)
        self.assertEqual(['/run/b/v1/tmp', '/tmp/root/epa'],
                         argv[marker - 2:marker])
        self.assertEqual(['python', '-m', 'x'], argv[marker + 1:])


class UnkillableProcess:
    """A process in D state: neither SIGTERM nor SIGKILL ends it."""

    def __init__(self):
        self.signals = []
        self.waits = []

    def poll(self):
        return None

    def terminate(self):
        self.signals.append('TERM')

    def kill(self):
        self.signals.append('KILL')

    def wait(self, timeout=None):
        self.waits.append(timeout)
        raise subprocess.TimeoutExpired('prox', timeout)


class TestClose(testtools.TestCase):

    def test_close_never_waits_without_a_bound(self):
        generator = pg.LocalProxGenerator(_setup()[1], 'epa-gen')
        process = UnkillableProcess()
        generator._process = process
        generator.close()
        self.assertEqual(['TERM', 'KILL'], process.signals)
        self.assertNotIn(None, process.waits)
        self.assertIsNone(generator._process)
