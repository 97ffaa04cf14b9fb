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

from epa_chain import findings as finding_model

ERROR = 'error'
# Valid, but probably not what the operator wants (the stack still passes).
WARNING = 'warning'
SKIPPED = 'skipped'
# Validation's words on the one scale (epa_chain/findings.py): a check
# that needs a cloud is skipped offline, and a clean template passes.
SOURCE = finding_model.Source(
    'validation', 'epa-chain/validate/1', (
        (ERROR, finding_model.FAILS), (WARNING, finding_model.WARNS),
        (SKIPPED, finding_model.UNANSWERED)),
    'severity', (('subject', 'WHERE'), ('rule', 'RULE')), empty_passes=True)


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

    def finding(self):
        """This finding in the one model (epa_chain/findings.py)."""
        return finding_model.Finding(
            SOURCE, self.location(), self.severity, self.message, self.fix,
            (('rule', self.rule), ('file', self.file),
             ('resource', self.resource), ('property', self.property),
             ('parameter', self.parameter)))

    def as_dict(self):
        return self.finding().as_dict()


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
        return finding_model.passed(SOURCE, [f.finding()
                                             for f in self.findings])

    def table(self):
        """The errors and warnings as the one findings table."""
        return finding_model.table(SOURCE, [
            f.finding() for f in self.errors + self.warnings])

    def as_dict(self):
        """The one findings shape; errors/warnings/skipped kept for readers."""
        return finding_model.document(
            SOURCE, [f.finding() for f in self.findings],
            template=self.template, environments=list(self.environments),
            valid=self.ok, seconds=round(self.seconds, 4),
            errors=[f.as_dict() for f in self.errors],
            warnings=[f.as_dict() for f in self.warnings],
            skipped=[f.as_dict() for f in self.skipped])
