"""The `epa-chain` command: one subcommand per job, each in its own module.

Subcommands register themselves through `COMMANDS`; each module provides
`add_arguments(parser)` and `run(args) -> exit code`.
"""

import argparse
import sys

from epa_chain.commands import validate

COMMANDS = {
    'validate': validate,
}


def build_parser():
    parser = argparse.ArgumentParser(
        prog='epa-chain',
        description='Deploy an NFV service chain on an OVS-DPDK cloud and '
                    'measure its data plane.')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND')
    subparsers.required = True
    for name, module in COMMANDS.items():
        doc = (module.__doc__ or '').strip()
        sub = subparsers.add_parser(name, help=doc.splitlines()[0],
                                    description=doc)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == '__main__':
    sys.exit(main())
