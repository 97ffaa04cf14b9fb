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

"""Preflight of a stack from its files: the one check, then the cloud.

`epa-chain preflight`'s one call. The stack goes through the one
resolve-and-check (validation/check.py:check_stack), so a stack validate
refuses (a NaN parameter, a rule's error) is refused here too, before
the cloud is asked anything; then preflight's questions, and the gate,
which fails closed unless allow_unchecked.
"""

import dataclasses
import typing

from epa_chain.cloud import preflight
from epa_chain.cloud import stack_needs
from epa_chain.validation import check
from epa_chain.validation import findings as findings_mod


@dataclasses.dataclass(frozen=True)
class Preflight:
    """What preflight found of a stack the rules passed."""

    # The stack's top template, as the user named it.
    template: str
    # The rules' warnings (PARAM-OVERRIDDEN and the like).
    warnings: typing.Tuple[findings_mod.Finding, ...]
    findings: typing.Tuple[preflight.Finding, ...]
    gate: preflight.Gate

    def document(self):
        return preflight.document(list(self.findings), self.template,
                                  self.gate.allow_unchecked)


def preflight_stack(template, environments, parameters, cloud,
                    stack_name='epa-chain', allow_outside=False,
                    allow_unchecked=False):
    """The Preflight of a stack on `cloud` (a CloudView or alike).

    check.StackRefused, nothing asked of the cloud, when the offline
    check refuses the stack.
    """
    checked = check.check_stack(template, environments, parameters,
                                stack_name=stack_name,
                                allow_outside=allow_outside)
    found = tuple(preflight.check(stack_needs.needs_of(checked), cloud))
    return Preflight(
        template=checked.display_template,
        warnings=tuple(f for f in checked.findings
                       if f.severity == findings_mod.WARNING),
        findings=found, gate=preflight.gate(found, allow_unchecked))
