# distro: the distribution's DPDK packages, nothing compiled (PROX gets the
# driver-SDK headers from the same version's source package); package: the
# distribution's dpdk source package compiled with the driver SDK (apt-get
# source); source: the source-repositories entry "dpdk" compiled
# (DIB_REPOLOCATION_dpdk, DIB_REPOREF_dpdk, DIB_REPOTYPE_dpdk).
export DIB_INSTALLTYPE_dpdk=${DIB_INSTALLTYPE_dpdk:-distro}

# Drivers to build (meson enable_drivers): the virtio NIC Nova gives a
# vhost-user port, af_packet/ring/null for tests; the buses and mempools
# every port needs. PROX links rte_net_ring, rte_bus_pci and rte_bus_vdev.
export DIB_EPA_DPDK_DRIVERS=${DIB_EPA_DPDK_DRIVERS-"bus/pci,bus/vdev,mempool/ring,mempool/stack,net/virtio,net/af_packet,net/ring,net/null"}
# Applications to build (meson enable_apps); dpdk-devbind.py always comes.
export DIB_EPA_DPDK_APPS=${DIB_EPA_DPDK_APPS-"test-pmd,proc-info"}
# Extra meson options, e.g. "-Dmax_lcores=256".
export DIB_EPA_DPDK_MESON_ARGS=${DIB_EPA_DPDK_MESON_ARGS:-}
export DIB_EPA_DPDK_PREFIX=${DIB_EPA_DPDK_PREFIX:-/usr/local}
