#!/usr/bin/env bash
# The test command: installs missing Debian packages, builds, runs the whole test suite
# (labels unit, model, net) under CTest, runs every fuzz target for a bounded time, then runs
# the hermetic unit tests (the kernels' among them: an out-of-bounds read in a SIMD kernel shows
# nowhere else), the transfer engine's network tests, the node and the server tests
# again in a build with AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer, and the
# node, transfer and server tests in a build with ThreadSanitizer. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's start, with the seconds since this script's, so a slow CI run shows where the
# time went (CI's budget for the whole run is 30 minutes on 2 cores).
START=$(date +%s)
phase() { echo "== $1 (at $(($(date +%s) - START)) s) =="; }
phase "setup"
scripts/setup.sh
phase "build"
scripts/build.sh build
JOBS="${SMARTGEN_TEST_JOBS:-2}"
phase "ctest"
(cd build && ctest --output-on-failure --no-tests=error -j "$JOBS" --timeout 600)

# The fuzz targets, bounded: clang-14 build of just those targets in build-fuzz, the harness
# check, then each target SMARTGEN_FUZZ_SECONDS s (scripts/fuzz.sh), two at a time (one core
# each, as one at a time gives them); any crash or sanitizer report fails the run.
if [ "${SMARTGEN_SKIP_FUZZ:-0}" != "1" ]; then
  phase "fuzz (bounded)"
  SMARTGEN_FUZZ_PARALLEL="${SMARTGEN_FUZZ_PARALLEL:-2}" scripts/fuzz.sh "${SMARTGEN_FUZZ_SECONDS:-20}"
fi

if [ "${SMARTGEN_SKIP_ASAN:-0}" != "1" ]; then
  phase "sanitizer pass (ASan + LSan + UBSan)"
  # Only the binaries that run here are built (-O1: fast enough to build and to run).
  ASAN_BINARIES=(
    tests/core/core_test tests/gguf/gguf_test tests/kv/kv_test tests/tokenizer/tokenizer_test
    tests/kernels/kernels_test
    tests/transfer/transfer_unit_test tests/transfer/transfer_net_test tests/node/node_unit_test
    tests/node/node_test
    tests/server/server_unit_test tests/server/server_hardening_test
  )
  targets=()
  for b in "${ASAN_BINARIES[@]}"; do targets+=("$(basename "$b")"); done
  # -g1 keeps file:line in the reports at a fraction of full debug info's compile time.
  SMARTGEN_BUILD_TYPE=RelWithDebInfo SMARTGEN_TARGETS="${targets[*]}" scripts/build.sh build-asan \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DSMARTGEN_SANITIZE=ON -DSMARTGEN_BUILD_BENCH=OFF
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  for b in "${ASAN_BINARIES[@]}"; do
    echo "-- $b"
    SMARTGEN_LOG=warn timeout 900 "build-asan/$b" --gtest_brief=1
  done
fi
if [ "${SMARTGEN_SKIP_TSAN:-0}" != "1" ]; then
  phase "sanitizer pass (ThreadSanitizer)"
  # The threaded layers: node (requests, engine, router), transfer, the node-side callbacks, the
  # pool and its team stages, and the forward pass's team step. BINARY[:gtest filter].
  TSAN_BINARIES=(tests/node/node_unit_test tests/node/node_test tests/transfer/transfer_unit_test
                 tests/server/server_unit_test tests/server/server_hardening_test
                 "tests/core/core_test:ThreadPool*:TeamStage*:LaneClaims*"
                 "tests/model/model_test:*ForwardTeamTest*")
  targets=()
  for b in "${TSAN_BINARIES[@]}"; do targets+=("$(basename "${b%%:*}")"); done
  SMARTGEN_BUILD_TYPE=RelWithDebInfo SMARTGEN_TARGETS="${targets[*]}" scripts/build.sh build-tsan \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" -DSMARTGEN_BUILD_BENCH=OFF
  # halt_on_error: a single report fails the run. UCX's memory hooks (libucm) are off: they
  # intercept madvise at thread exit, where ThreadSanitizer's runtime cannot be re-entered.
  # scripts/tsan.supp: what the uninstrumented Debian libraries hide from it.
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" UCX_MEM_EVENTS=no
  for entry in "${TSAN_BINARIES[@]}"; do
    b="${entry%%:*}"
    filter="*"
    if [ "$entry" != "$b" ]; then filter="${entry#*:}"; fi
    echo "-- $b ($filter)"
    SMARTGEN_LOG=warn timeout 900 "build-tsan/$b" --gtest_brief=1 --gtest_filter="$filter"
  done
fi
phase "all tests passed"
