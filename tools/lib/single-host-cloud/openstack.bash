# shellcheck shell=bash
# shellcheck disable=SC2034  # read by the devstack plugin's functions
#
# Configuration of each OpenStack service for one host, with devstack's
# iniset. What the chain needs of Neutron and Nova (VLAN ranges, bridge
# mappings, the userspace datapath, vhost-user, CPU sets, huge pages,
# NUMATopologyFilter) is not here: the devstack plugin's
# epa_chain_configure_neutron / epa_chain_configure_nova write it.

DB_NAMES=(keystone glance placement nova_api nova nova_cell0 neutron heat)
HEAT_POLICY_FILE=/etc/heat/policy.d/epa-chain.yaml
# Configuration files `up` edits (saved before, restored by `down`).
CONFIG_FILES=(
    /etc/keystone/keystone.conf /etc/keystone/keystone-uwsgi.ini
    /etc/glance/glance-api.conf /etc/glance/glance-api-uwsgi.ini
    /etc/placement/placement.conf /etc/placement/placement-api-uwsgi.ini
    /etc/nova/nova.conf /etc/nova/nova-compute.conf /etc/nova/nova-api-uwsgi.ini
    /etc/neutron/neutron.conf /etc/neutron/neutron-api-uwsgi.ini
    /etc/neutron/plugins/ml2/ml2_conf.ini
    /etc/neutron/plugins/ml2/openvswitch_agent.ini
    /etc/heat/heat.conf /etc/heat/heat-api-uwsgi.ini "$HEAT_POLICY_FILE"
    /etc/libvirt/qemu.conf /etc/libvirt/libvirtd.conf
    /etc/rabbitmq/rabbitmq-env.conf
)
# The packages' init scripts that start uwsgi on every address, by the
# defaults file each reads last (/etc/default/NAME).
UWSGI_DEFAULTS=(keystone placement-api nova-api heat-api neutron-server)
CONFIG_FILES+=("${UWSGI_DEFAULTS[@]/#//etc/default/}")

# configure_loopback - every listener of the cloud on CLOUD_HOST only:
# this host is also the guests' gateway address on the management network
# (MANAGEMENT_HOST_ADDRESS), and a shared lab host. MariaDB and memcached
# listen on loopback as packaged.
function configure_loopback {
    local name
    for name in "${UWSGI_DEFAULTS[@]}"; do
        uwsgi_loopback_defaults > "/etc/default/$name"
    done
    rabbitmq_loopback_env > /etc/rabbitmq/rabbitmq-env.conf
}

# The init script (sh) reads this last and passes `--http-socket :PORT`,
# every address: moved to CLOUD_HOST.
function uwsgi_loopback_defaults {
    cat <<EOT
# Written by tools/single-host-cloud (restored by down): $CLOUD_HOST only.
DAEMON_ARGS=\$(echo "\$DAEMON_ARGS" | sed 's/--http-socket :/--http-socket $CLOUD_HOST:/')
EOT
}

# RabbitMQ's AMQP and Erlang distribution ports, and the port mapper (epmd)
# its Erlang starts.
function rabbitmq_loopback_env {
    cat <<EOT
# Written by tools/single-host-cloud (restored by down): $CLOUD_HOST only.
NODE_IP_ADDRESS=$CLOUD_HOST
SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {${CLOUD_HOST//./,}}"
export ERL_EPMD_ADDRESS=$CLOUD_HOST
EOT
}

function _db_user {
    case "$1" in
        nova_api|nova_cell0) echo nova ;;
        *) echo "$1" ;;
    esac
}

# os_db_url DB - the connection URL, a template for ini_secret.
function os_db_url {
    local user
    user=$(_db_user "$1")
    echo "mysql+pymysql://$user:{db-$user}@$CLOUD_HOST/$1"
}

# db_sql [MYSQL OPTION...] - SQL from standard input as MariaDB's root;
# no statement waits on a lock for more than DB_LOCK_WAIT_S (MariaDB's
# own default is a day).
DB_LOCK_WAIT_S=${DB_LOCK_WAIT_S:-30}
function db_sql {
    mysql --connect-timeout=10 \
        --init-command="SET SESSION lock_wait_timeout = $DB_LOCK_WAIT_S" "$@"
}

# Records of work done inside a database. A new, empty database voids them:
# an interrupted `down` may have dropped the databases and kept the state.
declare -A DB_CONTENT_RECORDS=(
    [keystone]="keystone-bootstrapped services-registered"
)

# os_create_databases - each service's database and user, and RabbitMQ's
# user. Only databases made here are recorded, so `down` drops only those.
function os_create_databases {
    local db user record databases
    # Read whole before grep (see os_nova_cells).
    databases=$(db_sql -N -B <<< "SHOW DATABASES;")
    for db in "${DB_NAMES[@]}"; do
        user=$(_db_user "$db")
        if ! grep -qx "$db" <<< "$databases"; then
            for record in ${DB_CONTENT_RECORDS[$db]:-}; do
                state_forget "$record"
            done
            db_sql <<< "CREATE DATABASE $db;"
            state_record "db-$db" created
        fi
        # The password's hash, not the password: SQL text gets logged.
        db_sql <<EOT
CREATE USER IF NOT EXISTS '$user'@'localhost';
ALTER USER '$user'@'localhost' IDENTIFIED BY PASSWORD '$(mysql_password_hash "db-$user")';
GRANT ALL ON $db.* TO '$user'@'localhost';
EOT
    done
    # rabbitmqctl reads a password it is not given from standard input.
    if ! secret rabbitmq | timeout 60 rabbitmqctl add_user openstack > /dev/null 2>&1; then
        secret rabbitmq | timeout 60 rabbitmqctl change_password openstack > /dev/null
    fi
    timeout 60 rabbitmqctl set_permissions openstack '.*' '.*' '.*' > /dev/null
}

# os_drop_databases - drop the databases `up` made, and their users. The
# services are stopped by now, but a client that outlived them (or anyone's
# session left idle in a transaction) holds a metadata lock a DROP would
# wait for: such sessions are killed first, and every lock wait is bounded.
# Says which database it could not drop, and returns 1 then.
function os_drop_databases {
    local db ours=() users=() dbs names sessions id failed=0
    for db in "${DB_NAMES[@]}"; do
        if state_recall "db-$db" > /dev/null; then
            ours+=("$db")
            users+=("$(_db_user "$db")")
        fi
    done
    (( ${#ours[@]} )) || return 0
    dbs=$(printf "'%s'," "${ours[@]}")
    names=$(printf "'%s'," "${users[@]}")
    sessions=$(db_sql -N -B <<< "SELECT id FROM information_schema.processlist
        WHERE (db IN (${dbs%,}) OR user IN (${names%,}))
        AND id <> CONNECTION_ID();" 2> /dev/null || true)
    for id in $sessions; do
        db_sql <<< "KILL $id;" > /dev/null 2>&1 || true
    done
    for db in "${ours[@]}"; do
        if db_sql <<< "DROP DATABASE IF EXISTS $db;
                DROP USER IF EXISTS '$(_db_user "$db")'@'localhost';"; then
            state_forget "db-$db"
        else
            echo "could not drop database $db" >&2
            failed=1
        fi
    done
    return $failed
}

# uwsgi_workers INI PROCESSES THREADS - Debian's defaults (8-16 processes x
# 32 threads) do not fit 2 CPUs; neutron-api hangs with more than one
# thread (eventlet: "cannot switch to a different thread").
function uwsgi_workers {
    sed -i "s/^processes = .*/processes = $2/; s/^threads = .*/threads = $3/" "$1"
}

# authtoken CONF SECTION USER - keystonemiddleware / keystoneauth options.
function authtoken {
    local conf=$1 section=$2 user=$3
    iniset "$conf" "$section" auth_url "http://$CLOUD_HOST:5000"
    iniset "$conf" "$section" auth_type password
    iniset "$conf" "$section" project_domain_name Default
    iniset "$conf" "$section" user_domain_name Default
    iniset "$conf" "$section" project_name service
    iniset "$conf" "$section" username "$user"
    ini_secret "$conf" "$section" password "{service-$user}"
    iniset "$conf" "$section" region_name "$CLOUD_REGION"
    if [[ $section == keystone_authtoken ]]; then
        iniset "$conf" "$section" www_authenticate_uri "http://$CLOUD_HOST:5000"
        iniset "$conf" "$section" memcached_servers "$CLOUD_HOST:11211"
    fi
}

function os_openstack {
    openstack --os-cloud "$CLOUD_NAME" "$@"
}

# manage USER COMMAND - a *-manage command as the service's user; on
# failure, its output and which command it was.
function manage {
    local user=$1 command=$2 out
    if ! out=$(su -s /bin/sh "$user" -c "$command" 2>&1); then
        echo "$out" | grep -v "getcurrent\|^Exception ignored\|^Traceback\|^  File" | tail -n 20 >&2
        cloud_die "'$command' (as $user) failed"
    fi
}

function configure_keystone {
    local conf=/etc/keystone/keystone.conf
    ini_secret "$conf" database connection "$(os_db_url keystone)"
    iniset "$conf" token provider fernet
    inidelete "$conf" catalog template_file
    iniset "$conf" cache enabled true
    iniset "$conf" cache backend dogpile.cache.memcached
    iniset "$conf" cache memcache_servers "$CLOUD_HOST:11211"
    uwsgi_workers /etc/keystone/keystone-uwsgi.ini 2 1
    # The database and keys outlive a second `up`; each step below takes
    # seconds of interpreter start-up on a small host.
    state_recall keystone-bootstrapped > /dev/null && return 0
    manage keystone "keystone-manage db_sync"
    keystone-manage fernet_setup --keystone-user keystone --keystone-group keystone
    keystone-manage credential_setup --keystone-user keystone --keystone-group keystone
    # The admin password from the environment, not the command line.
    OS_BOOTSTRAP_PASSWORD=$(secret admin) keystone-manage bootstrap \
        --bootstrap-admin-url "$KEYSTONE_URL/" \
        --bootstrap-internal-url "$KEYSTONE_URL/" \
        --bootstrap-public-url "$KEYSTONE_URL/" \
        --bootstrap-region-id "$CLOUD_REGION" 2> /dev/null
    state_record keystone-bootstrapped yes
}

# The clouds.yaml entry every later step (and the user) works with: it
# holds the admin password, so it is root's alone (0600).
function clouds_yaml_write {
    "$SYSTEM_PYTHON" - "$CLOUD_NAME" "$KEYSTONE_URL" "$(secret_file admin)" "$CLOUD_REGION" <<'EOF'
import os, sys
import yaml
name, url, secret, region = sys.argv[1:]
with open(secret) as stream:
    password = stream.read().strip()
path = '/etc/openstack/clouds.yaml'
os.makedirs(os.path.dirname(path), exist_ok=True)
data = {}
if os.path.exists(path):
    with open(path) as stream:
        data = yaml.safe_load(stream) or {}
data.setdefault('clouds', {})[name] = {
    'auth': {'auth_url': url, 'username': 'admin', 'password': password,
             'project_name': 'admin', 'user_domain_name': 'Default',
             'project_domain_name': 'Default'},
    'region_name': region, 'interface': 'public',
    'identity_api_version': 3}
temporary = path + '.tmp'
with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
          'w') as stream:
    os.fchmod(stream.fileno(), 0o600)
    yaml.safe_dump(data, stream, default_flow_style=False)
os.replace(temporary, path)
EOF
}

function clouds_yaml_remove {
    "$SYSTEM_PYTHON" - "$CLOUD_NAME" <<'EOF'
import os, sys
import yaml
path = '/etc/openstack/clouds.yaml'
if os.path.exists(path):
    with open(path) as stream:
        data = yaml.safe_load(stream) or {}
    data.get('clouds', {}).pop(sys.argv[1], None)
    if data.get('clouds'):
        with open(path, 'w') as stream:
            yaml.safe_dump(data, stream, default_flow_style=False)
    else:
        os.remove(path)
EOF
}

# register_services - the service project, users, catalog and Heat's
# domain: one SDK session (a client call costs seconds of start-up here,
# and this took ~50 of them), idempotent, each password read from its
# secret file.
function register_services {
    state_recall services-registered > /dev/null && return 0
    "$SYSTEM_PYTHON" - "$CLOUD_NAME" "$CLOUD_REGION" "$CLOUD_HOST" \
        "$(secret_file service-glance)" "$(secret_file service-placement)" \
        "$(secret_file service-nova)" "$(secret_file service-neutron)" \
        "$(secret_file service-heat)" "$(secret_file heat-domain-admin)" <<'EOF'
import sys
import openstack

cloud, region, host = sys.argv[1:4]
secrets = dict(zip(('glance', 'placement', 'nova', 'neutron', 'heat',
                    'heat_domain_admin'), sys.argv[4:]))
CATALOG = (('image', 'glance', 'http://%s:9292'),
           ('placement', 'placement', 'http://%s:8778'),
           ('compute', 'nova', 'http://%s:8774/v2.1'),
           ('network', 'neutron', 'http://%s:9696'),
           ('orchestration', 'heat', 'http://%s:8004/v1/%%(tenant_id)s'),
           ('cloudformation', 'heat-cfn', 'http://%s:8000/v1'))
conn = openstack.connect(cloud=cloud)
identity = conn.identity


def password(name):
    with open(secrets[name]) as stream:
        return stream.read().strip()


def user(name, domain):
    found = identity.find_user(name, domain_id=domain.id)
    if found is None:
        return identity.create_user(name=name, domain_id=domain.id,
                                    password=password(name))
    return identity.update_user(found, password=password(name))


def role(name):
    return identity.find_role(name) or identity.create_role(name=name)


default = identity.find_domain('default', ignore_missing=False)
service = (identity.find_project('service', domain_id=default.id) or
           identity.create_project(name='service', domain_id=default.id))
admin_role = role('admin')
for name in ('glance', 'placement', 'nova', 'neutron', 'heat'):
    conn.grant_role(admin_role.id, user=user(name, default).id,
                    project=service.id)
for kind, name, url in CATALOG:
    found = [s for s in identity.services() if s.type == kind]
    entry = found[0] if found else identity.create_service(name=name,
                                                           type=kind)
    for interface in ('public', 'internal', 'admin'):
        if not list(identity.endpoints(service_id=entry.id,
                                       interface=interface)):
            identity.create_endpoint(service_id=entry.id,
                                     interface=interface, url=url % host,
                                     region_id=region)
# Heat's stack domain and roles.
heat = identity.find_domain('heat') or identity.create_domain(name='heat')
conn.grant_role(admin_role.id, user=user('heat_domain_admin', heat).id,
                domain=heat.id)
role('heat_stack_user')
admin = identity.find_user('admin', domain_id=default.id,
                           ignore_missing=False)
admin_project = identity.find_project('admin', domain_id=default.id,
                                      ignore_missing=False)
conn.grant_role(role('heat_stack_owner').id, user=admin.id,
                project=admin_project.id)
EOF
    state_record services-registered yes
}

function configure_glance {
    local conf=/etc/glance/glance-api.conf
    ini_secret "$conf" database connection "$(os_db_url glance)"
    authtoken "$conf" keystone_authtoken glance
    iniset "$conf" paste_deploy flavor keystone
    iniset "$conf" DEFAULT enabled_backends fs:file
    iniset "$conf" DEFAULT workers 1
    # glance-api is not uwsgi here: its own listener.
    iniset "$conf" DEFAULT bind_host "$CLOUD_HOST"
    iniset "$conf" glance_store default_backend fs
    install -d -o glance -g glance "$CLOUD_STATE/glance-images"
    iniset "$conf" fs filesystem_store_datadir "$CLOUD_STATE/glance-images/"
    uwsgi_workers /etc/glance/glance-api-uwsgi.ini 1 1
    manage glance "glance-manage db_sync"
}

function configure_placement {
    local conf=/etc/placement/placement.conf
    ini_secret "$conf" placement_database connection "$(os_db_url placement)"
    iniset "$conf" api auth_strategy keystone
    authtoken "$conf" keystone_authtoken placement
    uwsgi_workers /etc/placement/placement-api-uwsgi.ini 1 1
    manage placement "placement-manage db sync"
}

function configure_nova {
    local conf=$NOVA_CONF
    ini_secret "$conf" DEFAULT transport_url "rabbit://openstack:{rabbitmq}@$CLOUD_HOST:5672/"
    iniset "$conf" DEFAULT my_ip "$CLOUD_HOST"
    iniset "$conf" DEFAULT compute_driver libvirt.LibvirtDriver
    iniset "$conf" DEFAULT reserved_host_memory_mb 512
    # Two CPUs building the four guests of the vE-CPE chain at once (image
    # download and conversion, four QEMUs starting) stalled nova-compute
    # for over oslo.messaging's 60 s: a build waiting for a conductor reply
    # failed (MessagingTimeout in update_instance_cache_with_nw_info) and,
    # with one host, Nova gave up.
    iniset "$conf" DEFAULT rpc_response_timeout 180
    # The same stalls outlasted RabbitMQ's 60 s heartbeat: it closed
    # nova-compute's connection ("missed heartbeats from client") and the
    # replies on it were lost.
    iniset "$conf" oslo_messaging_rabbit heartbeat_timeout_threshold 180
    iniset "$conf" DEFAULT osapi_compute_workers 1
    iniset "$conf" DEFAULT enabled_apis osapi_compute
    install -d -o nova -g nova "$CLOUD_STATE/nova-instances"
    iniset "$conf" DEFAULT instances_path "$CLOUD_STATE/nova-instances"
    iniset "$conf" api auth_strategy keystone
    ini_secret "$conf" api_database connection "$(os_db_url nova_api)"
    ini_secret "$conf" database connection "$(os_db_url nova)"
    authtoken "$conf" keystone_authtoken nova
    iniset "$conf" service_user send_service_user_token true
    authtoken "$conf" service_user nova
    authtoken "$conf" placement placement
    authtoken "$conf" neutron neutron
    iniset "$conf" glance api_servers "http://$CLOUD_HOST:9292"
    # Debian's nova.conf enables SPICE; no console proxy runs here.
    iniset "$conf" vnc enabled false
    iniset "$conf" spice enabled false
    iniset "$conf" oslo_concurrency lock_path /var/lib/nova/tmp
    iniset "$conf" conductor workers 1
    iniset "$conf" scheduler workers 1
    iniset "$conf" scheduler discover_hosts_in_cells_interval 30
    # Guests print EPA-CHAIN READY on the serial console Nova keeps.
    iniset "$conf" DEFAULT force_config_drive true
    # nova-compute.conf is read after nova.conf: the hypervisor goes there.
    iniset /etc/nova/nova-compute.conf libvirt virt_type "$CLOUD_VIRT_TYPE"
    if [[ $CLOUD_VIRT_TYPE == kvm ]]; then
        iniset /etc/nova/nova-compute.conf libvirt cpu_mode host-passthrough
        # KVM PVM hosts: QEMU aborts on this MSR ("failed to set MSR 0x10a").
        iniset /etc/nova/nova-compute.conf libvirt cpu_model_extra_flags -arch-capabilities
    else
        # TCG's default qemu64 lacks SSE4.2, the baseline of the
        # distribution's DPDK in the images; Westmere is the newest model
        # TCG emulates in full (virsh domcapabilities --virttype qemu).
        iniset /etc/nova/nova-compute.conf libvirt cpu_mode custom
        iniset /etc/nova/nova-compute.conf libvirt cpu_models Westmere
    fi
    uwsgi_workers /etc/nova/nova-api-uwsgi.ini 2 1
    # The chain's part: CPU sets, reserved huge pages, NUMATopologyFilter.
    epa_chain_configure_nova
    manage nova "nova-manage api_db sync"
    # Read whole before grep: with pipefail, grep -q leaving at the first
    # match makes nova-manage's later writes fail, and the pipe with it.
    local cells
    cells=$(su -s /bin/sh nova -c "nova-manage cell_v2 list_cells" 2> /dev/null || true)
    if ! grep -q ' cell0 ' <<< "$cells"; then
        manage nova "nova-manage cell_v2 map_cell0"
    fi
    if ! grep -q ' cell1 ' <<< "$cells"; then
        manage nova "nova-manage cell_v2 create_cell --name=cell1"
    fi
    manage nova "nova-manage db sync"
}

# flat_set FILE KEY VALUE - KEY = VALUE in a file without sections
# (libvirt's), replacing an earlier setting.
function flat_set {
    local file=$1 key=$2 value=$3
    sed -i "/^[# ]*$key *=/d" "$file"
    echo "$key = $value" >> "$file"
}

# libvirt without systemd, dbus or polkit. QEMU runs as the distribution's
# QEMU user, in the group the devstack plugin gives the huge-page mount and
# the vhost-user socket directory (kvm, which also opens /dev/kvm). The
# sockets are root's and the libvirt group's (nova-compute's) only: without
# polkit, their file mode is the only authentication there is.
function configure_libvirt {
    local user group
    user=$(_epa_chain_qemu_user)
    group=$(_epa_chain_qemu_group)
    [[ -n $user && -n $group ]] || cloud_die "no QEMU user or group on this" \
        "host (libvirt-qemu / kvm): is libvirt-daemon-system installed?"
    flat_set /etc/libvirt/qemu.conf user "\"$user\""
    flat_set /etc/libvirt/qemu.conf group "\"$group\""
    kvm_access_grant "$user" "$group"
    local key value
    while read -r key value; do
        flat_set /etc/libvirt/libvirtd.conf "$key" "$value"
    done < <(libvirtd_settings)
}

# libvirt keeps its probe of QEMU's capabilities only while KVM is as
# usable as it was at the probe, judged by whether QEMU's user and group
# may open /dev/kvm. Where /dev/kvm belongs to another group (on this kind
# of VM, a group id of its host's), QEMU's own probe still found KVM: every
# look-up then threw the cache away and probed QEMU again, 8-77 s of CPU
# each, for every domain Nova defined (over 2 minutes of each stack create
# here) and every capabilities call of its periodic tasks. QEMU's group
# gets read-write access by an ACL entry; `down` puts the ACL back.
function kvm_access_grant {
    local user=$1 group=$2
    [[ -c /dev/kvm ]] || return 0
    if setpriv --reuid="$user" --regid="$group" --init-groups \
            test -r /dev/kvm -a -w /dev/kvm; then
        return 0
    fi
    state_record kvm-acl "$(getfacl -p /dev/kvm)"
    if ! setfacl -m "g:$group:rw" /dev/kvm; then
        # The cloud still works, each spawn minutes slower.
        state_forget kvm-acl
        echo "WARNING: group $group may not open /dev/kvm and setfacl" \
            "failed: libvirt will probe QEMU again at every look-up" >&2
        return 0
    fi
    echo "/dev/kvm: group $group may open it (an ACL entry until down)," \
        "so that libvirt keeps its probe of QEMU"
}

# kvm_access_revoke - /dev/kvm's ACL as it was before kvm_access_grant.
function kvm_access_revoke {
    local acl
    acl=$(state_recall kvm-acl) || return 0
    [[ -c /dev/kvm ]] || return 0
    printf '%s\n' "$acl" | setfacl --restore=- ||
        down_gave_up "the ACL of /dev/kvm"
}

# libvirtd.conf's keys and values, one "key value" per line.
# max_client_requests: nova-compute sends every request of every guest it
# builds over one connection. At libvirt's default of 5 in flight, the
# four guests of the vE-CPE chain built at once filled it ("Client hit max
# requests limit 5"), libvirtd stopped reading the connection, its
# keepalive closed it, and every build failed with "Cannot recv data:
# Connection reset by peer". 20 is libvirtd's default worker count.
function libvirtd_settings {
    cat <<'SETTINGS'
unix_sock_group "libvirt"
unix_sock_ro_perms "0770"
unix_sock_rw_perms "0770"
unix_sock_admin_perms "0700"
auth_unix_ro "none"
auth_unix_rw "none"
max_client_requests 20
SETTINGS
}

function configure_neutron {
    local conf=/etc/neutron/neutron.conf
    local ml2=/$Q_PLUGIN_CONF_FILE agent=$EPA_CHAIN_OVS_AGENT_CONF_FILE
    iniset "$conf" DEFAULT core_plugin ml2
    # Segment ranges publish the ml2 VLAN ranges through the API, where
    # `epa-chain preflight` checks the chain's physnets against them.
    iniset "$conf" DEFAULT service_plugins network_segment_range
    ini_secret "$conf" DEFAULT transport_url "rabbit://openstack:{rabbitmq}@$CLOUD_HOST:5672/"
    iniset "$conf" DEFAULT rpc_workers 1
    iniset "$conf" DEFAULT api_workers 1
    iniset "$conf" DEFAULT rpc_state_report_workers 1
    ini_secret "$conf" database connection "$(os_db_url neutron)"
    authtoken "$conf" keystone_authtoken neutron
    authtoken "$conf" nova nova
    iniset "$ml2" ml2 type_drivers flat,vlan
    iniset "$ml2" ml2 tenant_network_types vlan
    iniset "$ml2" ml2 extension_drivers port_security
    iniset "$agent" ovs integration_bridge br-int
    iniset "$agent" agent tunnel_types ""
    iniset "$agent" securitygroup firewall_driver openvswitch
    # The chain's part: VLAN ranges, mechanism driver, bridge mappings,
    # the userspace datapath, the vhost-user socket directory.
    epa_chain_configure_neutron
    uwsgi_workers /etc/neutron/neutron-api-uwsgi.ini 1 1
    manage neutron "neutron-db-manage --config-file $conf --config-file $ml2 upgrade head"
}

function configure_heat {
    local conf=/etc/heat/heat.conf
    ini_secret "$conf" DEFAULT transport_url "rabbit://openstack:{rabbitmq}@$CLOUD_HOST:5672/"
    iniset "$conf" DEFAULT heat_metadata_server_url "http://$CLOUD_HOST:8000"
    iniset "$conf" DEFAULT heat_waitcondition_server_url "http://$CLOUD_HOST:8000/v1/waitcondition"
    iniset "$conf" DEFAULT stack_domain_admin heat_domain_admin
    ini_secret "$conf" DEFAULT stack_domain_admin_password "{heat-domain-admin}"
    iniset "$conf" DEFAULT stack_user_domain_name heat
    iniset "$conf" DEFAULT num_engine_workers 1
    # Heat retries a failed resource five times by default: a server Nova
    # cannot place (anti-affinity on one host) took 136 s of retries
    # before the stack failed. One retry still covers a passing stall.
    iniset "$conf" DEFAULT action_retry_limit 1
    iniset "$conf" DEFAULT region_name_for_services "$CLOUD_REGION"
    ini_secret "$conf" database connection "$(os_db_url heat)"
    authtoken "$conf" keystone_authtoken heat
    iniset "$conf" trustee auth_url "http://$CLOUD_HOST:5000"
    iniset "$conf" trustee auth_type password
    iniset "$conf" trustee user_domain_name Default
    iniset "$conf" trustee username heat
    ini_secret "$conf" trustee password "{service-heat}"
    iniset "$conf" clients_keystone auth_uri "http://$CLOUD_HOST:5000"
    iniset "$conf" heat_api workers 1
    uwsgi_workers /etc/heat/heat-api-uwsgi.ini 1 1
    # Heat's default denies stacks:global_index to everyone; the Tempest
    # scenarios list stacks of every project as admin to find one an
    # earlier run could not delete (it still holds its VLANs).
    cat > "$HEAT_POLICY_FILE" <<EOT
# Written by tools/single-host-cloud (removed by down).
"stacks:global_index": "rule:context_is_admin"
EOT
    manage heat "heat-manage db_sync"
}
