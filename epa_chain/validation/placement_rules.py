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

"""PLACEMENT: where the chain's servers may run, checked before a cloud.

Nova finds out only at boot, server by server, after the networks, ports
and flavors exist. Offline, over the realised servers:

- a hard server-group policy that no number of hosts can satisfy is an
  error: affinity over servers pinned to different hosts or zones (one
  host is in one zone), anti-affinity over servers pinned to one host;
- anti-affinity needs a host per server: a warning with the count, since
  a smaller cloud refuses the create (NOVA_NO_HOST);
- zone:host names a compute host, which Nova's default policy
  (os_compute_api:servers:create:forced_host) allows admins only: a
  warning, so that a project user learns it before the create fails.

A finding names the parameter when the stack has it (templates/chain.yaml
server_group_policy, vnf_availability_zone, generator_availability_zone),
else the server's property.
"""

import collections

from epa_chain.validation import findings

SERVER_TYPE = 'OS::Nova::Server'
GROUP_TYPE = 'OS::Nova::ServerGroup'
POLICY_PARAMETER = 'server_group_policy'
# chain.yaml's zone parameter of a node, by its role in the node config.
ZONE_PARAMETERS = {'vnf': 'vnf_availability_zone',
                   'generator': 'generator_availability_zone'}
# What Nova says when no host fits: the scheduler's refusal, or, when a
# group's servers are scheduled at once and the compute host's own policy
# check refuses the later ones, the end of their retries.
NOVA_NO_HOST = ('No valid host was found',
                'Exhausted all hosts available for retrying')


def _zone_and_host(value):
    """(zone, host) of Nova's zone[:host[:node]]; either may be ''."""
    parts = str(value or '').split(':')
    return parts[0], (parts[1] if len(parts) > 1 else '')


# A server with the zone and host it asks for, and its chain role.
_Placed = collections.namedtuple('_Placed', 'server zone host role')


def _placed(topology, server):
    node = next((n for n in topology.nodes if n.server is server), None)
    role = node.config.role if node is not None and node.config else None
    zone, host = _zone_and_host(server.properties.get('availability_zone'))
    return _Placed(server, zone, host, role)


def _groups(realisation, topology):
    """{group resource: [_Placed servers whose hints name it]}."""
    groups = {res.resource_id: res for res in realisation.of_type(GROUP_TYPE)}
    members = collections.defaultdict(list)
    for server in realisation.of_type(SERVER_TYPE):
        hints = server.properties.get('scheduler_hints') or {}
        group = hints.get('group') if isinstance(hints, dict) else None
        if group in groups:
            members[groups[group].resource_id].append(
                _placed(topology, server))
    return [(groups[key], placed) for key, placed in sorted(members.items())]


def check(topology, realisation):
    parameters = realisation.parameters

    def finding(resource, message, fix, severity, prop, parameter=''):
        if parameter and parameter in parameters:
            return findings.Finding(
                rule='PLACEMENT', message=message, fix=fix,
                file=realisation.template, parameter=parameter,
                severity=severity)
        return findings.Finding(
            rule='PLACEMENT', message=message, fix=fix,
            file=resource.template, resource=resource.dotted, property=prop,
            severity=severity)

    for group, placed in _groups(realisation, topology):
        policies = group.properties.get('policies') or []
        policy = policies[0] if policies else None
        yield from _policy_findings(group, policy, placed, finding)
    for server in realisation.of_type(SERVER_TYPE):
        placed = _placed(topology, server)
        if placed.host:
            yield finding(
                server, '%s names compute host %s: Nova lets only admins '
                'choose a host (policy os_compute_api:servers:create:'
                'forced_host)' % (server.dotted, placed.host),
                'create the stack as an admin, or give a zone without '
                ':host', findings.WARNING, 'availability_zone',
                ZONE_PARAMETERS.get(placed.role, ''))


def _policy_findings(group, policy, placed, finding):
    zones = _distinct(p.zone for p in placed)
    hosts = _distinct(p.host for p in placed)
    zone_parameters = ' and '.join(sorted({
        ZONE_PARAMETERS[p.role] for p in placed
        if p.role in ZONE_PARAMETERS})) or 'availability_zone'
    if policy == 'affinity' and (len(hosts) > 1 or len(zones) > 1):
        yield finding(
            group, 'policy affinity puts every server on one compute host, '
            'but the servers ask for %s: no number of hosts satisfies both'
            % ' and '.join(sorted(hosts or zones)),
            'give %s one zone:host, or use soft-affinity, or no server '
            'group' % zone_parameters, findings.ERROR, 'policies',
            POLICY_PARAMETER)
    elif policy == 'anti-affinity':
        crowded = collections.Counter(p.host for p in placed if p.host)
        for host, count in sorted(crowded.items()):
            if count > 1:
                yield finding(
                    group, 'policy anti-affinity puts each server on its own '
                    'compute host, but %d servers are pinned to %s: no '
                    'number of hosts satisfies both' % (count, host),
                    'name a different host for each role, or use '
                    'soft-anti-affinity, or no server group',
                    findings.ERROR, 'policies', POLICY_PARAMETER)
        if len(placed) > 1 and not any(n > 1 for n in crowded.values()):
            yield finding(
                group, 'policy anti-affinity needs %d compute hosts, one '
                'per server (%s); a cloud with fewer refuses the create '
                '(Nova: "%s", or "%s" when it schedules them at once)' % (
                    len(placed), ', '.join(
                        sorted(p.server.dotted for p in placed)),
                    *NOVA_NO_HOST),
                'use soft-anti-affinity where hosts may be fewer',
                findings.WARNING, 'policies', POLICY_PARAMETER)


def _distinct(values):
    return sorted({value for value in values if value})
