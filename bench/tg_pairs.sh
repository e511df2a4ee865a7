#!/usr/bin/env bash
# Decode-only pairs against llama.cpp, order alternating per pair: llama-bench tg (-p 0) and
# `smartgen bench engine` tg after a 1-token context, on the same files, with the load average
# before and after each pair. For a quick look when the machine is shared: a pair takes seconds,
# so pairs that fall in a quiet window can be told from the rest.
#
#   bench/tg_pairs.sh LLAMA_BENCH MODEL.gguf...      (env: SMARTGEN [build/smartgen], PAIRS [3],
#                                                     DECODE [64], THREADS [2])
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,9p' "$0"; exit 2; }
LLAMA_BENCH="$1"; shift
SMARTGEN="${SMARTGEN:-build/smartgen}"
PAIRS="${PAIRS:-3}"; DECODE="${DECODE:-64}"; THREADS="${THREADS:-2}"
llama() {
  "$LLAMA_BENCH" -m "$1" -t "$THREADS" -p 0 -n "$DECODE" -r 2 -o jsonl 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    if l.startswith("{"): print("%.1f" % json.loads(l)["avg_ts"])'
}
ours() {
  "$SMARTGEN" bench engine -m "$1" --threads "$THREADS" --prompt-tokens 1 --decode-tokens "$DECODE" \
    --reps 2 --json 2>/dev/null | python3 -c 'import json,sys
print("%.1f" % json.loads(sys.stdin.readline())["decode_tok_s"])'
}
for f in "$@"; do
  for r in $(seq 1 "$PAIRS"); do
    l0=$(cut -d' ' -f1 /proc/loadavg)
    if [ $((r % 2)) -eq 1 ]; then a=$(llama "$f"); b=$(ours "$f"); else b=$(ours "$f"); a=$(llama "$f"); fi
    l1=$(cut -d' ' -f1 /proc/loadavg)
    echo "$(date -u +%H:%M:%S) $(basename "$f") pair $r ours $b llama.cpp $a ratio $(python3 -c "print('%.2f' % ($b / $a))") load $l0-$l1"
  done
done
