# shellcheck shell=bash
#
# What `up` changed, kept in $CLOUD_STATE so that `down` can undo exactly
# that: the services it started (with their pid files), the configuration
# files it edited (their originals), host settings it changed (huge pages,
# mounts, the ovs-vswitchd alternative).

# state_check_dir - CLOUD_STATE is a directory `down` may remove whole: an
# absolute, plain path at least two levels deep (never /, never through
# `..` or a symbolic link), root's and written by root alone.
function state_check_dir {
    local dir=$CLOUD_STATE owner mode
    [[ $dir =~ ^(/[A-Za-z0-9._-]+){2,}$ && ! $dir =~ /\.\.?(/|$) ]] ||
        cloud_die "EPA_CHAIN_CLOUD_STATE=$dir: give an absolute path two or" \
            "more levels deep, of letters, digits, '.', '_' and '-'" \
            "(default /var/lib/epa-chain-cloud)"
    [[ -e $dir || -L $dir ]] || return 0
    [[ -d $dir && ! -L $dir ]] || cloud_die "EPA_CHAIN_CLOUD_STATE=$dir:" \
        "not a directory (or a symbolic link): give another path"
    read -r owner mode < <(stat -c '%u %a' "$dir")
    [[ $owner == "$(id -u)" && $(( 8#$mode & 8#022 )) == 0 ]] ||
        cloud_die "EPA_CHAIN_CLOUD_STATE=$dir: owned by uid $owner, mode" \
            "$mode: it must be root's and not group- or world-writable"
}

# state_init - the state directory and devstack's function library.
function state_init {
    mkdir -p "$CLOUD_STATE"/{etc-orig,records,run}
    chmod 0755 "$CLOUD_STATE"
}

# state_record KEY VALUE - remember VALUE under KEY, first write wins (the
# value from before `up` changed anything).
function state_record {
    local file=$CLOUD_STATE/records/$1
    [[ -e $file ]] || printf '%s\n' "$2" > "$file"
}

# state_recall KEY - print a remembered value; returns 1 when none.
function state_recall {
    local file=$CLOUD_STATE/records/$1
    [[ -e $file ]] || return 1
    cat "$file"
}

function state_forget {
    rm -f "$CLOUD_STATE/records/$1"
}

# state_keep_original FILE... - save each file as the package left it,
# once, before the first edit.
function state_keep_original {
    local file copy
    for file in "$@"; do
        copy=$CLOUD_STATE/etc-orig$file
        if [[ ! -e $copy && ! -e $copy.absent ]]; then
            mkdir -p "$(dirname "$copy")"
            if [[ -e $file ]]; then
                cp -a "$file" "$copy"
            else
                touch "$copy.absent"
            fi
        fi
    done
}

# state_restore_originals - put every saved file back (or remove the ones
# that did not exist).
function state_restore_originals {
    local copy file
    [[ -d $CLOUD_STATE/etc-orig ]] || return 0
    while IFS= read -r -d '' copy; do
        file=${copy#"$CLOUD_STATE/etc-orig"}
        if [[ $file == *.absent ]]; then
            rm -f "${file%.absent}"
        else
            cp -a "$copy" "$file"
        fi
    done < <(find "$CLOUD_STATE/etc-orig" -type f -print0)
}

# The devstack function library the plugin's code runs with: a tarball or
# a checkout, unpacked into the state directory once.
function state_devstack_dir {
    local source=$DEVSTACK_SOURCE dir=$CLOUD_STATE/devstack
    if [[ -f $dir/functions ]]; then
        echo "$dir"
        return
    fi
    if [[ -z $source ]]; then
        cloud_die "no devstack source: give --devstack-source (a devstack" \
            "tarball or checkout; its function library runs the plugin's" \
            "code) or EPA_CHAIN_DEVSTACK_SOURCE"
    fi
    if [[ -f $source/functions ]]; then
        (cd "$source" && pwd)
        return
    fi
    [[ -f $source ]] || cloud_die "--devstack-source $source: neither a" \
        "devstack checkout (no functions file) nor a tarball"
    mkdir -p "$dir"
    tar -xzf "$source" -C "$dir" --strip-components=1 || cloud_die \
        "--devstack-source $source: cannot unpack it"
    [[ -f $dir/functions ]] || cloud_die "--devstack-source $source: no" \
        "functions file at the top of the tarball"
    echo "$dir"
}

# state_load_plugin - devstack's functions, then the plugin's settings and
# library, as stack.sh would source them for a plugin.
function state_load_plugin {
    local devstack
    devstack=$(state_devstack_dir)
    # shellcheck disable=SC2034  # devstack's own global
    TOP_DIR=$devstack
    # devstack's library is not written for nounset.
    set +o nounset
    # shellcheck source=/dev/null
    source "$devstack/functions"
    # stack.sh knows the distribution before any plugin runs.
    GetDistro
    # shellcheck source=devstack/override-defaults
    source "$EPA_CHAIN_DIR/devstack/override-defaults"
    # shellcheck source=devstack/settings
    source "$EPA_CHAIN_DIR/devstack/settings"
    # shellcheck source=devstack/lib/epa_chain
    source "$EPA_CHAIN_DIR/devstack/lib/epa_chain"
    # devstack restarts services with systemctl whenever the binary
    # exists; here systemd is not the init system, so the plugin's
    # restarts go through the init scripts, pid files tracked.
    # shellcheck disable=SC2317  # called by the plugin's functions
    function restart_service {
        service_restart "$1"
    }
}
