#!/usr/bin/env bash
# Build the runtime image from the local static binary with podman, offline (no base image is
# pulled: the runtime stage is `FROM scratch`).
#
#   scripts/build-image.sh TAG        # e.g. localhost/image-update:dev
#
# The runtime stage is the Dockerfile's own: the lines from its last `FROM scratch` on, with the
# builder's `COPY --from=build /out/ /` pointed at the tree scripts/mkroot.sh writes here. The
# builder stage (a Rust image) is replaced by scripts/build-static.sh on this machine.
#
# Environment:
#   IMAGE_UPDATE_BINARY   use this static binary instead of running scripts/build-static.sh
#   CA_BUNDLE             the CA bundle to ship (default /etc/ssl/certs/ca-certificates.crt)
#   IMAGE_UPDATE_PODMAN_DIR  podman's private configuration and store (see scripts/podman-env.sh;
#                         source that file to use the image afterwards)
# Needs: podman and runc (Debian: apt-get install -y podman runc uidmap), ca-certificates.
# Prints the image's size on stderr and its tag on stdout.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "$#" -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 TAG" >&2
  exit 2
fi
tag=$1
# shellcheck source=scripts/podman-env.sh
source "$root/scripts/podman-env.sh"

binary="${IMAGE_UPDATE_BINARY:-}"
if [ -z "$binary" ]; then
  binary="$("$root/scripts/build-static.sh")"
fi

context="${CARGO_TARGET_DIR:-$root/target}/image/context"
rm -rf "$context"
mkdir -p "$context"
"$root/scripts/mkroot.sh" "$binary" "${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}" "$context/rootfs"

# The Dockerfile's runtime stage, reading the local tree instead of the builder's /out.
awk '
  /^FROM[ \t]+scratch([ \t]|$)/ { stage = ""; inside = 1 }
  inside { stage = stage $0 "\n" }
  END { printf "%s", stage }
' "$root/Dockerfile" >"$context/Containerfile.runtime"
copies="$(grep -c '^COPY --from=build /out/ /$' "$context/Containerfile.runtime" || true)"
if [ "$copies" != 1 ]; then
  echo "build-image: the Dockerfile's runtime stage must copy the tree with exactly one" \
    "'COPY --from=build /out/ /' (found $copies)" >&2
  exit 1
fi
sed 's|^COPY --from=build /out/ /$|COPY rootfs/ /|' "$context/Containerfile.runtime" >"$context/Containerfile"

podman build --quiet --pull=never --network=none --file "$context/Containerfile" --tag "$tag" \
  "$context" >/dev/null
# A rebuild leaves the previous image untagged in the private store: drop it.
podman image prune --force >/dev/null
size="$(podman image inspect --format '{{.Size}}' "$tag")"
echo "build-image: $tag: $size bytes ($(awk -v s="$size" 'BEGIN { printf "%.1f MB", s / 1000000 }'))" >&2
echo "$tag"
