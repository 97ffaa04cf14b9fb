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

"""Heat's own engine, in this process, with no cloud behind it.

Validation must run the checks `openstack stack create` runs: the engine
parses the template, validates parameters, resource types, properties,
functions and nested stacks (strict_validate=True). Only what needs a live
cloud is neutralised, each in one place below:

- the service catalogue: every service counts as available;
- lookup constraints (glance.image, nova.flavor, neutron.network, ...):
  they ask a service whether a name exists, so they are recorded as skipped
  instead; pure constraints (net_cidr, mac_addr, ...) still run;
- the image/flavor compatibility check of OS::Nova::Server (min_ram,
  min_disk, image status): it reads both from the cloud; skipped likewise;
- the compute API microversion a feature needs (soft server-group
  policies need 2.15): assumed, and recorded as skipped;
- clients: any other attempt to reach a service fails loudly with
  CloudRequired instead of trying keystone;
- fetching: Heat fetches a nested template missing from the stack's files
  (and AWS::CloudFormation::Stack's TemplateURL) from its URL, file://
  included; offline, nothing is fetched (files.py read and checked every
  file the stack may use);
- `repeat`: Heat expands every combination of its for_each lists (three
  lists of 1,000 make a billion copies, which no host survives); offline,
  more than MAX_REPEAT copies are refused;
- Heat's database: nothing is stored, stacks are only parsed and resolved.

Two changes make it faster, not different: the engine does not yield to
green threads after each resource (there are none), and each distinct
nested stack is validated once per process, its outcome replayed after
(nested.py).
"""

import collections
import dataclasses
import functools
import importlib.metadata
import logging
import math
import threading
import time
import types
import warnings

from epa_chain.hot import memo
from epa_chain.hot import nested as nested_mod

_lock = threading.Lock()
_heat = None
# Copies one `repeat` may make: far more than a stack of Heat's 1,000
# resources (max_resources_per_stack) needs.
MAX_REPEAT = 10000
# The entry points of Heat's custom constraints.
CONSTRAINTS = 'heat.constraints'


@dataclasses.dataclass(frozen=True)
class SkippedLookup:
    """A constraint that needs a cloud to check a value."""

    constraint: str
    value: str


class CloudRequired(Exception):
    """Heat tried to talk to a cloud service while validating offline."""


class _Recorder(threading.local):
    def __init__(self):
        self.skipped = []


_recorder = _Recorder()
# Nested stacks' validations, done once per distinct input (nested.py).
NESTED = nested_mod.Outcomes(lambda: _recorder.skipped)


def _quiet():
    # Heat logs every hidden resource type and deprecated option at import,
    # and some dependencies warn about eventlet: none of it is the user's.
    warnings.filterwarnings('ignore')
    for name in ('heat', 'oslo_config', 'stevedore', 'oslo_policy',
                 'keystoneauth1', 'oslo_messaging'):
        logging.getLogger(name).setLevel(logging.ERROR)


def heat():
    """Import and initialise Heat once; return its modules."""
    global _heat
    with _lock:
        if _heat is None:
            with memo.resident():
                _heat = _initialise()
        return _heat


def _initialise():
    _quiet()
    import heat.common.config  # noqa: F401 (registers Heat's options)
    from heat.common import context
    from heat.common import exception
    from heat.common import urlfetch
    from heat.engine import attributes
    from heat.engine.clients import client_plugin
    from heat.engine.clients.os import nova as nova_plugin
    from heat.engine import constraints
    from heat.engine import environment
    from heat.engine import function
    from heat.engine.hot import functions
    from heat.engine import resource
    from heat.engine import resources
    from heat.engine.resources.openstack.nova import server
    from heat.engine.resources import stack_resource
    from heat.engine import stack
    from heat.engine import stk_defn
    from heat.engine import template

    _load_client_plugins_lazily()
    _initialise_resources(resources, constraints.BaseCustomConstraint)
    resource.Resource.is_service_available = classmethod(
        lambda cls, ctx: (True, None))
    client_plugin.ClientPlugin.client = _no_client
    resource.Resource.rpc_client = _no_engine
    server.Server._validate_image_flavor = _skip_image_flavor_check
    nova_plugin.NovaClientPlugin.is_version_supported = _assume_microversion
    urlfetch.get = functools.partial(_no_fetch, urlfetch.URLFetchError)
    functions.Repeat.result = _bounded_repeat(functions.Repeat.result,
                                              function.resolve)
    stack.time = _NoYield()
    stack_resource.StackResource.validate_nested_stack = _validated_once(
        stack_resource.StackResource.validate_nested_stack)

    # Only the modules the rest of epa_chain uses.
    modules = collections.namedtuple('Heat', [
        'context', 'exception', 'attributes', 'environment', 'resources',
        'stack_resource', 'stack', 'stk_defn', 'template'])
    return modules(context, exception, attributes, environment, resources,
                   stack_resource, stack, stk_defn, template)


def _load_client_plugins_lazily():
    """Heat's client plugins imported when a resource asks for one.

    heat.engine.clients.initialise imports all twenty (each with its
    service's client library) before the first template is read: half
    of Heat's start-up, for services offline validation never reaches.
    None of them has an is_available check to run at load time.
    """
    from heat.engine import clients

    if clients._mgr is None:
        clients._mgr = _LazyPlugins('heat.clients')


class _LazyPlugins:
    """An entry-point group's plugins, each loaded on first use.

    What Heat reads of a stevedore ExtensionManager: names() and [name].
    """

    def __init__(self, group):
        self._points = {point.name: point for point in
                        importlib.metadata.entry_points(group=group)}
        self._loaded = {}

    def names(self):
        return list(self._points)

    def __getitem__(self, name):
        if name not in self._loaded:
            self._loaded[name] = types.SimpleNamespace(
                name=name, plugin=self._points[name].load())
        return self._loaded[name]


class _NoYield:
    """heat.engine.stack's `time`, without the yield after each resource.

    Stack.validate sleeps 0 s after each resource to let other green
    threads of the engine run; here there are none, and on a busy host
    each yield hands the CPU away for milliseconds.
    """

    def __getattr__(self, name):
        return getattr(time, name)

    @staticmethod
    def sleep(seconds):
        if seconds:
            time.sleep(seconds)


def _validated_once(validate_nested_stack):
    """StackResource.validate_nested_stack, once per distinct input."""
    @functools.wraps(validate_nested_stack)
    def validated_once(resource):
        return NESTED.validate(_lenient_key(resource), functools.partial(
            validate_nested_stack, resource))
    return validated_once


def _lenient_key(resource):
    """What validate_nested_stack parses the nested stack from, or None."""
    try:
        parent = resource.stack
        parts = (parent.name, resource.name, resource.type(),
                 resource.template_url, resource.child_template(),
                 dict(resource.child_params()), _inherited(parent.env),
                 parent.nested_depth, parent.strict_validate)
    except Exception:
        return None     # the validation itself will say what is wrong
    return nested_mod.key(*parts, files=parent.t.files)


def _inherited(environment):
    """What a nested stack's environment takes from its parent's.

    All but the parameters (heat.engine.environment.get_child_environment).
    """
    inherited = environment.user_env_as_dict()
    inherited.pop('parameters', None)
    return inherited


def _no_client(plugin, *args, **kwargs):
    raise CloudRequired('offline validation cannot reach the %s service'
                        % type(plugin).__module__.rsplit('.', 1)[-1])


class _NoEngine:
    """The engine a resource would ask about its created nested stack.

    A ResourceGroup builds an inspector of its members at validate time
    (for its removal policies); offline no member exists, so the inspector
    never asks. Anything that does ask is told why there is no answer.
    """

    def __getattr__(self, name):
        def ask(*args, **kwargs):
            raise CloudRequired('offline validation has no Heat engine '
                                'to ask (%s)' % name)
        return ask


def _no_engine(resource):
    return _NoEngine()


def _no_fetch(error, url, *args, **kwargs):
    message = ('offline validation fetches nothing (%s): put the file in '
               'the template\'s directory and name it by a relative path'
               % url)
    raise error(message)


def _bounded_repeat(result, resolve):
    @functools.wraps(result)
    def bounded(repeat):
        for_each = resolve(repeat._for_each)
        sizes = [len(v) for v in (for_each.values() if isinstance(
            for_each, dict) else ()) if isinstance(v, (list, dict))]
        copies = (math.prod(sizes) if repeat._nested_loop else
                  max(sizes, default=0))
        if copies > MAX_REPEAT:
            message = ('%s would make %d copies of its template, more than '
                       '%d' % (repeat.fn_name, copies, MAX_REPEAT))
            raise ValueError(message)
        return result(repeat)
    return bounded


def _skip_image_flavor_check(server, image, flavor):
    _recorder.skipped.append(SkippedLookup(
        'image fits flavor (image active, min_ram, min_disk)', image))


def _assume_microversion(plugin, version):
    _recorder.skipped.append(SkippedLookup('compute API microversion',
                                           str(version)))
    return True


def _initialise_resources(resources, base):
    """Heat's global environment, its constraint plugins loaded lazily.

    heat.engine.resources.initialise imports every plugin of the
    heat.constraints entry points, which are the client plugins of
    twenty services with their client libraries (ironic's brings the
    OpenStack SDK): a second of start-up for the five or so constraints
    a template names. Here each is loaded when a value is first checked
    against it, then neutralised as it would have been at start-up.
    """
    get_mapping = resources._get_mapping

    def mapping(namespace):
        return [] if namespace == CONSTRAINTS else get_mapping(namespace)

    resources._get_mapping = mapping
    try:
        resources.initialise()
    finally:
        resources._get_mapping = get_mapping
    env = resources.global_env()
    # What the resource plugins registered themselves beats the entry
    # points, as in Heat, which registers those after.
    env.constraints = _LazyConstraints(CONSTRAINTS, base, env.constraints)


class _LazyConstraints(dict):
    """Environment.constraints: entry points loaded on the first get.

    Heat reads it only through Environment.get_constraint (get) and
    register_constraint (item assignment).
    """

    def __init__(self, group, base, registered):
        super().__init__((name, _neutral(name, cls, base))
                         for name, cls in registered.items())
        self._base = base
        self._points = {point.name: point for point in
                        importlib.metadata.entry_points(group=group)}
        self._lock = threading.Lock()

    def get(self, name, default=None):
        with self._lock:
            if name not in self and name in self._points:
                point = self._points[name]
                self[name] = _neutral(name, point.load(), self._base)
            return super().get(name, default)


def _neutral(name, cls, base):
    """A lookup constraint (glance.image, ...) replaced by a skipping one."""
    if not (isinstance(cls, type) and issubclass(cls, base)):
        return cls
    if cls.validate is not base.validate:
        return cls  # a pure check (net_cidr, mac_addr, ...): keep it
    return _skipping_constraint(name, base)


def _skipping_constraint(name, base):
    class SkippedLookupConstraint(base):
        def validate(self, value, context, template=None):
            if value not in (None, ''):
                _recorder.skipped.append(SkippedLookup(name, str(value)))
            return True

    SkippedLookupConstraint.__name__ = 'Skipped_%s' % name.replace('.', '_')
    return SkippedLookupConstraint


class SkippedLookups:
    """Collect the lookups skipped while a block of code runs."""

    def __enter__(self):
        self._start = len(_recorder.skipped)
        self.lookups = []
        return self

    def __exit__(self, *exc):
        found = _recorder.skipped[self._start:]
        del _recorder.skipped[self._start:]
        seen = set()
        for lookup in found:
            if lookup not in seen:
                seen.add(lookup)
                self.lookups.append(lookup)
        return False


def request_context():
    h = heat()
    return h.context.RequestContext(
        user_id='epa-chain', project_id='epa-chain', is_admin=True,
        auth_token_info={'token': {}})


def parse_stack(template_set, name='epa-chain'):
    """Build Heat's Stack object for a loaded template set (nothing stored)."""
    h = heat()
    env = h.environment.Environment(template_set.environment)
    tmpl = h.template.Template(template_set.template,
                               files=template_set.files, env=env)
    return h.stack.Stack(request_context(), name, tmpl, strict_validate=True)
