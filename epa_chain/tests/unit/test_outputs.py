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

import os
import socket
import stat
import tempfile

import testtools

from epa_chain import outputs


class TestCheckFile(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = tempfile.mkdtemp()
        self.addCleanup(_remove_tree, self.directory)

    def path(self, name):
        return os.path.join(self.directory, name)

    def test_a_new_file_in_a_new_directory_is_accepted_not_made(self):
        target = self.path('a/b/out.json')
        self.assertEqual(target, outputs.check_file(target, '--json'))
        # A check creates nothing; the write makes the directories.
        self.assertFalse(os.path.exists(self.path('a')))
        outputs.write_text(target, '{}', '--json')
        self.assertTrue(os.path.isfile(target))

    def test_an_existing_regular_file_is_accepted(self):
        target = self.path('out.json')
        open(target, 'w').close()
        self.assertEqual(target, outputs.check_file(target, '--json'))

    def test_stdout_only_where_the_option_allows_it(self):
        self.assertEqual('-', outputs.check_file('-', '--json',
                                                 allow_stdout=True))
        os.chdir(self.directory)
        self.addCleanup(os.chdir, '/')
        # Without the allowance '-' is a file called '-'.
        self.assertEqual('-', outputs.check_file('-', '-o'))

    def test_a_fifo_is_refused_and_kept(self):
        target = self.path('fifo')
        os.mkfifo(target)
        error = self.assertRaises(outputs.OutputError, outputs.write_text,
                                  target, '{}', '--json')
        self.assertIn('--json %s: exists and is a FIFO' % target,
                      str(error))
        self.assertTrue(stat.S_ISFIFO(os.lstat(target).st_mode))

    def test_a_socket_and_a_directory_are_refused(self):
        target = self.path('sock')
        server = socket.socket(socket.AF_UNIX)
        self.addCleanup(server.close)
        server.bind(target)
        self.assertRaises(outputs.OutputError, outputs.check_file, target,
                          '--json')
        self.assertRaisesRegex(outputs.OutputError, 'is a directory',
                               outputs.check_file, self.directory, '-o')

    def test_a_symbolic_link_is_refused_and_its_target_untouched(self):
        victim = self.path('victim')
        with open(victim, 'w') as stream:
            stream.write('precious')
        link = self.path('link')
        os.symlink(victim, link)
        self.assertRaisesRegex(outputs.OutputError, 'a symbolic link',
                               outputs.write_text, link, 'x', '--json')
        with open(victim) as stream:
            self.assertEqual('precious', stream.read())
        self.assertTrue(os.path.islink(link))

    def test_a_directory_under_a_file_is_refused(self):
        blocker = self.path('file')
        open(blocker, 'w').close()
        self.assertRaisesRegex(outputs.OutputError, 'Not a directory',
                               outputs.check_file,
                               os.path.join(blocker, 'out.json'), '--json')

    def test_an_unwritable_directory_is_refused_before_the_work(self):
        if os.geteuid() == 0:
            # Root writes anywhere on a writable file system: a read-only
            # one is the case, and /proc is one everywhere.
            target = '/proc/epa-chain-out.json'
        else:
            os.chmod(self.directory, 0o500)
            target = self.path('out.json')
        self.assertRaisesRegex(outputs.OutputError, 'cannot',
                               outputs.check_file, target, '--json')

    def test_control_characters_are_refused_naming_the_option(self):
        for name in ('a\0b', 'null\n', 'x\x1b[2Jy', 'del\x7f'):
            self.assertRaisesRegex(
                outputs.OutputError, '^--json .*control character',
                outputs.check_file, self.path(name), '--json')
            self.assertRaisesRegex(
                outputs.OutputError, '^--plots .*control character',
                outputs.check_directory, self.path(name), '--plots')
        self.assertEqual([], os.listdir(self.directory))

    def test_a_path_ending_in_a_slash_is_refused_before_the_work(self):
        target = self.path('new') + os.sep
        self.assertRaisesRegex(outputs.OutputError, 'names a directory',
                               outputs.check_file, target, '-o')
        self.assertEqual([], os.listdir(self.directory))

    def test_an_empty_path_is_refused(self):
        self.assertRaisesRegex(outputs.OutputError, 'empty path',
                               outputs.check_file, '', '--json')


class TestWriteText(testtools.TestCase):

    def test_a_failed_writer_leaves_the_old_file_and_no_temporary(self):
        directory = tempfile.mkdtemp()
        self.addCleanup(_remove_tree, directory)
        target = os.path.join(directory, 'plot.png')
        with open(target, 'w') as stream:
            stream.write('old')

        def fail(stream):
            stream.write(b'half')
            raise RuntimeError('renderer failed')

        self.assertRaises(RuntimeError, outputs.write_with, target, fail,
                          '--plots')
        with open(target) as stream:
            self.assertEqual('old', stream.read())
        self.assertEqual(['plot.png'], os.listdir(directory))

    def test_replaces_a_regular_file_whole_and_leaves_no_temporary(self):
        directory = tempfile.mkdtemp()
        self.addCleanup(_remove_tree, directory)
        target = os.path.join(directory, 'out.json')
        with open(target, 'w') as stream:
            stream.write('old')
        outputs.write_text(target, 'new', '--json')
        with open(target) as stream:
            self.assertEqual('new', stream.read())
        self.assertEqual(['out.json'], os.listdir(directory))
        self.assertEqual(0o644, stat.S_IMODE(os.stat(target).st_mode))


def _remove_tree(path):
    import shutil

    os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)
