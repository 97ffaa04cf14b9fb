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

"""Build PROX (samplevnf DPPD-PROX) on this host from a pinned source.

Against the distribution's libdpdk-dev, with the driver-SDK headers of the
same DPDK version taken from its Debian source package; cached by source
and DPDK version. Progress goes to stderr, the binary's path to stdout.

  epa-chain prox build --source samplevnf-c9716490.tar.gz
  epa-chain prox build --source https://github.com/opnfv/samplevnf.git\\
#c97164903fc712487b26aa80edec3a96b6049074
  epa-chain prox build --source ~/src/samplevnf --install-deps
  epa-chain local run --engine prox \\
      --engine-binary "$(epa-chain prox build -q)"

The source defaults to $EPA_CHAIN_PROX_SOURCE, the cache to
$EPA_CHAIN_PROX_CACHE or ~/.cache/epa-chain/prox (doc/source/prox.rst).
A source never starts with '-'; a URL is https, http, git, ssh or file
(URL#REF picks a branch, tag or commit); a tarball member that would land
outside the tree, a device or a link out of it is refused by name. The
cache holds a binary run as root: yours, and writable by you only.
Exit status: 0 built or cached, 1 the build failed, 2 bad input (a source,
cache directory or install path refused; nothing built). One line says
why.
"""

import sys

from epa_chain import outputs
from epa_chain.prox import build

PROG = 'epa-chain prox build'


def add_arguments(parser):
    actions = parser.add_subparsers(dest='action', metavar='ACTION')
    actions.required = True
    build_parser = actions.add_parser(
        'build', help='build PROX (or find it cached); print its path',
        description='Build PROX from a samplevnf tarball, git URL or '
                    'directory against the distribution\'s DPDK; print the '
                    'binary\'s path. A cached build returns at once.')
    build.add_arguments(build_parser)


def run(args):
    try:
        request = build.request(args)
        # The cache is written: it must be a directory we can write in.
        outputs.check_directory(build.cache_root(request.cache_dir),
                                build.cache_option(request.cache_dir))
        if args.install is not None:
            outputs.check_file(args.install, '--install')
    except (build.InputError, outputs.OutputError) as error:
        print('%s: %s' % (PROG, error), file=sys.stderr)
        return 2
    return build.run(request, prog=PROG)
