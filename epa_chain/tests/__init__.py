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

"""epa-chain's tests, by what they need of the host; helpers shared here.

unit/         stestr unit tests (tox -e py3): no root, no network.
functional/   real Open vSwitch, DPDK and PROX on this host (root,
              tox -e functional).
cloud/        the single-host OpenStack test (root, tox -e cloud).
images/       image builds booted under QEMU (root, tox -e images).
fixtures/     templates and files the unit tests read (not a package).
repo          where the tests find the checkout's templates and files.
cli_options   the argparse actions of a subcommand, for option tests.
fake_clock    a virtual clock for code taking clock and sleep callables.
prox_binary   the PROX binary the live tests run: given or built.
"""
