# shellcheck shell=bash
# shellcheck disable=SC2034  # read by the devstack plugin's functions
#
# up, down and status: the order things happen in.

PACKAGES=(mariadb-server python3-pymysql rabbitmq-server memcached
          python3-memcache keystone glance-api placement-api nova-api
          nova-conductor nova-scheduler nova-compute nova-compute-kvm
          libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils
          openvswitch-switch openvswitch-switch-dpdk neutron-server
          neutron-openvswitch-agent heat-api heat-engine
          python3-openstackclient python3-heatclient genisoimage curl acl)

# API health: service name and a URL that answers once it serves.
API_CHECKS=(
    "keystone|http://$CLOUD_HOST:5000/v3"
    "glance-api|http://$CLOUD_HOST:9292/"
    "placement-api|http://$CLOUD_HOST:8778/"
    "nova-api|http://$CLOUD_HOST:8774/"
    "neutron-api|http://$CLOUD_HOST:9696/"
    "heat-api|http://$CLOUD_HOST:8004/"
)

function _step {
    echo "==> [$(( SECONDS / 60 ))m$(( SECONDS % 60 ))s] $*"
}

# Without systemd the packages' scripts must not start anything: `up`
# starts each service once it is configured.
function install_packages {
    local missing=() pkg policy=/usr/sbin/policy-rc.d
    for pkg in "${PACKAGES[@]}"; do
        dpkg -s "$pkg" > /dev/null 2>&1 || missing+=("$pkg")
    done
    (( ${#missing[@]} )) || return 0
    _step "installing ${#missing[@]} packages"
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy"
        chmod +x "$policy"
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    apt-get update -q > /dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        "${missing[@]}" > "$CLOUD_STATE/run/apt.log" 2>&1 || {
            tail -n 20 "$CLOUD_STATE/run/apt.log" >&2
            cloud_die "apt-get install failed (log: $CLOUD_STATE/run/apt.log)"
        }
}

# An ordinary distribution kernel, booted under KVM: it either reaches
# "cannot mount root" (KVM runs guests: use it) or not (e.g. KVM PVM hosts,
# where only PVM-enabled guest kernels boot: use QEMU's TCG).
function probe_virt_type {
    local cache=${XDG_CACHE_HOME:-$HOME/.cache}/epa-chain/kvm-probe kernel pkg out
    if [[ -n $CLOUD_VIRT_TYPE ]]; then
        return
    fi
    if CLOUD_VIRT_TYPE=$(state_recall virt-type); then
        return
    fi
    CLOUD_VIRT_TYPE=qemu
    if [[ -w /dev/kvm ]]; then
        kernel=$(find "$cache" -name 'vmlinuz-*' 2>/dev/null | head -n 1 || true)
        if [[ -z $kernel ]]; then
            mkdir -p "$cache"
            pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
                  awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
            if [[ -n $pkg ]] && (cd "$cache" && apt-get download -q "$pkg" > /dev/null 2>&1); then
                dpkg-deb -x "$cache"/"$pkg"_*.deb "$cache/root"
                kernel=$(find "$cache/root" -name 'vmlinuz-*' | head -n 1)
            fi
        fi
        if [[ -n $kernel ]]; then
            out=$(timeout 30 qemu-system-x86_64 -accel kvm -cpu host,-arch-capabilities \
                -m 256 -nographic -nodefaults -serial stdio -no-reboot \
                -kernel "$kernel" -append "console=ttyS0 panic=-1" 2>&1 || true)
            if grep -q "Unable to mount root fs\|Run /init\|Kernel panic" <<< "$out"; then
                CLOUD_VIRT_TYPE=kvm
            fi
        fi
    fi
    echo "guests run under $CLOUD_VIRT_TYPE ($( [[ $CLOUD_VIRT_TYPE == kvm ]] &&
        echo 'an ordinary kernel boots under KVM' ||
        echo 'no ordinary guest kernel boots under KVM here: TCG'))"
    state_record virt-type "$CLOUD_VIRT_TYPE"
}

# `probe`: the virt_type guests will run under, alone on stdout. An image
# built for this cloud depends on it (under TCG its guests need pci=nomsi),
# so a caller that builds the image asks first and uploads it with its one
# `up`. It installs `up`'s packages (the probe boots a kernel with QEMU);
# `up` then recalls the answer and `down` removes what both made.
function cloud_probe {
    state_init
    install_packages >&2
    probe_virt_type >&2
    echo "$CLOUD_VIRT_TYPE"
}

# OVS with DPDK, through the devstack plugin's functions.
function ovs_dpdk_up {
    local alternative
    alternative=$(update-alternatives --query ovs-vswitchd 2>/dev/null |
                  awk '/^Status:/ {s=$2} /^Value:/ {v=$2} END {print s, v}')
    state_record ovs-alternative "$alternative"
    state_record nr-hugepages "$(cat /proc/sys/vm/nr_hugepages)"
    mountpoint -q "$OVS_HUGEPAGE_MOUNT" || state_record hugetlbfs-mounted yes
    epa_chain_install_ovs_dpdk
    epa_chain_allocate_hugepages
    service_start openvswitch-switch
    epa_chain_configure_ovs_dpdk
    if [[ $(ovs-vsctl --timeout=5 get Open_vSwitch . dpdk_initialized 2>/dev/null) != true ]]; then
        epa_chain_restart_ovs
    fi
    epa_chain_create_vhostuser_dir
    epa_chain_create_provider_bridges
}

# The management network and this host's address on it.
function management_network_up {
    if ! os_openstack network show "$MANAGEMENT_NETWORK" > /dev/null 2>&1; then
        os_openstack network create --share --provider-network-type vlan \
            --provider-physical-network "$MANAGEMENT_PHYSNET" \
            --provider-segment "$MANAGEMENT_VLAN" "$MANAGEMENT_NETWORK" > /dev/null
    fi
    if ! os_openstack subnet show "$MANAGEMENT_NETWORK-subnet" > /dev/null 2>&1; then
        # No DHCP agent runs: Nova writes the static address into the
        # config drive's network_data.json and the VNF runtime applies it.
        os_openstack subnet create --network "$MANAGEMENT_NETWORK" --no-dhcp \
            --subnet-range "$MANAGEMENT_CIDR" --gateway none \
            --allocation-pool "start=$MANAGEMENT_POOL_START,end=$MANAGEMENT_POOL_END" \
            "$MANAGEMENT_NETWORK-subnet" > /dev/null
    fi
    ovs-vsctl --may-exist add-port "$MANAGEMENT_BRIDGE" "$MANAGEMENT_HOST_PORT" \
        tag="$MANAGEMENT_VLAN" -- set Interface "$MANAGEMENT_HOST_PORT" type=internal
    ip address replace "$MANAGEMENT_HOST_ADDRESS/${MANAGEMENT_CIDR#*/}" dev "$MANAGEMENT_HOST_PORT"
    ip link set "$MANAGEMENT_HOST_PORT" up
}

# _image_current NAME FILE - Glance has NAME with FILE's contents (any
# contents when no file is given).
function _image_current {
    local name=$1 file=$2 checksum
    checksum=$(os_openstack image show -f value -c checksum "$name" 2>/dev/null) || return 1
    [[ -z $file || $checksum == "$(md5sum < "$file" | cut -d' ' -f1)" ]]
}

function images_up {
    local role name file
    if _image_current "$EPA_CHAIN_VNF_IMAGE_NAME" "$VNF_IMAGE_FILE" &&
            _image_current "$EPA_CHAIN_GENERATOR_IMAGE_NAME" \
                "${GENERATOR_IMAGE_FILE:-$VNF_IMAGE_FILE}"; then
        return
    fi
    EPA_CHAIN_VNF_IMAGE_URL=${VNF_IMAGE_FILE:+file://$(readlink -f "$VNF_IMAGE_FILE")}
    EPA_CHAIN_GENERATOR_IMAGE_URL=${GENERATOR_IMAGE_FILE:+file://$(readlink -f "$GENERATOR_IMAGE_FILE")}
    if [[ -z $GENERATOR_IMAGE_FILE ]]; then
        # Uploaded from the VNF image's file (same elements).
        EPA_CHAIN_GENERATOR_IMAGE_BUILD_CMD=
    fi
    EPA_CHAIN_BUILD_IMAGES=$BUILD_IMAGES
    if [[ $BUILD_IMAGES == True && -z $VNF_IMAGE_FILE ]]; then
        _samplevnf_for_dib
        # The image is built for the hypervisor the probe found.
        local LIBVIRT_TYPE=$CLOUD_VIRT_TYPE
    fi
    if [[ -z $VNF_IMAGE_FILE && $BUILD_IMAGES != True ]]; then
        echo "no image given (--vnf-image FILE or --build-images): the" \
            "stacks need $EPA_CHAIN_VNF_IMAGE_NAME and" \
            "$EPA_CHAIN_GENERATOR_IMAGE_NAME in Glance" >&2
        return
    fi
    _step "uploading the images"
    for role in vnf generator; do
        name=EPA_CHAIN_${role^^}_IMAGE_NAME
        # With the kernel and initrd its direct boot uploaded beside it.
        os_openstack image delete "${!name}" "${!name}-kernel" \
            "${!name}-ramdisk" > /dev/null 2>&1 || true
    done
    epa_chain_upload_images > /dev/null
    for role in vnf generator; do
        name=EPA_CHAIN_${role^^}_IMAGE_NAME
        file=$(os_openstack image show -f value -c status "${!name}")
        [[ $file == active ]] || cloud_die "image ${!name} is $file, not active"
    done
}

# --build-images: DIB's source-repositories element takes PROX's source
# from EPA_CHAIN_PROX_SOURCE (a tarball as is, a git URL[#REF] or checkout
# cloned), as the images test's harness gives it, not from GitHub. A
# DIB_REPOLOCATION_samplevnf of the caller's wins.
function _samplevnf_for_dib {
    local source=${EPA_CHAIN_PROX_SOURCE:-}
    [[ -z ${DIB_REPOLOCATION_samplevnf:-} ]] || return 0
    [[ -n $source ]] || cloud_die "--build-images: set EPA_CHAIN_PROX_SOURCE" \
        "to a samplevnf tarball or git repository (or DIB_REPOLOCATION_samplevnf)"
    if [[ -f $source ]]; then
        export DIB_REPOTYPE_samplevnf=file
        DIB_REPOLOCATION_samplevnf=file://$(readlink -f "$source")
    else
        export DIB_REPOTYPE_samplevnf=git
        DIB_REPOLOCATION_samplevnf=${source%%#*}
        export DIB_REPOREF_samplevnf=HEAD
        [[ $source != *#* ]] || DIB_REPOREF_samplevnf=${source#*#}
    fi
    export DIB_REPOLOCATION_samplevnf
}

# Wait until compute, network and orchestration report their workers up.
function wait_for_agents {
    local waited=0
    until os_openstack compute service list --service nova-compute -f value -c State 2>/dev/null | grep -qx up; do
        service_revive nova-compute
        (( waited++ < 60 )) || service_fail nova-compute "is not up in the compute service list"
        sleep 2
    done
    su -s /bin/sh nova -c "nova-manage cell_v2 discover_hosts" > /dev/null 2>&1
    waited=0
    until [[ -n $(os_openstack hypervisor list -f value -c ID 2>/dev/null) ]]; do
        (( waited++ < 60 )) || service_fail nova-compute "registered no hypervisor"
        su -s /bin/sh nova -c "nova-manage cell_v2 discover_hosts" > /dev/null 2>&1
        sleep 2
    done
    waited=0
    until os_openstack network agent list --agent-type open-vswitch -f value -c Alive 2>/dev/null | grep -qx True; do
        service_revive neutron-openvswitch-agent
        (( waited++ < 60 )) || service_fail neutron-openvswitch-agent "is not alive in the agent list"
        sleep 2
    done
    waited=0
    until os_openstack orchestration service list -f value -c Status 2>/dev/null | grep -qx up; do
        service_revive heat-engine
        (( waited++ < 60 )) || service_fail heat-engine "is not up in the orchestration service list"
        sleep 2
    done
}

function cloud_up {
    state_init
    SECONDS=0
    install_packages
    state_keep_original "${CONFIG_FILES[@]}"
    state_load_plugin
    _step "checking the plugin settings"
    epa_chain_check_config
    probe_virt_type

    _step "Open vSwitch with DPDK, huge pages, provider bridges"
    ovs_dpdk_up

    _step "database, message queue, cache"
    configure_loopback
    service_start mariadb
    service_start rabbitmq-server
    service_start memcached
    os_create_databases

    _step "keystone"
    state_keep_original /etc/openstack/clouds.yaml
    [[ -d /etc/keystone/fernet-keys ]] || state_record keystone-keys created
    configure_keystone
    service_start keystone
    service_wait_http keystone "http://$CLOUD_HOST:5000/v3"
    clouds_yaml_write
    register_services

    _step "glance, placement"
    configure_glance
    service_start glance-api
    configure_placement
    service_start placement-api

    _step "nova on libvirt ($CLOUD_VIRT_TYPE)"
    configure_libvirt
    service_start virtlogd
    service_start libvirtd
    configure_nova
    local service
    for service in nova-api nova-conductor nova-scheduler nova-compute; do
        service_start "$service"
    done

    _step "neutron ML2/Open vSwitch on the userspace datapath"
    configure_neutron
    for service in neutron-api neutron-rpc-server neutron-openvswitch-agent; do
        service_start "$service"
    done

    _step "heat"
    configure_heat
    service_start heat-api
    service_start heat-engine

    _step "waiting for the APIs and agents"
    local check
    for check in "${API_CHECKS[@]}"; do
        service_wait_http "${check%%|*}" "${check#*|}"
    done
    wait_for_agents

    _step "management network, images"
    management_network_up
    images_up
    _step "up: cloud '$CLOUD_NAME' in /etc/openstack/clouds.yaml" \
        "(openstack --os-cloud $CLOUD_NAME ...)"
}

# Guests Nova left running: destroyed through libvirt before it stops.
function _destroy_guests {
    local domain
    service_pid libvirtd > /dev/null || return 0
    for domain in $(timeout 30 virsh list --all --name 2>/dev/null | grep '^instance-' || true); do
        timeout 30 virsh destroy "$domain" > /dev/null 2>&1 || true
        timeout 30 virsh undefine --nvram "$domain" > /dev/null 2>&1 ||
            timeout 30 virsh undefine "$domain" > /dev/null 2>&1 ||
            down_gave_up "libvirt domain $domain"
    done
}

# What `down` could not undo: said at the end, and its exit status.
DOWN_LEFT=()
function down_gave_up {
    echo "down: giving up on $*" >&2
    DOWN_LEFT+=("$*")
}

# The infrastructure the OpenStack services use: stopped after the
# databases and the queue's user are gone.
INFRASTRUCTURE=(mariadb rabbitmq-server memcached openvswitch-switch)

# _stop_services NAME... - stop these, last started first.
function _stop_services {
    local i service
    for (( i = $# ; i >= 1; i-- )); do
        service=${!i}
        echo "stopping $service"
        service_stop "$service" || down_gave_up "$service (still running)"
    done
}

# _stop_services_together NAME... - stop these at once. Each waits on its
# own daemon (neutron-openvswitch-agent's init script 29 s, heat-engine
# 15 s): one after another the cloud's services took 93 s of `down`.
function _stop_services_together {
    local service i pids=() names=()
    for service in "$@"; do
        echo "stopping $service"
        service_stop "$service" &
        pids+=("$!")
        names+=("$service")
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || down_gave_up "${names[$i]} (still running)"
    done
}

# The databases `up` created, dropped once no service of the cloud holds
# a session in them. A run cut off before its `down` may have lost MariaDB
# but not its databases: MariaDB is started again for the drop, so that a
# later `up` begins with empty databases.
function _drop_databases {
    if ! service_pid mariadb > /dev/null &&
            compgen -G "$CLOUD_STATE/records/db-*" > /dev/null; then
        service_start mariadb
    fi
    if service_pid mariadb > /dev/null; then
        os_drop_databases || down_gave_up "some databases (see above)"
    fi
}

function cloud_down {
    local started=() services=() service alternative pages
    if [[ ! -d $CLOUD_STATE/records ]]; then
        echo "nothing to take down ($CLOUD_STATE does not exist)"
        return 0
    fi
    state_load_plugin
    # The tester's ports and its PROX, while Open vSwitch still runs.
    tester_down
    _destroy_guests
    # The OpenStack services first: a running service holds database
    # sessions (and metadata locks) that a DROP DATABASE would wait for.
    mapfile -t started < <(cat "$CLOUD_STATE/records/started" 2>/dev/null || true)
    for service in "${started[@]}"; do
        [[ " ${INFRASTRUCTURE[*]} " == *" $service "* ]] || services+=("$service")
    done
    _stop_services_together "${services[@]}"
    _drop_databases
    if service_pid rabbitmq-server > /dev/null; then
        timeout 60 rabbitmqctl delete_user openstack > /dev/null 2>&1 || true
    fi
    # A run killed before its `down` (as CI's time bound does) may have
    # lost Open vSwitch but not its bridges: they stay in its database and
    # their tap devices in the kernel. It is started again to delete them.
    if ! ovs-vsctl --timeout=5 show > /dev/null 2>&1 &&
            grep -qx openvswitch-switch "$CLOUD_STATE/records/started" 2> /dev/null; then
        service_start openvswitch-switch
    fi
    if ovs-vsctl --timeout=5 show > /dev/null 2>&1; then
        ovs-vsctl --timeout=10 --if-exists del-port "$MANAGEMENT_BRIDGE" "$MANAGEMENT_HOST_PORT"
        epa_chain_remove_provider_bridges
        ovs-vsctl --timeout=10 --if-exists del-br br-int
        epa_chain_clean
    fi
    # Read again: a MariaDB started for the drop is stopped with the rest.
    mapfile -t started < <(cat "$CLOUD_STATE/records/started" 2>/dev/null || true)
    services=()
    for service in "${started[@]}"; do
        [[ " ${INFRASTRUCTURE[*]} " == *" $service "* ]] && services+=("$service")
    done
    _stop_services "${services[@]}"
    if [[ " ${started[*]} " == *" rabbitmq-server "* ]]; then
        # The Erlang port mapper rabbitmq-server started.
        timeout 10 epmd -kill > /dev/null 2>&1 || true
    fi
    kvm_access_revoke
    if alternative=$(state_recall ovs-alternative) && [[ $alternative == manual* ]]; then
        update-alternatives --set ovs-vswitchd "${alternative#manual }" > /dev/null
    fi
    if [[ $(state_recall hugetlbfs-mounted 2>/dev/null) == yes ]] &&
            mountpoint -q "$OVS_HUGEPAGE_MOUNT"; then
        timeout 30 umount "$OVS_HUGEPAGE_MOUNT" || down_gave_up "unmounting $OVS_HUGEPAGE_MOUNT"
    fi
    if pages=$(state_recall nr-hugepages); then
        echo "$pages" > /proc/sys/vm/nr_hugepages
    fi
    rm -rf "$OVS_VHOST_USER_SOCKET_DIR"
    clouds_yaml_remove
    if [[ $(state_recall keystone-keys 2>/dev/null) == created ]]; then
        rm -rf /etc/keystone/fernet-keys /etc/keystone/credential-keys
    fi
    state_restore_originals
    if [[ $KEEP_LOGS != True ]]; then
        rm -f /var/log/{keystone,glance,placement,nova,neutron,heat}/*.log
    fi
    if (( ${#DOWN_LEFT[@]} )); then
        # The state stays: a later `down` tries again what is left.
        echo "down: could not undo: $(IFS=,; echo "${DOWN_LEFT[*]}");" \
            "$CLOUD_STATE is kept for another down" >&2
        return 1
    fi
    rm -rf "$CLOUD_STATE"
    echo "down: every service 'up' started is stopped; bridges, huge pages," \
        "databases and files are gone"
}

function cloud_status {
    local name pid state check url answer
    [[ -d $CLOUD_STATE/records ]] || { echo "not up ($CLOUD_STATE does not exist)"; return 3; }
    echo "guests: $(state_recall virt-type || echo unknown) (libvirt virt_type)"
    printf '%-28s %-8s %-9s %s\n' SERVICE PID STATE API
    for name in $(service_names); do
        answer=-
        for check in "${API_CHECKS[@]}"; do
            if [[ ${check%%|*} == "$name" ]]; then
                url=${check#*|}
                answer=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url" || true)
                answer="$url -> ${answer:-no answer}"
            fi
        done
        if pid=$(service_pid "$name"); then
            state=running
        else
            pid=- state=stopped
        fi
        printf '%-28s %-8s %-9s %s\n' "$name" "$pid" "$state" "$answer"
    done
}
