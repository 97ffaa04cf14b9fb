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

"""The questions preflight asks a cloud, through the `openstack` client.

Each answer is parsed here, once, into plain values; a question the
cloud will not or cannot answer (a policy, the osc-placement plugin
missing, an extension absent, an unknown cloud), or answers in a shape
not expected (not JSON, a key missing), raises Unanswered with the
reason and the command asked, which preflight reports as unchecked.
Names go after `--` (cloud/openstack_cli), never as options.
"""

import contextlib
import dataclasses
import re
import threading
import typing

from epa_chain.cloud import openstack_cli
from epa_chain.cloud import stack_needs

# What the client says when the thing asked for does not exist (and not
# when the client itself is missing: that is no answer).
_NOT_FOUND = re.compile(r'No (Image|Flavor|Network) found for|'
                        r'Could not find resource|'
                        r'No (image|flavor|network) with a name or ID')
# What the client says when it reached no cloud at all (clouds.yaml, the
# credentials, Keystone): every later question would fail alike, each
# after seconds, so they are not asked.
_UNREACHED = re.compile(r'Cloud \S+ was not found|Missing value auth-url|'
                        r'Failed to discover available identity versions|'
                        r'Unable to establish connection to|\(HTTP 401\)')
NO_SEGMENT_RANGES = ('Neutron has no network-segment-range extension: its '
                     'VLAN ranges are only in its ml2 configuration')
SEGMENT_RANGE_EXTENSION = 'network-segment-range'
# Placement's resource classes a chain's servers take.
RESOURCE_CLASSES = ('PCPU', 'VCPU', 'MEMORY_MB')
# {quota: (Nova's absolute limit, its usage)}, as `limits show --absolute`
# names them: the API's names, or openstacksdk's (python-openstackclient 6
# and later).
_COMPUTE_LIMITS = {
    'cores': (('maxTotalCores', 'max_total_cores'),
              ('totalCoresUsed', 'total_cores_used')),
    'ram': (('maxTotalRAMSize', 'max_total_ram_size'),
            ('totalRAMUsed', 'total_ram_used')),
    'instances': (('maxTotalInstances', 'max_total_instances'),
                  ('totalInstancesUsed', 'total_instances_used'))}


class Unanswered(Exception):
    """The cloud would not or could not say (policy, missing plugin)."""


@dataclasses.dataclass(frozen=True)
class Provider:
    """A Placement resource provider: a compute host's inventory."""

    name: str
    # {resource class: (capacity, used)}; capacity is (total - reserved)
    # times the allocation ratio, as Placement computes it.
    resources: typing.Mapping[str, typing.Tuple[int, int]]

    def free(self, resource_class):
        capacity, used = self.resources.get(resource_class, (0, 0))
        return capacity - used


class CloudView:
    """The questions preflight asks, through the `openstack` client.

    Safe to ask from several threads (preflight asks its checks at once).
    """

    def __init__(self, cli):
        self.cli = cli
        self._admin = None
        self._admin_lock = threading.Lock()
        # What the client said when it reached no cloud, once said.
        self._unreached = None
        # Answers about the whole cloud, asked once: the density step
        # reads the ones the capacity and quota steps had.
        self._answers = {}
        self._answers_lock = threading.Lock()

    def _once(self, key, ask):
        """ask() the first time; its answer (or Unanswered) again after."""
        with self._answers_lock:
            if key not in self._answers:
                try:
                    self._answers[key] = (ask(), None)
                except Unanswered as exc:
                    self._answers[key] = (None, exc)
            answer, error = self._answers[key]
        if error is not None:
            raise error
        return answer

    def _ask(self, *args, names=()):
        """The client's JSON answer; Unanswered when there is none."""
        if self._unreached is not None:
            raise Unanswered('not asked, an earlier call failed: %s'
                             % self._unreached)
        try:
            return self.cli.json(*args, names=names)
        except openstack_cli.CLIError as exc:
            said = str(exc).strip().splitlines()[-1:] or ['']
            if _UNREACHED.search(said[0]):
                self._unreached = said[0].rpartition(' failed: ')[2]
            raise Unanswered(str(exc))
        except ValueError as exc:
            raise Unanswered('`openstack %s` printed no JSON (%s): check '
                             'the client and its plugins' % (
                                 ' '.join(args), exc))

    def _show(self, kind, name):
        try:
            return self._ask(kind, 'show', names=[name])
        except Unanswered as exc:
            if _NOT_FOUND.search(str(exc)):
                return None
            raise

    def image(self, name):
        return self._show('image', name)

    def flavor(self, name):
        """An existing flavor as a stack_needs.Flavor, or None."""
        shown = self._show('flavor', name)
        if shown is None:
            return None
        with _parsing('flavor show'):
            specs = shown.get('properties') or {}
            if isinstance(specs, str):
                # Older clients print extra specs as "key='value', ...".
                specs = dict(pair.split('=', 1) for pair in
                             re.split(r',\s*', specs) if '=' in pair)
            return stack_needs.Flavor(
                source=name, vcpus=int(shown['vcpus']),
                ram_mb=int(shown['ram']),
                extra_specs={k: str(v).strip("'") for k, v in specs.items()})

    def network(self, name):
        return self._show('network', name)

    def is_admin(self):
        """Whether the credentials hold the admin role (asked once)."""
        with self._admin_lock:
            if self._admin is None:
                roles = self._ask('role', 'assignment', 'list',
                                  '--auth-user', '--auth-project',
                                  '--effective', '--names')
                with _parsing('role assignment list'):
                    self._admin = any(
                        str(item.get('Role', '')).split('@')[0] == 'admin'
                        for item in roles)
            return self._admin

    def vlan_networks(self, physical_network, vlan):
        """Names of the networks holding `vlan` on `physical_network`."""
        found = self._ask('network', 'list', '--provider-network-type',
                          'vlan', '--provider-physical-network',
                          physical_network, '--provider-segment', str(vlan))
        with _parsing('network list'):
            return [item.get('Name') or item.get('ID') for item in found]

    def vlan_ranges(self):
        """{physnet: [(min, max)]} of Neutron's VLAN segment ranges.

        Unanswered where the network-segment-range extension is absent:
        then the ranges are only in ml2_conf.ini.
        """
        return self._once('vlan_ranges', self._vlan_ranges_now)

    def _vlan_ranges_now(self):
        extensions = self._ask('extension', 'list', '--network')
        with _parsing('extension list --network'):
            known = any(item.get('Alias') == SEGMENT_RANGE_EXTENSION
                        for item in extensions)
        if not known:
            raise Unanswered(NO_SEGMENT_RANGES)
        ranges = self._ask('network', 'segment', 'range', 'list', '--long')
        with _parsing('network segment range list'):
            return vlan_ranges_of(
                (item.get('Network Type'), item.get('Physical Network'),
                 item['Minimum ID'], item['Maximum ID']) for item in ranges)

    def providers(self):
        """The Providers of Placement with compute inventory."""
        return self._once('providers', self._providers_now)

    def _providers_now(self):
        try:
            listed = self._ask('resource', 'provider', 'list')
        except Unanswered as exc:
            text = str(exc)
            if 'resource provider' in text and ('Unknown command' in text or
                                                'not an openstack' in text):
                raise Unanswered('the openstack client has no Placement '
                                 'commands: pip install osc-placement')
            raise
        with _parsing('resource provider list'):
            found = [self._provider(item['name'], item['uuid'])
                     for item in listed]
        return [provider for provider in found if provider is not None]

    def _provider(self, name, uuid):
        inventory = self._ask('resource', 'provider', 'inventory', 'list',
                              names=[uuid])
        usage = self._ask('resource', 'provider', 'usage', 'show',
                          names=[uuid])
        with _parsing('resource provider inventory list, usage show'):
            return provider_of(
                name, {r['resource_class']: r for r in inventory},
                {u['resource_class']: u['usage'] for u in usage})

    def compute_limits(self):
        """limits_of Nova's absolute limits."""
        return self._once('compute_limits', self._compute_limits_now)

    def _compute_limits_now(self):
        rows = self._ask('limits', 'show', '--absolute')
        with _parsing('limits show --absolute'):
            return limits_of({row['Name']: row['Value'] for row in rows})

    def network_quotas(self):
        """network_quotas_of the project's Neutron quotas and usage."""
        return self._once('network_quotas', self._network_quotas_now)

    def _network_quotas_now(self):
        rows = self._ask('quota', 'show', '--usage', '--network')
        with _parsing('quota show --usage --network'):
            return network_quotas_of({
                row['Resource']: {'limit': row['Limit'],
                                  'used': row['In Use']} for row in rows})


@contextlib.contextmanager
def _parsing(command):
    """Unanswered, naming `command`, for an answer not of its shape."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise Unanswered('`openstack %s` answered in a shape preflight does '
                         'not know (%s: %s): update python-openstackclient '
                         'or report the answer' % (
                             command, type(exc).__name__, exc)) from None


def provider_of(name, inventories, usages):
    """A Provider of Placement's inventories and usages, or None.

    `inventories` {resource class: {total, reserved, allocation_ratio}}
    and `usages` {resource class: used}, as the API gives them; None for
    a provider without compute inventory (a sharing or NUMA child).
    """
    resources = {}
    for resource_class, record in inventories.items():
        if resource_class in RESOURCE_CLASSES:
            capacity = int((int(record['total']) - int(record['reserved'])) *
                           float(record['allocation_ratio']))
            resources[resource_class] = (
                capacity, int(usages.get(resource_class, 0)))
    return Provider(name, resources) if resources else None


def vlan_ranges_of(ranges):
    """{physnet: [(min, max)]} of (type, physnet, min, max) segment ranges."""
    found = {}
    for network_type, physnet, minimum, maximum in ranges:
        if network_type == 'vlan':
            found.setdefault(physnet, []).append((int(minimum), int(maximum)))
    return found


def limits_of(values):
    """{quota: (limit, used)} of Nova's absolute limits {name: value}.

    -1 is unlimited; quotas the cloud does not report are left out.
    """
    found = {}
    for quota, (limit_names, used_names) in _COMPUTE_LIMITS.items():
        limit = next((int(values[n]) for n in limit_names if n in values),
                     None)
        if limit is not None:
            found[quota] = (limit, next(
                (int(values[n]) for n in used_names if n in values), 0))
    return found


def network_quotas_of(details):
    """{network|subnet|port: (limit, used)} of Neutron's quota details.

    `details` {resource: {limit, used}} as the API's /quotas/{project}/
    details gives it (`openstack quota show --usage --network` names them
    in the plural, with 'In Use'); -1 is unlimited.
    """
    found = {}
    for resource, values in details.items():
        name = str(resource)
        name = name[:-1] if name.endswith('s') else name
        if name in ('network', 'subnet', 'port') and isinstance(values,
                                                                dict):
            used = values.get('used', values.get('in_use'))
            if used is None:
                # Usage unknown is unchecked, not zero.
                raise KeyError('used')
            found[name] = (int(values['limit']), int(used))
    return found
