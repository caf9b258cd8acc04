#!/usr/bin/env bash
# Check (default) or rewrite (UPDATE_EXPECT=1) the expected outputs of the commit-message template suite
# against real Go text/template + Sprig: builds tools/template-oracle offline, in GOPATH mode, from
# Debian's packages, renders every testdata/templates/cases/*.tmpl over every
# testdata/templates/reports/*.json, and compares byte for byte. Exits 1 on any difference (and names
# it), 2 when it could not check everything (and names what it did not check).
#
# Two Go toolchains, one per expectation directory; every case has its expectations in exactly one:
# - testdata/templates/expected/: Debian's Go (`go`, golang-go: Go 1.19 on bookworm), with Sprig
#   3.2.3 (golang-github-masterminds-sprig-dev);
# - testdata/templates/expected-newer-go/: constructs Go 1.19's text/template does not have (`else
#   with` is Go 1.23, range over an integer Go 1.24), rendered by a newer Go:
#   $TEMPLATE_ORACLE_NEWER_GO, by default /usr/lib/go-1.24/bin/go (Debian's golang-1.24-go, from
#   trixie; .ci/run installs it). A case belongs there only if Debian's Go renders it differently;
#   the script checks that too.
# The newer Go also renders every case of expected/; where it words an error differently from Go 1.19
# the script prints a note (the engine follows the expectations, that is Go 1.19's wording).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tdir="$root/testdata/templates"
newer_go="${TEMPLATE_ORACLE_NEWER_GO:-/usr/lib/go-1.24/bin/go}"

case "${UPDATE_EXPECT:-}" in
  '') updating= ;;
  1) updating=1 ;;
  *)
    echo "template-oracle: UPDATE_EXPECT=${UPDATE_EXPECT}: set UPDATE_EXPECT=1 to rewrite, or leave it unset" >&2
    exit 2
    ;;
esac
if [ -n "$updating" ] && [ -n "${CI:-}" ]; then
  echo "template-oracle: refusing to rewrite expectations when CI is set" >&2
  exit 2
fi
command -v go >/dev/null || { echo "template-oracle: go not found (apt-get install golang-go)" >&2; exit 2; }
[ -d /usr/share/gocode/src/github.com/Masterminds/sprig ] || {
  echo "template-oracle: Sprig not found (apt-get install golang-github-masterminds-sprig-dev)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# build NAME GO: the oracle built with the toolchain GO, as $work/oracle-NAME. Go's build cache is
# kept under the target directory: Debian's Go 1.20+ ships no compiled standard library, so a cold
# build of the newer Go's oracle takes about a minute, a warm one seconds.
cache="${CARGO_TARGET_DIR:-$root/target}/template-oracle"
build() {
  local gopath="$work/gopath-$1"
  mkdir -p "$gopath/src" "$cache/$1"
  cp -r "$root/tools/template-oracle" "$gopath/src/oracle"
  (cd "$gopath/src/oracle" && GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOCACHE="$cache/$1" \
    GOFLAGS= GOTOOLCHAIN=local "$2" build -o "$work/oracle-$1" .)
}

# Which directory holds each case's expectations.
base_cases=()
newer_cases=()
status=0
for f in "$tdir"/cases/*.tmpl; do
  c="$(basename "$f" .tmpl)"
  in_base=0 in_newer=0
  compgen -G "$tdir/expected/${c}__*" >/dev/null && in_base=1
  compgen -G "$tdir/expected-newer-go/${c}__*" >/dev/null && in_newer=1
  if [ "$in_base$in_newer" = 11 ]; then
    echo "template-oracle: $c has expectations in both expected/ and expected-newer-go/"
    status=1
  elif [ "$in_newer" = 1 ]; then
    newer_cases+=("$c")
  else
    base_cases+=("$c")
  fi
done

base_version="$(go env GOVERSION)"
build base go
mkdir -p "$work/base"
"$work/oracle-base" "$tdir/cases" "$tdir/reports" "$work/base" "${base_cases[@]}"
# Argo CD Image Updater's commit-message and write-branch templates (Go's builtins, no Sprig).
adir="$tdir/argocd"
mkdir -p "$work/argocd-out"
"$work/oracle-base" argocd "$adir/cases" "$adir/data" "$work/argocd-out"

newer_version=
if [ -x "$newer_go" ]; then
  newer_version="$("$newer_go" env GOVERSION)"
  case "$newer_version" in
    go1.2[4-9]* | go1.[3-9]* | go[2-9]*) ;;
    *)
      echo "template-oracle: $newer_go is $newer_version; the newer-Go cases need Go 1.24 or later" >&2
      newer_version=
      ;;
  esac
fi
if [ -n "$newer_version" ]; then
  build newer "$newer_go"
  mkdir -p "$work/newer-all" "$work/newer" "$work/base-of-newer"
  "$work/oracle-newer" "$tdir/cases" "$tdir/reports" "$work/newer-all"
  for c in "${newer_cases[@]}"; do cp "$work/newer-all/${c}__"* "$work/newer/"; done
  # The newer cases rendered by Debian's Go, to show that they need the newer one.
  "$work/oracle-base" "$tdir/cases" "$tdir/reports" "$work/base-of-newer" "${newer_cases[@]}"
fi

if [ -n "$updating" ]; then
  for c in "${base_cases[@]}"; do rm -f "$tdir/expected/${c}__"*; done
  cp "$work/base/"* "$tdir/expected/"
  echo "template-oracle: rewrote $(ls "$work/base" | wc -l) expectations in expected/ with Go $base_version"
  rm -f "$adir/expected/"*
  cp "$work/argocd-out/"* "$adir/expected/"
  echo "template-oracle: rewrote $(ls "$work/argocd-out" | wc -l) expectations in argocd/expected/ with Go $base_version"
  if [ -z "$newer_version" ]; then
    echo "template-oracle: expected-newer-go/ NOT rewritten: no Go 1.24 or later at $newer_go" >&2
    exit 2
  fi
  for c in "${newer_cases[@]}"; do rm -f "$tdir/expected-newer-go/${c}__"*; done
  cp "$work/newer/"* "$tdir/expected-newer-go/"
  echo "template-oracle: rewrote $(ls "$work/newer" | wc -l) expectations in expected-newer-go/ with Go $newer_version"
  exit 0
fi

# compare DIR OUT GO: every file of OUT is DIR's, and DIR has nothing OUT lacks among CASES.
compare() {
  local dir="$1" out="$2" version="$3" f name
  shift 3
  for f in "$out/"*; do
    name="$(basename "$f")"
    if [ ! -f "$tdir/$dir/$name" ]; then
      echo "template-oracle: missing expectation testdata/templates/$dir/$name (Go $version renders it)"
      status=1
    elif ! cmp -s "$f" "$tdir/$dir/$name"; then
      echo "template-oracle: differs from Go $version: testdata/templates/$dir/$name"
      diff -u "$tdir/$dir/$name" "$f" | head -20 || true
      status=1
    fi
  done
  for c in "$@"; do
    for f in "$tdir/$dir/${c}__"*; do
      [ -e "$f" ] || continue
      name="$(basename "$f")"
      if [ ! -f "$out/$name" ]; then
        echo "template-oracle: Go $version does not produce testdata/templates/$dir/$name"
        status=1
      fi
    done
  done
}

compare expected "$work/base" "$base_version" "${base_cases[@]}"
# The Argo CD templates: the whole directory, both ways.
for f in "$work/argocd-out/"*; do
  name="$(basename "$f")"
  if [ ! -f "$adir/expected/$name" ]; then
    echo "template-oracle: missing expectation testdata/templates/argocd/expected/$name (Go $base_version renders it)"
    status=1
  elif ! cmp -s "$f" "$adir/expected/$name"; then
    echo "template-oracle: differs from Go $base_version: testdata/templates/argocd/expected/$name"
    diff -u "$adir/expected/$name" "$f" | head -20 || true
    status=1
  fi
done
for f in "$adir/expected/"*; do
  [ -e "$f" ] || continue
  if [ ! -f "$work/argocd-out/$(basename "$f")" ]; then
    echo "template-oracle: Go $base_version does not produce testdata/templates/argocd/expected/$(basename "$f")"
    status=1
  fi
done
if [ "${#newer_cases[@]}" -gt 0 ] && [ -z "$newer_version" ]; then
  echo "template-oracle: NOT CHECKED, no Go 1.24 or later at $newer_go (apt-get install golang-1.24-go from" \
    "Debian trixie, or set TEMPLATE_ORACLE_NEWER_GO): the $(ls "$tdir/expected-newer-go" | wc -l)" \
    "expectations of ${newer_cases[*]} in testdata/templates/expected-newer-go/" >&2
  [ "$status" -eq 0 ] && status=2
elif [ "${#newer_cases[@]}" -gt 0 ]; then
  compare expected-newer-go "$work/newer" "$newer_version" "${newer_cases[@]}"
  for c in "${newer_cases[@]}"; do
    same=1
    for f in "$work/newer/${c}__"*; do
      cmp -s "$f" "$work/base-of-newer/$(basename "$f")" || same=0
    done
    if [ "$same" = 1 ]; then
      echo "template-oracle: Go $base_version renders $c exactly as Go $newer_version: its expectations belong in expected/"
      status=1
    fi
  done
  # Where the newer Go words the expectations of Go 1.19 differently (notes, not failures).
  for f in "$work/base/"*; do
    name="$(basename "$f")"
    if [ -f "$work/newer-all/$name" ] && ! cmp -s "$f" "$work/newer-all/$name"; then
      echo "template-oracle: note: Go $newer_version differs from Go $base_version on expected/$name"
    fi
  done | sed 's/__[^ ]*\.\(out\|err\)$//' | sort | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)/\2 (\1 reports)/'
fi
if [ "$status" -eq 0 ]; then
  echo "template-oracle: $(ls "$work/base" | wc -l) + $(ls "$work/argocd-out" | wc -l) (Argo CD) expectations" \
    "agree with Go $base_version, $(ls "$work/newer" | wc -l) with Go $newer_version"
fi
exit "$status"
