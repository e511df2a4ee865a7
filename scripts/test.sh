#!/usr/bin/env bash
# The test command: installs missing Debian packages, builds, runs the whole test suite
# (labels unit, model, net), then the transfer and core tests again under AddressSanitizer and
# LeakSanitizer. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
JOBS="${SMARTGEN_TEST_JOBS:-2}"
(cd build && ctest --output-on-failure --no-tests=error -j "$JOBS" --timeout 600)

if [ "${SMARTGEN_SKIP_ASAN:-0}" != "1" ]; then
  echo "== sanitizer pass (ASan + UBSan + LSan) =="
  SMARTGEN_BUILD_TYPE=Debug scripts/build.sh build-asan -DSMARTGEN_SANITIZE=ON -DSMARTGEN_BUILD_BENCH=OFF
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     ctest --output-on-failure --no-tests=error -j "$JOBS" --timeout 600 -L unit && ctest --output-on-failure --no-tests=error -j "$JOBS" --timeout 600 -L net -R TransferNet)
fi
echo "== all tests passed =="
