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

"""The generator role's PROX configuration and its layout."""

import os
import subprocess
import sys

import testtools

import epa_chain
from epa_chain.chain import node_config
from epa_chain.prox import client as prox_client
from epa_chain.prox import gen_config
from epa_chain.prox import traffic
from epa_chain.tests.unit import prox_replay

LEFT, RIGHT = 'fa:16:3e:00:00:01', 'fa:16:3e:00:00:02'
VNF1_LEFT, VNF_LAST_RIGHT = 'fa:16:3e:00:01:01', 'fa:16:3e:00:03:02'


def generator(bidirectional=True, role='generator',
              latency_bucket_shift=None):
    flows = [{'direction': 'forward', 'rx_port': 'right', 'tx_port': 'left',
              'next_hop_mac': VNF1_LEFT}]
    if bidirectional:
        flows.append({'direction': 'reverse', 'rx_port': 'left',
                      'tx_port': 'right', 'next_hop_mac': VNF_LAST_RIGHT})
    config = {
        'schema_version': 1, 'role': role, 'name': 'chain-generator',
        'engine': 'prox', 'forwarding_cores': 1, 'control_port': 8474,
        'ports': {'left': {'mac': LEFT, 'network': 'n0', 'vlan': 1001},
                  'right': {'mac': RIGHT, 'network': 'n3', 'vlan': 2001}},
        'flows': flows}
    if latency_bucket_shift is not None:
        config['latency_bucket_shift'] = latency_bucket_shift
    return node_config.from_dict(config)


PCI = {'left': '0000:00:04.0', 'right': '0000:00:05.0'}


def parse(text):
    """PROX's ini format, as ordered (section, [(key, value)]) pairs.

    `;` starts a comment; $name and ${name} from [variables] are replaced.
    """
    sections, variables = [], {}
    for raw in text.splitlines():
        line = raw.split(';', 1)[0].strip()
        for name in sorted(variables, key=len, reverse=True):
            line = line.replace('${%s}' % name[1:], variables[name])
            line = line.replace(name, variables[name])
        if not line:
            continue
        if line.startswith('['):
            sections.append((line.strip('[]'), []))
            continue
        key, value = (part.strip() for part in line.split('=', 1))
        if sections[-1][0] == 'variables':
            variables[key] = value
        sections[-1][1].append((key, value))
    return sections


def tasks(sections):
    """{(core, task): {key: value}} of every [core N] section."""
    found = {}
    for name, items in sections:
        if not name.startswith('core '):
            continue
        core, current = int(name.split()[1]), None
        for key, value in items:
            if key == 'task':
                current = found.setdefault((core, int(value)), {})
            elif current is not None:
                current[key] = value
            else:
                found.setdefault((core, 'core'), {})[key] = value
    return found


class TestRender(testtools.TestCase):

    def test_bidirectional_layout_and_tasks(self):
        text = gen_config.render(generator(), PCI, [2, 3, 4, 5])
        found = tasks(parse(text))
        self.assertEqual('master', found[(2, 'core')]['mode'])
        self.assertEqual(('gen', 'left'), (found[(3, 0)]['mode'],
                                           found[(3, 0)]['tx port']))
        self.assertEqual(('gen', 'right'), (found[(4, 0)]['mode'],
                                            found[(4, 0)]['tx port']))
        self.assertEqual(('lat', 'right'), (found[(5, 0)]['mode'],
                                            found[(5, 0)]['rx port']))
        self.assertEqual(('lat', 'left'), (found[(5, 1)]['mode'],
                                           found[(5, 1)]['rx port']))
        layout = gen_config.layout_from_config(text)
        self.assertEqual(layout, gen_config.layout_for(generator(), PCI,
                                                       [2, 3, 4, 5]))
        forward = layout.direction('forward')
        self.assertEqual((3, 0, 5, 0), (forward.gen.core, forward.gen.task,
                                        forward.lat.core, forward.lat.task))
        self.assertEqual((0, 1), (forward.tx_port, forward.rx_port))
        reverse = layout.direction('reverse')
        self.assertEqual((4, 5, 1), (reverse.gen.core, reverse.lat.core,
                                     reverse.lat.task))
        self.assertEqual(1, reverse.latency_index)

    def test_unidirectional_still_receives_on_both_ports(self):
        config = generator(bidirectional=False)
        self.assertEqual(3, config.cores_wanted)
        text = gen_config.render(config, PCI, [0, 1, 2])
        found = tasks(parse(text))
        self.assertEqual({(0, 'core'), (1, 0), (2, 0), (2, 1)}, set(found))
        self.assertEqual({'right', 'left'},
                         {found[(2, 0)]['rx port'], found[(2, 1)]['rx port']})
        layout = gen_config.layout_from_config(text)
        self.assertEqual(('forward',), layout.direction_names)
        self.assertRaises(ValueError, layout.direction, 'reverse')

    def test_frame_template(self):
        text = gen_config.render(generator(), PCI, [0, 1, 2, 3])
        found = tasks(parse(text))
        for (core, task), direction, dst, src, tx in (
                ((1, 0), 'forward', VNF1_LEFT, LEFT, 'left'),
                ((2, 0), 'reverse', VNF_LAST_RIGHT, RIGHT, 'right')):
            frame = bytes.fromhex(found[(core, task)]['pkt inline'])
            self.assertEqual(dst, ':'.join('%02x' % b for b in frame[0:6]))
            self.assertEqual(src, ':'.join('%02x' % b for b in frame[6:12]))
            self.assertEqual(b'\x08\x00', frame[12:14])
            size = int(found[(core, task)]['pkt size'])
            self.assertEqual(60, size)  # a 64-byte frame without FCS
            # IP total length and UDP length match the 60-byte template
            self.assertEqual(size - 14, int.from_bytes(frame[16:18], 'big'))
            self.assertEqual(size - 34, int.from_bytes(frame[38:40], 'big'))
            self.assertEqual(17, frame[23])
            source, destination = gen_config.ADDRESSES[direction]
            self.assertEqual(source, '.'.join(map(str, frame[26:30])))
            self.assertEqual(destination, '.'.join(map(str, frame[30:34])))
            self.assertEqual(traffic.UDP_SOURCE_PORT,
                             int.from_bytes(frame[34:36], 'big'))
            self.assertEqual(traffic.UDP_DESTINATION_PORT,
                             int.from_bytes(frame[36:38], 'big'))
            self.assertEqual(42, len(frame))  # PROX pads to pkt size

    def test_positions_and_keys_of_the_recorded_capture(self):
        # The capture's gen.cfg ran on a real PROX: keep its positions and
        # signature, and use only its keys plus the documented additions.
        with open(os.path.join(prox_replay.FIXTURES, 'gen.cfg')) as stream:
            recorded = tasks(parse(stream.read()))
        rendered = tasks(parse(gen_config.render(
            generator(latency_bucket_shift=12), PCI, [0, 1, 2, 3])))
        marks = ('lat pos', 'accuracy pos', 'packet id pos', 'signature',
                 'signature pos')
        for role, recorded_task in (('gen', (1, 0)), ('lat', (1, 1))):
            ours = [t for t in rendered.values() if t.get('mode') == role]
            self.assertTrue(ours)
            for task in ours:
                for key in marks:
                    self.assertEqual(recorded[recorded_task][key], task[key])
                extra = set(task) - set(recorded[recorded_task])
                self.assertLessEqual(extra, {'latency bucket size'})
        lat = [t for t in rendered.values() if t.get('mode') == 'lat']
        for task in lat:
            # PROX's default 5000 ns drops nearly every sample in a VM
            self.assertGreater(int(task['accuracy limit nsec']), 5000)
            self.assertEqual('12', task['latency bucket size'])

    def test_no_bucket_line_without_the_nodes_shift(self):
        # The stack owns the shift (chain.yaml); a node config without one
        # gets PROX's built-in, and the layout says so.
        text = gen_config.render(generator(), PCI, [0, 1, 2, 3])
        self.assertNotIn('latency bucket size', text)
        self.assertEqual(prox_client.PROX_BUILTIN_LATENCY_BUCKET_SHIFT,
                         gen_config.layout_from_config(
                             text).latency_bucket_shift)
        self.assertEqual(gen_config.layout_from_config(text),
                         gen_config.layout_for(generator(), PCI,
                                               [0, 1, 2, 3]))
        # The node's shift, unless the caller gives one.
        carried = generator(latency_bucket_shift=17)
        text = gen_config.render(carried, PCI, [0, 1, 2, 3])
        self.assertEqual(2, text.count('latency bucket size=17\n'))
        self.assertEqual(gen_config.layout_from_config(text),
                         gen_config.layout_for(carried, PCI, [0, 1, 2, 3]))
        self.assertIn('latency bucket size=13', gen_config.render(
            carried, PCI, [0, 1, 2, 3], latency_bucket_shift=13))

    def test_pci_ports_are_numbered_in_bus_order(self):
        swapped = {'left': '0000:00:06.0', 'right': '0000:00:05.0'}
        text = gen_config.render(generator(), swapped, [0, 1, 2, 3])
        sections = dict(parse(text))
        self.assertEqual([('name', 'right'), ('mac', 'hardware')],
                         sections['port 0'])
        self.assertEqual([('name', 'left'), ('mac', 'hardware')],
                         sections['port 1'])
        eal = dict(sections['eal options'])['eal']
        self.assertIn('-a 0000:00:05.0 -a 0000:00:06.0', eal)
        layout = gen_config.layout_from_config(text)
        self.assertEqual((1, 0), (layout.direction('forward').tx_port,
                                  layout.direction('forward').rx_port))

    def test_vdevs_follow_command_line_order(self):
        vdevs = {'left': 'net_af_packet0,iface=g0',
                 'right': 'net_af_packet1,iface=g1'}
        text = gen_config.render(generator(), vdevs, [0, 1, 2, 3],
                                 file_prefix='gen1', mtu=9000)
        sections = dict(parse(text))
        options = dict(sections['eal options'])
        self.assertEqual('yes', options['no-pci'])
        self.assertEqual('--file-prefix=gen1 --vdev=net_af_packet0,iface=g0 '
                         '--vdev=net_af_packet1,iface=g1', options['eal'])
        self.assertEqual('left', dict(sections['port 0'])['name'])
        self.assertEqual('9000', dict(sections['port 0'])['mtu size'])
        self.assertEqual(9018, gen_config.layout_from_config(
            text).max_frame_bytes)
        # Live PROX 22.12 with af_packet: without lsc=no it aborts in
        # rte_eth_dev_configure() ("Driver net_af_packet does not support
        # lsc"); PCI ports keep PROX's default (see the PCI test).
        for port in ('port 0', 'port 1'):
            self.assertEqual('no', dict(sections[port])['lsc'])
        mixed = gen_config.render(generator(), {
            'left': '0000:00:04.0', 'right': 'net_af_packet0,iface=g1'},
            [0, 1, 2, 3])
        ports = {dict(items)['name']: dict(items)
                 for name, items in parse(mixed) if name.startswith('port')}
        self.assertNotIn('lsc', ports['left'])
        self.assertEqual('no', ports['right']['lsc'])

    def test_memory_without_huge_pages(self):
        vdevs = {'left': 'net_af_packet0,iface=g0',
                 'right': 'net_af_packet1,iface=g1'}

        def eal(**options):
            text = gen_config.render(generator(), vdevs, [0, 1, 2, 3],
                                     **options)
            return dict(dict(parse(text))['eal options'])
        default = eal()
        self.assertNotIn('no-huge', default)
        self.assertNotIn('-m', default)
        self.assertEqual(('yes', '256'), (eal(huge_pages=False)['no-huge'],
                                          eal(huge_pages=False)['-m']))
        self.assertEqual('512', eal(huge_pages=False, memory_mb=512)['-m'])
        self.assertEqual('1024', eal(memory_mb=1024)['-m'])
        self.assertNotIn('no-huge', eal(memory_mb=1024))

    def test_lat_tasks_on_the_last_gen_core(self):
        # Two CPUs (the live check): master and one core running the gen
        # task and both lat tasks, the recorded capture's layout.
        vdevs = {'left': 'net_af_packet0,iface=g0',
                 'right': 'net_af_packet1,iface=g1'}
        uni = generator(bidirectional=False)
        text = gen_config.render(uni, vdevs, [0, 1], shared_lat_core=True,
                                 latency_bucket_shift=11)
        found = tasks(parse(text))
        self.assertEqual({(0, 'core'), (1, 0), (1, 1), (1, 2)}, set(found))
        self.assertEqual(['gen', 'lat', 'lat'],
                         [found[(1, t)]['mode'] for t in range(3)])
        self.assertEqual(['right', 'left'],
                         [found[(1, t)]['rx port'] for t in (1, 2)])
        self.assertEqual(gen_config.GeneratorLayout.recorded_capture(),
                         gen_config.layout_from_config(text))
        # one [core N] section per core
        names = [name for name, _items in parse(text)]
        self.assertEqual(len(names), len(set(names)))
        bidirectional = gen_config.render(generator(), vdevs, [4, 5, 6],
                                          shared_lat_core=True)
        found = tasks(parse(bidirectional))
        self.assertEqual({(4, 'core'), (5, 0), (6, 0), (6, 1), (6, 2)},
                         set(found))
        layout = gen_config.layout_from_config(bidirectional)
        self.assertEqual(layout, gen_config.layout_for(
            generator(), vdevs, [4, 5, 6], shared_lat_core=True))
        forward, reverse = (layout.direction('forward'),
                            layout.direction('reverse'))
        self.assertEqual(((5, 0), (6, 1), 0),
                         ((forward.gen.core, forward.gen.task),
                          (forward.lat.core, forward.lat.task),
                          forward.latency_index))
        self.assertEqual(((6, 0), (6, 2), 1),
                         ((reverse.gen.core, reverse.gen.task),
                          (reverse.lat.core, reverse.lat.task),
                          reverse.latency_index))
        self.assertEqual('lat', found[(6, 2)]['mode'])
        self.assertEqual('left', found[(6, 2)]['rx port'])
        error = self.assertRaises(gen_config.GenConfigError,
                                  gen_config.render, generator(), vdevs,
                                  [0, 1], shared_lat_core=True)
        self.assertIn('3 CPUs needed', str(error))

    def test_compact_runs_every_task_on_one_worker(self):
        text = gen_config.render(generator(), PCI, [3, 7], compact=True)
        found = tasks(parse(text))
        self.assertEqual({(3, 'core'), (7, 0), (7, 1), (7, 2), (7, 3)},
                         set(found))
        self.assertEqual(
            [('gen', 'left'), ('gen', 'right'), ('lat', 'right'),
             ('lat', 'left')],
            [(found[(7, t)]['mode'], found[(7, t)].get('tx port') or
              found[(7, t)]['rx port']) for t in range(4)])
        names = [name for name, _items in parse(text)]
        self.assertEqual(len(names), len(set(names)))
        layout = gen_config.layout_from_config(text)
        self.assertEqual(layout, gen_config.layout_for(
            generator(), PCI, [3, 7], compact=True))
        self.assertEqual(3, layout.master_core)
        forward, reverse = (layout.direction('forward'),
                            layout.direction('reverse'))
        self.assertEqual(((7, 0), (7, 2), 0, 0, 1),
                         ((forward.gen.core, forward.gen.task),
                          (forward.lat.core, forward.lat.task),
                          forward.latency_index, forward.tx_port,
                          forward.rx_port))
        self.assertEqual(((7, 1), (7, 3), 1, 1, 0),
                         ((reverse.gen.core, reverse.gen.task),
                          (reverse.lat.core, reverse.lat.task),
                          reverse.latency_index, reverse.tx_port,
                          reverse.rx_port))
        # the text form carries it to the controller unchanged
        self.assertEqual(layout, gen_config.GeneratorLayout.from_text(
            layout.to_text()))

    def test_compact_unidirectional(self):
        text = gen_config.render(generator(bidirectional=False), PCI,
                                 [0, 1], compact=True)
        found = tasks(parse(text))
        self.assertEqual(['gen', 'lat', 'lat'],
                         [found[(1, t)]['mode'] for t in range(3)])
        layout = gen_config.layout_from_config(text)
        self.assertEqual(((1, 0), (1, 1)),
                         ((layout.direction('forward').gen.core,
                           layout.direction('forward').gen.task),
                          (layout.direction('forward').lat.core,
                           layout.direction('forward').lat.task)))

    def test_compact_needs_two_cpus(self):
        error = self.assertRaises(gen_config.GenConfigError,
                                  gen_config.render, generator(), PCI, [0],
                                  compact=True)
        self.assertEqual('cores', error.field)
        self.assertIn('2 CPUs needed (master and one worker)', str(error))
        error = self.assertRaises(gen_config.GenConfigError,
                                  gen_config.render, generator(), PCI,
                                  [0, 1], shared_lat_core=True)
        self.assertIn('compact=True', str(error))

    def test_choose_layout(self):
        choose = gen_config.choose_layout
        self.assertEqual(
            ['standard', 'shared-lat-core', 'compact', 'compact'],
            [choose(2, n) for n in (4, 3, 2, 2)])
        self.assertEqual(['standard', 'shared-lat-core'],
                         [choose(1, n) for n in (3, 2)])
        self.assertEqual('standard', choose(2, 16))
        error = self.assertRaises(gen_config.GenConfigError, choose, 2, 1)
        self.assertIn('at least 2 CPUs', str(error))
        self.assertEqual({'shared_lat_core': False, 'compact': True},
                         gen_config.layout_options('compact'))
        self.assertEqual({'shared_lat_core': False, 'compact': False},
                         gen_config.layout_options('standard'))
        self.assertRaises(gen_config.GenConfigError,
                          gen_config.layout_options, 'tiny')
        for name in gen_config.LAYOUTS:
            options = gen_config.layout_options(name)
            self.assertEqual(
                gen_config.cores_needed(2, **options),
                {'standard': 4, 'shared-lat-core': 3, 'compact': 2}[name])

    def test_describe_layout(self):
        layout = gen_config.layout_for(generator(), PCI, [0, 1],
                                       compact=True)
        self.assertEqual(
            'generator layout compact: gen and lat tasks share CPU 1; '
            'rates are limited and latency includes the tasks\' turns',
            gen_config.describe_layout('compact', layout))
        layout = gen_config.layout_for(generator(), PCI, [0, 1, 2, 3])
        self.assertEqual('generator layout standard: gen tasks on CPU 1,2, '
                         'lat tasks on CPU 3',
                         gen_config.describe_layout('standard', layout))

    def test_bad_arguments_name_the_field(self):
        def fails(field, *args, **kwargs):
            error = self.assertRaises(gen_config.GenConfigError,
                                      gen_config.render, *args, **kwargs)
            self.assertEqual(field, error.field)
            return error
        fails('node_config.role', generator(role='vnf'), PCI, [0, 1, 2, 3])
        error = fails('cores', generator(), PCI, [0, 1, 2])
        self.assertIn('4 CPUs needed', str(error))
        fails('cores', generator(), PCI, [0, 1, 1, 2])
        fails('cores', generator(), PCI, '0-3')
        fails('port_devargs[left]', generator(),
              {'left': 'eth1', 'right': '0000:00:05.0'}, [0, 1, 2, 3])
        fails('port_devargs[right]', generator(),
              {'left': '0000:00:04.0', 'right': 'a b'}, [0, 1, 2, 3])
        fails('port_devargs', generator(), {'left': '0000:00:04.0'},
              [0, 1, 2, 3])
        fails('port_devargs', generator(),
              {'left': '00:04.0', 'right': '0000:00:04.0'}, [0, 1, 2, 3])
        fails('latency_bucket_shift', generator(), PCI, [0, 1, 2, 3],
              latency_bucket_shift=10)
        fails('mtu', generator(), PCI, [0, 1, 2, 3], mtu=20000)
        fails('memory_mb', generator(), PCI, [0, 1, 2, 3], memory_mb=8)
        fails('huge_pages', generator(), PCI, [0, 1, 2, 3], huge_pages='no')
        fails('shared_lat_core', generator(), PCI, [0, 1, 2],
              shared_lat_core=1)
        fails('compact', generator(), PCI, [0, 1], compact='yes')
        fails('node_config', {'role': 'generator'}, PCI, [0, 1, 2, 3])


class TestImageImports(testtools.TestCase):

    def test_image_side_modules_need_only_stdlib_and_yaml(self):
        # The images get epa_chain/prox/ but not epa_chain/measurement/.
        code = ('import sys\n'
                'import epa_chain.prox, epa_chain.prox.gen_config\n'
                'import epa_chain.prox.client, epa_chain.prox.traffic\n'
                'print(" ".join(sorted(m for m in sys.modules if '
                'm.startswith(("epa_chain.measurement", "heat", "nova", '
                '"oslo", "epa_chain.prox.generator")))))\n')
        root = os.path.dirname(os.path.dirname(epa_chain.__file__))
        result = subprocess.run([sys.executable, '-c', code], cwd=root,
                                capture_output=True, text=True,
                                env={'PYTHONPATH': root, 'PATH': ''})
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('', result.stdout.strip())


class TestLayout(testtools.TestCase):

    def test_round_trip(self):
        layout = gen_config.layout_for(generator(), PCI, [0, 1, 2, 3])
        self.assertEqual(layout, gen_config.GeneratorLayout.from_dict(
            layout.to_dict()))
        self.assertRaises(ValueError, gen_config.GeneratorLayout.from_dict,
                          {'directions': [{'direction': 'forward'}]})

    def test_recorded_capture(self):
        layout = gen_config.GeneratorLayout.recorded_capture()
        forward = layout.direction('forward')
        self.assertEqual((1, 0), (forward.gen.core, forward.gen.task))
        self.assertEqual((1, 1), (forward.lat.core, forward.lat.task))
        self.assertEqual(11, layout.latency_bucket_shift)

    def test_text_form_travels_in_a_prox_variable(self):
        layout = gen_config.layout_for(generator(), PCI, [0, 1, 2, 3],
                                       latency_bucket_shift=13)
        text = layout.to_text()
        self.assertEqual(layout, gen_config.GeneratorLayout.from_text(text))
        # PROX: a variable value is one word of at most 512 characters,
        # ';' starts a comment and '$' a variable; names are < 24 long
        self.assertLess(len(text), 512)
        self.assertFalse(set(text) & set(' \t;$='))
        self.assertLess(len(gen_config.LAYOUT_VARIABLE), 24)
        rendered = gen_config.render(generator(), PCI, [0, 1, 2, 3],
                                     latency_bucket_shift=13)
        variables = dict(dict(parse(rendered))['variables'])
        self.assertEqual(text, variables[gen_config.LAYOUT_VARIABLE])
        for bad in ('', 'epa-chain-layout-2,m0', text.replace(':1:0', ':x'),
                    text.replace(',b13', '')):
            self.assertRaises(ValueError,
                              gen_config.GeneratorLayout.from_text, bad)

    def test_not_a_rendered_config(self):
        with open(os.path.join(prox_replay.FIXTURES, 'gen.cfg')) as stream:
            self.assertRaises(ValueError, gen_config.layout_from_config,
                              stream.read())
