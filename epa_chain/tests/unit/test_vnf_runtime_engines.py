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


"""The engine configurations the runtime renders, against golden files.

For every preset's VNFs the PROX l2fwd config and the testpmd command line
must be exactly the reviewed golden files; further tests pin down what the
goldens mean (seed 000's next hops, MAC matching whatever the PCI order,
core spreading) so that a regenerated golden cannot silently go wrong.
"""

import dataclasses
import os

import testtools

from epa_chain.chain import node_config
from epa_chain.prox import client as prox_client
from epa_chain.prox import gen_config
from epa_chain.tests.unit import vnf_runtime_fakes as fakes
from epa_chain.tests.unit import vnf_runtime_fixtures as fixtures
from epa_chain.vnf_runtime import config_drive
from epa_chain.vnf_runtime import cpus
from epa_chain.vnf_runtime import devices
from epa_chain.vnf_runtime import engine
from epa_chain.vnf_runtime import errors
from epa_chain.vnf_runtime import prox_l2fwd
from epa_chain.vnf_runtime import sysfs
from epa_chain.vnf_runtime import testpmd


def vnf_drives():
    for preset in fixtures.PRESETS:
        for node, node_dir in fixtures.node_dirs(preset).items():
            if node.startswith('vnf'):
                yield preset, node, node_dir


def read_golden(node_dir, name):
    with open(os.path.join(node_dir, name)) as stream:
        return stream.read()


def sections(cfg):
    """PROX .cfg -> [(section, [key=value lines])] (comments dropped)."""
    found = []
    for line in cfg.splitlines():
        line = line.split(';', 1)[0].strip()
        if line.startswith('['):
            found.append((line.strip('[]'), []))
        elif line:
            found[-1][1].append(line)
    return found


def tasks(cfg):
    """[(core, {key: value})] for every task of a PROX .cfg."""
    found = []
    for section, lines in sections(cfg):
        if not section.startswith('core '):
            continue
        core = int(section.split()[1])
        for line in lines:
            key, value = line.split('=', 1)
            if key == 'task':
                found.append((core, {}))
            elif found and found[-1][0] == core and key != 'name':
                found[-1][1][key] = value
    return found


class Guest(testtools.TestCase):
    """A fake guest for a fixture drive, with the ports matched."""

    def guest(self, drive, cpus_count=2, isolated='1', order=None,
              first_slot=3):
        root = self.useFixture(fakes.TempDir()).path
        fake = fakes.FakeGuest(root, cpus=cpus_count, isolated=isolated)
        fake.add_nics_from(drive, first_slot=first_slot, order=order)
        read = config_drive.read(drive)
        node = read.node_config()
        guest_sysfs = sysfs.Sysfs(root)
        ports = devices.match(node, read.links(), devices.scan(guest_sysfs))
        layout = cpus.layout(guest_sysfs, engine.workers_needed(node),
                             workers_wanted=engine.workers_wanted(node))
        return node, ports, layout


class TestGoldens(testtools.TestCase):

    def test_every_vnf_of_every_preset_matches_its_goldens(self):
        seen = 0
        for preset, node, node_dir in vnf_drives():
            rendered = fixtures.render_engines(fixtures.drive_dir(node_dir))
            for name in ('prox.cfg', 'testpmd.argv'):
                self.assertEqual(read_golden(node_dir, name), rendered[name],
                                 '%s %s %s' % (preset, node, name))
            seen += 1
        # PVP 1 VNF, PVVP 2, vE-CPE 3; each uni- and bidirectional.
        self.assertEqual(2 * (1 + 2 + 3), seen)

    def test_vecpe_next_hops_are_seed_000_figure_8_11(self):
        expected = {
            'vnf1': ('00:00:00:00:00:20', '00:11:00:00:00:10'),
            'vnf2': ('00:00:00:00:00:30', '00:00:00:00:00:11'),
            'vnf3': ('00:22:00:00:00:10', '00:00:00:00:00:21'),
        }
        nodes = fixtures.node_dirs('vecpe-bidir')
        for node, (forward, reverse) in expected.items():
            cfg = read_golden(nodes[node], 'prox.cfg')
            l2fwd = [t for _, t in tasks(cfg) if t['mode'] == 'l2fwd']
            self.assertEqual([
                {'mode': 'l2fwd', 'rx port': 'left', 'tx port': 'right',
                 'dst mac': forward},
                {'mode': 'l2fwd', 'rx port': 'right', 'tx port': 'left',
                 'dst mac': reverse}], l2fwd, node)
            argv = read_golden(nodes[node], 'testpmd.argv').split('\n')
            # left is DPDK port 0 (lower PCI address), right port 1.
            self.assertIn('--eth-peer=0,%s' % reverse, argv)
            self.assertIn('--eth-peer=1,%s' % forward, argv)

    def test_unidirectional_vnf_is_seed_8_2_5_plus_learning(self):
        cfg = read_golden(fixtures.node_dirs('vecpe-unidir')['vnf1'],
                          'prox.cfg')
        found = tasks(cfg)
        self.assertEqual([1, 1, 1], [core for core, _ in found])
        self.assertEqual({'mode': 'l2fwd', 'rx port': 'left',
                          'tx port': 'right',
                          'dst mac': '00:00:00:00:00:20'}, found[0][1])
        learn = found[1][1]
        self.assertEqual(('gen', 'left', '84'),
                         (learn['mode'], learn['tx port'], learn['bps']))
        frame = bytes.fromhex(learn['pkt inline'].replace(' ', ''))
        self.assertEqual(60, len(frame))
        mac = bytes.fromhex('000000000010')
        self.assertEqual(mac + mac + b'\x88\xb5', frame[:14])

    def test_every_port_has_a_receiving_task(self):
        # PROX gives a port nobody receives on a dummy RX mempool that
        # virtio refuses, and aborts at start (seen in the image test).
        for preset, node, node_dir in vnf_drives():
            cfg = read_golden(node_dir, 'prox.cfg')
            receiving = {t['rx port'] for _, t in tasks(cfg)
                         if 'rx port' in t}
            self.assertEqual({'left', 'right'}, receiving,
                             '%s %s' % (preset, node))

    def test_bidirectional_vnfs_add_no_transmit_task(self):
        # A third task transmitting on a port would need a second queue.
        for preset in ('pvp-bidir', 'pvvp-bidir', 'vecpe-bidir'):
            for node, node_dir in fixtures.node_dirs(preset).items():
                if node.startswith('vnf'):
                    cfg = read_golden(node_dir, 'prox.cfg')
                    modes = [t['mode'] for _, t in tasks(cfg)]
                    self.assertEqual(['l2fwd', 'l2fwd'], modes, preset)


class TestMatching(Guest):

    def drive(self, preset='pvp-bidir', node='vnf1'):
        return fixtures.drive_dir(fixtures.node_dirs(preset)[node])

    def test_ports_follow_macs_not_pci_order(self):
        # right's NIC on the lowest PCI slot, management last.
        node, ports, layout = self.guest(self.drive(), order=[2, 1, 0])
        self.assertEqual(('0000:00:03.0', 0), (ports['right'].pci,
                                               ports['right'].dpdk_port))
        self.assertEqual(('0000:00:04.0', 1), (ports['left'].pci,
                                               ports['left'].dpdk_port))
        self.assertEqual('eth2', ports['right'].nic.interface)
        cfg = prox_l2fwd.render(node, ports, layout)
        by_section = dict(sections(cfg))
        self.assertEqual(['name=right', 'mac=hardware', 'promiscuous=no'],
                         by_section['port 0'])
        self.assertIn('eal=-a 0000:00:03.0 -a 0000:00:04.0',
                      by_section['eal options'])
        argv = testpmd.argv('dpdk-testpmd', node, ports, layout)
        # The peer of port 0 (right) is the forward next hop.
        self.assertIn('--eth-peer=0,%s' % node.flow('forward').next_hop_mac,
                      argv)
        self.assertIn('--eth-peer=1,%s' % node.flow('reverse').next_hop_mac,
                      argv)
        self.assertEqual(['-a', '0000:00:03.0', '-a', '0000:00:04.0'],
                         argv[argv.index('-a'):argv.index('--')])

    def test_unidirectional_testpmd_peers_its_receiving_port_to_itself(self):
        node, ports, layout = self.guest(self.drive('pvp-unidir'))
        peers = testpmd.peers(node, ports)
        self.assertEqual(ports['left'].mac, peers[ports['left'].dpdk_port])
        self.assertEqual(node.flow('forward').next_hop_mac,
                         peers[ports['right'].dpdk_port])

    def test_directions_spread_over_forwarding_cores(self):
        drive = self.drive('pvvp-bidir', 'vnf2')
        node, ports, _ = self.guest(drive)
        layout = cpus.CoreLayout(master=0, workers=(1, 2, 3), isolated=True)
        found = tasks(prox_l2fwd.render(node, ports, layout))
        self.assertEqual([1, 2], [core for core, _ in found])
        argv = testpmd.argv('dpdk-testpmd', node, ports, layout)
        # Two streams (one per direction): a third core would idle.
        self.assertEqual(['-l', '0,1,2'], argv[1:3])
        self.assertIn('--nb-cores=2', argv)

    def test_learning_task_takes_an_idle_core_when_there_is_one(self):
        node, ports, _ = self.guest(self.drive('pvp-unidir'))
        layout = cpus.CoreLayout(master=0, workers=(1, 2), isolated=True)
        found = tasks(prox_l2fwd.render(node, ports, layout))
        # The drain task of the send-only port rides along: it only polls.
        self.assertEqual([(1, 'l2fwd'), (2, 'gen'), (2, 'nop')],
                         [(core, t['mode']) for core, t in found])

    def test_generator_gets_gen_config_with_pci_ports_and_cores(self):
        drive = self.drive('pvvp-unidir', 'generator')
        node, ports, layout = self.guest(drive, cpus_count=4,
                                         isolated='1-3', order=[0, 2, 1])
        self.assertEqual((0, 1, 2), (layout.master,) + layout.workers)
        plan = engine.plan(node, ports, layout, 'prox')
        self.assertIn('-e', plan.argv)   # tasks wait for the controller
        self.assertIn('-u', plan.argv)   # control through the UNIX socket
        self.assertNotIn('-t', plan.argv)
        # Right's NIC is on the lower slot: it is DPDK port 0.
        self.assertIn('eal=--file-prefix=epa-chain-gen -a 0000:00:04.0 '
                      '-a 0000:00:05.0', plan.config_text)
        self.assertIn('[port 0]\nname=right', plan.config_text)

    def test_generator_layout_follows_the_guest_cpus(self):
        # Nova gives a huge-page guest at most the host NUMA cell's CPUs:
        # the generator takes the best layout that fits.
        drive = self.drive('pvp-bidir', 'generator')
        expected = {
            4: ('standard', (0, 1, 2, 3), 'generator layout standard: gen '
                'tasks on CPU 1,2, lat tasks on CPU 3'),
            8: ('standard', (0, 1, 2, 3), None),
            3: ('shared-lat-core', (0, 1, 2), 'generator layout '
                'shared-lat-core: the lat tasks share CPU 2 with a gen '
                'task'),
            2: ('compact', (0, 1), 'generator layout compact: gen and lat '
                'tasks share CPU 1; rates are limited'),
        }
        for count, (name, cores, note) in sorted(expected.items()):
            node, ports, layout = self.guest(drive, cpus_count=count,
                                             isolated='')
            self.assertEqual(cores, layout.all, count)
            plan = engine.plan(node, ports, layout, 'prox')
            self.assertEqual(name, plan.layout, count)
            self.assertTrue(plan.note.startswith(note or 'generator '
                                                 'layout standard'),
                            plan.note)
            found = gen_config.layout_from_config(plan.config_text)
            self.assertEqual(cores[0], found.master_core)
            gens = [d.gen for d in found.directions]
            self.assertEqual(len(gens), len(set(gens)))
            if name == 'compact':
                self.assertEqual({1}, {ref.core for d in found.directions
                                       for ref in (d.gen, d.lat)})

    def test_generator_latency_buckets_from_the_stack(self):
        drive = self.drive('pvp-bidir', 'generator')
        node, ports, layout = self.guest(drive, cpus_count=4, isolated='')
        # The stack's value (the fixtures pin it).
        self.assertEqual(fixtures.PINNED['generator_latency_bucket_shift'],
                         node.latency_bucket_shift)
        self.assertIn('latency bucket size=%d' % node.latency_bucket_shift,
                      engine.plan(node, ports, layout, 'prox').config_text)
        wider = dataclasses.replace(node, latency_bucket_shift=17)
        plan = engine.plan(wider, ports, layout, 'prox')
        self.assertIn('latency bucket size=17', plan.config_text)
        self.assertEqual(17, gen_config.layout_from_config(
            plan.config_text).latency_bucket_shift)
        # None: no line, PROX's built-in, which the layout records.
        unset = dataclasses.replace(node, latency_bucket_shift=None)
        text = engine.plan(unset, ports, layout, 'prox').config_text
        self.assertNotIn('latency bucket size', text)
        self.assertEqual(prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT,
                         gen_config.layout_from_config(
                             text).latency_bucket_shift)

    def test_generator_needs_two_cpus(self):
        drive = self.drive('pvp-bidir', 'generator')
        error = self.assertRaises(errors.SystemSetupError, self.guest,
                                  drive, cpus_count=1, isolated='')
        self.assertIn('the engine needs 2 CPUs', str(error))

    def test_too_few_cpus_for_the_forwarding_cores(self):
        node, ports, _ = self.guest(self.drive('pvp-bidir'))
        data = fixtures.with_engine(
            config_drive.read(self.drive('pvp-bidir')).user_data, 'prox')
        data['epa_chain']['forwarding_cores'] = 2
        bigger = node_config.from_dict(data['epa_chain'])
        root = self.useFixture(fakes.TempDir()).path
        fakes.FakeGuest(root, cpus=2)
        error = self.assertRaises(
            errors.SystemSetupError, cpus.layout, sysfs.Sysfs(root),
            engine.workers_needed(bigger))
        self.assertIn('epa_chain.forwarding_cores: the engine needs 3 CPUs',
                      str(error))
