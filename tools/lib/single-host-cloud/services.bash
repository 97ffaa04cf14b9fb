# shellcheck shell=bash
#
# The cloud's processes: how each starts without systemd (its init script,
# or the daemon itself where the package ships no script), its pid file,
# its log. `up` records each service it starts; `down` stops exactly those,
# by the pid in their pid file.

# name | how it starts | pid file | log
SERVICES=(
    "openvswitch-switch|initd|/var/run/openvswitch/ovs-vswitchd.pid|/var/log/openvswitch/ovs-vswitchd.log"
    "mariadb|initd|/run/mysqld/mysqld.pid|/var/log/mysql/error.log"
    "rabbitmq-server|initd|/var/run/rabbitmq/pid|/var/log/rabbitmq/startup_log"
    "memcached|initd|/var/run/memcached/memcached.pid|/var/log/memcached.log"
    "keystone|initd|/var/run/keystone/keystone.pid|/var/log/keystone/keystone.log"
    "glance-api|initd|/var/run/glance/glance-api.pid|/var/log/glance/glance-api.log"
    "placement-api|initd|/var/run/placement/placement-api.pid|/var/log/placement/placement-api.log"
    "virtlogd|direct|$CLOUD_STATE/run/virtlogd.pid|$CLOUD_STATE/run/virtlogd.out"
    "libvirtd|direct|$CLOUD_STATE/run/libvirtd.pid|$CLOUD_STATE/run/libvirtd.out"
    "nova-api|initd|/var/run/nova/nova-api.pid|/var/log/nova/nova-api.log"
    "nova-conductor|initd|/var/run/nova/nova-conductor.pid|/var/log/nova/nova-conductor.log"
    "nova-scheduler|initd|/var/run/nova/nova-scheduler.pid|/var/log/nova/nova-scheduler.log"
    "nova-compute|initd|/var/run/nova/nova-compute.pid|/var/log/nova/nova-compute.log"
    "neutron-api|initd|/var/run/neutron/neutron-server.pid|/var/log/neutron/neutron-api.log"
    "neutron-rpc-server|initd|/var/run/neutron/neutron-rpc-server.pid|/var/log/neutron/neutron-rpc-server.log"
    "neutron-openvswitch-agent|initd|/var/run/neutron/neutron-openvswitch-agent.pid|/var/log/neutron/neutron-openvswitch-agent.log"
    "heat-api|initd|/var/run/heat/heat-api.pid|/var/log/heat/heat-api.log"
    "heat-engine|initd|/var/run/heat/heat-engine.pid|/var/log/heat/heat-engine.log"
)

# service_field NAME N - field N (1 how, 2 pid file, 3 log) of a service.
function service_field {
    local entry
    for entry in "${SERVICES[@]}"; do
        if [[ ${entry%%|*} == "$1" ]]; then
            cut -d'|' -f"$(( $2 + 1 ))" <<< "$entry"
            return
        fi
    done
    return 1
}

function service_names {
    local entry
    for entry in "${SERVICES[@]}"; do
        echo "${entry%%|*}"
    done
}

# service_pid NAME - the live pid of a service, from its pid file.
function service_pid {
    local pidfile pid
    pidfile=$(service_field "$1" 2)
    [[ -r $pidfile ]] || return 1
    pid=$(tr -dc 0-9 < "$pidfile")
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

# service_fail NAME WHY - say which service failed, with its log's tail.
function service_fail {
    local name=$1 why=$2 log
    log=$(service_field "$name" 3)
    {
        echo "single-host-cloud: $name $why"
        if [[ -s $log ]]; then
            echo "---- last lines of $log:"
            tail -n 25 "$log"
        else
            echo "---- $log is empty or missing"
        fi
    } >&2
    exit 1
}

function _service_start_direct {
    local name=$1 pidfile log
    pidfile=$(service_field "$name" 2)
    log=$(service_field "$name" 3)
    case "$name" in
        virtlogd) virtlogd --daemon --pid-file "$pidfile" >> "$log" 2>&1 ;;
        libvirtd) libvirtd --daemon --pid-file "$pidfile" >> "$log" 2>&1 ;;
    esac
}

# service_config_digest NAME - a digest of the configuration a service
# reads, so that `up` restarts a running service whose settings it changed.
function service_config_digest {
    local dir
    case "$1" in
        nova-*) dir=/etc/nova ;;
        neutron-*) dir=/etc/neutron ;;
        heat-*) dir=/etc/heat ;;
        glance-*) dir=/etc/glance ;;
        placement-*) dir=/etc/placement ;;
        keystone) dir=/etc/keystone/keystone.conf ;;
        libvirtd|virtlogd) dir=/etc/libvirt ;;
        *) echo none; return ;;
    esac
    find "$dir" -type f -print0 2>/dev/null | sort -z |
        xargs -0 cat 2>/dev/null | md5sum | cut -d' ' -f1
}

# service_start NAME - start a service unless it runs with the current
# configuration; wait for its pid.
function service_start {
    local name=$1 how waited=0 digest
    digest=$(service_config_digest "$name")
    if service_pid "$name" > /dev/null; then
        if [[ $(state_recall "config-$name" 2>/dev/null) == "$digest" ]]; then
            return 0
        fi
        echo "restarting $name (its configuration changed)"
        service_stop "$name"
    fi
    state_forget "config-$name"
    state_record "config-$name" "$digest"
    how=$(service_field "$name" 1)
    echo "starting $name"
    if [[ $how == initd ]]; then
        timeout 300 "/etc/init.d/$name" start > "$CLOUD_STATE/run/$name.start" 2>&1 || \
            service_fail "$name" "did not start ($(tail -n 1 "$CLOUD_STATE/run/$name.start"))"
    else
        _service_start_direct "$name" || service_fail "$name" "did not start"
    fi
    while ! service_pid "$name" > /dev/null; do
        (( waited++ < 30 )) || service_fail "$name" "wrote no live pid to" \
            "$(service_field "$name" 2) within 30 s"
        sleep 1
    done
    grep -qx "$name" "$CLOUD_STATE/records/started" 2>/dev/null || \
        echo "$name" >> "$CLOUD_STATE/records/started"
}

# service_restart NAME - after a configuration change.
function service_restart {
    service_stop "$1"
    service_start "$1"
}

# service_stop NAME - stop one service and make sure its pid is gone.
function service_stop {
    local name=$1 pid how waited=0
    pid=$(service_pid "$name") || return 0
    how=$(service_field "$name" 1)
    if [[ $how == initd ]]; then
        # An init script waits on its daemon as long as it likes: bounded.
        timeout 60 "/etc/init.d/$name" stop > /dev/null 2>&1 || true
    else
        kill -TERM "$pid" 2>/dev/null || true
    fi
    while kill -0 "$pid" 2>/dev/null; do
        if (( waited++ == 20 )); then
            echo "$name (pid $pid) ignored its stop: killing it" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        (( waited < 40 )) || { echo "$name (pid $pid) does not die" >&2; return 1; }
        sleep 0.5
    done
}

# service_revive NAME - what the packages' systemd units do (Restart=
# on-failure): a service that exited, typically because one it depends on
# was still starting, is started again, twice at most per `up`, and says so.
declare -A SERVICE_REVIVALS=()
function service_revive {
    local name=$1 log
    service_pid "$name" > /dev/null && return 0
    SERVICE_REVIVALS[$name]=$(( ${SERVICE_REVIVALS[$name]:-0} + 1 ))
    (( SERVICE_REVIVALS[$name] <= 2 )) || service_fail "$name" \
        "exited again after $(( SERVICE_REVIVALS[$name] - 1 )) restarts"
    log=$(service_field "$name" 3)
    echo "$name exited; starting it again as its systemd unit would" \
        "(last log line: $(tail -n 1 "$log" 2>/dev/null | cut -c1-300))" >&2
    state_forget "config-$name"
    service_start "$name"
}

# service_wait_http NAME URL - an API answers (any HTTP status) within 120 s.
function service_wait_http {
    local name=$1 url=$2 waited=0
    until curl -s -o /dev/null --max-time 5 "$url"; do
        service_revive "$name"
        (( waited++ < 60 )) || service_fail "$name" "does not answer on $url"
        sleep 2
    done
}
