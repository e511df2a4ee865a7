#!/usr/bin/env bash
# Configures and builds smartgen with CMake + Ninja.
#   scripts/build.sh [build-dir] [extra cmake args...]   (default build dir: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
shift || true
JOBS="${SMARTGEN_JOBS:-$(nproc)}"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${SMARTGEN_BUILD_TYPE:-Release}" "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
