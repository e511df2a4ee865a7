#!/usr/bin/env bash
# Configures and builds smartgen with CMake + Ninja.
#   scripts/build.sh [build-dir] [extra cmake args...]   (default build dir: build)
# Unity (jumbo) builds are on by default: about 3x less compile work, which is most of a fresh
# build's time on 2 cores. SMARTGEN_UNITY_BUILD=0 builds file by file (faster incremental edits).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
shift || true
JOBS="${SMARTGEN_JOBS:-$(nproc)}"
UNITY=OFF
[ "${SMARTGEN_UNITY_BUILD:-1}" = "1" ] && UNITY=ON
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${SMARTGEN_BUILD_TYPE:-Release}" \
  -DCMAKE_UNITY_BUILD="$UNITY" -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "$@"
# SMARTGEN_TARGETS="a b": build only those targets.
read -r -a targets <<< "${SMARTGEN_TARGETS:-all}"
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}"
