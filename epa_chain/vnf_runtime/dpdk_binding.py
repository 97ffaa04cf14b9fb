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


"""Hand the data NICs to a DPDK driver, and give them back.

A cloud guest rarely has an IOMMU, so vfio-pci runs in no-IOMMU mode
(vfio's enable_unsafe_noiommu_mode: DPDK then gets the device without DMA
isolation, which is what igb_uio gave the seed's DPDK 2.0), or, where the
kernel lacks that mode, uio_pci_generic. Binding goes through sysfs
driver_override, so only the two data NICs change hands and the
management NIC is never touched; each change is recorded in a state file
so that a runtime killed without cleaning up finds its devices again, and
is undone when the runtime stops.
"""

import dataclasses
import json
import os
import subprocess

from epa_chain.vnf_runtime import errors

DRIVERS = ('vfio-pci', 'uio_pci_generic')
DPDK_DRIVERS = frozenset(DRIVERS + ('igb_uio',))
STATE_FILE = '/run/epa-chain/bindings.json'
NOIOMMU = 'module/vfio/parameters/enable_unsafe_noiommu_mode'


@dataclasses.dataclass(frozen=True)
class DriverChoice:
    driver: str
    detail: str


def describe_choice(sysfs, requested='auto'):
    """What `prepare` would pick, without loading anything (dry run)."""
    if requested != 'auto':
        return DriverChoice(requested, 'requested')
    if sysfs.listdir('kernel/iommu_groups'):
        return DriverChoice('vfio-pci', 'with the guest IOMMU')
    return DriverChoice('vfio-pci', 'no-IOMMU mode, or uio_pci_generic if '
                        'the kernel lacks it')


class Binder:

    def __init__(self, sysfs, run=subprocess.run, state_file=STATE_FILE):
        self.sysfs = sysfs
        self.run = run
        self.state_file = state_file

    # ---- driver -----------------------------------------------------------

    def prepare(self, requested='auto'):
        """Load a DPDK driver; returns the DriverChoice made."""
        if requested not in ('auto',) + DRIVERS:
            raise errors.SystemSetupError(
                '--driver: %r is not one of auto, %s'
                % (requested, ', '.join(DRIVERS)))
        problems = []
        for driver in (DRIVERS if requested == 'auto' else (requested,)):
            try:
                return self._load(driver)
            except errors.SystemSetupError as exc:
                problems.append(exc.reason)
        raise errors.SystemSetupError('; '.join(problems))

    def _load(self, driver):
        if driver == 'vfio-pci':
            has_iommu = bool(self.sysfs.listdir('kernel/iommu_groups'))
            if not has_iommu:
                self._modprobe('vfio', 'enable_unsafe_noiommu_mode=1')
                if not self.sysfs.exists(NOIOMMU):
                    raise errors.SystemSetupError(
                        'vfio-pci: no IOMMU and the kernel has no vfio '
                        'no-IOMMU mode (CONFIG_VFIO_NOIOMMU)')
                if self.sysfs.read(NOIOMMU, default='N') != 'Y':
                    self._write(NOIOMMU, 'Y')
            self._modprobe('vfio-pci')
            detail = 'with the guest IOMMU' if has_iommu else 'no-IOMMU mode'
        else:
            self._modprobe(driver)
            detail = 'UIO'
        if not self.sysfs.exists('bus/pci/drivers/' + driver):
            raise errors.SystemSetupError(
                '%s: the driver did not register (missing kernel module? '
                'install linux-image with it)' % driver)
        return DriverChoice(driver, detail)

    def _modprobe(self, module, *options):
        try:
            result = self.run(['modprobe', module] + list(options),
                              capture_output=True, text=True)
        except OSError as exc:
            raise errors.SystemSetupError('modprobe %s: %s' % (module, exc))
        if result.returncode:
            raise errors.SystemSetupError('modprobe %s: %s' % (
                module, result.stderr.strip() or 'failed'))

    # ---- devices ----------------------------------------------------------

    def known(self):
        """MAC -> record of devices an earlier run bound and left bound."""
        try:
            with open(self.state_file) as stream:
                records = json.load(stream)
        except (OSError, ValueError):
            return {}
        found = {}
        for record in records if isinstance(records, list) else []:
            if not isinstance(record, dict):
                continue
            pci = record.get('pci')
            current = self.sysfs.link_name('bus/pci/devices/%s/driver' % pci)
            if current in DPDK_DRIVERS:
                found[record.get('mac')] = record
        return found

    def bind(self, port_devices, driver, known=None):
        """Bind each PortDevice's NIC to `driver`; returns the undo."""
        known = known or {}
        done = []

        def undo():
            problems = []
            for record in reversed(done):
                try:
                    self._restore(record)
                except (OSError, errors.SystemSetupError) as exc:
                    problems.append('%s: %s' % (record['pci'], exc))
            self._save([])
            if problems:
                raise errors.SystemSetupError(
                    'could not give back ' + '; '.join(problems))

        try:
            for port in sorted(port_devices, key=lambda p: p.pci):
                original = port.nic.driver
                if port.mac in known:
                    original = known[port.mac].get('original_driver')
                record = {'pci': port.pci, 'mac': port.mac,
                          'port': port.name, 'driver': driver,
                          'original_driver': original,
                          'interface': port.nic.interface,
                          'queues': port.nic.queues}
                done.append(record)
                self._save(done)
                self._bind_one(port.pci, driver)
        except (OSError, errors.SystemSetupError) as exc:
            try:
                undo()
            except errors.SystemSetupError:
                pass
            if isinstance(exc, errors.SystemSetupError):
                raise
            raise errors.SystemSetupError('binding to %s: %s'
                                          % (driver, exc))
        return undo

    def _bind_one(self, pci, driver):
        base = 'bus/pci/devices/%s/' % pci
        if self.sysfs.link_name(base + 'driver') == driver:
            return
        self._write(base + 'driver_override', driver)
        if self.sysfs.link_name(base + 'driver'):
            self._write(base + 'driver/unbind', pci)
        self._write('bus/pci/drivers_probe', pci)
        now = self.sysfs.link_name(base + 'driver')
        if now != driver:
            raise errors.SystemSetupError(
                '%s: still bound to %s after binding to %s (see dmesg)'
                % (pci, now or 'no driver', driver))

    def _restore(self, record):
        pci = record['pci']
        base = 'bus/pci/devices/%s/' % pci
        if self.sysfs.link_name(base + 'driver'):
            self._write(base + 'driver/unbind', pci)
        self._write(base + 'driver_override', '\n')
        self._write('bus/pci/drivers_probe', pci)
        original = record.get('original_driver')
        now = self.sysfs.link_name(base + 'driver')
        if original and now != original:
            raise errors.SystemSetupError(
                'back on %s instead of %s' % (now or 'no driver', original))

    def _write(self, relative, value):
        try:
            self.sysfs.write(relative, value)
        except OSError as exc:
            raise errors.SystemSetupError('writing %s: %s' % (
                self.sysfs.path(relative), exc.strerror or exc))

    def _save(self, records):
        directory = os.path.dirname(self.state_file)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if not records:
            try:
                os.unlink(self.state_file)
            except FileNotFoundError:
                pass
            return
        temporary = self.state_file + '.tmp'
        with open(temporary, 'w') as stream:
            json.dump(records, stream, indent=1, sort_keys=True)
        os.replace(temporary, self.state_file)
