#!/usr/bin/env bash
# `smartgen serve` as separate processes, the way a deployment runs it: one prefill node, two
# decode nodes and a router whose pools and port come from a TOML config file (--config).
# Checks: both decode nodes are in the router's pool, a plain and a streamed completion come
# back through curl with the same greedy tokens, a smartgen-mode request too, /metrics counts
# them, and a flag given on the command line wins over the file.
# Usage: serve_processes_test.sh path/to/smartgen
set -euo pipefail
BIN="$(realpath "$1")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/smartgen-serve-XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$WORK"/*.err; do echo "--- $f" >&2; tail -5 "$f" >&2; done; exit 1; }

# start NAME ARGS...: runs `smartgen ARGS...` in the background; PORT = its HTTP port.
start() {
  local name=$1; shift
  # The files exist before the child opens them: under load the child may not have run its
  # redirections when the first sed below reads them (sed then fails, and set -e ends the test).
  : > "$WORK/$name.out"
  : > "$WORK/$name.err"
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
start prefill serve prefill "${NODE[@]}"; P=$PORT
start decode1 serve decode "${NODE[@]}" --name decode-a; D1=$PORT
start decode2 serve decode "${NODE[@]}" --name decode-b; D2=$PORT

cat > "$WORK/router.toml" <<TOML
model = "$WORK/model.gguf"
prefill = ["127.0.0.1:$P"]
decode = ["127.0.0.1:$D1", "127.0.0.1:$D2"]
port = 1
default-mode = "layerwise"
TOML
# --port on the command line overrides the file's (unusable) port 1.
start router serve router --config "$WORK/router.toml" --port 0; R=$PORT
grep -q "127.0.0.1:$D2" "$WORK/router.err" "$WORK/router.out" ||
  fail "the router's start-up configuration does not list the second decode node"

URL="http://127.0.0.1:$R/v1/completions"
BODY='{"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "smartgen": {"return_token_ids": true, "ignore_eos": true}}'
plain=$(curl -sS --max-time 60 "$URL" -H 'Content-Type: application/json' -d "$BODY")
ids_plain=$(printf '%s' "$plain" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["smartgen"]["token_ids"])') ||
  fail "no token ids in: $plain"

STREAM='{"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "stream": true, "smartgen": {"mode": "smartgen", "return_token_ids": true, "ignore_eos": true}}'
sse=$(curl -sSN --max-time 60 "$URL" -H 'Content-Type: application/json' -d "$STREAM")
[ "$(printf '%s\n' "$sse" | tail -n 1)" = "data: [DONE]" ] || fail "stream did not end in [DONE]: $sse"
# The greedy ids of the smartgen stream (its last chunk) equal the layerwise ones.
ids_stream=$(printf '%s\n' "$sse" | /usr/bin/python3 -c '
import json, sys
ids = None
for line in sys.stdin:
    if line.startswith("data: {"):
        ids = json.loads(line[6:]).get("smartgen", {}).get("token_ids", ids)
print(ids)')
[ "$ids_stream" = "$ids_plain" ] || fail "smartgen stream ids $ids_stream != layerwise ids $ids_plain"

metrics=$(curl -sS --max-time 10 "http://127.0.0.1:$R/metrics")
# A here-string, not a pipe: grep -q exits at its first match, and under pipefail the writer's
# SIGPIPE on a /metrics page longer than one pipe write would fail the check at random.
grep -q '^smartgen_server_requests_total' <<<"$metrics" || fail "router /metrics has no request counter"
echo "ok: prefill $P, decode $D1 and $D2, router $R (from --config); greedy ids $ids_plain"
