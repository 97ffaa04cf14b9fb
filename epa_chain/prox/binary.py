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

"""The PROX binary a host runs: given, or built from a source and cached.

Option first, then environment: a binary (``--prox-binary``,
``$EPA_CHAIN_PROX_BINARY``: an executable file), else a source
(``--prox-source``, ``$EPA_CHAIN_PROX_SOURCE``: a samplevnf tarball, git
URL or directory) that build.py builds and caches. The variables' names
are build.py's (BINARY_VARIABLE, SOURCE_VARIABLE, CACHE_VARIABLE).

`given()` checks what names the binary at the edge, before anything runs
(a binary must be executable, a source is refused if hostile);
`obtain()` builds a source later (minutes the first time, then cached).

    prox = given(args.prox_binary, args.prox_source)   # ProxBinaryError
    path, how = obtain(prox, progress)                 # path None: none

Standard library only, as build.py.
"""

import dataclasses
import os
import typing

from epa_chain.prox import build

BINARY_OPTION = '--prox-binary'
SOURCE_OPTION = '--prox-source'


class ProxBinaryError(ValueError):
    """No usable PROX binary from what was given; names the option."""


@dataclasses.dataclass(frozen=True)
class Given:
    """What names the PROX binary, checked: a binary, a source or nothing.

    `label` is the option or variable as the user wrote it, with its
    value ('--prox-binary /opt/prox', 'EPA_CHAIN_PROX_SOURCE x.tar.gz').
    """

    binary: typing.Optional[str] = None    # absolute path, executable
    source: typing.Optional[str] = None    # build.check_source passed
    option: typing.Optional[str] = None    # what named it
    label: str = ''

    @property
    def nothing(self):
        return self.binary is None and self.source is None


def nothing_given():
    """Why there is no binary: every way to name one."""
    return 'no %s, %s, %s or %s' % (BINARY_OPTION, SOURCE_OPTION,
                                    build.BINARY_VARIABLE,
                                    build.SOURCE_VARIABLE)


def given(binary=None, source=None, environ=None):
    """The checked Given of the options, then the environment.

    A binary wins over any source (a source is then not even checked);
    ProxBinaryError for a binary that is not an executable file,
    build.InputError (naming the option or variable) for a source
    refused.
    """
    environ = os.environ if environ is None else environ
    for value, option in ((binary, BINARY_OPTION),
                          (environ.get(build.BINARY_VARIABLE),
                           build.BINARY_VARIABLE)):
        if value:
            if not (os.path.isfile(value) and os.access(value, os.X_OK)):
                raise ProxBinaryError(
                    '%s %s: not an executable file; give the path of a '
                    'PROX binary, or a source with %s'
                    % (option, value, SOURCE_OPTION))
            return Given(binary=os.path.abspath(value), option=option,
                         label='%s %s' % (option, value))
    for value, option in ((source, SOURCE_OPTION),
                          (environ.get(build.SOURCE_VARIABLE),
                           build.SOURCE_VARIABLE)):
        if value:
            build.check_source(value, option)
            return Given(source=value, option=option,
                         label='%s %s' % (option, value))
    return Given()


def obtain(prox, progress=None):
    """(path or None, how it was found) of a Given; builds a source.

    ProxBinaryError when the build fails (naming the option).
    """
    if prox.binary:
        return prox.binary, prox.label
    if not prox.source:
        return None, nothing_given()
    try:
        path = build.build(prox.source, progress=progress,
                           option=prox.option)
    except build.InputError as exc:
        raise ProxBinaryError(str(exc))     # names the option already
    except build.BuildError as exc:
        raise ProxBinaryError('%s: %s' % (prox.label, exc))
    return path, '%s (built and cached)' % prox.label


def find(binary=None, source=None, progress=None, environ=None):
    """(path or None, how it was found): given() then obtain()."""
    try:
        prox = given(binary, source, environ)
    except build.InputError as exc:
        raise ProxBinaryError(str(exc))
    return obtain(prox, progress)


def built_with_hash_names(binary):
    """Whether PROX names its gen flow tables per task (no preload).

    True for a build of build.py with that source edit (its manifest
    says so); a binary from elsewhere may lack it.
    """
    return build.has_patch(binary, build.GEN_HASH_NAMES)
