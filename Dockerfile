# The image-update image: one static binary on scratch, used as it is by
#   * kpt:             kpt fn eval --image IMAGE PKG -- NS:NAME=IMAGE:TAG  (runs as nobody, no argv,
#                      no network; the binary acts as the KRM function when it gets no arguments)
#   * GitHub Actions:  action.yml (`args: [action]`; runs as root in /github/workspace)
#   * Kubernetes Jobs: args from the manifest (any uid, e.g. 65534; read-only root works)
# So the runtime stage has no USER (the Action must be root), no WORKDIR (the Action's workspace
# mount sets it), no CMD (kpt passes no argv), and an exec-form, absolute ENTRYPOINT.
#
# scripts/build-image.sh builds the same runtime stage from a locally built binary with podman,
# offline: it takes the lines of this file from the last `FROM scratch` on, and replaces the
# `COPY --from=build /out/ /` with the tree scripts/mkroot.sh wrote. Both stages therefore share
# scripts/mkroot.sh, and the test suite (tests/image.rs) checks the shape of this file.

FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
ENV CARGO_TERM_COLOR=never
COPY . .
RUN scripts/build-static.sh >/tmp/binary-path \
 && scripts/mkroot.sh "$(cat /tmp/binary-path)" /etc/ssl/certs/ca-certificates.crt /out

FROM scratch
COPY --from=build /out/ /
LABEL org.opencontainers.image.title="image-update" \
      org.opencontainers.image.description="Byte-preserving GitOps image automation: a kpt KRM function, a GitHub Action and a Kubernetes Job in one static binary" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/image-update/image-update" \
      org.opencontainers.image.documentation="https://github.com/image-update/image-update#readme"
ENTRYPOINT ["/usr/local/bin/image-update"]
