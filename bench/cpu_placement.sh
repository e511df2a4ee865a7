#!/usr/bin/env bash
# A prefill engine and a decode engine on one machine, with and without --cpus (issue 14:
# thread placement that keeps a prefill node and a decode node from fighting over cores).
#
#   bench/cpu_placement.sh [SMARTGEN_BINARY] [OUT_DIR]
#
# Each round measures decode (`bench engine --prompt-tokens 1 --decode-tokens 128`) while a
# second process prefills PREFILL_TOKENS-token prompts without pause, in three layouts, in an
# order that rotates every round:
#   shared  both engines with --threads CPUS (all of the machine's, as each would be set up alone)
#   halves  each with --threads CPUS/2, unpinned (the kernel places them)
#   placed  each with --threads CPUS/2 and --cpus: prefill on the first half, decode on the second
# and, as the reference, decode alone with --threads CPUS/2 --cpus on the second half. The prefill
# process starts first and is stopped when the decode measurement ends (its own rate is not
# measured: in every layout but `alone` it holds about half the machine). Prints a table (decode tok/s, median over the rounds and the
# per-round range; ratios against `shared` of the same round) and writes OUT_DIR/raw.jsonl.
# Environment: MODEL (out/smollm2-135m-f16.gguf, made if missing), PREFILL_TOKENS (512), ROUNDS
# (5), CPUS (the CPUs this process may use, as a list: default all of them).
set -euo pipefail
cd "$(dirname "$0")/.."
SG="${1:-build/smartgen}"
OUT="${2:-out/cpu_placement}"
MODEL="${MODEL:-out/smollm2-135m-f16.gguf}"
PREFILL_TOKENS="${PREFILL_TOKENS:-512}"
ROUNDS="${ROUNDS:-5}"
mkdir -p "$OUT"
[ -f "$MODEL" ] || "$SG" make-model --preset smollm2-135m --type f16 --seed 1 --out "$MODEL" >/dev/null
read -r -a ALL <<< "$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')"
if [ -n "${CPUS:-}" ]; then read -r -a ALL <<< "$(echo "$CPUS" | tr ',' ' ')"; fi
N=${#ALL[@]}
[ "$N" -ge 2 ] || { echo "cpu_placement.sh: needs at least 2 CPUs, has $N" >&2; exit 2; }
HALF=$((N / 2))
join() { local IFS=,; echo "$*"; }
FIRST="$(join "${ALL[@]:0:HALF}")"
SECOND="$(join "${ALL[@]:HALF:HALF}")"
RAW="$OUT/raw.jsonl"
: > "$RAW"

decode() {  # label, decode engine flags...
  local label="$1"; shift
  "$SG" bench engine -m "$MODEL" --prompt-tokens 1 --decode-tokens 128 --reps 3 --json "$@" 2>/dev/null |
    python3 -c 'import json,sys
j=json.loads(sys.stdin.readline())
print(json.dumps({"layout":sys.argv[1],"round":int(sys.argv[2]),"decode_tok_s":j["decode_tok_s"]}))' "$label" "$r" >> "$RAW"
}

with_prefill() {  # label, prefill flags (quoted string), decode flags...
  local label="$1" pflags="$2"; shift 2
  # shellcheck disable=SC2086
  "$SG" bench engine -m "$MODEL" --prompt-tokens "$PREFILL_TOKENS" --decode-tokens 1 --reps 100000 \
    $pflags > "$OUT/prefill.log" 2>&1 &
  local pid=$!
  sleep 2  # its model loaded and prefilling
  decode "$label" "$@"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

for r in $(seq 1 "$ROUNDS"); do
  layouts=(shared halves placed alone)
  shift_by=$(( (r - 1) % 4 ))
  layouts=("${layouts[@]:shift_by}" "${layouts[@]:0:shift_by}")
  for l in "${layouts[@]}"; do
    echo "[$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] round $r: $l" >&2
    case "$l" in
      shared) with_prefill shared "--threads $N" --threads "$N" ;;
      halves) with_prefill halves "--threads $HALF" --threads "$HALF" ;;
      placed) with_prefill placed "--threads $HALF --cpus $FIRST" --threads "$HALF" --cpus "$SECOND" ;;
      alone) decode alone --threads "$HALF" --cpus "$SECOND" ;;
    esac
  done
done

python3 - "$RAW" "$MODEL" "$PREFILL_TOKENS" "$N" "$FIRST" "$SECOND" <<'EOF'
import json, sys, statistics as st
raw, model, ptok, n, first, second = sys.argv[1:]
rows = [json.loads(l) for l in open(raw)]
by = {}
for x in rows: by.setdefault(x["layout"], {})[x["round"]] = x["decode_tok_s"]
print(f"decode tok/s of {model} (tg128) beside a process prefilling {ptok}-token prompts; "
      f"{n} CPUs, halves {first} | {second}")
print()
print("| layout | decode tok/s, median (rounds min-max) | / shared, per round |")
print("|---|---|---|")
for l in ("shared", "halves", "placed", "alone"):
    v = by.get(l, {})
    if not v: continue
    ratios = [v[r] / by["shared"][r] for r in v if r in by.get("shared", {})]
    rtxt = "%.2f (%.2f-%.2f)" % (st.median(ratios), min(ratios), max(ratios)) if ratios else "-"
    print("| %s | %.1f (%.1f-%.1f) | %s |" % (l, st.median(v.values()), min(v.values()), max(v.values()), rtxt))
EOF
