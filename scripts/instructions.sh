#!/usr/bin/env bash
# Instructions of one run of an in-process benchmark, counted by callgrind: a figure that, unlike wall
# time, does not move when other work shares the machine's cores.
#
#   scripts/instructions.sh CARGO_BENCH_ARGS... [NAME=VALUE...]
#   scripts/instructions.sh --bench policy POLICY_BENCH_ONLY=b
#   scripts/instructions.sh -p image-update-template --bench render BENCH_ONLY=render
#
# Builds the benchmark (`cargo bench --no-run ARGS`), then runs it twice under
# `valgrind --tool=callgrind`, with `BENCH_RUNS=1` and `BENCH_RUNS=3` (and the NAME=VALUE variables), and
# prints half the difference of the two totals: the instructions of one measured run, without the
# setup (data generation, parsing of fixtures) that both runs share. Needs valgrind and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "instructions: valgrind not found (apt-get install valgrind)" >&2; exit 2; }

cargo_args=()
env_args=()
for arg in "$@"; do
  case "$arg" in
    -*) cargo_args+=("$arg") ;;
    *=*) env_args+=("$arg") ;;
    *) cargo_args+=("$arg") ;;
  esac
done
[ "${#cargo_args[@]}" -gt 0 ] || { echo "usage: scripts/instructions.sh CARGO_BENCH_ARGS... [NAME=VALUE...]" >&2; exit 2; }

exe="$(cargo bench --locked --no-run --message-format=json "${cargo_args[@]}" | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and "bench" in m["target"]["kind"] and m.get("executable"):
        print(m["executable"])
' | tail -n 1)"
[ -n "$exe" ] && [ -x "$exe" ] || { echo "instructions: no benchmark executable for ${cargo_args[*]}" >&2; exit 2; }

# total RUNS: the instructions callgrind collected for the whole process.
total() {
  local log
  log="$(mktemp)"
  env "${env_args[@]}" BENCH_RUNS="$1" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$exe" --bench >/dev/null 2>"$log" || { cat "$log" >&2; rm -f "$log"; exit 1; }
  sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$log"
  rm -f "$log"
}
one="$(total 1)"
three="$(total 3)"
[ -n "$one" ] && [ -n "$three" ] || { echo "instructions: callgrind reported no total" >&2; exit 1; }
per_run=$(((three - one) / 2))
echo "instructions per run: $per_run (BENCH_RUNS=1: $one, BENCH_RUNS=3: $three; ${env_args[*]:-} ${cargo_args[*]})"
