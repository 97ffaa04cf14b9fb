# shellcheck shell=bash
# shellcheck disable=SC2034  # read by the devstack plugin's functions
#
# The single host's "local.conf": the devstack plugin's knobs
# (devstack/settings documents each) for one host of 2 or more CPUs with no
# physical NIC, plus the cloud's own names (its passwords: secrets.bash).

# ---- The cloud ---------------------------------------------------------------
CLOUD_STATE=${EPA_CHAIN_CLOUD_STATE:-/var/lib/epa-chain-cloud}
CLOUD_NAME=${EPA_CHAIN_CLOUD_NAME:-epa-chain}
CLOUD_REGION=RegionOne
CLOUD_HOST=127.0.0.1
KEYSTONE_URL=http://$CLOUD_HOST:5000/v3
CLOUD_VIRT_TYPE=${EPA_CHAIN_CLOUD_VIRT_TYPE:-}
# The distribution's Python, with the openstack SDK and PyYAML the
# packages bring (not whatever python3 comes first on PATH).
SYSTEM_PYTHON=/usr/bin/python3

# The management network the templates default to (management_network:
# private): a VLAN of its own physnet, reached from this host through an
# OVS internal port, so that the generator's control port answers here.
MANAGEMENT_NETWORK=private
MANAGEMENT_PHYSNET=management
MANAGEMENT_BRIDGE=br-mgmt
MANAGEMENT_VLAN=100
MANAGEMENT_CIDR=10.0.0.0/24
MANAGEMENT_HOST_PORT=epa-mgmt0
MANAGEMENT_HOST_ADDRESS=10.0.0.1
MANAGEMENT_POOL_START=10.0.0.10
MANAGEMENT_POOL_END=10.0.0.250

# ---- The devstack plugin's knobs ------------------------------------------
# All-in-one OVS-DPDK; lcore threads on CPU 0, the PMD on CPU 1 (seed 000
# used 0x2/0x4 on a larger host).
OVS_DPDK_MODE=controller_ovs_dpdk
OVS_DATAPATH_TYPE=netdev
OVS_CORE_MASK=0x1
OVS_PMD_CORE_MASK=0x2
# An idle PMD sleeps up to 1 ms (pmd-maxsleep) instead of spinning on one
# of the 2 CPUs the guests need: measured under TCG, the PMD went from
# 87-94 % of a CPU to 7 %, the in-stack generator from 873 frames/s
# offered of 1,000 asked (and 20 % loss at 500) to 5,000 frames/s per
# direction offered and forwarded without loss.
OVS_PMD_MAXSLEEP=${OVS_PMD_MAXSLEEP:-1000}
# No PCI device is DPDK's: the bridges' only ports are vhost-user and patch
# ports.
OVS_DPDK_EXTRA=--no-pci
OVS_SOCKET_MEM=1024
OVS_HUGEPAGE_MOUNT=/dev/hugepages
OVS_HUGEPAGE_MOUNT_PAGESIZE=2M
# 1 GiB for OVS, 9 GiB for the guests: the largest chain (vE-CPE and the
# generator) is four small-host guests of 2 GiB.
OVS_NUM_HUGEPAGES=${EPA_CHAIN_CLOUD_HUGEPAGES:-5120}
OVS_VHOST_USER_SOCKET_DIR=/var/lib/vhost_sockets
# Seed 000 Table 8-3: VLANs 1001-1002 on physnet1, 2001-2002 on physnet2.
OVS_BRIDGE_MAPPINGS=physnet1:br-physnet1,physnet2:br-physnet2,$MANAGEMENT_PHYSNET:$MANAGEMENT_BRIDGE
ML2_VLAN_RANGES=physnet1:1000:1010,physnet2:2000:2010,$MANAGEMENT_PHYSNET
EPA_CHAIN_NO_NIC_FALLBACK=True
# Two CPUs cannot give pinned guests a CPU of their own next to OVS: every
# CPU is shared (templates/environments/small-host.yaml says the same to
# the stack). A host with more CPUs gets the plugin's split (auto).
if (( $(nproc --all) < 4 )); then
    NOVA_CPU_DEDICATED_SET=${EPA_CHAIN_CLOUD_CPU_DEDICATED_SET:-none}
    NOVA_CPU_SHARED_SET=${EPA_CHAIN_CLOUD_CPU_SHARED_SET:-0-$(( $(nproc --all) - 1 ))}
    # The flavors Tempest's scenarios boot (`tempest`): shared CPUs and 2
    # vCPUs per guest, as templates/environments/small-host.yaml.
    EPA_CHAIN_FLAVOR_PROPERTIES="hw:cpu_policy=shared hw:mem_page_size=large hw:numa_nodes=1"
    EPA_CHAIN_GENERATOR_FLAVOR_VCPUS=2
else
    NOVA_CPU_DEDICATED_SET=${EPA_CHAIN_CLOUD_CPU_DEDICATED_SET:-auto}
    NOVA_CPU_SHARED_SET=${EPA_CHAIN_CLOUD_CPU_SHARED_SET:-auto}
fi
# devstack's service names for what runs here (is_service_enabled).
ENABLED_SERVICES=key,g-api,placement-api,n-api,n-cond,n-sch,n-cpu,q-svc,q-agt,h-api,h-eng,tempest
# Debian's ML2 files: the server reads ml2_conf.ini, the agent its own.
Q_AGENT=openvswitch
Q_ML2_PLUGIN_MECHANISM_DRIVERS=openvswitch
Q_PLUGIN_CONF_FILE=etc/neutron/plugins/ml2/ml2_conf.ini
EPA_CHAIN_OVS_AGENT_CONF_FILE=/etc/neutron/plugins/ml2/openvswitch_agent.ini
NOVA_CONF=/etc/nova/nova.conf
EPA_CHAIN_OS_CLOUD=$CLOUD_NAME
# Tempest's scenarios boot flavors the plugin makes (`tempest`), 2 GiB each.
EPA_CHAIN_CREATE_FLAVORS=True
# Images: the files given, else (--build-images) vnf_images/.
EPA_CHAIN_IMAGE_DIR=$CLOUD_STATE/images
NO_UPDATE_REPOS=True
