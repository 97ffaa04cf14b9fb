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

"""The argparse actions of an epa-chain (sub)command, for option tests.

Shared by epa-chain's own tests and the Tempest plugin's, which compare
the command line's campaign options with the Tempest options.
"""

from epa_chain import cli


def actions(*argv):
    """{flag: argparse action} of the (sub)command `argv` names."""
    parser = cli.build_parser()
    for name in argv:
        (sub,) = [a for a in parser._actions
                  if getattr(a, 'choices', None) and name in a.choices and
                  isinstance(a.choices, dict)]
        parser = sub.choices[name]
    return {flag: action for action in parser._actions
            for flag in action.option_strings}
