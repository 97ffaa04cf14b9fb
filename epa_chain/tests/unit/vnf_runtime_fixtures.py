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


"""Config-drive fixtures for the VNF runtime, made from the shipped templates.

For every preset in templates/presets/, Heat's own engine realises the
stack offline (epa_chain.hot) and each server's config drive is written as
Nova would write it: meta_data.json, network_data.json (the management
NIC first, with DHCP; the data NICs with their fixed addresses, as on the
DHCP-less chain subnets) and the user_data Heat rendered, byte for byte.
Next to each drive are the golden engine configurations the runtime must
render from it on the standard fake guest (vnf_runtime_fakes): prox.cfg
and testpmd.argv (one argument per line; the drive with its engine set to
testpmd, which is what Heat writes with vnf_engine=testpmd).

test_vnf_runtime_fixtures checks that the drives still match the
templates; test_vnf_runtime_engines checks the goldens. After changing
either on purpose, regenerate and review the diff:

    python -m epa_chain.tests.unit.vnf_runtime_fixtures
"""

import json
import os
import shutil
import sys
import tempfile

import yaml

from epa_chain.tests import repo
from epa_chain.vnf_runtime import config_drive

HERE = os.path.dirname(os.path.abspath(__file__))
# chain.yaml parameters whose defaults the goldens would otherwise copy.
PINNED = {'generator_latency_bucket_shift': 12,
          'generator_control_port': 8474}
TOP = repo.ROOT
TEMPLATES = repo.TEMPLATES
FIXTURES = os.path.join(HERE, '..', 'fixtures', 'vnf_runtime')
PRESETS = sorted(name[:-len('.yaml')] for name in os.listdir(
    os.path.join(TEMPLATES, 'presets')) if name.endswith('.yaml'))
ENGINES = ('prox', 'testpmd')
VNF_CPUS, GENERATOR_CPUS = 2, 4   # the templates' default flavors
BINARIES = {'prox': 'prox', 'testpmd': 'dpdk-testpmd'}


def node_dirs(preset):
    """{node: fixture directory} of one preset, e.g. {'vnf1': ...}."""
    base = os.path.join(FIXTURES, preset)
    return {name: os.path.join(base, name) for name in sorted(
        os.listdir(base)) if os.path.isdir(os.path.join(base, name))}


def drive_dir(node_dir):
    return os.path.join(node_dir, 'config-drive')


def with_engine(user_data, engine):
    """The user_data Heat writes when vnf_engine is `engine` (VNFs only)."""
    document = yaml.safe_load(user_data)
    if document['epa_chain']['role'] == 'vnf':
        set_engine(document['epa_chain'], engine)
    return document


def set_engine(config, engine):
    """A node config (a dict) as Heat writes it for `engine`."""
    config['engine'] = engine
    if engine != 'prox':
        # Only PROX parks its tasks (lib/chain_server.yaml).
        config.update(tasks_at_ready='running', control_port=None)


# ---- Heat side (needs openstack-heat; only the drift test and regen) ------

def realise(preset, engine='prox'):
    """{node: drive files} for a preset, through Heat's engine."""
    from epa_chain.hot import files
    from epa_chain.hot import offline
    from epa_chain.hot import realise as realise_mod

    envs = [os.path.join(TEMPLATES, 'presets', preset + '.yaml')]
    with tempfile.TemporaryDirectory() as tmp:
        # The goldens hold values the templates only default: pinned here,
        # so that a new default changes chain.yaml alone.
        override = os.path.join(tmp, 'pinned.yaml')
        with open(override, 'w') as stream:
            yaml.safe_dump({'parameters': dict(PINNED, vnf_engine=engine)},
                           stream)
        envs.append(override)
        template_set = files.load(os.path.join(TEMPLATES, 'chain.yaml'),
                                  envs)
        stack = offline.parse_stack(template_set)
        stack.validate()
        realisation = realise_mod.realise(stack, template_set)
    ports = {res.resource_id: res
             for res in realisation.of_type('OS::Neutron::Port')}
    drives = {}
    for server in realisation.of_type('OS::Nova::Server'):
        name = server.properties['name']
        nics = [ports[n['port']] for n in server.properties['networks']]
        drives[name.rsplit('-', 1)[-1]] = {
            config_drive.META_DATA: _meta_data(server),
            config_drive.NETWORK_DATA: _network_data(nics),
            config_drive.USER_DATA: server.properties['user_data'],
        }
    return drives


def _meta_data(server):
    name = server.properties['name']
    return json.dumps({
        'uuid': server.resource_id, 'name': name, 'hostname': name,
        'launch_index': 0, 'availability_zone': 'nova', 'meta': {},
        'devices': [], 'project_id': '0123456789abcdef0123456789abcdef',
    }, indent=2, sort_keys=True) + '\n'


def _network_data(nics):
    links, networks = [], []
    for index, port in enumerate(nics):
        link_id = 'tap' + port.resource_id[:11]
        management = index == 0   # chain_server.yaml plugs it first
        links.append({
            'id': link_id, 'vif_id': port.resource_id,
            'type': 'ovs' if management else 'vhostuser',
            'mtu': 1450 if management else 1500,
            'ethernet_mac_address': port.attributes['mac_address'],
        })
        network = {'id': 'network%d' % index, 'link': link_id,
                   'network_id': str(port.properties.get('network'))}
        if management:
            network['type'] = 'ipv4_dhcp'
        else:
            network.update(
                type='ipv4', netmask='255.255.255.0', routes=[],
                services=[],
                ip_address=port.attributes['fixed_ips'][0]['ip_address'])
        networks.append(network)
    return json.dumps({'links': links, 'networks': networks,
                       'services': []}, indent=2, sort_keys=True) + '\n'


# ---- runtime side ----------------------------------------------------------

def standard_guest(root, drive, role):
    """The fake guest the goldens are rendered on: NICs in link order."""
    from epa_chain.tests.unit import vnf_runtime_fakes

    cpus = GENERATOR_CPUS if role == 'generator' else VNF_CPUS
    guest = vnf_runtime_fakes.FakeGuest(root, cpus=cpus,
                                        isolated='1-%d' % (cpus - 1))
    return guest.add_nics_from(drive)


def render_engines(drive):
    """{golden file name: text} the runtime renders from a VNF drive."""
    from epa_chain.vnf_runtime import cpus
    from epa_chain.vnf_runtime import devices
    from epa_chain.vnf_runtime import engine as engine_mod
    from epa_chain.vnf_runtime import sysfs

    read = config_drive.read(drive)
    node = read.node_config()
    from epa_chain.tests.unit import vnf_runtime_fakes

    outputs = {}
    with vnf_runtime_fakes.temp_dir() as root:
        standard_guest(root, drive, node.role)
        guest_sysfs = sysfs.Sysfs(root)
        ports = devices.match(node, read.links(), devices.scan(guest_sysfs))
        cores = cpus.layout(guest_sysfs, engine_mod.workers_needed(node),
                            workers_wanted=engine_mod.workers_wanted(node))
        for engine in ENGINES:
            from epa_chain.chain import node_config
            variant = node_config.from_dict(
                with_engine(read.user_data, engine)['epa_chain'])
            plan = engine_mod.plan(variant, ports, cores, BINARIES[engine])
            if engine == 'prox':
                outputs['prox.cfg'] = plan.config_text
            else:
                outputs['testpmd.argv'] = '\n'.join(plan.argv) + '\n'
    return outputs


def regenerate(out=sys.stdout):
    if os.path.isdir(FIXTURES):
        for entry in os.listdir(FIXTURES):
            if entry in PRESETS:
                shutil.rmtree(os.path.join(FIXTURES, entry))
    for preset in PRESETS:
        for node, drive_files in realise(preset).items():
            node_dir = os.path.join(FIXTURES, preset, node)
            for relative, text in drive_files.items():
                path = os.path.join(drive_dir(node_dir), relative)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'w') as stream:
                    stream.write(text)
            if node.startswith('vnf'):
                for name, text in render_engines(
                        drive_dir(node_dir)).items():
                    with open(os.path.join(node_dir, name), 'w') as stream:
                        stream.write(text)
            out.write('wrote %s\n' % os.path.relpath(node_dir, TOP))


if __name__ == '__main__':
    regenerate()
