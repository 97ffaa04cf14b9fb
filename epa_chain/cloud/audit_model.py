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

"""What an EPA audit holds: what a server asked, what Nova gave, findings.

Asked (the flavor's extra specs, the image's hw_* properties where the
flavor leaves the choice open) and NovaGiven (Nova's server topology,
compute API 2.78) are read from the server as Nova shows it; a Finding
is one aspect of one server, asked against given, with a severity. The
audit's JSON document and console table are its forms.
"""

import dataclasses
import typing

from epa_chain import findings as finding_model

# The audit's words and columns are findings.AUDIT's: the results
# report (measurement, a lower layer) renders recorded audits too.
SOURCE = finding_model.AUDIT
SCHEMA = SOURCE.schema
SEVERITIES = tuple(word for word, _ in SOURCE.words)
INVALIDATES, WARNING, INFO = SEVERITIES
_LARGE = ('large', '2MB', '2048', '1GB', '1048576')


@dataclasses.dataclass(frozen=True)
class Asked:
    """What a server asked of Nova.

    Its flavor's EPA extra specs, and its image's hw_* properties where
    the flavor leaves the choice open.
    """

    cpu_policy: str
    mem_page_size: str
    numa_nodes: int
    emulator_threads_policy: str
    #: {'cpu_policy' | 'mem_page_size': 'flavor' | 'image' | 'default'}
    sources: typing.Mapping[str, str] = dataclasses.field(
        default_factory=dict)

    @classmethod
    def of_server(cls, shown, image_properties=None):
        specs = (shown.get('flavor') or {}).get('extra_specs') or {}
        image = image_properties or {}
        sources = {}

        def pick(key, spec, prop, default, open_values=()):
            # The flavor decides; the image where the flavor sets nothing
            # or leaves a choice (hw:mem_page_size any/large: Nova takes
            # the image's size).
            flavor_value = specs.get(spec)
            image_value = image.get(prop)
            if image_value not in (None, '') and (
                    flavor_value in (None, '') or
                    str(flavor_value) in open_values):
                sources[key] = 'image'
                return str(image_value)
            if flavor_value not in (None, ''):
                sources[key] = 'flavor'
                return str(flavor_value)
            sources[key] = 'default'
            return default

        return cls(cpu_policy=pick('cpu_policy', 'hw:cpu_policy',
                                   'hw_cpu_policy', 'shared'),
                   mem_page_size=pick('mem_page_size', 'hw:mem_page_size',
                                      'hw_mem_page_size', '',
                                      ('any', 'large')),
                   numa_nodes=int(pick('numa_nodes', 'hw:numa_nodes',
                                       'hw_numa_nodes', '0') or 0),
                   emulator_threads_policy=pick(
                       'emulator_threads_policy',
                       'hw:emulator_threads_policy',
                       'hw_emulator_threads_policy', ''),
                   sources=sources)

    def asked_by(self, key):
        """'the flavor', 'the image' or 'nobody' for messages."""
        return {'flavor': 'the flavor', 'image': 'the image'}.get(
            self.sources.get(key), 'nobody')

    @property
    def large_pages(self):
        return self.mem_page_size in _LARGE


@dataclasses.dataclass(frozen=True)
class NovaGiven:
    """Nova's server topology (compute API 2.78, admin for pinning)."""

    host_nodes: typing.Tuple[int, ...]
    # {vCPU: host CPU}; empty when the vCPUs float.
    pinning: typing.Mapping[int, int]
    pagesize_kb: typing.Optional[int]

    @classmethod
    def of_server(cls, shown):
        """None when the server shows no topology (API before 2.78)."""
        topology = shown.get('topology')
        if not topology:
            return None
        nodes = topology.get('nodes') or []
        pinning = {}
        for node in nodes:
            for vcpu, cpu in (node.get('cpu_pinning') or {}).items():
                pinning[int(vcpu)] = int(cpu)
        return cls(host_nodes=tuple(node.get('host_node') for node in nodes),
                   pinning=pinning, pagesize_kb=topology.get('pagesize_kb'))


@dataclasses.dataclass(frozen=True)
class Finding:
    server: str
    aspect: str
    asked: str
    given: str
    severity: str
    message: str

    def finding(self):
        """This finding in the one model (epa_chain/findings.py)."""
        return finding_model.Finding(
            SOURCE, self.server, self.severity, self.message, '',
            (('server', self.server), ('aspect', self.aspect),
             ('asked', self.asked), ('given', self.given)))

    def as_dict(self):
        return self.finding().as_dict()


def invalidating(findings):
    return [f for f in findings if f.severity == INVALIDATES]


def document(stack, findings, host_checked):
    """The audit's JSON document (the one findings shape).

    An audit that read no server found nothing wrong and nothing right:
    not valid (fail closed), as a finding that invalidates is not.
    """
    found = [f.finding() for f in findings]
    return finding_model.document(
        SOURCE, found, stack=stack, host_checked=host_checked,
        valid=finding_model.passed(SOURCE, found))


def table(findings):
    """"EPA: asked vs given", one row per server and aspect."""
    return 'EPA: asked vs given\n' + finding_model.table(
        SOURCE, [f.finding() for f in findings])
