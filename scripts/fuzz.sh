#!/usr/bin/env bash
# Coverage-guided fuzzing of image-update (cargo-fuzz + libFuzzer), bounded
# in time: builds every target of fuzz/, runs each for SECONDS_PER_TARGET
# (default 7: the eight targets together take about a minute, plus the
# build), and exits 1 when any target finds a crash, a timeout or an
# invariant failure. The input that did it is saved under
# fuzz/artifacts/<target>/; fuzz/README.md says how it becomes a fixture.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Needs: cargo-fuzz (installed here from crates.io when missing: about 2 to
# 4 minutes), a C++ compiler for libFuzzer (g++ from build-essential), and
# the stable toolchain: RUSTC_BOOTSTRAP=1 lets it take the unstable
# instrumentation flags cargo-fuzz passes. Without a sanitizer (all the code
# is safe Rust), with debug assertions and overflow checks.
#
# Environment: FUZZ_BUILD_ONLY=1, build the targets only; FUZZ_SHARED_CORPUS, a directory of third-party YAML files to
# seed from as well (default /work/shared/corpus when it exists; `none` to
# skip); FUZZ_ARGS, more libFuzzer flags.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-7}"
shift || true
case "$seconds" in
  '' | *[!0-9]*)
    echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
    exit 2
    ;;
esac

export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz (a few minutes)" >&2
  cargo install cargo-fuzz --version 0.13.2 --locked
fi

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi

# Fuzz the dependency versions the product ships: the fuzz workspace's lock
# file starts from the root one (cargo then adds libfuzzer-sys and its deps),
# whenever the root one changed since.
if [ Cargo.lock -nt fuzz/Cargo.lock ]; then
  cp Cargo.lock fuzz/Cargo.lock
fi
build=(-s none --debug-assertions)
cargo fuzz build "${build[@]}"
# FUZZ_BUILD_ONLY=1: build the targets and stop (CI builds them beside other
# work, then runs them).
if [ "${FUZZ_BUILD_ONLY:-}" = 1 ]; then
  exit 0
fi
bin_dir="fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release"

# Local seeds from third-party YAML: never committed (fuzz/work is ignored).
shared="${FUZZ_SHARED_CORPUS:-/work/shared/corpus}"
shared_seeds=fuzz/work/shared-seeds
if [ "$shared" != none ] && [ -d "$shared" ] && [ ! -d "$shared_seeds" ] \
  && command -v python3 >/dev/null 2>&1; then
  python3 fuzz/seeds.py --no-testdata --shared "$shared" --out "$shared_seeds"
fi

failed=()
for target in "${targets[@]}"; do
  work="fuzz/work/$target"
  artifacts="fuzz/artifacts/$target"
  mkdir -p "$work" "$artifacts"
  corpora=("$work" "fuzz/corpus/$target")
  [ -d "$shared_seeds/$target" ] && corpora+=("$shared_seeds/$target")
  dict=()
  case "$target" in
    plan | krm | policies) dict=(-dict=fuzz/dict/yaml.dict) ;;
    marker | semver | template) dict=("-dict=fuzz/dict/$target.dict") ;;
  esac
  echo "fuzz: $target for ${seconds}s" >&2
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  if ! "$bin_dir/$target" "${corpora[@]}" "${dict[@]}" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 ${FUZZ_ARGS:-} \
    2> "fuzz/work/$target.log"; then
    failed+=("$target")
    tail -n 40 "fuzz/work/$target.log" >&2
  else
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added):' \
      "fuzz/work/$target.log" | sed "s/^/fuzz: $target: /" >&2 || true
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs under fuzz/artifacts/, logs under fuzz/work/)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each: no crash" >&2
