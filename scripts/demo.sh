#!/usr/bin/env bash
# The demo command: installs missing Debian packages, builds, makes the embedded default model
# and runs the end-to-end demo, printing TTFT/TTST per transfer mode.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
mkdir -p out
MODEL=out/smollm2-135m-f16.gguf
if [ ! -f "$MODEL" ]; then
  build/smartgen make-model --preset smollm2-135m --type f16 --seed 1 --out "$MODEL"
fi
build/smartgen demo --model "$MODEL"
