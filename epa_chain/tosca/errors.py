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

"""Errors in a TOSCA template, addressed to the node and field to change."""

import dataclasses

from epa_chain import safe_yaml


@dataclasses.dataclass(frozen=True)
class ToscaProblem:
    """One thing wrong with a template: where it is and what to change.

    kind is what `node` names: a node template, an input, a policy, or the
    template itself (node empty).
    """

    file: str
    message: str
    node: str = ''
    field: str = ''
    fix: str = ''
    kind: str = 'node'

    def location(self):
        parts = [self.file or '<input>']
        if self.node:
            parts.append('%s %s' % (self.kind, self.node))
        if self.field:
            parts.append('field %s' % self.field)
        return ', '.join(parts)

    def __str__(self):
        text = '%s: %s' % (self.location(), self.message)
        if self.fix:
            text += '\n    fix: %s' % self.fix
        return text

    def line(self):
        """The problem on one line: where; what is wrong; the fix."""
        return safe_yaml.escape('%s: %s%s' % (
            self.location(), ' '.join(self.message.split()).rstrip('.'),
            '; %s' % self.fix if self.fix else ''))

    def as_dict(self):
        return dataclasses.asdict(self)


class ToscaError(Exception):
    """The template cannot be translated; `problems` says why, each one."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__('\n'.join(str(p) for p in self.problems))
