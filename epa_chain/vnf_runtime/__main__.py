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


"""python3 -m epa_chain.vnf_runtime run: bring the chain node up.

Started at boot by the image's service. Exit status 0 after a clean stop
(SIGTERM) or a successful dry run, 1 when the node failed (the console
says why), 2 for a usage error.
"""

import argparse
import re
import sys

from epa_chain.vnf_runtime import boot
from epa_chain.vnf_runtime import cpus
from epa_chain.vnf_runtime import dpdk_binding
from epa_chain.vnf_runtime import engine
from epa_chain.vnf_runtime import readiness
from epa_chain.vnf_runtime import virtio_user


def _virtio_user(text):
    try:
        return virtio_user.parse_option(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _cpu_list(text):
    try:
        found = cpus.parse_cpu_list(text)
    except ValueError:
        found = None
    if not found:
        raise argparse.ArgumentTypeError(
            '%r: expected a kernel CPU list such as 0-1 or 2,3' % text)
    return found


def _login_user(text):
    if not re.match(r'^[a-z_][a-z0-9_-]{0,31}$', text):
        raise argparse.ArgumentTypeError(
            '%r: a user name as useradd takes it' % text)
    return text


def build_parser():
    parser = argparse.ArgumentParser(
        prog='python3 -m epa_chain.vnf_runtime',
        description='Wire an epa-chain VNF or traffic generator from its '
                    'config drive and run its engine.')
    commands = parser.add_subparsers(dest='command', metavar='COMMAND')
    commands.required = True
    run = commands.add_parser(
        'run', help='read the config drive, configure, run the engine',
        description='Read the config drive, check it, configure the guest '
                    '(huge pages, DPDK driver, switch learning), run the '
                    'engine supervised and report readiness.')
    run.add_argument('--config-drive', metavar='DIR',
                     help='read this directory instead of mounting the '
                          'filesystem labelled config-2')
    run.add_argument('--sysfs', metavar='ROOT', default='/sys',
                     help='sysfs root (default /sys; tests use a fake tree)')
    run.add_argument('--console', metavar='PATH',
                     help='where the EPA-CHAIN READY/FAILED line goes '
                          '(default %s; none with --dry-run)'
                          % readiness.CONSOLE)
    run.add_argument('--status', metavar='PATH',
                     help='status file (default %s; none with --dry-run)'
                          % readiness.STATUS_FILE)
    run.add_argument('--dry-run', action='store_true',
                     help='check and print the engine configuration; bind, '
                          'reserve and start nothing')
    run.add_argument('--driver', default='auto',
                     choices=('auto',) + dpdk_binding.DRIVERS,
                     help='DPDK driver for the data NICs (default: vfio-pci, '
                          'in no-IOMMU mode without an IOMMU, else '
                          'uio_pci_generic)')
    run.add_argument('--run-dir', metavar='DIR', default=engine.RUN_DIR,
                     help='engine config, logs and state '
                          '(default %(default)s)')
    run.add_argument('--prox', metavar='PATH',
                     help='PROX executable (default: prox on PATH)')
    run.add_argument('--testpmd', metavar='PATH',
                     help='testpmd executable (default: dpdk-testpmd on PATH)')
    _image_arguments(run)
    _host_arguments(run)
    return parser


def _image_arguments(run):
    """What the runtime does as the only agent of a guest."""
    image = run.add_argument_group(
        'in an image without cloud-init',
        'the runtime is the guest\'s only agent (the images\' service '
        'passes these: diskimage-elements/epa-chain-guest-access)')
    image.add_argument('--manage-guest', action='store_true',
                       help='also set the host name, the management NIC\'s '
                            'address (fixed, or DHCP by systemd-networkd) '
                            'and the metadata\'s SSH keys, from the config '
                            'drive, before the engine starts')
    image.add_argument('--login-user', metavar='USER', default='epa',
                       type=_login_user,
                       help='whose authorized_keys get the SSH keys '
                            '(default: %(default)s)')
    image.add_argument('--online-cpus', action='store_true',
                       help='first bring the vCPUs the kernel left offline '
                            '(maxcpus= on its command line) online')


def _host_arguments(run):
    """A node on a host: vhost-user data ports, a share of the CPUs."""
    host = run.add_argument_group(
        'running on a host',
        'the data ports are vhost-user sockets (OVS dpdkvhostuserclient '
        'ports connect to them) instead of PCI NICs')
    host.add_argument('--virtio-user', metavar='MAC=SOCKET', action='append',
                      type=_virtio_user, default=[],
                      help='the data port with this MAC is a virtio-user '
                           'device, server side of this vhost-user socket '
                           '(repeat for each data port)')
    host.add_argument('--cpus', metavar='LIST', type=_cpu_list,
                      help='the CPUs the node may use (kernel cpulist, e.g. '
                           '0-1); default: the online CPUs')


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    sockets = {}
    for mac, path in args.virtio_user:
        if mac in sockets:
            parser.error('--virtio-user: MAC %s given twice (%s, %s)'
                         % (mac, sockets[mac], path))
        sockets[mac] = path
    # A dry run leaves the console and /run alone unless told otherwise.
    console = args.console or (None if args.dry_run else readiness.CONSOLE)
    status = args.status or (None if args.dry_run
                             else readiness.STATUS_FILE)
    options = boot.Options(
        config_drive=args.config_drive, sysfs=args.sysfs, console=console,
        status=status, dry_run=args.dry_run, driver=args.driver,
        run_dir=args.run_dir, prox=args.prox, testpmd=args.testpmd,
        virtio_user=sockets, cpus=args.cpus,
        manage_guest=args.manage_guest, login_user=args.login_user,
        online_cpus=args.online_cpus)
    runtime = boot.Runtime(options)
    if not args.dry_run:
        boot.install_signal_handlers(runtime)
    return runtime.run()


if __name__ == '__main__':
    sys.exit(main())
