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

"""The kernel command line epa-chain-dataplane-kernel gives the bootloader.

DIB sources an element's environment.d once per phase, so each case
sources it twice: the arguments must still appear once.
"""

import os
import subprocess

import testtools

from epa_chain.tests import repo

_ENVIRONMENT = os.path.join(
    repo.ROOT, 'diskimage-elements', 'epa-chain-dataplane-kernel',
    'environment.d', '20-epa-chain-kernel-cmdline.bash')
_EPA = ('default_hugepagesz=2M hugepagesz=2M hugepages=256 '
        'isolcpus=1-N nohz_full=1-N rcu_nocbs=1-N')
# Emulated: no nohz_full, whose timekeeping tick never stops on CPU 0.
_EPA_EMULATED = ('default_hugepagesz=2M hugepagesz=2M hugepages=256 '
                 'isolcpus=1-N rcu_nocbs=1-N')
_BOOTLOADER = 'nofb nomodeset gfxpayload=text'


def _cmdline(**variables):
    """DIB_BOOTLOADER_DEFAULT_CMDLINE after sourcing the file twice."""
    env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin')}
    env.update(variables)
    script = ('source "$1"; source "$1"; '
              'printf %s "$DIB_BOOTLOADER_DEFAULT_CMDLINE"')
    return subprocess.run(['bash', '-c', script, 'env', _ENVIRONMENT],
                          env=env, check=True, capture_output=True,
                          text=True, timeout=30).stdout


class KernelCmdlineTest(testtools.TestCase):

    def test_default_is_huge_pages_and_isolated_cpus(self):
        self.assertEqual('%s %s' % (_BOOTLOADER, _EPA), _cmdline())

    def test_emulated_guests_tick_less_and_skip_what_tcg_cannot_use(self):
        self.assertEqual('%s %s pci=nomsi mitigations=off'
                         % (_BOOTLOADER, _EPA_EMULATED),
                         _cmdline(DIB_EPA_GUEST_EMULATED='1'))

    def test_extra_arguments_come_last(self):
        self.assertEqual(
            '%s %s pci=nomsi mitigations=off intel_iommu=on'
            % (_BOOTLOADER, _EPA_EMULATED),
            _cmdline(DIB_EPA_GUEST_EMULATED='1',
                     DIB_EPA_KERNEL_CMDLINE_EXTRA='intel_iommu=on'))

    def test_a_whole_cmdline_of_the_callers_keeps_the_emulation_needs(self):
        self.assertEqual(
            '%s isolcpus=2-3 pci=nomsi mitigations=off' % _BOOTLOADER,
            _cmdline(DIB_EPA_GUEST_EMULATED='1',
                     DIB_EPA_KERNEL_CMDLINE='isolcpus=2-3'))
