# Source this file (bash): it points podman at a private configuration and image store under
# target/podman/ (or $IMAGE_UPDATE_PODMAN_DIR; the target directory is $CARGO_TARGET_DIR if set), so that building and running the image touches
# nothing global, and exports CONTAINERS_CONF and CONTAINERS_STORAGE_CONF for every podman started
# afterwards (by scripts/build-image.sh, by kpt with KPT_FN_RUNTIME=podman, by the image tests).
#
# The settings suit sandboxed VMs as well as ordinary hosts: the vfs storage driver (no overlay
# mounts needed), runc with cgroupfs (crun refuses hybrid cgroups; no systemd is needed), a file
# events logger (no journald), and explicit ulimits (a sandbox without CAP_SYS_RESOURCE cannot
# raise them to podman's defaults).
_iu_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE_UPDATE_PODMAN_DIR="${IMAGE_UPDATE_PODMAN_DIR:-${CARGO_TARGET_DIR:-$_iu_root/target}/podman}"
mkdir -p "$IMAGE_UPDATE_PODMAN_DIR/storage" "$IMAGE_UPDATE_PODMAN_DIR/run" "$IMAGE_UPDATE_PODMAN_DIR/tmp"
cat >"$IMAGE_UPDATE_PODMAN_DIR/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$IMAGE_UPDATE_PODMAN_DIR/events.log"
tmp_dir = "$IMAGE_UPDATE_PODMAN_DIR/tmp"
EOF
cat >"$IMAGE_UPDATE_PODMAN_DIR/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$IMAGE_UPDATE_PODMAN_DIR/storage"
runroot = "$IMAGE_UPDATE_PODMAN_DIR/run"
EOF
export IMAGE_UPDATE_PODMAN_DIR
export CONTAINERS_CONF="$IMAGE_UPDATE_PODMAN_DIR/containers.conf"
export CONTAINERS_STORAGE_CONF="$IMAGE_UPDATE_PODMAN_DIR/storage.conf"
unset _iu_root
