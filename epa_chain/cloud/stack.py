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

"""The chain's Heat stack: resolve, create from a preset, wait, delete.

The stack is what `openstack stack create -t templates/chain.yaml -e
templates/presets/<preset>.yaml` would create (the same heatclient code
loads the files: epa_chain.hot.files), with the [epa_chain] options as
parameters on top of the preset. Works with any object shaped like
heatclient's v1 Client, so the unit tests drive it with a fake.
"""

import importlib.util
import logging
import math
import os
import time

from heatclient import exc as heat_exc

from epa_chain.chain import directions as chain_directions
from epa_chain.cloud import options as opts
from epa_chain.hot import files
from epa_chain.hot import shipped

LOG = logging.getLogger(__name__)

TEMPLATE = shipped.TEMPLATE
SERVER_TYPE = 'OS::Nova::Server'
# Every stack the benchmark creates carries this tag: a later run finds
# the ones a failed delete left behind holding its VLANs by it.
STACK_TAG = 'epa-chain-benchmark'
SEGMENT_PARAMETERS = ('net%d_physical_network', 'net%d_vlan')
# chain.yaml nests servers three levels down: the chains group, a chain
# (lib/chain_instance.yaml), a node (lib/chain_server.yaml).
NESTED_DEPTH = 3


class StackError(RuntimeError):
    """The stack did not reach the state the benchmark needs."""


def default_template_dir():
    """templates/ of a source checkout, else the installed copy."""
    found = shipped.template_dir()
    if found:
        return found
    raise opts.OptionError(
        'template_dir', 'empty, and no %s found in %s: install the '
        'epa-chain package or set the directory holding %s, lib/ and '
        'presets/' % (TEMPLATE, ' or '.join(
            shipped.template_dir_candidates()), TEMPLATE))


def stack_parameters(options, chain_length, direction):
    """chain.yaml parameters from the options, applied over the preset.

    `direction`: chain_directions.UNIDIRECTIONAL or .BIDIRECTIONAL.
    """
    parameters = {
        'vnf_count': chain_length,
        'direction': chain_directions.word(direction),
        # The vE-CPE presets describe a hardware tester; Tempest measures
        # with the generator the stack boots.
        'endpoints': 'generator',
        'vnf_image': options.vnf_image,
        'generator_image': options.generator_image,
        'vnf_engine': options.vnf_engine,
        'vnf_existing_flavor': options.vnf_flavor,
        'generator_existing_flavor': options.generator_flavor,
        'cpu_policy': options.cpu_policy,
        'cpu_thread_policy': options.cpu_thread_policy,
        'mem_page_size': options.mem_page_size,
        'numa_nodes': options.numa_nodes,
        'management_network': options.management_network,
        'management_allowed_cidr': options.management_allowed_cidr,
        'key_name': options.key_name,
        'generator_control_port': options.generator_control_port,
        'generator_latency_bucket_shift':
            options.generator_latency_bucket_shift,
        'server_group_policy': options.server_group_policy,
        'vnf_availability_zone': options.vnf_availability_zone,
        'generator_availability_zone': options.generator_availability_zone,
        'chain_count': options.chain_count,
        'chain_vlan_stride': options.chain_vlan_stride,
    }
    for index, segment in enumerate(options.segments_for(chain_length)):
        parameters.update({
            'net%d_name' % index: segment.network_name,
            'net%d_physical_network' % index: segment.physical_network,
            'net%d_vlan' % index: segment.vlan,
        })
    return parameters


def stack_files(options, chain_length, direction):
    """chain.yaml and the scenario's preset (hot/shipped.py chooses it)."""
    template_dir = options.template_dir or default_template_dir()
    template_path = os.path.join(template_dir, TEMPLATE)
    environment_path = shipped.preset_for(
        template_dir, chain_length, chain_directions.word(direction))
    for path in (template_path, environment_path):
        if not os.path.isfile(path):
            raise opts.OptionError(
                'template_dir', '%s: no such file (the directory must hold '
                '%s, lib/ and presets/)' % (path, TEMPLATE))
    return template_path, environment_path


def resolve(stack_name, options, chain_length, direction):
    """The stack as Heat will create it, checked before creating it.

    The one resolve-and-check (validation/check.py): Heat's engine runs
    in this process, then the NFV rules; what either refuses stops the
    scenario before any API call, so nothing exists in the cloud, and
    the nodes to wait for come from what the stack will boot.
    """
    if importlib.util.find_spec('heat') is None:
        raise StackError('resolving the stack before creating it needs '
                         'Heat\'s engine: install epa-chain[validation] '
                         'where Tempest runs')
    from epa_chain.validation import check

    template_path, environment_path = stack_files(options, chain_length,
                                                  direction)
    try:
        # build_create_args sends the preset inline: parameters win.
        return check.check_stack(
            template_path, [environment_path],
            stack_parameters(options, chain_length, direction), stack_name,
            inline=True)
    except check.StackRefused as exc:
        raise StackError(str(exc)) from exc


def build_create_args(stack_name, options, chain_length, direction):
    """Keyword arguments of heatclient's stacks.create for one scenario."""
    template_path, environment_path = stack_files(options, chain_length,
                                                  direction)
    loaded = files.load(template_path, [environment_path])
    return {
        'stack_name': stack_name,
        'template': loaded.template,
        'files': loaded.files,
        'environment': loaded.environment,
        'parameters': stack_parameters(options, chain_length, direction),
        # Keep a failed stack for its status reasons; the benchmark
        # deletes it in any case.
        'disable_rollback': True,
        'tags': STACK_TAG,
        'timeout_mins': max(1, math.ceil(options.stack_create_timeout / 60)),
    }


def segments_of(parameters, chain_length=None):
    """{(physnet, vlan)} a stack's netK parameters claim.

    `parameters` as Heat shows a stack's (values may be strings); up to
    net<chain_length> when given (vnf_count+1 networks), else every netK;
    every chain's (chain_count, chain_vlan_stride).
    """
    if chain_length is None:
        try:
            chain_length = int(parameters.get('vnf_count', opts.MAX_SEGMENTS))
        except (TypeError, ValueError):
            chain_length = opts.MAX_SEGMENTS - 1
    count, stride = _chain_spread(parameters)
    found = set()
    for index in range(min(chain_length + 1, opts.MAX_SEGMENTS)):
        physnet_key, vlan_key = (p % index for p in SEGMENT_PARAMETERS)
        if parameters.get(physnet_key) and parameters.get(vlan_key):
            try:
                vlan = int(parameters[vlan_key])
            except (TypeError, ValueError):
                continue
            # Chain K's segment: lib/provider_segment.yaml's VLAN.
            found.update((str(parameters[physnet_key]), vlan + k * stride)
                         for k in range(count))
    return found


def _chain_spread(parameters):
    """(chain_count, chain_vlan_stride) of a stack's parameters.

    (1, 0) for a stack without them, or with values Heat would refuse.
    """
    try:
        count = int(parameters.get('chain_count', 1))
        stride = int(parameters.get('chain_vlan_stride', 0))
    except (TypeError, ValueError):
        return 1, 0
    return (count, stride) if count > 1 and stride > 0 else (1, 0)


def resolved_segments(resolved, chain_length):
    """The segments a resolved stack will claim: preset + options."""
    environment = resolved.template_set.environment or {}
    merged = dict(environment.get('parameter_defaults') or {})
    merged.update(environment.get('parameters') or {})
    merged.update(resolved.parameters or {})
    return segments_of(merged, chain_length)


class StackService:
    """Lifecycle of one stack through a heatclient v1 Client."""

    def __init__(self, heat, poll_interval=5.0, clock=time.monotonic,
                 sleep=time.sleep):
        self.heat = heat
        self.poll_interval = poll_interval
        self.clock = clock
        self.sleep = sleep

    def create(self, create_args):
        """Start creating; return the stack ID (creation goes on)."""
        body = self.heat.stacks.create(**create_args)
        stack_id = body['stack']['id']
        LOG.info('Creating stack %s (%s)', create_args['stack_name'],
                 stack_id)
        return stack_id

    def wait_for_create(self, stack_id, timeout):
        deadline = self.clock() + timeout
        while True:
            stack = self.heat.stacks.get(stack_id, resolve_outputs=False)
            status = stack.stack_status
            if status == 'CREATE_COMPLETE':
                return stack
            if status.endswith('_FAILED'):
                raise StackError('stack %s is %s: %s%s' % (
                    stack_id, status, stack.stack_status_reason,
                    self._failed_resources(stack_id)))
            if self.clock() >= deadline:
                raise StackError(
                    'stack %s still %s after %d s ([epa_chain] '
                    'stack_create_timeout)%s' % (
                        stack_id, status, timeout,
                        self._failed_resources(stack_id)))
            self.sleep(self.poll_interval)

    def _failed_resources(self, stack_id):
        try:
            resources = self.heat.resources.list(
                stack_id, nested_depth=NESTED_DEPTH)
        except heat_exc.HTTPException as exc:
            return '; resources not listed: %s' % exc
        failed = ['%s (%s): %s' % (r.resource_name, r.resource_type,
                                   r.resource_status_reason)
                  for r in resources
                  if r.resource_status.endswith('_FAILED')]
        return '; failed resources: %s' % '; '.join(failed) if failed else ''

    def outputs(self, stack_id):
        """Stack outputs by key.

        An output Heat could not resolve is an error naming it.
        """
        stack = self.heat.stacks.get(stack_id)
        values = {}
        for output in stack.outputs or []:
            if output.get('output_error'):
                raise StackError('stack %s output %s: %s' % (
                    stack_id, output['output_key'], output['output_error']))
            values[output['output_key']] = output.get('output_value')
        return values

    def server_ids(self, stack_id):
        """IDs of every Nova server of the stack, nested ones included."""
        resources = self.heat.resources.list(stack_id,
                                             nested_depth=NESTED_DEPTH)
        return sorted(r.physical_resource_id for r in resources
                      if r.resource_type == SERVER_TYPE and
                      r.physical_resource_id)

    def delete(self, stack_id, timeout, attempts=2):
        """Delete and wait until Heat forgets the stack.

        A stack already gone is fine. DELETE_FAILED is retried once (ports
        still held by a server being torn down are the usual cause);
        `timeout` covers every attempt. What is left is named in the
        error: the stack, and its resources that failed and why.
        """
        deadline = self.clock() + timeout
        for attempt in range(1, attempts + 1):
            try:
                self.heat.stacks.delete(stack_id)
            except heat_exc.HTTPNotFound:
                return
            LOG.info('Deleting stack %s (attempt %d)', stack_id, attempt)
            status, reason = self._wait_for_delete(stack_id, deadline,
                                                   timeout)
            if status is None:
                return
            if self.clock() >= deadline:
                break
        raise StackError(
            'stack %s not deleted after %d attempt(s) ([epa_chain] '
            'stack_delete_timeout %d s): %s: %s%s; it still holds its '
            'resources (provider VLANs included): the next run on these '
            'VLANs deletes it first if it is *_FAILED (tag %s), or delete '
            'it with "openstack stack delete %s"' % (
                stack_id, attempt, timeout, status, reason,
                self._failed_resources(stack_id), STACK_TAG, stack_id))

    def _tagged_stacks(self):
        """The benchmark's stacks, of every project where Heat allows."""
        try:
            # global_tenant: with dynamic credentials the earlier run's
            # project is another one (listing them all needs admin).
            return self.heat.stacks.list(tags=STACK_TAG, global_tenant=True)
        except heat_exc.HTTPForbidden:
            # Heat's default policy denies stacks:global_index to everyone.
            LOG.warning(
                'Heat\'s policy denies stacks:global_index (its default): '
                'stacks earlier runs left in other projects are not found. '
                'Allow it to admins ("stacks:global_index": '
                '"rule:context_is_admin" in Heat\'s policy.yaml); looking '
                'in this project only')
            return self.heat.stacks.list(tags=STACK_TAG)

    def release_segments(self, segments, timeout):
        """Clear stacks of earlier runs off `segments` before creating.

        A delete that failed in an earlier run leaves the stack with its
        provider networks, and creating the same VLANs again fails with
        "VLAN ... is in use". Only stacks tagged STACK_TAG (created by
        this benchmark) that hold one of `segments` are considered, and
        only dead ones are touched: a *_FAILED stack is deleted, one in
        DELETE_IN_PROGRESS is waited for. A healthy one may be another
        run's (two gates on one cloud): StackError names it, nothing is
        deleted. Returns the IDs of the stacks now gone.
        """
        wanted = set(segments)
        released = []
        if not wanted:
            return released
        try:
            leftovers = self._tagged_stacks()
        except heat_exc.HTTPException as exc:
            LOG.warning('Leftover stacks not listed (%s); creating anyway',
                        exc)
            return released
        for leftover in leftovers:
            stack_id = leftover.id
            try:
                shown = self.heat.stacks.get(stack_id, resolve_outputs=False)
            except heat_exc.HTTPNotFound:
                continue
            parameters = getattr(shown, 'parameters', None) or {}
            held = wanted & segments_of(parameters)
            status = shown.stack_status
            if not held or status == 'DELETE_COMPLETE':
                continue
            what = 'stack %s (%s, %s) holds %s' % (
                leftover.stack_name, stack_id, status,
                ', '.join('%s:%d' % s for s in sorted(held)))
            if status == 'DELETE_IN_PROGRESS':
                LOG.warning('%s: waiting for its deletion', what)
                status, reason = self._wait_for_delete(
                    stack_id, self.clock() + timeout, timeout)
                if status is not None:
                    raise StackError('%s, and is still %s: %s' % (
                        what, status, reason))
            elif status.endswith('_FAILED'):
                LOG.warning('%s: an earlier run left it, deleting it '
                            'first', what)
                try:
                    self.delete(stack_id, timeout)
                except heat_exc.HTTPException as exc:
                    raise StackError('%s; deleting it failed: %s' % (
                        what, exc))
            else:
                raise StackError(
                    '%s: another run may be using it, nothing was created; '
                    'if none is, delete it ("openstack stack delete %s") '
                    'or configure other [%s] segments' % (
                        what, stack_id, opts.GROUP))
            released.append(stack_id)
        return released

    def _wait_for_delete(self, stack_id, deadline, timeout):
        while True:
            try:
                stack = self.heat.stacks.get(stack_id,
                                             resolve_outputs=False)
            except heat_exc.HTTPNotFound:
                return None, None
            status = stack.stack_status
            if status == 'DELETE_COMPLETE':
                return None, None
            if status == 'DELETE_FAILED':
                return status, stack.stack_status_reason
            if self.clock() >= deadline:
                return status, 'still deleting after %d s' % timeout
            self.sleep(self.poll_interval)
