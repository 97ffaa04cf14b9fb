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

"""A stack as Heat would create it, without creating anything.

`resolve` loads a template with its environments as the Heat client
uploads them (files), puts the given parameters on top as `openstack
stack create --parameter` does, lets Heat's engine parse and strictly
validate it (offline) and realises every resource (realise), nested
stacks included. The result is what the validation rules check and what
the local bed and the Tempest plugin build on: the realisation, the
chain's topology and the parameters used.
"""

import copy
import dataclasses
import typing

from epa_chain.chain import topology as topo
from epa_chain.hot import files
from epa_chain.hot import offline
from epa_chain.hot import realise


@dataclasses.dataclass
class Resolved:
    """A stack Heat resolved: every value its resources would get."""

    template_set: files.TemplateSet
    stack_name: str
    parameters: typing.Dict[str, typing.Any]
    realisation: realise.Realisation
    topology: topo.Topology
    # Lookups only a cloud can answer (images, flavors, networks by name).
    skipped: typing.List[offline.SkippedLookup]

    @property
    def display_template(self):
        return self.template_set.display_path(
            self.template_set.template_path)

    def cloud_lookups(self):
        """Skipped lookups of things the stack does not create itself."""
        in_stack = {r.resource_id
                    for r in self.realisation.resources.values()}
        return [lookup for lookup in self.skipped
                if lookup.value not in in_stack]


class ResolveError(Exception):
    """Heat refused the stack (or a file would not load).

    `error` is Heat's exception (or files.LoadError), `template` the file
    it is about and `context` the resource path of the nested stack Heat
    was realising; `skipped` the cloud lookups seen before it failed.
    """

    def __init__(self, error, template_set=None, template=None,
                 context=(), skipped=()):
        self.error = error
        self.template_set = template_set
        self.template = template
        self.context = tuple(context)
        self.skipped = list(skipped)
        super().__init__('%s: %s' % (template or getattr(error, 'path', ''),
                                     error))

    @property
    def load_error(self):
        return isinstance(self.error, files.LoadError)


class TopologyError(Exception):
    """The chain cannot be read out of what the stack's servers get."""


# What reading hostile values (a server's user_data) can raise.
_UNREADABLE = (AttributeError, TypeError, KeyError, IndexError, ValueError,
               RecursionError)


def resolve(template, environments=(), parameters=None,
            stack_name='epa-chain', allow_outside=False, inline=False):
    """Resolve a template with its environments; ResolveError if refused.

    `template` is a path, loaded with the `environments` (paths) as the
    Heat client uploads them, or a files.TemplateSet already loaded (a
    created stack's: files.from_heat), which carries its environment.
    `parameters` merge as `openstack stack create -e ENV --parameter`
    sends them and Heat merges them: over the environments', and then
    each environment file's own parameters over them again (heat_merge);
    `inline`: the environments go inline (the API's `environment`, as
    heatclient's stacks.create sends them), not as environment files:
    then the parameters win. `stack_name` is what OS::stack_name
    resolves to.
    Files outside the template's directory tree are refused unless
    `allow_outside` (hot/tree.py).
    """
    parameters = dict(parameters or {})
    template_set = _template_set(template, environments, parameters,
                                 allow_outside, inline)
    top = template_set.display_path(template_set.template_path)
    with offline.SkippedLookups() as skipped:
        try:
            stack = offline.parse_stack(template_set, stack_name)
            stack.validate()
            realisation = realise.realise(stack, template_set)
        except realise.RealisationError as exc:
            failure = ResolveError(exc.error, template_set, exc.template,
                                   exc.path)
        except Exception as exc:
            failure = ResolveError(exc, template_set, top)
        else:
            failure = None
    if failure is not None:
        failure.skipped = list(skipped.lookups)
        raise failure
    try:
        topology = topo.build(realisation)
    except _UNREADABLE as exc:
        # Values the template wrote (user_data, say) the chain model
        # cannot read: the template's error, not a crash.
        raise ResolveError(TopologyError('%s: %s' % (
            type(exc).__name__, exc)), template_set, top,
            skipped=skipped.lookups)
    return Resolved(template_set=template_set, stack_name=stack_name,
                    parameters=parameters, realisation=realisation,
                    topology=topology, skipped=list(skipped.lookups))


def _template_set(template, environments, parameters, allow_outside,
                  inline=False):
    """The files to resolve, with `parameters` over the environments'."""
    if isinstance(template, files.TemplateSet):
        if environments:
            raise TypeError('a loaded TemplateSet carries its environment')
        # Parameters go on a copy: the caller's set stays as Heat holds it.
        template_set = dataclasses.replace(template)
    else:
        try:
            template_set = files.load(template, list(environments),
                                      allow_outside)
        except files.LoadError as exc:
            raise ResolveError(exc, template=exc.path)
    if inline:
        template_set.environment_files = []
    if parameters:
        template_set.environment = heat_merge(template_set, parameters)
    return template_set


def heat_merge(template_set, parameters):
    """The environment Heat's engine builds for `stack create -e ... -P`.

    Done with Heat's own code, in Heat's order: the API takes the
    parameters and, when environment files are named, not the environment
    the client merged (heat/api/openstack/v1/stacks.InstantiationData);
    the engine then merges each environment file over that, in order
    (heat/common/environment_util.merge_environments, "Overriding
    Parameter"): an environment file's value beats --parameter. With no
    environment file (an environment given inline, as the Tempest
    benchmark's heatclient call does), the parameters win.
    """
    heat = offline.heat()       # initialised, and quiet
    from heat.api.openstack.v1 import stacks as heat_api
    from heat.common import environment_util

    request = heat_api.InstantiationData({
        'parameters': dict(parameters),
        'environment': copy.deepcopy(template_set.environment),
        'environment_files': list(template_set.environment_files),
        'files': template_set.files})
    merged = request.environment()
    schemata = heat.template.Template(
        template_set.template, files=template_set.files).all_param_schemata(
            template_set.files)
    environment_util.merge_environments(
        request.environment_files(), template_set.files, merged, schemata)
    return merged


def overridden(template_set, parameters):
    """The parameters an environment file overrides (heat_merge).

    {name: (given, kept, the last environment file setting it)}.
    """
    kept = (template_set.environment.get('parameters') or {})
    found = {}
    for name, value in parameters.items():
        if name in kept and kept[name] != value:
            where = _last_setting(template_set, name)
            found[name] = (value, kept[name], where)
    return found


def _last_setting(template_set, name):
    from heat.common import environment_format

    setting = ''
    for url in template_set.environment_files:
        document = environment_format.parse(template_set.files[url])
        if name in (document.get(environment_format.PARAMETERS) or {}):
            setting = template_set.display_path(url)
    return setting
