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

"""The one error boundary of `epa-chain`: whatever a command raises."""

import contextlib
import errno
import io
import os
from unittest import mock

import testtools

from epa_chain import cli
from epa_chain.commands import prox
from epa_chain.commands import report
from epa_chain import outputs


def run_raising(error, argv=('report', 'r.json'), module=report):
    """cli.main(argv) with the command's run() raising `error`."""
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.object(module, 'run', side_effect=error), \
            mock.patch.dict(os.environ, {cli.DEBUG_VARIABLE: ''}), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


class TestBoundary(testtools.TestCase):

    def assertOneLine(self, expected, err):
        self.assertEqual(1, err.count('\n'), err)
        self.assertTrue(err.endswith('\n'), err)
        self.assertNotIn('Traceback', err)
        self.assertEqual(expected, err[:-1])

    def test_each_input_error_is_one_line_and_exit_2(self):
        for error, expected in (
                (FileNotFoundError(errno.ENOENT, 'No such file or directory',
                                   'r.json'),
                 'r.json: No such file or directory'),
                (PermissionError(errno.EACCES, 'Permission denied', 'a',
                                 None, 'b'),
                 'a -> b: Permission denied'),
                (OSError(errno.ENOSPC, 'No space left on device'),
                 'No space left on device'),
                (ValueError('--flows: give whole numbers'),
                 '--flows: give whole numbers'),
                (UnicodeDecodeError('utf-8', b'ab\xff', 2, 3,
                                    'invalid start byte'),
                 'not utf-8 text: byte 0xff at offset 2; give a text file'),
                (EOFError('Compressed file ended before the end-of-stream '
                          'marker was reached'),
                 'input ended early (Compressed file ended before the '
                 'end-of-stream marker was reached); is the file '
                 'truncated?'),
                (EOFError(), 'input ended early (end of file); is the file '
                             'truncated?'),
                (RecursionError('maximum recursion depth exceeded'),
                 'input nested too deeply to read'),
                (outputs.OutputError('--json o: exists and is a FIFO'),
                 '--json o: exists and is a FIFO')):
            code, out, err = run_raising(error)
            self.assertEqual(2, code, error)
            self.assertEqual('', out)
            self.assertOneLine('epa-chain report: ' + expected, err)

    def test_a_message_with_newlines_stays_one_line(self):
        # Escaped, not joined: the name shown is the name given.
        code, _out, err = run_raising(ValueError('bad\nfile\nname: x'))
        self.assertEqual(2, code)
        self.assertOneLine('epa-chain report: bad\\nfile\\nname: x', err)

    def test_control_characters_never_reach_the_terminal(self):
        code, out, err = run_raising(ValueError('OS::\x1b[31mRed \u202e'))
        self.assertEqual(2, code)
        self.assertOneLine('epa-chain report: OS::\\x1b[31mRed \\u202e',
                           err)

    def test_a_command_with_actions_is_named_with_its_action(self):
        code, _out, err = run_raising(
            ValueError('--source: refused'), argv=('prox', 'build'),
            module=prox)
        self.assertEqual(2, code)
        self.assertOneLine('epa-chain prox build: --source: refused', err)

    def test_interrupt_exits_130_with_one_line(self):
        code, _out, err = run_raising(KeyboardInterrupt())
        self.assertEqual(130, code)
        self.assertOneLine('epa-chain report: interrupted', err)

    def test_a_bug_of_ours_is_one_line_exit_70(self):
        code, _out, err = run_raising(TypeError('unhashable type: list'))
        self.assertEqual(70, code)
        self.assertOneLine(
            'epa-chain report: internal error: TypeError: unhashable type: '
            'list; EPA_CHAIN_DEBUG=1 shows where, please report it', err)

    def test_a_closed_pipe_is_not_an_error(self):
        err = io.StringIO()
        with mock.patch.object(report, 'run',
                               side_effect=BrokenPipeError()), \
                mock.patch.object(cli.sys, 'stderr', err):
            self.assertEqual(0, cli.main(['report', 'r.json']))
        self.assertTrue(err.closed)

    def test_debug_lets_the_exception_through(self):
        for error in (ValueError('x'), KeyboardInterrupt(), KeyError('k')):
            with mock.patch.object(report, 'run', side_effect=error), \
                    mock.patch.dict(os.environ, {cli.DEBUG_VARIABLE: '1'}):
                self.assertRaises(type(error), cli.main, ['report', 'r'])

    def test_usage_errors_are_one_line_naming_the_option(self):
        for argv, expected in (
                (['report', '--no-such-option', 'r'],
                 # The top-level parser collects what no command took.
                 'epa-chain: unrecognized arguments: --no-such-option; see '
                 'epa-chain --help\n'),
                (['prox', 'build', '--source', '-x'],
                 'epa-chain prox build: argument --source: expected one '
                 'argument; see epa-chain prox build --help\n'),
                (['local'],
                 'epa-chain local: the following arguments are required: '
                 'ACTION; see epa-chain local --help\n'),
                (['no-such-command'],
                 "epa-chain: argument COMMAND: invalid choice: "
                 "'no-such-command'")):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                error = self.assertRaises(SystemExit, cli.main, argv)
            self.assertEqual(2, error.code)
            self.assertTrue(err.getvalue().startswith(expected),
                            err.getvalue())
            self.assertEqual(1, err.getvalue().count('\n'), err.getvalue())
