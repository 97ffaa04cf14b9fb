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

"""Run a command with a /tmp of its own: one PROX VNF per /tmp/prox.sock.

PROX's UNIX control socket is always /tmp/prox.sock (input_conn.c); in a
VM each PROX has its own /tmp, on one host they would take each other's
socket. `wrap` gives a command a private mount namespace (unshare) in
which a directory of the bed is mounted on /tmp, so each VNF runtime and
its PROX see their own /tmp/prox.sock.

Paths under the host's /tmp that the command needs (the bed's directory
when --state-root is under /tmp, the PROX binary, the package) would be
hidden by that mount: they are opened before it and bound back at the
same paths (mount(2) MS_BIND|MS_REC from /proc/self/fd/N: the kernel
follows that link to the directory opened, where mount(8) would resolve
its name again, under the new /tmp), submounts (the bed's hugetlbfs)
included. Everything mounted here vanishes with the namespace.

  python -m epa_chain.local.private_tmp DIR KEEP[:KEEP...] -- ARGV...
  (run under `unshare --mount --propagation private`)
"""

import ctypes
import ctypes.util
import os
import sys

TMP = '/tmp'
MS_BIND = 4096
MS_REC = 16384


def wrap(argv, private_dir, keep=()):
    """argv run with `private_dir` as its /tmp (a new mount namespace)."""
    kept = sorted({os.path.abspath(p) for p in keep if under_tmp(p)})
    return (['unshare', '--mount', '--propagation', 'private', '--',
             sys.executable, '-m', 'epa_chain.local.private_tmp',
             os.path.abspath(private_dir), ':'.join(kept), '--'] +
            list(argv))


def under_tmp(path):
    """Below /tmp (hidden by the private one); /tmp itself is not kept."""
    return os.path.abspath(path).startswith(TMP + os.sep)


def _bind(source, target):
    libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
    if libc.mount(source.encode(), target.encode(), None,
                  MS_BIND | MS_REC, None) != 0:
        error = ctypes.get_errno()
        raise OSError(error, 'mount --rbind %s %s: %s' % (
            source, target, os.strerror(error)))


def main(args):
    if len(args) < 4 or args[2] != '--':
        sys.stderr.write('usage: private_tmp DIR KEEP[:KEEP] -- ARGV\n')
        return 2
    private_dir, keep, argv = args[0], args[1], args[3:]
    kept = [path for path in keep.split(':') if path]
    # Opened before /tmp is covered: /proc/self/fd/N still leads there.
    handles = [(path, os.open(path, os.O_PATH)) for path in kept]
    os.makedirs(private_dir, exist_ok=True)
    _bind(private_dir, TMP)
    os.chmod(TMP, 0o1777)
    for path, fd in handles:
        os.makedirs(path, exist_ok=True)
        _bind('/proc/self/fd/%d' % fd, path)
        os.close(fd)
    os.execvp(argv[0], argv)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
