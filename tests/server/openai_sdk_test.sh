#!/usr/bin/env bash
# The `openai` npm SDK against `smartgen serve` processes: a prefill node, a decode node and the
# router, plus `serve local` (colocated) for logprobs; the checks are in openai_sdk/sdk_test.mjs.
# The SDK is installed from openai_sdk/package-lock.json into a temporary directory (npm ci,
# offline from npm's cache when it can, else from the registry). Exits 77 (skipped) with the
# reason when node or npm is missing or the package cannot be installed.
# Usage: openai_sdk_test.sh path/to/smartgen
set -euo pipefail
BIN="$(realpath "$1")"
SRC="$(cd "$(dirname "$0")/openai_sdk" && pwd)"
skip() { echo "SKIPPED: $*"; exit 77; }
command -v node > /dev/null || skip "node is not installed (apt-get install nodejs npm)"
command -v npm > /dev/null || skip "npm is not installed (apt-get install npm)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || skip "node $major is older than 18 (the openai SDK needs 18+)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/smartgen-sdk-XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$WORK"/*.err; do echo "--- $f" >&2; tail -5 "$f" >&2; done; exit 1; }

cp "$SRC/package.json" "$SRC/package-lock.json" "$SRC/sdk_test.mjs" "$WORK/"
npm_ci() { (cd "$WORK" && timeout 180 npm ci --no-audit --no-fund --loglevel=error "$@"); }
npm_ci --offline > "$WORK/npm.log" 2>&1 || npm_ci > "$WORK/npm.log" 2>&1 ||
  skip "npm ci of the openai package failed (no cache, no registry?): $(tail -1 "$WORK/npm.log")"

# start NAME ARGS...: runs `smartgen ARGS...` in the background; PORT = its HTTP port.
start() {
  local name=$1; shift
  "$BIN" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  pids+=($!)
  PORT=""
  for _ in $(seq 1 300); do
    PORT=$(sed -n 's/.*ready: http port \([0-9][0-9]*\).*/\1/p' "$WORK/$name.out")
    [ -n "$PORT" ] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || fail "$name exited before it was ready"
    sleep 0.1
  done
  fail "$name was not ready within 30 s"
}

"$BIN" make-model --preset tiny --type f32 --seed 3 --out "$WORK/model.gguf" > /dev/null
NODE=(--model "$WORK/model.gguf" --port 0 --threads 1 --kv-dtype f32 --link-gbps 0.5)
NAMES=(--served-model-name tiny tiny-alias)
start prefill serve prefill "${NODE[@]}"; P=$PORT
start decode serve decode "${NODE[@]}"; D=$PORT
start router serve router --model "$WORK/model.gguf" --port 0 --prefill "127.0.0.1:$P" \
  --decode "127.0.0.1:$D" "${NAMES[@]}"; R=$PORT
start local serve local --model "$WORK/model.gguf" --threads 1 --port 0 "${NAMES[@]}"; L=$PORT

(cd "$WORK" && ROUTER_URL="http://127.0.0.1:$R" LOCAL_URL="http://127.0.0.1:$L" \
  timeout 240 node sdk_test.mjs) || fail "the SDK checks failed"
