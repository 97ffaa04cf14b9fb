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

"""The `epa-chain` command: one subcommand per job, each in its own module.

Every module in `epa_chain.commands` is a subcommand named after it; each
provides `add_arguments(parser)` and `run(args) -> exit code`, and its
docstring is the help text. Adding a command is adding a module.
"""

import argparse
import importlib
import pkgutil
import sys

from epa_chain import commands


def _commands():
    found = {}
    for info in sorted(pkgutil.iter_modules(commands.__path__),
                       key=lambda info: info.name):
        if info.name.startswith('_'):
            continue
        module = importlib.import_module('epa_chain.commands.' + info.name)
        found[info.name.replace('_', '-')] = module
    return found


def build_parser():
    parser = argparse.ArgumentParser(
        prog='epa-chain',
        description='Deploy an NFV service chain on an OVS-DPDK cloud and '
                    'measure its data plane.')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND')
    subparsers.required = True
    for name, module in _commands().items():
        doc = (module.__doc__ or '').strip()
        # The docstrings are laid out by hand (examples, lists): keep it.
        sub = subparsers.add_parser(
            name, help=doc.splitlines()[0], description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:
        # The reader (head, less) went away: not an error of ours.
        sys.stderr.close()
        return 0


if __name__ == '__main__':
    sys.exit(main())
