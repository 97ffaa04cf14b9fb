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

"""The PROX binary the live tests run: given, or built from a pinned source.

`find()` -> (path, None) or (None, reason to skip):

- EPA_CHAIN_PROX_BINARY, if set, is used as is; not an executable file is
  an error (ProxBinaryError), not a skip: the run asked for PROX.
- else EPA_CHAIN_PROX_SOURCE (a samplevnf tarball, git URL or directory)
  is built with epa_chain.prox.build, cached (EPA_CHAIN_PROX_CACHE); a
  failed build is an error too.
- else the tests skip, saying what to set.
"""

import os
import sys

from epa_chain.prox import build

SKIP_REASON = ('set %s to a samplevnf tarball/git URL/directory (CI passes '
               '../shared/third_party/samplevnf-*.tar.gz) or %s'
               % (build.SOURCE_VARIABLE, build.BINARY_VARIABLE))

_found = {}


class ProxBinaryError(Exception):
    """PROX was asked for (binary or source given) but cannot be had."""


def _progress(message):
    sys.stderr.write('[prox build] %s\n' % message)
    sys.stderr.flush()


def find(environ=None):
    """(path, None) | (None, reason); ProxBinaryError if given but bad."""
    environ = os.environ if environ is None else environ
    binary = environ.get(build.BINARY_VARIABLE)
    if binary:
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            raise ProxBinaryError('%s=%s is not an executable file'
                                  % (build.BINARY_VARIABLE, binary))
        return os.path.abspath(binary), None
    source = environ.get(build.SOURCE_VARIABLE)
    if not source:
        return None, SKIP_REASON
    # One build (or cache lookup) per process and source.
    if source not in _found:
        try:
            _found[source] = build.build(source, progress=_progress)
        except build.BuildError as error:
            raise ProxBinaryError('%s=%s: %s' % (
                build.SOURCE_VARIABLE, source, error))
    return _found[source], None
