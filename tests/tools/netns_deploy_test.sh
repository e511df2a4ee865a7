#!/usr/bin/env bash
# The four-machine deployment of docs/DEPLOYMENT.md, each machine a network namespace on its own
# address: two prefill nodes (p1, p2) and two decode nodes (d1, d2) on a bridge, the routers on
# this host. Off loopback, so every node and router needs the shared token (a node without one
# must refuse to start; an unsigned control call must get 401). The prefill nodes send KV only
# to d1 and d2 (--allow-decode): a signed prefill call naming another address gets 403. d1 binds
# its KV listener on its
# IPv4 address; d2 binds [::] and advertises its IPv6 address (--advertise), and the router
# reaches d2's HTTP over IPv6. Router A lists p1, d1 first and router B p2, d2 first, so both
# pairs serve: in every transfer mode a streamed request through each router must return the
# greedy tokens of colocated (smartgen and auto with every block selected and no wait bound, so
# they are exact; smartgen with its default budget must also complete, without a fallback).
# Needs root and iproute2: otherwise it exits 77 (CTest: skipped) with the reason. Talks only
# to addresses inside the namespaces it creates, and deletes them on any exit.
# Usage: netns_deploy_test.sh path/to/smartgen
set -euo pipefail
BIN="$(realpath "$1")"
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip > /dev/null || skip "iproute2 (ip) is not installed"
ip netns list > /dev/null 2>&1 || skip "'ip netns' does not work here"

TAG=$(( $$ % 100000 ))
NSS=(p1 p2 d1 d2)
BR="sgdb$TAG"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/smartgen-netns-deploy-XXXXXX")"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "${NSS[@]}"; do ip netns del "sgdep$TAG-$n" 2>/dev/null || true; done
  ip link del "$BR" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*" >&2; for f in "$WORK"/*.err; do echo "--- $f" >&2; tail -6 "$f" >&2; done; exit 1; }

# A /24 of 10.232.0.0/16 that no address of this host uses.
X=$(( TAG % 250 ))
for _ in $(seq 1 250); do
  ip -4 -o addr show | grep "10\.232\.$X\." >/dev/null || break
  X=$(( (X + 1) % 250 ))
done
NET4="10.232.$X"
NET6="fd00:232:$X:"
declare -A IP4=([p1]="$NET4.11" [p2]="$NET4.12" [d1]="$NET4.21" [d2]="$NET4.22")
declare -A IP6=([p1]="${NET6}:11" [p2]="${NET6}:12" [d1]="${NET6}:21" [d2]="${NET6}:22")

# The bridge (this host is $NET4.1 on it) and one veth per namespace.
ip link add "$BR" type bridge || skip "cannot create a bridge (no bridge support in this kernel)"
ip addr add "$NET4.1/24" dev "$BR"
ip -6 addr add "${NET6}:1/64" dev "$BR" nodad
ip link set "$BR" up
i=0
for n in "${NSS[@]}"; do
  ns="sgdep$TAG-$n"
  ip netns add "$ns"
  ip link add "sgdv$TAG$i" type veth peer name eth0 netns "$ns"
  ip link set "sgdv$TAG$i" master "$BR" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "${IP4[$n]}/24" dev eth0
  ip -n "$ns" -6 addr add "${IP6[$n]}/64" dev eth0 nodad
  ip -n "$ns" link set eth0 up
  i=$((i + 1))
done

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$WORK/token"
chmod 600 "$WORK/token"

# start NAME NS ARGS...: `smartgen ARGS...` in namespace NS ("" = this host); PORT = its port.
start() {
  local name=$1 ns=$2; shift 2
  : > "$WORK/$name.out"  # exists before the child opens it (sed reads it at once)
  : > "$WORK/$name.err"
  if [ -n "$ns" ]; then
    ip netns exec "sgdep$TAG-$ns" "$BIN" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  else
    "$BIN" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" &
  fi
  pids+=($!)
  PORT=""
  for _ in $(seq 1 300); do
    # (The background job may not have opened its .out yet.)
    PORT=$(sed -n 's/.*ready: http port \([0-9][0-9]*\).*/\1/p' "$WORK/$name.out" 2>/dev/null || true)
    [ -n "$PORT" ] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || fail "$name exited before it was ready"
    sleep 0.1
  done
  fail "$name was not ready within 30 s"
}

"$BIN" make-model --preset tiny --type f32 --seed 11 --out "$WORK/model.gguf" > /dev/null
NODE=(--model "$WORK/model.gguf" --threads 1 --kv-dtype f32 --token-file "$WORK/token")

# Off loopback without a token a node refuses to start, and says why.
if ip netns exec "sgdep$TAG-p1" timeout 20 "$BIN" serve prefill --model "$WORK/model.gguf" \
    --host "${IP4[p1]}" --port 8101 > /dev/null 2> "$WORK/notoken.log"; then
  fail "a prefill node on ${IP4[p1]} started with the built-in token"
fi
grep -q -- "--token" "$WORK/notoken.log" || fail "no reason given: $(cat "$WORK/notoken.log")"
echo "ok: a node off loopback without --token refuses to start"

ALLOW=(--allow-decode "${IP4[d1]},[${IP6[d2]}]")
start p1 p1 serve prefill "${NODE[@]}" --name p1 --host "${IP4[p1]}" --port 8101 --link-gbps 0.05 --warmup-tokens 0 "${ALLOW[@]}"
start p2 p2 serve prefill "${NODE[@]}" --name p2 --host "${IP4[p2]}" --port 8101 --link-gbps 0.05 --warmup-tokens 0 "${ALLOW[@]}"
start d1 d1 serve decode "${NODE[@]}" --name d1 --host "${IP4[d1]}" --port 8201 --transfer "${IP4[d1]}:9201"
start d2 d2 serve decode "${NODE[@]}" --name d2 --host "${IP6[d2]}" --port 8201 --transfer "[::]:9201" \
  --advertise "[${IP6[d2]}]"
P1="${IP4[p1]}:8101" P2="${IP4[p2]}:8101" D1="${IP4[d1]}:8201" D2="[${IP6[d2]}]:8201"
ROUTER=(serve router --model "$WORK/model.gguf" --host 127.0.0.1 --port 0 --token-file "$WORK/token"
        --health-interval 0.25 --request-timeout 60)
start ra "" "${ROUTER[@]}" --prefill "$P1,$P2" --decode "$D1,$D2"; RA=$PORT
start rb "" "${ROUTER[@]}" --prefill "$P2,$P1" --decode "$D2,$D1"; RB=$PORT

# The control plane refuses an unsigned call, across the namespace boundary.
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "http://${IP4[p1]}:8101/internal/info")
[ "$code" = 401 ] || fail "unsigned /internal/info on p1 answered $code, not 401"
echo "ok: unsigned /internal/info refused with 401"

# A call signed with the token, naming a KV address that is not one of the pool's decode nodes
# (here p2's port 22), is refused with 403 before the node connects anywhere, and counted.
code=$(/usr/bin/python3 - "$WORK/token" "http://${IP4[p1]}:8101" "${IP4[p2]}:22" <<'PY'
import hashlib, hmac, json, os, sys, time, urllib.error, urllib.request
token = open(sys.argv[1]).read().strip().encode()
path = "/internal/prefill"
body = json.dumps({"request_id": os.urandom(16).hex(), "kv_ticket": os.urandom(16).hex(),
                   "generation": {"prompt": [1, 2, 3], "max_tokens": 2},
                   "mode": "layerwise", "decode_address": sys.argv[3], "timeout_ms": 5000}).encode()
t, nonce = str(int(time.time() * 1000)), os.urandom(16).hex()
canonical = "\n".join(["POST", path, hashlib.sha256(body).hexdigest(), t, nonce, ""]).encode()  # no caller
headers = {"Content-Type": "application/json", "X-Smartgen-Time": t, "X-Smartgen-Nonce": nonce,
           "X-Smartgen-Signature": hmac.new(token, canonical, hashlib.sha256).hexdigest()}
try:
    print(urllib.request.urlopen(urllib.request.Request(sys.argv[2] + path, body, headers), timeout=10).status)
except urllib.error.HTTPError as e:
    print(e.code)
PY
)
[ "$code" = 403 ] || fail "a signed prefill naming ${IP4[p2]}:22 answered $code, not 403"
refused=$(curl -sS --max-time 5 "http://${IP4[p1]}:8101/metrics" | sed -n 's/^smartgen_prefill_decode_refused_total \([0-9.e+-]*\)$/\1/p')
[ "$refused" = 1 ] || fail "smartgen_prefill_decode_refused_total on p1 is '$refused', not 1"
grep -q "is not in --allow-decode" "$WORK/p1.err" || fail "p1 logged no refusal"
echo "ok: a signed prefill naming an address outside the decode pool refused with 403 (counted, logged)"

# Both routers see all four nodes up (10 s at most).
for r in "$RA" "$RB"; do
  for _ in $(seq 1 100); do
    up=$(curl -sS --max-time 2 "http://127.0.0.1:$r/health" | /usr/bin/python3 -c \
      'import json,sys; h=json.load(sys.stdin); print(h["prefill"]["up"], h["decode"]["up"])' 2>/dev/null || true)
    [ "$up" = "2 2" ] && break
    sleep 0.1
  done
  [ "$up" = "2 2" ] || fail "router on port $r does not see 2 prefill + 2 decode nodes up (got '$up')"
done

PROMPT=$(/usr/bin/python3 -c 'print(" ".join(["the deployment spans four machines and one bridge"] * 12))')
# stream ROUTER_PORT MODE [OPTIONS_JSON]: "ids decode_node prefill_node fallback" of one
# streamed completion.
stream() {
  local body sse
  body=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"prompt": sys.argv[1], "max_tokens": 16, "temperature": 0, "stream": True, "smartgen": {"mode": sys.argv[2], "return_token_ids": True, "ignore_eos": True, "options": json.loads(sys.argv[3])}}))' "$PROMPT" "$2" "${3:-null}")
  sse=$(curl -sSN --max-time 60 "http://127.0.0.1:$1/v1/completions" -H 'Content-Type: application/json' -d "$body") ||
    fail "curl failed (router $1, $2)"
  [ "$(printf '%s\n' "$sse" | tail -n 1)" = "data: [DONE]" ] || fail "stream ($2) did not end in [DONE]: $sse"
  printf '%s\n' "$sse" | /usr/bin/python3 -c '
import json, sys
ids, s = None, {}
for line in sys.stdin:
    if line.startswith("data: {"):
        g = json.loads(line[6:]).get("smartgen", {})
        if "token_ids" in g:
            ids, s = g["token_ids"], g
print(json.dumps(ids, separators=(",", ":")), s.get("decode_node"), s.get("prefill_node"), s.get("fallback"))'
}

read -r WANT _ <<< "$(stream "$RA" colocated)"
[ "$WANT" != "null" ] || fail "no token ids from colocated"
EXACT='{"budget_fraction": 1.0, "wait_bound_ms": 1e6}'   # every block, no wait bound
for mode in full layerwise smartgen auto; do
  for r in "$RA" "$RB"; do
    read -r got dnode pnode fallback <<< "$(stream "$r" "$mode" "$EXACT")"
    [ "$got" = "$WANT" ] || fail "$mode via router $r ($pnode -> $dnode): ids $got != colocated $WANT"
    [ "$fallback" = "False" ] || fail "$mode via router $r fell back to computing the prompt on $dnode"
    echo "ok: $mode via router $r: prefill $pnode -> decode $dnode, the tokens of colocated"
  done
done
for r in "$RA" "$RB"; do
  read -r got dnode pnode fallback <<< "$(stream "$r" smartgen)"
  [ "$fallback" = "False" ] || fail "smartgen (default budget) via router $r fell back on $dnode"
  same=$(/usr/bin/python3 -c 'import json,sys; a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2]); print(sum(x==y for x,y in zip(a,b)))' "$got" "$WANT")
  echo "ok: smartgen (default budget) via router $r: prefill $pnode -> decode $dnode, $same/16 tokens as colocated"
done
echo "ok: four-namespace deployment answers every mode with colocated's tokens"
