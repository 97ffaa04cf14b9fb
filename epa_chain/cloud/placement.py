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

"""Where Nova put each server of a chain, as results record it.

An intra-node and an inter-node chain measure different things (the
vSwitch alone, or the vSwitch plus the NICs and the wire between hosts), so
every result says which it was: the compute host and hypervisor of each
server as the compute API shows it, and the server-group policy the stack
asked for. The host names need Nova's admin view (OS-EXT-SRV-ATTR); other
users see only hostId, an opaque hash that is equal for servers on one
host, so the record keeps that too.
"""

from epa_chain.validation import placement_rules

# The API's keys, and the ones openstackclient prints when it shows a
# server through openstacksdk (both spellings appear across releases).
_FIELDS = {
    'host': ('OS-EXT-SRV-ATTR:host', 'compute_host'),
    'hypervisor_hostname': ('OS-EXT-SRV-ATTR:hypervisor_hostname',
                            'hypervisor_hostname'),
    'availability_zone': ('OS-EXT-AZ:availability_zone',
                          'availability_zone'),
    'host_id': ('hostId', 'host_id'),
}
# The parameter of templates/chain.yaml that chooses the policy, and
# Nova's words when no host fits.
POLICY_PARAMETER = placement_rules.POLICY_PARAMETER
NOVA_NO_HOST = placement_rules.NOVA_NO_HOST
# What a hard policy asks of the hosts.
_NEEDS = {'anti-affinity': 'a compute host per server',
          'affinity': 'one compute host with room for every server'}


def of_server(shown):
    """{host, hypervisor_hostname, availability_zone, host_id} of a server.

    `shown` is the server as the compute API (or `openstack server show
    -f json`) returns it; a field it does not show is None.
    """
    record = {}
    for field, keys in _FIELDS.items():
        record[field] = next((shown[key] for key in keys
                              if shown.get(key)), None)
    return record


def record(servers, parameters):
    """The placement section of a result.

    `servers` maps a server's name to the server as the API shows it,
    `parameters` are the stack's. `hosts` counts distinct hosts (by host
    name, else by hostId); None when neither is shown.
    """
    placed = {name: of_server(shown) for name, shown in sorted(
        servers.items())}
    keys = [entry['host'] or entry['host_id'] for entry in placed.values()]
    policy = (parameters or {}).get(POLICY_PARAMETER) or None
    return {'server_group_policy': policy,
            'servers': placed,
            'hosts': len(set(keys)) if keys and all(keys) else None}


def describe(section):
    """One line for a log: each server's host, and the policy."""
    where = ', '.join(
        '%s on %s' % (name, entry['hypervisor_hostname'] or entry['host'] or
                      (entry['host_id'] or '?')[:12])
        for name, entry in section['servers'].items())
    return '%s (server group policy: %s; %s host%s)' % (
        where, section['server_group_policy'] or 'none',
        section['hosts'] if section['hosts'] is not None else '?',
        '' if section['hosts'] == 1 else 's')


def failure_hint(parameters, reason):
    """Why Nova found no host, when the stack's hard policy explains it.

    '' unless the stack's `reason` carries Nova's no-host message and the
    stack asked for affinity or anti-affinity.
    """
    policy = (parameters or {}).get(POLICY_PARAMETER)
    if policy not in _NEEDS or not any(
            message in (reason or '') for message in NOVA_NO_HOST):
        return ''
    return ('%s %s needs %s: Nova found none; use soft-%s or more hosts'
            % (POLICY_PARAMETER, policy, _NEEDS[policy], policy))
