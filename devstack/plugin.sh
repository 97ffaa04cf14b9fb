# shellcheck shell=bash
#
# epa-chain devstack plugin: OVS-DPDK, provider bridges per physnet, ML2 VLAN
# ranges, Nova CPU pinning and NUMA scheduling, the chain's images, and the
# Tempest plugin's options.
#
# devstack sources this file as `plugin.sh stack <phase>`, `plugin.sh
# unstack` and `plugin.sh clean`, after devstack/settings.

# shellcheck source=devstack/lib/epa_chain
source "$EPA_CHAIN_DIR/devstack/lib/epa_chain"

if [[ "$1" == "stack" ]]; then
    case "$2" in
        pre-install)
            # Fail before anything is installed.
            echo_summary "Checking the epa-chain settings"
            epa_chain_check_config
            ;;
        install)
            # devstack has installed and started Open vSwitch by now
            # (install_neutron_agent_packages).
            if _epa_chain_dpdk_enabled; then
                echo_summary "Setting up OVS-DPDK"
                epa_chain_install_ovs_dpdk
                epa_chain_allocate_hugepages
                epa_chain_configure_ovs_dpdk
                epa_chain_restart_ovs
                epa_chain_create_vhostuser_dir
            fi
            ;;
        post-config)
            # After devstack wrote ml2_conf.ini and nova.conf, before the
            # agents and nova-compute start.
            echo_summary "Configuring provider bridges, Neutron and Nova for epa-chain"
            if is_service_enabled q-agt neutron-agent; then
                epa_chain_create_provider_bridges
            fi
            epa_chain_configure_neutron
            if is_service_enabled nova; then
                epa_chain_configure_nova
            fi
            ;;
        extra)
            if is_service_enabled g-api; then
                echo_summary "Uploading the epa-chain images"
                epa_chain_upload_images
            fi
            if is_service_enabled n-api; then
                epa_chain_create_flavors
            fi
            ;;
        test-config)
            if is_service_enabled tempest; then
                echo_summary "Writing epa-chain's Tempest options"
                epa_chain_configure_tempest
            fi
            ;;
    esac
elif [[ "$1" == "unstack" ]]; then
    if is_service_enabled q-agt neutron-agent; then
        epa_chain_remove_provider_bridges
    fi
elif [[ "$1" == "clean" ]]; then
    if _epa_chain_dpdk_enabled; then
        epa_chain_clean
    fi
fi
