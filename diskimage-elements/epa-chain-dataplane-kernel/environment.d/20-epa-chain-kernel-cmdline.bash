# Huge pages reserved at boot (before memory fragments) and the forwarding
# cores kept away from the scheduler, timer ticks and RCU callbacks.
# Sourced after bootloader's 10-bootloader-default-cmdline, so its default
# is already set and the epa-chain arguments are appended to it.

export DIB_EPA_HUGEPAGE_SIZE=${DIB_EPA_HUGEPAGE_SIZE:-2M}
# 256 x 2 MiB = 512 MiB, what a VNF's engine needs (the runtime's VNF_MB);
# the generator's 1 GiB and anything more the runtime reserves at run time.
# Reserving them costs boot time under emulation (TCG): 512 pages 2.2-2.4 s,
# 256 about 0.2 s.
export DIB_EPA_HUGEPAGES=${DIB_EPA_HUGEPAGES:-256}
# "N" is the last CPU (Linux >= 5.13): CPU 0 keeps the housekeeping on any
# flavor size, every other vCPU is isolated.
export DIB_EPA_ISOLATED_CPUS=${DIB_EPA_ISOLATED_CPUS-1-N}

# Guests of a cloud whose QEMU runs them without KVM (TCG): see the
# element's README for what that changes and why.
export DIB_EPA_GUEST_EMULATED=${DIB_EPA_GUEST_EMULATED:-0}

_epa_cmdline="default_hugepagesz=${DIB_EPA_HUGEPAGE_SIZE} hugepagesz=${DIB_EPA_HUGEPAGE_SIZE} hugepages=${DIB_EPA_HUGEPAGES}"
if [ -n "${DIB_EPA_ISOLATED_CPUS}" ]; then
    _epa_cmdline+=" isolcpus=${DIB_EPA_ISOLATED_CPUS}"
    # With nohz_full CPU 0 keeps its tick for timekeeping even when idle;
    # emulated, each tick costs the host (an idle guest 8.4 % of a CPU).
    if [ "${DIB_EPA_GUEST_EMULATED}" != 1 ]; then
        _epa_cmdline+=" nohz_full=${DIB_EPA_ISOLATED_CPUS}"
    fi
    _epa_cmdline+=" rcu_nocbs=${DIB_EPA_ISOLATED_CPUS}"
fi
export DIB_EPA_KERNEL_CMDLINE=${DIB_EPA_KERNEL_CMDLINE-${_epa_cmdline}}
unset _epa_cmdline
# Host-specific additions (see the element's README).
export DIB_EPA_KERNEL_CMDLINE_EXTRA=${DIB_EPA_KERNEL_CMDLINE_EXTRA:-}
_epa_host_args=""
if [ "${DIB_EPA_GUEST_EMULATED}" = 1 ]; then
    _epa_host_args+=" pci=nomsi mitigations=off"
fi
if [ -n "${DIB_EPA_KERNEL_CMDLINE_EXTRA}" ]; then
    _epa_host_args+=" ${DIB_EPA_KERNEL_CMDLINE_EXTRA}"
fi
# Environment files are sourced once per phase: append only once.
if [ -n "${_epa_host_args}" ] && \
        [[ " ${DIB_EPA_KERNEL_CMDLINE} " != *"${_epa_host_args} "* ]]; then
    DIB_EPA_KERNEL_CMDLINE+="${_epa_host_args}"
fi
unset _epa_host_args

_epa_default_cmdline=${DIB_BOOTLOADER_DEFAULT_CMDLINE:-"nofb nomodeset gfxpayload=text"}
# Environment files are sourced once per phase: append only once.
if [ -n "${DIB_EPA_KERNEL_CMDLINE}" ] && \
        [[ " ${_epa_default_cmdline} " != *" ${DIB_EPA_KERNEL_CMDLINE} "* ]]; then
    _epa_default_cmdline+=" ${DIB_EPA_KERNEL_CMDLINE}"
fi
export DIB_BOOTLOADER_DEFAULT_CMDLINE=${_epa_default_cmdline}
unset _epa_default_cmdline

# Kernel modules a DPDK port can be bound to, loaded at boot.
export DIB_EPA_DPDK_MODULES=${DIB_EPA_DPDK_MODULES-"vfio-pci uio_pci_generic"}
# Guests have no vIOMMU: vfio-pci works only in no-IOMMU mode there.
export DIB_EPA_VFIO_NOIOMMU=${DIB_EPA_VFIO_NOIOMMU:-1}
