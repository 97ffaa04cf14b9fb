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

"""A bed's name and where it lives: checked once, before anything runs.

`down` stops processes and removes a directory named by --state-root and
--prefix, as root: both are hostile until checked here. The prefix names
the bed's network namespaces (PREFIX-ovs, PREFIX-gen, which must fit an
interface name), its directory STATE_ROOT/PREFIX, DPDK's file prefix and
the Heat stack name (^[a-zA-Z][a-zA-Z0-9_.-]*$): PREFIX_PATTERN fits all
of them. The state root must be a directory only its owner (root, or the
user running a non-root command) can change, so that nobody else can plant
a bed, a symbolic link or a pidfile in it; it is resolved once, and every
path of a bed is a plain child of that real path.
"""

import os
import re
import stat
import tempfile

from epa_chain import outputs

IFNAMSIZ = 15                   # longest Linux interface name (16 - NUL)
OVS_SUFFIX = '-ovs'             # ovs-vswitchd's network namespace
GENERATOR_SUFFIX = '-gen'       # the generator's
#: Chains a bed stands in for; chain K > 0's generator is in PREFIX-gK,
#: no longer than PREFIX-gen.
MAX_CHAINS = 8
NAMESPACE_SUFFIXES = (OVS_SUFFIX, GENERATOR_SUFFIX) + tuple(
    '-g%d' % chain for chain in range(1, MAX_CHAINS))
PREFIX_MAX = IFNAMSIZ - max(len(s) for s in NAMESPACE_SUFFIXES)
PREFIX_PATTERN = r'^[a-z][a-z0-9-]{0,%d}$' % (PREFIX_MAX - 1)
SUN_PATH_MAX = 107              # bytes of an AF_UNIX path, without the NUL
# The longest socket a bed makes below its directory: an OVS bridge's
# management socket (bridge names fit an interface name).
LONGEST_SOCKET = os.path.join('ovs', 'x' * IFNAMSIZ + '.mgmt')
# DPDK and PROX split their arguments at spaces, commas, '=' and ':'; the
# bed's paths are in those arguments.
_ROOT_CHARACTERS = re.compile(r'^[A-Za-z0-9._/+-]+$')
_PREFIX = re.compile(PREFIX_PATTERN)


class BadName(ValueError):
    """A prefix or state root refused: names the option, says the fix."""

    def __init__(self, option, value, reason):
        super().__init__('%s %r: %s' % (option, value, reason))
        self.option = option


def namespaces(prefix):
    """The network namespaces a bed with this prefix may create."""
    return [prefix + suffix for suffix in NAMESPACE_SUFFIXES]


def generator_netns(prefix, chain):
    """The namespace of chain `chain`'s generator."""
    return prefix + (GENERATOR_SUFFIX if not chain else '-g%d' % chain)


def check_prefix(prefix):
    """The prefix if it matches PREFIX_PATTERN; BadName otherwise."""
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise BadName(
            '--prefix', prefix,
            'must match %s: a lower-case letter, then up to %d lower-case '
            'letters, digits or - (PREFIX-ovs and PREFIX-gen must fit the %d '
            'characters of an interface name); e.g. epa'
            % (PREFIX_PATTERN, PREFIX_MAX - 1, IFNAMSIZ))
    return prefix


def check_state_root(path, euid=None):
    """The real path of a safe state root; BadName otherwise.

    A missing root is fine if its parent is a directory: `up` creates it
    (state.BedState.begin), `down` and `status` take it as empty. Nothing
    is created here: bad input leaves no trace.
    """
    euid = os.geteuid() if euid is None else euid
    option = '--state-root'
    if not isinstance(path, str) or not os.path.isabs(path):
        raise BadName(option, path, 'must be an absolute path; e.g. '
                      '/run/epa-chain-local')
    _check_characters(path, path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.normpath(path))
        if not os.path.isdir(parent):
            raise BadName(option, path, 'does not exist, nor does its '
                          'parent %s; create the parent first' % parent)
        # A root that could never be made holds no bed either: a typo
        # (/proc/...) must not make `down` report a clean host.
        try:
            with tempfile.TemporaryFile(dir=parent):
                pass
        except OSError as error:
            raise BadName(option, path, 'does not exist and cannot be made '
                          'in %s (%s); give the directory the bed was made '
                          'in' % (parent, error.strerror or error))
        return _checked_real(os.path.realpath(path), path)
    except OSError as error:
        raise BadName(option, path, 'cannot be read: %s' % (
            error.strerror or error))
    if stat.S_ISLNK(info.st_mode):
        raise BadName(option, path, 'is a symbolic link (to %s); give the '
                      'directory itself' % os.path.realpath(path))
    if not stat.S_ISDIR(info.st_mode):
        raise BadName(option, path, 'exists and is not a directory; give '
                      'a directory')
    why = outputs.foreign_control(info, euid)
    if why:
        raise BadName(option, path, '%s: they could plant what down stops '
                      'and removes; chown or chmod go-w it, or choose '
                      'another directory' % why)
    return _checked_real(os.path.realpath(path), path)


def _check_characters(text, path):
    if not _ROOT_CHARACTERS.fullmatch(text):
        raise BadName('--state-root', path, '%smay hold only letters, '
                      'digits and . _ + - / (DPDK and PROX split their '
                      'arguments, which carry the bed\'s paths, at spaces, '
                      'commas, = and :); choose another directory' % (
                          '' if text == path else 'leads to %r, which '
                          % text))


def _checked_real(real, path):
    _check_characters(real, path)
    # Whoever may write in a parent could swap the root after this check
    # (rename); a sticky parent (/tmp) forbids renaming what others own.
    parent = os.path.dirname(real)
    while True:
        try:
            info = os.stat(parent)
        except OSError:
            info = None
        if info is not None and info.st_mode & (
                stat.S_IWGRP | stat.S_IWOTH) and not \
                info.st_mode & stat.S_ISVTX:
            raise BadName('--state-root', path, 'is in %s, which others '
                          'may write (mode %04o, not sticky): they could '
                          'replace it; choose a directory elsewhere' % (
                              parent, stat.S_IMODE(info.st_mode)))
        if parent == os.path.dirname(parent):
            break
        parent = os.path.dirname(parent)
    longest = os.path.join(real, 'x' * PREFIX_MAX, LONGEST_SOCKET)
    if len(os.fsencode(longest)) > SUN_PATH_MAX:
        raise BadName('--state-root', path, 'is too long: the bed\'s UNIX '
                      'sockets (%s) would exceed the %d bytes of an '
                      'AF_UNIX path; choose a shorter directory'
                      % (longest, SUN_PATH_MAX))
    return real


def bed_directory(real_root, prefix):
    """STATE_ROOT/PREFIX, strictly inside the real root; BadName if not.

    Both checked already; this catches a bed directory that is itself a
    symbolic link (planted before the root was made safe).
    """
    directory = os.path.join(real_root, prefix)
    real = os.path.realpath(directory)
    if real != directory or os.path.dirname(real) != real_root or \
            real == real_root:
        raise BadName('--prefix', prefix, '%s leads to %s, outside the '
                      'state root %s; remove it by hand' % (
                          directory, real, real_root))
    return directory
