#!/usr/bin/env bash
# `smartgen serve` as separate processes, the way a deployment runs it: one prefill node, two
# decode nodes and a router whose pools and port come from a TOML config file (--config).
# Checks: both decode nodes are in the router's pool, a plain and a streamed completion come
# back through curl with the same greedy tokens, a smartgen-mode request too, /metrics counts
# them, and a flag given on the command line wins over the file. With two CPUs or more the
# prefill node and the first decode node run on CPUs of their own (--cpus): every thread of
# each, its HTTP and KV-link threads included, stays on its node's CPU; a --cpus naming a CPU
# the process may not use is refused at start-up.
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
read -r -a CPUS <<< "$(/usr/bin/python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')"
PREFILL_CPUS=(); DECODE_CPUS=()
if [ "${#CPUS[@]}" -ge 2 ]; then
  PREFILL_CPUS=(--cpus "${CPUS[0]}"); DECODE_CPUS=(--cpus "${CPUS[1]}")
fi
start prefill serve prefill "${NODE[@]}" "${PREFILL_CPUS[@]}"; P=$PORT; PREFILL_PID=${pids[-1]}
start decode1 serve decode "${NODE[@]}" --name decode-a "${DECODE_CPUS[@]}"; D1=$PORT; DECODE_PID=${pids[-1]}
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
# Every thread of a placed node, made before or after its compute pool, is on its CPU.
placed_on() {  # pid cpu: fails unless each of the process's threads may run on `cpu` only
  local t
  for t in /proc/"$1"/task/*; do
    [ "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status")" = "$2" ] ||
      fail "thread $(basename "$t") of process $1 is allowed $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status"), not CPU $2"
  done
}
if [ "${#CPUS[@]}" -ge 2 ]; then
  placed_on "$PREFILL_PID" "${CPUS[0]}"
  placed_on "$DECODE_PID" "${CPUS[1]}"
  placement="prefill on CPU ${CPUS[0]}, decode-a on CPU ${CPUS[1]}"
else
  placement="one CPU: placement not checked"
fi
bad_cpu=$(/usr/bin/python3 -c 'import os; a = os.sched_getaffinity(0); print(next(c for c in range(1024) if c not in a))')
if "$BIN" serve decode "${NODE[@]}" --cpus "$bad_cpu" > "$WORK/badcpus.out" 2> "$WORK/badcpus.err"; then
  fail "serve decode --cpus $bad_cpu started"
fi
grep -q "may not run on CPU $bad_cpu" "$WORK/badcpus.err" ||
  fail "serve decode --cpus $bad_cpu did not say why: $(tail -2 "$WORK/badcpus.err")"
echo "ok: prefill $P, decode $D1 and $D2, router $R (from --config); greedy ids $ids_plain; $placement"
