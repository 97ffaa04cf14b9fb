# Shared by the vnf_images/build-* commands (sourced, not run): options,
# defaults for diskimage-builder, the build and the upload line.
# shellcheck shell=bash

EPA_CHAIN_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
    cat <<EOT
Usage: $(basename "$0") [options]

Build with diskimage-builder: ${IMAGE_DESCRIPTION}, with its
kernel, initrd and kernel command line beside it (NAME.vmlinuz,
NAME.initrd, NAME.cmdline) for direct kernel boot; print where they
landed and the 'openstack image create' commands that upload them.

Options:
  -o, --output DIR     directory for the image (default: current directory)
  -n, --name NAME      image name, also the file name (default: ${IMAGE_NAME})
  -d, --distro NAME    debian (default) or ubuntu
  -r, --release NAME   distribution release (default: bookworm for debian,
                       noble for ubuntu)
  -t, --format FORMAT  qcow2 (default) or raw
  -h, --help           this help

Environment: disk-image-create must be on PATH (pip install
diskimage-builder). Every DIB_* variable is passed on to it: mirrors
(DIB_DISTRIBUTION_MIRROR, DIB_DEBIAN_SECURITY_MIRROR, DIB_APT_SOURCES_CONF),
the epa-chain elements' DIB_EPA_* settings and the source overrides
(DIB_REPOLOCATION_samplevnf, ...). Downloads are cached in
DIB_IMAGE_CACHE (default ~/.cache/image-create). See doc/source/images.rst.
EOT
}

die() {
    echo "$(basename "$0"): $*" >&2
    exit 2
}

parse_options() {
    OUTPUT_DIR=$PWD
    DISTRO=debian
    RELEASE=
    FORMAT=qcow2
    while [ $# -gt 0 ]; do
        case "$1" in
            -o|--output) OUTPUT_DIR=${2:?$1 needs a directory}; shift 2 ;;
            -n|--name) IMAGE_NAME=${2:?$1 needs a name}; shift 2 ;;
            -d|--distro) DISTRO=${2:?$1 needs debian or ubuntu}; shift 2 ;;
            -r|--release) RELEASE=${2:?$1 needs a release}; shift 2 ;;
            -t|--format) FORMAT=${2:?$1 needs qcow2 or raw}; shift 2 ;;
            -h|--help) usage; exit 0 ;;
            *) usage >&2; die "unknown argument: $1" ;;
        esac
    done
    case "$DISTRO" in
        debian) RELEASE=${RELEASE:-bookworm} ;;
        ubuntu) RELEASE=${RELEASE:-noble} ;;
        *) die "--distro: debian or ubuntu, not '$DISTRO'" ;;
    esac
    case "$FORMAT" in
        qcow2|raw) ;;
        *) die "--format: qcow2 or raw, not '$FORMAT'" ;;
    esac
    mkdir -p "$OUTPUT_DIR" || die "cannot create $OUTPUT_DIR"
    OUTPUT_DIR=$(cd "$OUTPUT_DIR" && pwd)
}

# Defaults for diskimage-builder; the caller's environment wins.
dib_environment() {
    export DIB_RELEASE=$RELEASE
    export DIB_IMAGE_CACHE=${DIB_IMAGE_CACHE:-$HOME/.cache/image-create}
    export ELEMENTS_PATH=$EPA_CHAIN_TOP/diskimage-elements${ELEMENTS_PATH:+:$ELEMENTS_PATH}
    export DIB_EPA_CHAIN_SOURCE=${DIB_EPA_CHAIN_SOURCE:-$EPA_CHAIN_TOP}
    # The base element's extra packages (open-iscsi) have no use here.
    export DIB_SKIP_BASE_PACKAGE_INSTALL=${DIB_SKIP_BASE_PACKAGE_INSTALL:-1}
    # Keep the debootstrap result and reuse it in later builds of the
    # release (the base element still upgrades it to the mirror's state).
    export DIB_DEBOOTSTRAP_CACHE=${DIB_DEBOOTSTRAP_CACHE:-1}
    export DIB_DEBIAN_USE_DEBOOTSTRAP_CACHE=${DIB_DEBIAN_USE_DEBOOTSTRAP_CACHE:-1}
    case "$DISTRO" in
        debian)
            export DIB_DISTRIBUTION_MIRROR=${DIB_DISTRIBUTION_MIRROR:-http://deb.debian.org/debian}
            # debian-minimal's default is security.debian.org, which
            # mirrored or firewalled sites often cannot reach.
            export DIB_DEBIAN_SECURITY_MIRROR=${DIB_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
            BASE_ELEMENTS=(vm debian-minimal)
            OS_VERSION=$(debian_version "$RELEASE")
            ;;
        ubuntu)
            BASE_ELEMENTS=(vm ubuntu-minimal)
            OS_VERSION=$RELEASE
            ;;
    esac
}

debian_version() {
    case "$1" in
        bullseye) echo 11 ;;
        bookworm) echo 12 ;;
        trixie) echo 13 ;;
        *) echo "$1" ;;
    esac
}

# build_image ELEMENT... : run disk-image-create, then print the result.
build_image() {
    command -v disk-image-create > /dev/null || \
        die "disk-image-create not found: pip install diskimage-builder"
    local output=$OUTPUT_DIR/$IMAGE_NAME
    local started=$SECONDS
    disk-image-create -a amd64 -t "$FORMAT" -o "$output" \
        "${BASE_ELEMENTS[@]}" "$@"
    local image=$output.$FORMAT
    [ -f "$image" ] || die "disk-image-create finished but $image is missing"
    # The direct kernel boot's files (epa-chain-lean-boot): Nova boots
    # them when the image names them (kernel_id, ramdisk_id), with
    # os_command_line as the whole kernel command line.
    local part
    for part in vmlinuz initrd cmdline; do
        [ -s "$output.$part" ] || \
            die "disk-image-create finished but $output.$part is missing"
    done
    local size
    size=$(du -m --apparent-size "$image" | cut -f1)
    echo
    echo "Image: $image ($size MiB, built in $((SECONDS - started)) s)"
    echo "Kernel: $output.vmlinuz ($(du -k "$output.vmlinuz" | cut -f1) KiB)"
    echo "Ramdisk: $output.initrd ($(du -k "$output.initrd" | cut -f1) KiB)"
    echo "Command line: $output.cmdline ($(cat "$output.cmdline"))"
    echo
    echo "Upload them with (the kernel and ramdisk first, then the image"
    echo "that names them):"
    echo
    upload_command "$output"
}

# The properties every epa-chain image needs; the flavor, not the image,
# asks for huge pages and pinned CPUs (see doc/source/images.rst).
upload_command() {
    local output
    output=$(printf '%q' "$1")
    cat <<EOT
kernel_id=\$(openstack image create -f value -c id \\
    --disk-format aki --container-format aki \\
    --file $output.vmlinuz ${IMAGE_NAME}-kernel)
ramdisk_id=\$(openstack image create -f value -c id \\
    --disk-format ari --container-format ari \\
    --file $output.initrd ${IMAGE_NAME}-ramdisk)
openstack image create --disk-format $FORMAT --container-format bare \\
    --file $output.$FORMAT \\
    --property kernel_id=\$kernel_id \\
    --property ramdisk_id=\$ramdisk_id \\
    --property os_command_line="\$(cat $output.cmdline)" \\
    --property hw_vif_multiqueue_enabled=true \\
    --property img_config_drive=mandatory \\
    --property hw_vif_model=virtio \\
    --property hw_disk_bus=virtio \\
    --property os_type=linux \\
    --property os_distro=$DISTRO --property os_version=$OS_VERSION \\
    --property epa_chain_roles=$IMAGE_ROLES \\
    --property epa_chain_engines=$IMAGE_ENGINES \\
    $IMAGE_NAME
EOT
}
