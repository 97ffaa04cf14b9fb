# shellcheck shell=bash
#
# Seed 000's external tester on this cloud's provider bridges: `epa-chain
# tester` (epa_chain/cloud/tester.py) with this host's bridge mappings, a
# PROX built from EPA_CHAIN_PROX_SOURCE (cached by `epa-chain prox
# build`), and its state under the cloud's, so that `down` removes it too.

TESTER_STATE=$CLOUD_STATE/tester

function _epa_chain_command {
    command -v epa-chain > /dev/null ||
        cloud_die "tester: the epa-chain command is not on PATH; install" \
            "epa-chain (pip install -e .) or run under tox -e cloud"
}

# cloud_tester - TESTER_ACTION up STACK (TESTER_OPTIONS: epa-chain tester
# up's own) or down.
function cloud_tester {
    local binary
    _epa_chain_command
    case "$TESTER_ACTION" in
        up)
            [[ -d $CLOUD_STATE/records ]] || cloud_die "tester: no cloud" \
                "is up ($CLOUD_STATE): run 'up' first"
            [[ -n ${EPA_CHAIN_PROX_SOURCE:-} ]] || cloud_die "tester: set" \
                "EPA_CHAIN_PROX_SOURCE to a samplevnf tarball, git URL or" \
                "directory: the tester runs PROX built from it"
            binary=$(epa-chain prox build -q) ||
                cloud_die "tester: PROX did not build (see above)"
            # shellcheck disable=SC2153  # set by tools/single-host-cloud
            epa-chain tester up --os-cloud "$CLOUD_NAME" \
                --bridge-mappings "$OVS_BRIDGE_MAPPINGS" \
                --prox-binary "$binary" --state-dir "$TESTER_STATE" \
                "${TESTER_OPTIONS[@]}" -- "$TESTER_STACK"
            ;;
        down)
            tester_down
            ;;
    esac
}

# tester_down - remove the tester if one is up; `down` calls it first,
# while Open vSwitch still runs.
function tester_down {
    [[ -e $TESTER_STATE ]] || return 0
    command -v epa-chain > /dev/null ||
        { down_gave_up "the tester in $TESTER_STATE (no epa-chain command)"; return 0; }
    timeout 120 epa-chain tester down --state-dir "$TESTER_STATE" ||
        down_gave_up "the tester in $TESTER_STATE"
}
