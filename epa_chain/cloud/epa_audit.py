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

"""Did the cloud give each server what its flavor asked? (EPA audit.)

Per server, what was asked (the flavor's extra specs as Nova embeds them
in the server, the image's hw_* properties) is set against what was
given: Nova's server topology (API 2.78) and, where the compute host is
this host, libvirt's domain and Open vSwitch's PMDs. This module reads
a stack's servers and hands each to the rules; its parts, one job each:

audit_model     what was asked, what Nova gave, the findings and forms.
audit_rules     asked against given: one server's findings.
host_readers    libvirt's domain XML and OVS's PMD text, parsed.
host_commands   virsh and ovs-appctl on the compute host, bounded.

`epa-chain audit` (commands/audit.py) calls audit_stack through the
openstack client; the Tempest scenarios call audit_servers with their
admin compute client and record the document in every results file.
An answer the audit cannot read (not JSON, another shape, a domain XML
that does not parse) is an AnswerError naming its source and the fix;
an audit that read no server is not valid (nothing read is not clean).
"""

import contextlib
import dataclasses
import re
import typing

from epa_chain.cloud import audit_model
from epa_chain.cloud import audit_rules
from epa_chain.cloud import host_commands
from epa_chain.cloud import host_readers

# The names callers use, where they use them.
HOST_PART = host_commands.HOST_PART
HostError = host_commands.HostError
document = audit_model.document
table = audit_model.table
invalidating = audit_model.invalidating

_UUID = re.compile(r'[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}')
CLIENT_FIX = ('run the command by hand with --debug; the audit needs '
              'python-openstackclient\'s JSON (-f json) at compute API '
              '2.78, with admin credentials')
DOMAIN_FIX = ('check libvirtd on this host (virsh -c qemu:///system '
              'dumpxml NAME), or skip the host part with --host no')


class AnswerError(ValueError):
    """An answer the audit cannot read; names its source and the fix."""


@contextlib.contextmanager
def _reading(source, fix=CLIENT_FIX):
    """AnswerError naming `source` for an answer not of its shape."""
    try:
        yield
    except AnswerError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError,
            host_readers.ParseError) as exc:
        raise AnswerError('%s: cannot be read (%s: %s); fix: %s' % (
            source, type(exc).__name__, ' '.join(str(exc).split()),
            fix)) from None


@dataclasses.dataclass(frozen=True)
class Audit:
    """A stack's audit: the findings, and how much of it was read."""

    stack: str
    findings: typing.Tuple[audit_model.Finding, ...]
    # The servers whose libvirt domain and OVS PMDs were read.
    host_checked: typing.Tuple[str, ...]
    servers: int

    def document(self):
        return audit_model.document(self.stack, list(self.findings),
                                    list(self.host_checked))

    @property
    def clean(self):
        return self.document()['valid']

    def summary(self):
        """One line: what invalidates, or that nothing was read, or ok."""
        bad = audit_model.invalidating(self.findings)
        if bad:
            return '%d finding(s) invalidate a measurement' % len(bad)
        if not self.findings:
            return ('nothing was read: the stack shows no server to audit, '
                    'so nothing says its measurements are of what was '
                    'asked; fix: audit a stack in CREATE_COMPLETE, with '
                    'admin credentials')
        return ('nothing invalidates a measurement (host read for %d of %d '
                'servers)' % (len(self.host_checked), self.servers))


def audit_stack(cli, stack, host='auto'):
    """The Audit of a created stack, through the openstack client.

    `cli` an openstack_cli.OpenStackCLI; `host` one of HOST_PART.
    CLIError when the client fails, AnswerError when its answer cannot
    be read, HostError when a host command fails.
    """
    with _reading('`openstack stack resource list %s` (its servers)'
                  % stack):
        servers = cli.stack_servers(stack)
    shown = {}
    for server_id in sorted(servers):
        with _reading('`openstack server show --topology %s`' % server_id):
            shown[server_id] = cli.server_topology(server_id)
    findings, host_checked = audit_servers(
        shown, host, image_properties=_image_reader(cli))
    return Audit(stack, tuple(findings), tuple(host_checked), len(shown))


def _image_reader(cli):
    def image_properties(image_id):
        with _reading('`openstack image show %s`' % image_id):
            return cli.image_properties(image_id)
    return image_properties


def audit_servers(shown, host='auto', here=None, run=None,
                  image_properties=None):
    """(findings, names of the servers whose host part was read).

    `shown`: {server id: the server as server_topology shows it}; `host`
    one of HOST_PART: auto reads libvirt and Open vSwitch for the servers
    Nova says run on `here` (this host's name) when virsh is installed;
    `image_properties(image id)`: the image's hw_* properties (None: the
    flavor alone is what was asked). HostError when a host command fails,
    AnswerError when a server or its domain cannot be read.
    """
    reader = _HostReader(host, here, run)
    images = _Images(image_properties)
    findings, host_checked, read = [], [], []
    for server_id, name, server in _named(shown):
        domain, rxqs = reader.read(name, server)
        read.append((name, domain, rxqs))
        if domain is not None:
            host_checked.append(name)
        with _reading('server %s (%s) as Nova showed it (`server show '
                      '--topology`)' % (name, server_id)):
            findings += audit_rules.audit_server(
                name, server, domain, rxqs, images.of(image_of(server)))
    return findings + audit_rules.between_chains(read), host_checked


def _named(shown):
    """[(server id, name, server)] by name; AnswerError names a bad one."""
    named = []
    for server_id, server in shown.items():
        with _reading('server %s as Nova showed it (`server show '
                      '--topology`), its name' % server_id):
            named.append((server_id, str(server['name']), server))
    return sorted(named, key=lambda item: item[1])


class _HostReader:
    """libvirt's domain of the servers on this host; OVS's PMDs once."""

    def __init__(self, choice, here, run):
        self.choice, self.here, self.run = choice, here, run
        self.rxqs = None

    def read(self, name, server):
        """(DomainGiven, rxqs) of a server here, else (None, None)."""
        if not host_commands.on_this_host(self.choice, server, self.here):
            return None, None
        if self.rxqs is None:
            self.rxqs = host_readers.rxqs_of(
                host_commands.pmd_rxq_show(self.run))
        xml = host_commands.domain_xml(server, self.run)
        with _reading('`virsh dumpxml` of server %s' % name, DOMAIN_FIX):
            return host_readers.DomainGiven.of_xml(xml), self.rxqs


class _Images:
    """Each image's hw_* properties, asked once."""

    def __init__(self, image_properties):
        self.ask = image_properties
        self.known = {}

    def of(self, image_id):
        if self.ask is None or image_id is None:
            return None
        if image_id not in self.known:
            self.known[image_id] = self.ask(image_id)
        return self.known[image_id]


def image_of(server):
    """The server's image ID (None: booted from a volume).

    The compute API gives {'id': ...}; the openstack client prints
    'name (id)'.
    """
    image = server.get('image')
    if isinstance(image, dict):
        image = image.get('id')
    if not isinstance(image, str):
        return None
    found = _UUID.findall(image)
    return found[-1] if found else None


def hw_properties(properties):
    """The hw_* properties of an image, as strings."""
    return {key: str(value) for key, value in (properties or {}).items()
            if isinstance(key, str) and key.startswith('hw_')}
