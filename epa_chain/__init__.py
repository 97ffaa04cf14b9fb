"""epa-chain: NFV service chains on OVS-DPDK clouds, deployed and measured."""
