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

"""Run a function inside a named network namespace (`ip netns`).

A socket belongs to the namespace it was created in, whichever thread or
process uses it later. So sockets are opened in a short-lived thread that
has entered the namespace with setns(2) - only that thread moves - and
then handed to the rest of the process and to its forked children.
"""

import ctypes
import ctypes.util
import os
import threading

CLONE_NEWNET = 0x40000000
NETNS_RUN_DIR = '/run/netns'

_libc = None


def namespace_path(name):
    return os.path.join(NETNS_RUN_DIR, name)


def check_exists(name):
    """ValueError saying how to create the namespace when it is missing."""
    if not name or '/' in name:
        raise ValueError('network namespace name %r is not valid' % (name,))
    if not os.path.exists(namespace_path(name)):
        raise ValueError('network namespace %r does not exist (no %s); '
                         'create it with `ip netns add %s` or start the '
                         'test bed first' % (name, namespace_path(name),
                                             name))


def _setns(fd):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, 'setns(CLONE_NEWNET): %s' % os.strerror(error))


def run_in(name, function, *args):
    """function(*args) in a thread inside namespace `name`; its result.

    Exceptions raised by `function` (or by entering the namespace) are
    raised here.
    """
    check_exists(name)
    outcome = {}

    def target():
        try:
            fd = os.open(namespace_path(name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                _setns(fd)
            finally:
                os.close(fd)
            outcome['result'] = function(*args)
        except BaseException as exc:  # handed to the caller
            outcome['error'] = exc

    thread = threading.Thread(target=target, name='netns-%s' % name,
                              daemon=True)
    thread.start()
    thread.join()
    if 'error' in outcome:
        raise outcome['error']
    return outcome['result']
