#!/usr/bin/env bash
# Build the release binary as one static executable: glibc linked in (`+crt-static`), no dynamic
# dependencies at all, so it runs in a `FROM scratch` image, in a chroot, or on any x86_64 Linux.
#
#   scripts/build-static.sh            # prints the binary's path on stdout
#
# The target is given explicitly: with `--target`, RUSTFLAGS apply to the target artefacts only, so
# build scripts and proc-macros stay ordinary dynamic host programs (a `+crt-static` proc-macro
# cannot be loaded by rustc). C libraries built by -sys crates (the vendored libgit2, zlib) are
# linked statically too (`LIBZ_SYS_STATIC`).
#
# TLS needs no CA store on the host: the registry client and the git transports (rustls) trust
# the Mozilla roots compiled into the binary (plus the system store when there is one); the image
# ships a CA bundle at
# /etc/ssl/certs/ca-certificates.crt for libraries that read one.
#
# Environment: CARGO (default cargo), CARGO_TARGET_DIR (default target/), and any cargo settings.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target=x86_64-unknown-linux-gnu
cargo="${CARGO:-cargo}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

# The binary is a static PIE (its address still randomised at every start). Its relative
# relocations are packed (`-z pack-relative-relocs`, DT_RELR: a bitmap instead of 24 bytes per
# pointer), which takes 446 KB off it; glibc applies them itself at start-up from 2.36 and GNU ld
# writes them from 2.38 (Debian bookworm, the Dockerfile's build stage, has both).
# Identical code is folded (`--icf=all`: functions whose machine code is the same, such as the
# generic instances Rust makes many of, kept once), 318 KB off; only LLD does it, rustc's linker on
# x86_64 Linux from Rust 1.90 (the Dockerfile's 1.95 included), so an older toolchain, which links
# with GNU ld, leaves it out.
icf=""
rust_minor="$(rustc -vV | sed -n 's/^release: 1\.\([0-9]*\)\..*/\1/p')"
if [ "${rust_minor:-0}" -ge 90 ]; then
  icf=" -C link-arg=-Wl,--icf=all"
fi
export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs$icf"
export LIBZ_SYS_STATIC=1

(cd "$root" && "$cargo" build --release --locked --target "$target" --bin image-update >&2)
binary="$target_dir/$target/release/image-update"

# No dynamic dependencies: ldd must say so (it prints "not a dynamic executable" for a static
# executable and "statically linked" for a static-pie one, and exits non-zero for the former).
if command -v ldd >/dev/null 2>&1; then
  deps="$(ldd "$binary" 2>&1 || true)"
  case "$deps" in
    *"not a dynamic executable"* | *"statically linked"*) ;;
    *)
      echo "build-static: $binary has dynamic dependencies:" >&2
      echo "$deps" >&2
      exit 1
      ;;
  esac
fi
echo "$binary"
