#!/usr/bin/env bash
# Coverage-guided fuzzing of image-update (libFuzzer through libfuzzer-sys),
# bounded in time: builds every target of fuzz/ with coverage
# instrumentation, runs each for SECONDS_PER_TARGET (default 7: the eight
# targets together take about a minute, plus the build), and exits 1 when any
# target finds a crash, a timeout or an invariant failure. The input that did
# it is saved under fuzz/artifacts/<target>/; fuzz/README.md says how it
# becomes a fixture.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Needs: the stable toolchain and a C++ compiler for libFuzzer (g++). The
# build is a plain `cargo build` of fuzz/ with the instrumentation flags
# `cargo fuzz build -s none --debug-assertions` (cargo-fuzz 0.13) gives
# rustc, so nothing has to be installed: no sanitizer (all the code is safe
# Rust), debug assertions and overflow checks on (fuzz/Cargo.toml), and the
# `job` feature off (the git stack is not fuzzed, and building it
# instrumented would take minutes). The targets stay a cargo-fuzz project:
# with cargo-fuzz installed, `cargo fuzz run/tmin/cmin` work on them too.
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

triple="$(rustc -vV | sed -n 's/^host: //p')"
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for source in fuzz/fuzz_targets/*.rs; do
    name="${source##*/}"
    targets+=("${name%.rs}")
  done
fi

# Fuzz the dependency versions the product ships: the fuzz workspace's lock
# file starts from the root one (cargo then adds libfuzzer-sys and its deps),
# whenever the root one changed since.
if [ Cargo.lock -nt fuzz/Cargo.lock ]; then
  cp Cargo.lock fuzz/Cargo.lock
fi
# cargo-fuzz's instrumentation: SanitizerCoverage with inline 8-bit counters,
# the PC table, comparison tracing and stack depth for libFuzzer's feedback,
# `--cfg fuzzing`, and no branch folding (it hides branches from coverage).
# `--target` keeps these flags away from build scripts and proc-macros.
instrument=(
  -Cpasses=sancov-module
  -Cllvm-args=-sanitizer-coverage-level=4
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
  -Cllvm-args=-sanitizer-coverage-pc-table
  -Cllvm-args=-sanitizer-coverage-trace-compares
  -Cllvm-args=-sanitizer-coverage-stack-depth
  -Cllvm-args=-simplifycfg-branch-fold-threshold=0
  --cfg fuzzing
)
RUSTFLAGS="${instrument[*]}${RUSTFLAGS:+ $RUSTFLAGS}" \
  cargo build --manifest-path fuzz/Cargo.toml --release --target "$triple" --bins
# FUZZ_BUILD_ONLY=1: build the targets and stop (CI builds them beside other
# work, then runs them).
if [ "${FUZZ_BUILD_ONLY:-}" = 1 ]; then
  exit 0
fi
bin_dir="${CARGO_TARGET_DIR:-fuzz/target}/$triple/release"

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
