#!/usr/bin/env bash
# Hung peers as a user meets them: `smartgen serve` processes, one of them SIGSTOPped (alive,
# holding its sockets, silent). Two prefill and two decode nodes behind a router; the KV link
# is slow (4 Mbit/s) so a 2000-token layerwise request spends about 2 s moving its KV.
#   1. a decode node stopped while idle;        2. a decode node stopped mid-request;
#   3. a prefill node stopped before a request; 4. a prefill node stopped mid-transfer;
#   5. a decode node killed (SIGKILL): 100 sequential requests.
# Every request must return the tokens of a colocated run, each well within its phase
# deadlines (heartbeat 1 s, health checks 0.25 s, stream idle 2 s) and far below the request
# deadline (60 s); after cases 1-4 no request, KV block or lease is held on any node; in case 5
# at most one request meets the dead node (and fails over), none after it.
# Usage: hung_peers_test.sh path/to/smartgen
set -euo pipefail
BIN="$(realpath "$1")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/smartgen-hung-XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$WORK"/*.err; do echo "--- $f" >&2; tail -8 "$f" >&2; done; exit 1; }

start() {  # NAME ARGS...: sets PORT and PID
  local name=$1; shift
  : > "$WORK/$name.out"  # exists before the child opens it (sed reads it at once)
  : > "$WORK/$name.err"
  "$BIN" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  PID=$!
  pids+=("$PID")
  PORT=""
  for _ in $(seq 1 300); do
    PORT=$(sed -n 's/.*ready: http port \([0-9][0-9]*\).*/\1/p' "$WORK/$name.out")
    [ -n "$PORT" ] && return 0
    kill -0 "$PID" 2>/dev/null || fail "$name exited before it was ready"
    sleep 0.1
  done
  fail "$name was not ready within 30 s"
}

"$BIN" make-model --preset tiny --type f32 --seed 5 --out "$WORK/model.gguf" > /dev/null
NODE=(--model "$WORK/model.gguf" --port 0 --threads 1 --kv-dtype f32 --heartbeat-timeout 1)
start p1 serve prefill "${NODE[@]}" --name p1 --link-gbps 0.004 --warmup-tokens 0; P1=$PORT; P1_PID=$PID
start p2 serve prefill "${NODE[@]}" --name p2 --link-gbps 0.004 --warmup-tokens 0; P2=$PORT; P2_PID=$PID
start d1 serve decode "${NODE[@]}" --name d1; D1=$PORT; D1_PID=$PID
start d2 serve decode "${NODE[@]}" --name d2; D2=$PORT; D2_PID=$PID
start router serve router --model "$WORK/model.gguf" --port 0 --prefill "127.0.0.1:$P1,127.0.0.1:$P2" \
  --decode "127.0.0.1:$D1,127.0.0.1:$D2" --health-interval 0.25 --stream-idle-timeout 2 --request-timeout 60
R=$PORT
URL="http://127.0.0.1:$R/v1/completions"
PROMPT=$(/usr/bin/python3 -c 'print(" ".join(["once upon a time there was a tiny model"] * 50))')

# ids MODE MAX: the greedy token ids of one completion (fails the test on an error).
ids() {
  local body out
  body=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"prompt": sys.argv[1], "max_tokens": int(sys.argv[3]), "temperature": 0, "smartgen": {"mode": sys.argv[2], "return_token_ids": True, "ignore_eos": True}}))' "$PROMPT" "$1" "$2")
  out=$(curl -sS --max-time 60 "$URL" -H 'Content-Type: application/json' -d "$body") || fail "curl failed ($1)"
  printf '%s' "$out" > "$WORK/last.json"
  printf '%s' "$out" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["smartgen"]["token_ids"])' ||
    fail "no token ids in: $out"
}
# timed LIMIT_S CMD...: runs CMD, fails when it took longer than LIMIT_S seconds.
timed() {
  local limit=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@"
  t1=$(date +%s.%N)
  ELAPSED=$(/usr/bin/python3 -c "print(round($t1 - $t0, 2))")
  echo "$ELAPSED" > "$WORK/elapsed"
  /usr/bin/python3 -c "import sys; sys.exit(0 if $t1 - $t0 <= $limit else 1)" ||
    fail "took $ELAPSED s, more than $limit s: $*"
}
check() {  # NAME MODE: one request must give the reference ids within 15 s
  local got
  got=$(timed 15 ids "$2" 8) || exit 1
  [ "$got" = "$WANT" ] || fail "$1: ids $got != colocated $WANT"
  local how
  how=$(/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["smartgen"]; print("decode", s.get("decode_node"), "prefill", s.get("prefill_node"), "failovers", len(s.get("failovers", [])), "fallback", s.get("fallback"))' "$WORK/last.json")
  echo "ok: $1 ($(cat "$WORK/elapsed") s; $how)"
}

# wait_up POOL N: until the router's /health shows N nodes of POOL up (10 s at most), so the
# next case starts with every node in the pool again (idle nodes are picked in list order).
wait_up() {
  for _ in $(seq 1 100); do
    up=$(curl -sS --max-time 2 "http://127.0.0.1:$R/health" |
      /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$1']['up'])" 2>/dev/null || echo 0)
    [ "$up" = "$2" ] && return 0
    sleep 0.1
  done
  fail "the router does not see $2 $1 nodes up"
}

WANT=$(ids colocated 8)
check "all up, layerwise" layerwise

# 1. A decode node stopped while idle: requests go to the other one.
kill -STOP "$D1_PID"
for i in 1 2 3; do check "decode node stopped while idle ($i)" layerwise; done
kill -CONT "$D1_PID"; wait_up decode 2

# 2. A decode node stopped mid-request (it accepted, the KV is crossing the slow link). Idle
#    nodes are picked least-loaded first in list order, so d1 serves it.
( check "decode node stopped mid-request" layerwise ) & req=$!
sleep 0.7
kill -STOP "$D1_PID"
wait "$req" || fail "decode node stopped mid-request"
kill -CONT "$D1_PID"; wait_up decode 2

# 3. A prefill node stopped before a request: the health checks take it out of the pool.
kill -STOP "$P1_PID"; sleep 1
for i in 1 2; do check "prefill node stopped before a request ($i)" layerwise; done
kill -CONT "$P1_PID"; wait_up prefill 2

# 4. A prefill node stopped mid-transfer: the decode node's heartbeat notices, falls back.
( check "prefill node stopped mid-transfer" layerwise ) & req=$!
sleep 0.7
kill -STOP "$P1_PID"
wait "$req" || fail "prefill node stopped mid-transfer"
kill -CONT "$P1_PID"

# Nothing is held afterwards.
gauge() { curl -sS --max-time 5 "http://127.0.0.1:$1/metrics" | sed -n "s/^$2 \([0-9.e+-]*\)$/\1/p"; }
for _ in $(seq 1 100); do
  held=""
  for d in "$D1" "$D2"; do
    [ "$(gauge "$d" smartgen_decode_requests_active)" = "0" ] || held="$held decode:$d requests"
    [ "$(gauge "$d" smartgen_decode_kv_blocks_used)" = "0" ] || held="$held decode:$d blocks"
  done
  for p in "$P1" "$P2"; do
    [ "$(gauge "$p" smartgen_prefill_kv_blocks_used)" = "0" ] || held="$held prefill:$p blocks"
  done
  [ -z "$held" ] && break
  sleep 0.2
done
[ -z "$held" ] || fail "still held after 20 s:$held"
echo "ok: hung peers handled; nothing held afterwards"

# 5. A decode node killed: every request succeeds on the other one, and after the first
#    failure (if one meets the dead node at all) none is sent to it.
WANT4=$(ids colocated 4)
kill -KILL "$D1_PID"; wait "$D1_PID" 2>/dev/null || true
met_dead=0
for i in $(seq 1 100); do
  got=$(ids colocated 4)
  [ "$got" = "$WANT4" ] || fail "decode node killed, request $i: ids $got != $WANT4"
  n=$(/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["smartgen"]; print(len(s.get("failovers", [])))' "$WORK/last.json")
  met_dead=$((met_dead + n))
done
[ "$met_dead" -le 1 ] || fail "decode node killed: $met_dead requests met the dead node"
echo "ok: decode node killed: 100 requests served, $met_dead met the dead node"
