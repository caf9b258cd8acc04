#!/usr/bin/env bash
# Check (default) or rewrite (UPDATE_EXPECT=1) the expected outputs of the commit-message template suite
# against real Go text/template + Sprig: builds tools/template-oracle offline, in GOPATH mode, from
# Debian's packages (apt-get install -y golang-go golang-github-masterminds-sprig-dev), renders every
# testdata/templates/cases/*.tmpl over every testdata/templates/reports/*.json, and compares with
# testdata/templates/expected/. Exits non-zero on any difference and names it.
#
# Cases whose expectations live in testdata/templates/expected-newer-go/ use constructs newer than
# Debian's Go 1.19 (range over an integer is Go 1.22, `else with` Go 1.23); they are written by hand
# from Go's documented semantics and are not checked here.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tdir="$root/testdata/templates"

if [ -n "${UPDATE_EXPECT:-}" ] && [ -n "${CI:-}" ]; then
  echo "template-oracle: refusing to rewrite expectations when CI is set" >&2
  exit 2
fi
command -v go >/dev/null || { echo "template-oracle: go not found (apt-get install golang-go)" >&2; exit 2; }
[ -d /usr/share/gocode/src/github.com/Masterminds/sprig ] || {
  echo "template-oracle: Sprig not found (apt-get install golang-github-masterminds-sprig-dev)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/gopath/src" "$work/out" "$work/cache"
cp -r "$root/tools/template-oracle" "$work/gopath/src/oracle"
(cd "$work/gopath/src/oracle" && GO111MODULE=off GOPATH="$work/gopath:/usr/share/gocode" GOCACHE="$work/cache" \
  GOFLAGS= go build -o "$work/oracle" .)

# Cases checked by the oracle: all except those with hand-written newer-Go expectations.
cases=()
newer=()
for f in "$tdir"/cases/*.tmpl; do
  c="$(basename "$f" .tmpl)"
  if compgen -G "$tdir/expected-newer-go/${c}__*" >/dev/null; then
    newer+=("$c")
  else
    cases+=("$c")
  fi
done
if [ "${#newer[@]}" -gt 0 ]; then
  echo "template-oracle: not checked (need a Go newer than $(go env GOVERSION); expectations hand-written in expected-newer-go/): ${newer[*]}"
fi
"$work/oracle" "$tdir/cases" "$tdir/reports" "$work/out" "${cases[@]}"
# Argo CD Image Updater's commit-message and write-branch templates (no Sprig).
adir="$tdir/argocd"
mkdir -p "$work/argocd-out"
"$work/oracle" argocd "$adir/cases" "$adir/data" "$work/argocd-out"

if [ -n "${UPDATE_EXPECT:-}" ]; then
  for c in "${cases[@]}"; do rm -f "$tdir/expected/${c}__"*; done
  cp "$work/out/"* "$tdir/expected/"
  rm -f "$adir/expected/"*
  cp "$work/argocd-out/"* "$adir/expected/"
  echo "template-oracle: rewrote $(ls "$work/out" | wc -l) expectations in testdata/templates/expected/ and $(ls "$work/argocd-out" | wc -l) in testdata/templates/argocd/expected/"
  exit 0
fi

status=0
# compare GO_OUTPUT_DIR EXPECTED_DIR (relative to the repository, for messages)
compare() {
  local out="$1" rel="$2"
  for f in "$out/"*; do
    name="$(basename "$f")"
    if [ ! -f "$root/$rel/$name" ]; then
      echo "template-oracle: missing expectation $rel/$name"
      status=1
    elif ! cmp -s "$f" "$root/$rel/$name"; then
      echo "template-oracle: differs from Go: $rel/$name"
      diff -u "$root/$rel/$name" "$f" | head -20 || true
      status=1
    fi
  done
  for f in "$root/$rel/"*; do
    name="$(basename "$f")"
    if [ ! -f "$out/$name" ]; then
      echo "template-oracle: Go does not produce $rel/$name"
      status=1
    fi
  done
}
compare "$work/out" testdata/templates/expected
compare "$work/argocd-out" testdata/templates/argocd/expected
if [ "$status" -eq 0 ]; then
  echo "template-oracle: $(ls "$work/out" | wc -l) + $(ls "$work/argocd-out" | wc -l) expectations agree with Go $(go env GOVERSION)"
fi
exit "$status"
