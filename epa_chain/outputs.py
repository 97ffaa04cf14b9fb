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

"""Where a command writes: checked before the work, written atomically.

Commands run as root on shared lab hosts, so an output path is hostile
until checked: a file is written to a temporary file beside it and renamed
over it, which would replace a device node or a symbolic link (and what it
points to stays untouched, but the link is gone). Only a regular file, or
nothing, may be replaced. Every check runs before the work that produces
the output, so a campaign of an hour never ends in "cannot write", and a
check creates nothing: refused input leaves no directory behind. Missing
directories are made when the output is written (make_directory).
"""

import os
import stat
import sys
import tempfile

STDOUT = '-'


class OutputError(ValueError):
    """An output path that cannot or must not be written; names the option."""


def check_file(path, option, allow_stdout=False):
    """Refuse an output file we could not or must not write; the path.

    '-' means standard output where the option allows it. The directory
    must exist or be creatable (check_directory), and an existing path must
    be a regular file (not a directory, device, FIFO, socket or symbolic
    link).
    """
    if path == STDOUT and allow_stdout:
        return path
    if not path:
        raise OutputError('%s: an empty path; give a file to write' % option)
    _check_characters(path, option)
    if path.endswith(os.sep):
        # A directory's name: the rename at the end would fail, after
        # the work.
        raise OutputError('%s %s: names a directory; give a file path'
                          % (option, path))
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        found = None
    except OSError as error:
        raise OutputError('%s %s: cannot be a file: %s; give a file in a '
                          'directory you can write' % (
                              option, path, _reason(error)))
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise OutputError('%s %s: exists and is %s, not a regular file; '
                          'give a file path%s' % (
                              option, path, _kind(found.st_mode),
                              ' (or - for standard output)'
                              if allow_stdout else ''))
    directory = os.path.dirname(os.path.abspath(path))
    check_directory(directory, option, shown=path)
    return path


def check_directory(path, option, shown=None):
    """Refuse a directory to write in that could not be made or written.

    Nothing is created: the nearest existing ancestor must be a directory
    we can write in (where the missing ones will be made).
    """
    shown = shown or path
    if not path:
        raise OutputError('%s: an empty path; give a directory' % option)
    _check_characters(path, option)
    existing = os.path.abspath(path)
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise OutputError('%s %s: %s exists and is not a directory; give '
                          'another path' % (option, shown, existing))
    try:
        # The only true test of writability (read-only file systems,
        # ACLs, root): create and remove a file there.
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise OutputError('%s %s: cannot write in %s: %s; give a directory '
                          'you can write' % (option, shown, existing,
                                             _reason(error)))
    return path


def make_directory(path, option):
    """Create a checked directory (and its parents) when output is due."""
    check_directory(path, option)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise OutputError('%s %s: cannot create it: %s; give a directory '
                          'you can write' % (option, path, _reason(error)))
    return path


def write_text(path, text, option, allow_stdout=False, encoding='utf-8'):
    """Write `text` to `path` atomically (to stdout for '-' if allowed)."""
    if path == STDOUT and allow_stdout:
        sys.stdout.write(text)
        sys.stdout.flush()
        return path
    return write_with(path, lambda stream: stream.write(
        text.encode(encoding)), option)


def write_with(path, write, option):
    """Call write(binary stream) into a temporary file, renamed to `path`.

    Only a regular file, or nothing, is replaced (check_file); readers
    never see half a file.
    """
    check_file(path, option)
    directory = make_directory(os.path.dirname(os.path.abspath(path)),
                               option)
    handle, temporary = tempfile.mkstemp(
        dir=directory, prefix='.%s-' % os.path.basename(path))
    try:
        with os.fdopen(handle, 'wb') as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        # mkstemp makes 0600; results are for the operator's colleagues.
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return path


def foreign_control(info, euid=None):
    """Why others could change a directory we trust, or None.

    `info` is the directory's os.stat: it must be root's or the user's,
    and written by nobody else; the caller says what they could do.
    """
    euid = os.geteuid() if euid is None else euid
    if info.st_uid not in (0, euid):
        return 'is owned by uid %d, not by root%s' % (
            info.st_uid, '' if euid == 0 else ' or you (uid %d)' % euid)
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return 'is writable by its group or by others (mode %04o)' % (
            stat.S_IMODE(info.st_mode))
    return None


def _check_characters(path, option):
    # A newline or an escape in a file name breaks every one-line message
    # and log that names it; NUL cannot be in a path at all.
    if any(ord(character) < 0x20 or ord(character) == 0x7f
           for character in path):
        raise OutputError('%s %r: a path with a control character; give '
                          'another path' % (option, path))


def _reason(error):
    return error.strerror or str(error)


def _kind(mode):
    for test, name in ((stat.S_ISDIR, 'a directory'),
                       (stat.S_ISLNK, 'a symbolic link'),
                       (stat.S_ISCHR, 'a character device'),
                       (stat.S_ISBLK, 'a block device'),
                       (stat.S_ISFIFO, 'a FIFO'),
                       (stat.S_ISSOCK, 'a socket')):
        if test(mode):
            return name
    return 'not a regular file'
