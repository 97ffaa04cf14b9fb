# What a chain node's boot waits for, cut to what the VNF runtime needs.
# Each cut, what it costs when kept and how to get it back: README.rst.

# GRUB boots the default entry at once (DIB's bootloader element waits 5 s
# with its menu). Clouds that boot the kernel directly skip GRUB anyway.
export DIB_GRUB_TIMEOUT=${DIB_GRUB_TIMEOUT:-0}

# Units masked (linked to /dev/null). Remove one from the list, or name it
# in DIB_EPA_KEEP_UNITS, to get it back.
# Timers and jobs a short-lived appliance never needs at boot:
_epa_units="dpdk.service e2scrub_reap.service e2scrub_all.timer"
_epa_units+=" apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer"
_epa_units+=" fstrim.timer man-db.timer logrotate.timer"
# Network and time: the runtime configures the management NIC itself:
_epa_units+=" systemd-timesyncd.service systemd-networkd-wait-online.service"
_epa_units+=" systemd-network-generator.service"
# Log-in machinery nobody uses (no passwords, SSH keys only):
_epa_units+=" getty@tty1.service systemd-logind.service"
_epa_units+=" systemd-update-utmp.service systemd-update-utmp-runlevel.service"
# Kernel file systems and modules no chain node uses:
_epa_units+=" sys-kernel-debug.mount sys-kernel-tracing.mount dev-mqueue.mount"
_epa_units+=" sys-fs-fuse-connections.mount sys-kernel-config.mount"
_epa_units+=" systemd-binfmt.service proc-sys-fs-binfmt_misc.automount"
_epa_units+=" modprobe@drm.service modprobe@fuse.service"
_epa_units+=" modprobe@configfs.service modprobe@loop.service"
_epa_units+=" modprobe@dm_mod.service kmod-static-nodes.service"
# State a disposable instance does not keep across boots:
_epa_units+=" systemd-pstore.service systemd-journal-flush.service"
_epa_units+=" systemd-machine-id-commit.service systemd-random-seed.service"
_epa_units+=" systemd-sysusers.service"
export DIB_EPA_MASKED_UNITS=${DIB_EPA_MASKED_UNITS-${_epa_units}}
unset _epa_units
# Units taken out of DIB_EPA_MASKED_UNITS, e.g. "systemd-timesyncd.service".
export DIB_EPA_KEEP_UNITS=${DIB_EPA_KEEP_UNITS:-}

# systemd generators masked (/etc/systemd/system-generators/NAME linked to
# /dev/null); fstab and getty generators are kept.
_epa_generators="systemd-bless-boot-generator systemd-cryptsetup-generator"
_epa_generators+=" systemd-debug-generator systemd-gpt-auto-generator"
_epa_generators+=" systemd-hibernate-resume-generator"
_epa_generators+=" systemd-integritysetup-generator systemd-rc-local-generator"
_epa_generators+=" systemd-run-generator systemd-system-update-generator"
_epa_generators+=" systemd-sysv-generator systemd-veritysetup-generator"
export DIB_EPA_MASKED_GENERATORS=${DIB_EPA_MASKED_GENERATORS-${_epa_generators}}
unset _epa_generators

# 1: NICs keep the kernel's names (eth0, eth1, ...): udev's predictable
# names (ens3, ...) would rename them seconds into the boot, after the
# runtime (which starts before udev's coldplug) has read and used them.
# The runtime finds its NICs by MAC either way. 0 restores the renaming.
export DIB_EPA_KERNEL_NIC_NAMES=${DIB_EPA_KERNEL_NIC_NAMES:-1}

# Modules udev would load for devices a VM has or emulates but nothing uses.
export DIB_EPA_BLACKLISTED_MODULES=${DIB_EPA_BLACKLISTED_MODULES-"floppy pcspkr cfg80211 joydev serio_raw evdev"}

# The journal in memory only (no flush to /var/log/journal at boot); empty
# keeps journald's default (persistent where /var/log/journal exists).
export DIB_EPA_JOURNAL_STORAGE=${DIB_EPA_JOURNAL_STORAGE-volatile}

# An empty /etc/machine-id: a transient ID per boot, derived by systemd
# (from the VM's SMBIOS UUID, Nova's instance UUID), and no first-boot
# preset run. 0 leaves DIB's "uninitialized" (first boot semantics).
export DIB_EPA_TRANSIENT_MACHINE_ID=${DIB_EPA_TRANSIENT_MACHINE_ID:-1}

# The initramfs loads these and only these (MODULES=list): the root disk
# (virtio-blk, ext4), Nova's config drive (an IDE CD-ROM with ISO 9660) and
# the virtio NICs, so that both exist before systemd starts. Empty keeps
# initramfs-tools' MODULES=most.
export DIB_EPA_INITRAMFS_MODULES=${DIB_EPA_INITRAMFS_MODULES-"virtio_pci virtio_blk ext4 crc32c_generic ata_piix sr_mod cdrom isofs virtio_net"}
# 0: udev is left out of the initramfs (the listed modules are loaded
# without it, blkid finds root=LABEL=); 1 keeps it.
export DIB_EPA_INITRAMFS_UDEV=${DIB_EPA_INITRAMFS_UDEV:-0}
