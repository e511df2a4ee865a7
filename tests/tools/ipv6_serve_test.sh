#!/usr/bin/env bash
# `smartgen serve` over IPv6 loopback only: the nodes' control plane on ::1, the decode node's KV
# listener on [::1], the router's public API on ::1, the router's pools as [::1]:port. A
# streamed request in layerwise and smartgen (every block, no wait bound) returns the tokens of
# colocated, and the router's /health lists the nodes as [::1]:port. Exits 77 (CTest: skipped)
# when this host has no IPv6 loopback.
# Usage: ipv6_serve_test.sh path/to/smartgen
set -euo pipefail
BIN="$(realpath "$1")"
/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null ||
  { echo "SKIP: no IPv6 loopback (::1) on this host"; exit 77; }
WORK="$(mktemp -d "${TMPDIR:-/tmp}/smartgen-ipv6-XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$WORK"/*.err; do echo "--- $f" >&2; tail -5 "$f" >&2; done; exit 1; }
start() {  # NAME ARGS...: PORT = its HTTP port
  local name=$1; shift
  : > "$WORK/$name.out"  # exists before the child opens it (sed reads it at once)
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

"$BIN" make-model --preset tiny --type f32 --seed 13 --out "$WORK/model.gguf" > /dev/null
NODE=(--model "$WORK/model.gguf" --host ::1 --port 0 --threads 1 --kv-dtype f32)
start prefill serve prefill "${NODE[@]}" --warmup-tokens 0 --allow-decode "[::1]"; P=$PORT
start decode serve decode "${NODE[@]}" --transfer "[::1]:0"; D=$PORT
start router serve router --model "$WORK/model.gguf" --host ::1 --port 0 --prefill "[::1]:$P" --decode "[::1]:$D"
R=$PORT
grep -q "KV transfer \[::1\]:" "$WORK/decode.err" || fail "the decode node does not hand out [::1]:port"
health=$(curl -sS -g --max-time 10 "http://[::1]:$R/health")
grep -q "\"\[::1\]:$D\"" <<<"$health" || fail "/health does not list [::1]:$D: $health"

PROMPT=$(/usr/bin/python3 -c 'print(" ".join(["a small model speaks over ipv6"] * 10))')
stream() {  # MODE: the greedy ids of one streamed completion
  local body sse
  body=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"prompt": sys.argv[1], "max_tokens": 12, "temperature": 0, "stream": True, "smartgen": {"mode": sys.argv[2], "return_token_ids": True, "ignore_eos": True, "options": {"budget_fraction": 1.0, "wait_bound_ms": 1e6} if sys.argv[2] == "smartgen" else None}}))' "$PROMPT" "$1")
  sse=$(curl -sSN -g --max-time 60 "http://[::1]:$R/v1/completions" -H 'Content-Type: application/json' -d "$body") ||
    fail "curl failed ($1)"
  printf '%s\n' "$sse" | /usr/bin/python3 -c '
import json, sys
ids = None
for line in sys.stdin:
    if line.startswith("data: {"):
        ids = json.loads(line[6:]).get("smartgen", {}).get("token_ids", ids)
print(json.dumps(ids, separators=(",", ":")))'
}
WANT=$(stream colocated)
[ "$WANT" != "null" ] || fail "no token ids from colocated"
for mode in layerwise smartgen; do
  got=$(stream "$mode")
  [ "$got" = "$WANT" ] || fail "$mode over ::1: ids $got != colocated $WANT"
  echo "ok: $mode over ::1, the tokens of colocated"
done
echo "ok: router [::1]:$R, prefill [::1]:$P, decode [::1]:$D"
