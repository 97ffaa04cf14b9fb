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

main() is the one error boundary of every command: what a command did not
turn into its own message - an unreadable file, a bad value, a truncated
or too deeply nested input - becomes one line, `epa-chain CMD: reason`,
and exit status 2; an interrupt exits 130 and a bug of ours 70, each with
one line, never a traceback. EPA_CHAIN_DEBUG=1 lets the exception
through, with its traceback.
"""

import argparse
import importlib
import os
import pkgutil
import sys

from epa_chain import commands
from epa_chain import safe_yaml


def _commands(wanted=None):
    """{command: module}: every command, or only `wanted` when it is one.

    A command's run needs only its own module; importing all of them
    took a quarter of a second of `epa-chain validate`.
    """
    names = sorted(info.name for info in pkgutil.iter_modules(
        commands.__path__) if not info.name.startswith('_'))
    if wanted is not None and wanted.replace('-', '_') in names:
        names = [wanted.replace('-', '_')]
    return {name.replace('_', '-'): importlib.import_module(
        'epa_chain.commands.' + name) for name in names}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors, as every other error here.

    argparse prints the whole usage first; the error then scrolls under
    it. One line names the option; --help has the rest.
    """

    def error(self, message):
        self.exit(2, '%s: %s; see %s --help\n' % (
            self.prog, ' '.join(message.split()), self.prog))


def build_parser(wanted=None):
    """The parser of every command (of `wanted` alone, when it is one)."""
    parser = _Parser(
        prog='epa-chain',
        description='Deploy an NFV service chain on an OVS-DPDK cloud and '
                    'measure its data plane.')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND')
    subparsers.required = True
    for name, module in _commands(wanted).items():
        doc = (module.__doc__ or '').strip()
        # The docstrings are laid out by hand (examples, lists): keep it.
        sub = subparsers.add_parser(
            name, help=doc.splitlines()[0], description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


DEBUG_VARIABLE = 'EPA_CHAIN_DEBUG'
#: What bad input raises, in any command (UnicodeDecodeError and
#: outputs.OutputError are ValueErrors): exit status 2.
INPUT_ERRORS = (OSError, ValueError, EOFError, RecursionError)
USAGE = 2
#: A bug of ours (sysexits' EX_SOFTWARE), apart from the commands' 0/1/2.
INTERNAL = 70
INTERRUPTED = 130


def describe(error):
    """One line saying what went wrong, naming the file where known."""
    if isinstance(error, OSError):
        names = [n for n in (error.filename, error.filename2)
                 if n is not None]
        reason = error.strerror or str(error)
        text = ('%s: %s' % (' -> '.join(str(n) for n in names), reason)
                if names else reason)
    elif isinstance(error, UnicodeDecodeError):
        text = ('not %s text: byte 0x%02x at offset %d; give a text file'
                % (error.encoding, error.object[error.start], error.start))
    elif isinstance(error, RecursionError):
        text = 'input nested too deeply to read'
    elif isinstance(error, EOFError):
        text = 'input ended early (%s); is the file truncated?' % (
            str(error) or 'end of file')
    else:
        text = str(error) or type(error).__name__
    # A path or value with a newline in it must not make a second line.
    return safe_yaml.escape(text.strip())


def _name(args):
    """'measure', or 'prox build' for a command with actions."""
    action = getattr(args, 'action', None)
    return '%s %s' % (args.command, action) if isinstance(action, str) \
        else args.command


class _Escaping:
    """A text stream that shows each unprintable character as an escape.

    Messages and reports quote files, names and values from hostile input
    (and Heat's messages quote templates): a raw ESC or a bidi override in
    them would drive the reader's terminal. Newlines and tabs pass.
    """

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        if not text.isprintable():
            text = ''.join(char if char.isprintable() or char in '\n\t'
                           else repr(char)[1:-1] for char in text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv=None):
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaping(sys.stdout), _Escaping(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv):
    words = sys.argv[1:] if argv is None else argv
    # The command is the first word; before it only --help can come.
    args = build_parser(words[0] if words else None).parse_args(argv)
    debug = bool(os.environ.get(DEBUG_VARIABLE))
    name = _name(args)
    try:
        return args.run(args)
    except BrokenPipeError:
        # The reader (head, less) went away: not an error of ours.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        if debug:
            raise
        print('epa-chain %s: interrupted' % name, file=sys.stderr)
        return INTERRUPTED
    except INPUT_ERRORS as error:
        # The last resort: commands give their own, more specific messages.
        if debug:
            raise
        print('epa-chain %s: %s' % (name, describe(error)),
              file=sys.stderr)
        return USAGE
    except Exception as error:
        if debug:
            raise
        print('epa-chain %s: internal error: %s: %s; %s=1 shows where, '
              'please report it' % (name, type(error).__name__,
                                    describe(error), DEBUG_VARIABLE),
              file=sys.stderr)
        return INTERNAL


if __name__ == '__main__':
    sys.exit(main())
