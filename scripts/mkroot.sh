#!/bin/sh
# Write the runtime tree of the image into DEST: the one definition of what the image holds, used by
# the Dockerfile's builder stage and by scripts/build-image.sh alike, so the two cannot drift.
#
#   scripts/mkroot.sh BINARY CA_BUNDLE DEST
#
# DEST gets:
#   /usr/local/bin/image-update          the static binary, 0755 (the ENTRYPOINT)
#   /etc/passwd, /etc/group              root and nobody/nogroup: kpt runs functions with
#                                        `--user nobody`, which fails without a passwd entry
#   /etc/nsswitch.conf                   hosts: files, then DNS (the runtime injects /etc/hosts
#                                        and /etc/resolv.conf)
#   /etc/ssl/certs/ca-certificates.crt   a CA bundle for libraries that read one
#   /tmp                                 mode 1777, for a Job with a read-only root and no tmpfs
# Nothing else: no shell, no USER (a GitHub Action runs as root; kpt and Jobs choose the user).
#
# POSIX sh and coreutils only, so that it runs in any builder image.
set -eu
if [ "$#" -ne 3 ]; then
  echo "usage: $0 BINARY CA_BUNDLE DEST" >&2
  exit 2
fi
binary=$1
ca_bundle=$2
dest=$3
[ -f "$binary" ] || { echo "mkroot: no binary at $binary" >&2; exit 1; }
[ -s "$ca_bundle" ] || { echo "mkroot: no CA bundle at $ca_bundle (install ca-certificates)" >&2; exit 1; }

umask 022
mkdir -p "$dest/usr/local/bin" "$dest/etc/ssl/certs" "$dest/tmp"
cp "$binary" "$dest/usr/local/bin/image-update"
chmod 0755 "$dest/usr/local/bin/image-update"
chmod 1777 "$dest/tmp"
cp "$ca_bundle" "$dest/etc/ssl/certs/ca-certificates.crt"
chmod 0644 "$dest/etc/ssl/certs/ca-certificates.crt"
printf '%s\n' \
  'root:x:0:0:root:/root:/sbin/nologin' \
  'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' >"$dest/etc/passwd"
printf '%s\n' \
  'root:x:0:' \
  'nogroup:x:65534:' >"$dest/etc/group"
printf '%s\n' 'hosts: files dns' >"$dest/etc/nsswitch.conf"
chmod 0644 "$dest/etc/passwd" "$dest/etc/group" "$dest/etc/nsswitch.conf"
