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

"""What validation found, addressed the way an operator fixes it."""

import dataclasses
import typing

ERROR = 'error'
# Valid, but probably not what the operator wants (the stack still passes).
WARNING = 'warning'
SKIPPED = 'skipped'


@dataclasses.dataclass(frozen=True)
class Finding:
    """One problem (or one check that could not run offline).

    Every finding names where to look (file, resource, property) and what
    to change, so that the message alone is enough to fix the template.
    """

    rule: str
    message: str
    fix: str = ''
    file: str = ''
    resource: str = ''
    property: str = ''
    severity: str = ERROR
    parameter: str = ''

    def location(self):
        parts = [self.file or '<input>']
        if self.parameter:
            parts.append('parameter %s' % self.parameter)
        if self.resource:
            parts.append('resource %s' % self.resource)
        if self.property:
            parts.append('property %s' % self.property)
        return ', '.join(parts)

    def __str__(self):
        text = '%s: [%s] %s%s' % (
            self.location(), self.rule,
            'warning: ' if self.severity == WARNING else '', self.message)
        if self.fix:
            text += '\n    fix: %s' % self.fix
        return text

    def as_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Report:
    """The outcome of validating one template with its environments."""

    template: str
    environments: typing.List[str]
    findings: typing.List[Finding] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    @property
    def errors(self):
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self):
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def skipped(self):
        return [f for f in self.findings if f.severity == SKIPPED]

    @property
    def ok(self):
        return not self.errors

    def as_dict(self):
        return {
            'template': self.template,
            'environments': list(self.environments),
            'valid': self.ok,
            'seconds': round(self.seconds, 4),
            'errors': [f.as_dict() for f in self.errors],
            'warnings': [f.as_dict() for f in self.warnings],
            'skipped': [f.as_dict() for f in self.skipped],
        }
