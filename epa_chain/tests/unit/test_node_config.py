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

"""The node config contract between the templates and the VNF runtime."""

import json

import testtools

from epa_chain.chain import node_config

GOOD = {
    'schema_version': 1, 'role': 'vnf', 'name': 'chain-vnf1',
    'engine': 'prox', 'forwarding_cores': 1,
    'ports': {'left': {'mac': 'fa:16:3e:00:00:01', 'network': 'a',
                       'vlan': 1001},
              'right': {'mac': 'fa:16:3e:00:00:02', 'network': 'b',
                        'vlan': 2001}},
    'flows': [{'direction': 'forward', 'rx_port': 'left',
               'tx_port': 'right', 'next_hop_mac': 'fa:16:3e:00:00:03'}],
}


def user_data(config):
    return '#cloud-config\nepa_chain: %s\n' % json.dumps(config)


def changed(path, value):
    config = json.loads(json.dumps(GOOD))
    target = config
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return config


class TestParse(testtools.TestCase):

    def test_good(self):
        config = node_config.parse_user_data(user_data(GOOD))
        self.assertEqual('vnf', config.role)
        self.assertEqual('fa:16:3e:00:00:02', config.ports['right'].mac)
        self.assertEqual('fa:16:3e:00:00:03',
                         config.flow('forward').next_hop_mac)
        self.assertIsNone(config.flow('reverse'))
        self.assertEqual(2, config.cores_needed)

    def test_generator_needs_master_gen_per_direction_and_latency(self):
        config = changed(['role'], 'generator')
        config['control_port'] = 8474
        config['flows'].append({'direction': 'reverse', 'rx_port': 'right',
                                'tx_port': 'left',
                                'next_hop_mac': 'fa:16:3e:00:00:04'})
        parsed = node_config.from_dict(config)
        # compact layout: master and one worker; standard: 4 CPUs
        self.assertEqual(2, parsed.cores_needed)
        self.assertEqual(4, parsed.cores_wanted)
        config['flows'].pop()
        self.assertEqual(3, node_config.from_dict(config).cores_wanted)

    def _fails(self, config, field):
        error = self.assertRaises(node_config.NodeConfigError,
                                  node_config.from_dict, config)
        self.assertEqual(field, error.field)
        return error

    def test_errors_name_the_field(self):
        self._fails(changed(['schema_version'], 2), 'schema_version')
        self._fails(changed(['engine'], 'dppd'), 'engine')
        self._fails(changed(['forwarding_cores'], 0), 'forwarding_cores')
        self._fails(changed(['ports', 'left', 'mac'], 'FA:16:3E:00:00:01'),
                    'ports.left.mac')
        self._fails(changed(['ports', 'right'], KeyError), 'ports')
        self._fails(changed(['flows'], []), 'flows')
        self._fails(changed(['flows', 0, 'next_hop_mac'], ''),
                    'flows[0].next_hop_mac')
        self._fails(changed(['flows', 0, 'tx_port'], 'left'), 'flows[0]')
        self._fails(changed(['role'], 'generator'), 'control_port')

    def test_tasks_at_ready(self):
        # Absent: forwarding from READY on, no control socket needed.
        self.assertFalse(node_config.from_dict(GOOD).parked)
        parked = changed(['tasks_at_ready'], 'parked')
        self._fails(parked, 'control_port')
        parked['control_port'] = 8474
        self.assertTrue(node_config.from_dict(parked).parked)
        self.assertEqual(8474, node_config.from_dict(parked).control_port)
        # A running VNF's port is nobody's: dropped.
        running = changed(['tasks_at_ready'], 'running')
        running['control_port'] = 8474
        self.assertIsNone(node_config.from_dict(running).control_port)
        self._fails(changed(['tasks_at_ready'], 'idle'), 'tasks_at_ready')
        testpmd = dict(parked, engine='testpmd')
        self.assertIn('only PROX parks', str(self._fails(testpmd,
                                                         'tasks_at_ready')))
        generator = changed(['role'], 'generator')
        generator.update(control_port=8474, tasks_at_ready='running')
        self._fails(generator, 'tasks_at_ready')
        del generator['tasks_at_ready']
        self.assertTrue(node_config.from_dict(generator).parked)

    def test_latency_bucket_shift_is_optional_and_bounded(self):
        config = changed(['role'], 'generator')
        config['control_port'] = 8474
        self.assertIsNone(node_config.from_dict(config).latency_bucket_shift)
        for shift in (None, 11, 17, 30):
            config['latency_bucket_shift'] = shift
            self.assertEqual(shift, node_config.from_dict(
                config).latency_bucket_shift)
        for shift in (10, 31, True, '17', 17.5):
            config['latency_bucket_shift'] = shift
            error = self._fails(config, 'latency_bucket_shift')
            self.assertIn('11..30', str(error))

    def test_user_data_without_the_key(self):
        for text in ('', '#cloud-config\npackages: [x]\n', ': : :'):
            self.assertRaises(node_config.NodeConfigError,
                              node_config.parse_user_data, text)
