#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang-14, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz, checks the harness itself, then fuzzes each target
# for SECONDS seconds on a scratch copy of its seed corpus (tests/fuzz/corpus/<target>/).
#   scripts/fuzz.sh [seconds-per-target (default 20)] [target ...]
#   targets: gguf frame handshake control openai_request config (default: all)
#   SMARTGEN_FUZZ_PARALLEL=2   fuzz two targets at a time (default 1)
# Fails (exit 1) on any crash, sanitizer report, leak, timeout or out-of-memory; the input
# that did it is left in build-fuzz/fuzz-work/<target>/findings/ and the report is printed.
# Prints executions per target (also in build-fuzz/fuzz-summary.txt).
# The harness check: fuzz_openai_request_planted has a crash planted behind a define; a run on
# a corpus holding the input that triggers it must fail, or the script fails.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-20}"
shift || true
ALL_TARGETS=(gguf frame handshake control openai_request config)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi
BUILD="${SMARTGEN_FUZZ_BUILD_DIR:-build-fuzz}"
PARALLEL="${SMARTGEN_FUZZ_PARALLEL:-1}"
for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool missing (scripts/setup.sh installs clang-14)" >&2; exit 1; }
done

echo "== fuzz: building in $BUILD =="
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_UNITY_BUILD=OFF -DSMARTGEN_FUZZ=ON \
  -DSMARTGEN_BUILD_TESTS=OFF -DSMARTGEN_BUILD_BENCH=OFF >/dev/null
build_targets=(fuzz_openai_request_planted)
for t in "${TARGETS[@]}"; do build_targets+=("fuzz_$t"); done
cmake --build "$BUILD" -j "${SMARTGEN_JOBS:-$(nproc)}" --target "${build_targets[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"

# run <binary> <work dir> <seconds> <seed dir...>: fuzzes; exit status 0 only when the run
# ended by its time limit with nothing found.
run() {
  local bin="$1" work="$2" secs="$3"
  shift 3
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/findings"
  for seeds in "$@"; do cp -r "$seeds/." "$work/corpus/" 2>/dev/null || true; done
  local rc=0
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$work/findings/" "$work/corpus" >"$work/log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$work/findings")" ]; then return 1; fi
  return 0
}

echo "== fuzz: harness check (a planted crash must fail the run) =="
planted="$BUILD/fuzz-work/planted-seeds"
rm -rf "$planted"
mkdir -p "$planted"
printf 'PLANTED{"prompt":"x"}' >"$planted/crash"
if run "$BUILD/tests/fuzz/fuzz_openai_request_planted" "$BUILD/fuzz-work/planted" 5 "$planted"; then
  echo "fuzz: the harness did not fail on the planted crash" >&2
  exit 1
fi
grep -q "deadly signal\|ERROR: libFuzzer\|SUMMARY" "$BUILD/fuzz-work/planted/log" || {
  echo "fuzz: the planted crash failed without a crash report:" >&2
  tail -20 "$BUILD/fuzz-work/planted/log" >&2
  exit 1
}
echo "fuzz: harness ok (planted crash reported: $(ls "$BUILD/fuzz-work/planted/findings" | head -1))"

echo "== fuzz: ${#TARGETS[@]} targets, ${SECS} s each, ${PARALLEL} at a time =="
summary="$BUILD/fuzz-summary.txt"
: >"$summary"
failed=()
report() {
  local t="$1" status="$2" log="$BUILD/fuzz-work/$1/log"
  local execs rate
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$log" | tail -1)
  printf '%-16s %-6s executions=%s exec_per_s=%s seconds=%s\n' "$t" "$status" "$execs" "$rate" "$SECS" |
    tee -a "$summary"
}
pending=("${TARGETS[@]}")
while [ ${#pending[@]} -gt 0 ]; do
  batch=("${pending[@]:0:$PARALLEL}")
  pending=("${pending[@]:$PARALLEL}")
  pids=()
  for t in "${batch[@]}"; do
    run "$BUILD/tests/fuzz/fuzz_$t" "$BUILD/fuzz-work/$t" "$SECS" "tests/fuzz/corpus/$t" &
    pids+=($!)
  done
  for i in "${!batch[@]}"; do
    t="${batch[$i]}"
    if wait "${pids[$i]}"; then
      report "$t" ok
    else
      report "$t" FAILED
      failed+=("$t")
      echo "--- fuzz_$t: findings in $BUILD/fuzz-work/$t/findings/; report:" >&2
      grep -v '^#\|^INFO\|^\s*$' "$BUILD/fuzz-work/$t/log" | tail -40 >&2
    fi
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "== fuzz: FAILED: ${failed[*]} ==" >&2
  exit 1
fi
echo "== fuzz: all targets clean =="
