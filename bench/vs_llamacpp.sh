#!/usr/bin/env bash
# smartgen against llama.cpp on the same GGUF files, measured alternately in one run.
#
#   bench/vs_llamacpp.sh LLAMA_CPP_DIR [OUT_DIR]
#
# LLAMA_CPP_DIR is a llama.cpp source tree you provide (this project never vendors or downloads
# it). Its CPU build is made once in LLAMA_CPP_DIR/build-smartgen-bench (Release, -j${JOBS:-1},
# flags LLAMA_CMAKE_ARGS, default -DGGML_NATIVE=ON) and reused. On a CPU with AMX (Sapphire
# Rapids and later) a native build runs ggml's AMX matmul, which crashed (SIGSEGV in
# ggml_backend_amx_mul_mat) on the quantized files in a 2-vCPU VM; there, and to compare like
# for like with smartgen (no AMX), pass e.g.
#   LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON
#     -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX512_VBMI=ON -DGGML_AMX_TILE=OFF" The models are made with `smartgen make-model --seed 1`, then for
# each model every round runs llama-bench and `smartgen bench engine` back to back (the order
# alternates between rounds), so both see the same machine load. Writes OUT_DIR/vs_llamacpp.md
# (markdown ratio tables for docs/RESULTS.md) and the raw JSON lines beside it.
#
# Environment (defaults in brackets):
#   SMARTGEN     the smartgen binary [build/smartgen]
#   LLAMA_BUILD  an existing llama.cpp build directory with bin/llama-bench and
#                bin/llama-batched-bench, used as is [LLAMA_CPP_DIR/build-smartgen-bench]
#   MODELS       preset:type list [smollm2-135m:f32,f16,bf16,q8_0,q4_0,q4_k_m qwen2.5-0.5b:f16,q8_0]
#   PROMPTS      prefill lengths [512,2048,4096]; DECODE decode tokens [128]
#   THREADS [2]  ROUNDS rounds per model [2]
#   BATCHES      batched decode sizes, empty for none [4,16,64]; BATCH_KV their contexts, a list
#                [512,4096] (both sides prefill the context once and give every sequence its own
#                copy: llama-batched-bench -pps without -kvu copies it into each sequence's stream)
# Each side's peak RSS over its single-sequence run (the longest prefill dominates) is measured
# with /usr/bin/time and reported as the `rss_mib` column (MiB) (ours / llama.cpp: lower is better).
#   BATCH_STEPS  decode steps per batched measurement [32]
#   SMARTGEN_ARGS extra flags for bench engine (e.g. --fast-dot)
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
LLAMA_DIR="$(cd "$1" && pwd)"
OUT="${2:-out/vs_llamacpp}"
SMARTGEN="${SMARTGEN:-build/smartgen}"
MODELS="${MODELS:-smollm2-135m:f32,f16,bf16,q8_0,q4_0,q4_k_m qwen2.5-0.5b:f16,q8_0}"
PROMPTS="${PROMPTS:-512,2048,4096}"
DECODE="${DECODE:-128}"
THREADS="${THREADS:-2}"
ROUNDS="${ROUNDS:-2}"
BATCHES="${BATCHES-4,16,64}"
BATCH_KV="${BATCH_KV:-512,4096}"
BATCH_STEPS="${BATCH_STEPS:-32}"
SMARTGEN_ARGS="${SMARTGEN_ARGS:-}"
mkdir -p "$OUT"

# --- llama.cpp: build once -------------------------------------------------------------------
LB="${LLAMA_BUILD:-$LLAMA_DIR/build-smartgen-bench}"
if [ ! -x "$LB/bin/llama-bench" ] || { [ -n "$BATCHES" ] && [ ! -x "$LB/bin/llama-batched-bench" ]; }; then
  echo "building llama.cpp in $LB (CPU only) ..." >&2
  # shellcheck disable=SC2086
  cmake -S "$LLAMA_DIR" -B "$LB" -G Ninja -DCMAKE_BUILD_TYPE=Release ${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=ON} \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >/dev/null
  cmake --build "$LB" -j "${JOBS:-1}" --target llama-bench llama-batched-bench
fi
LLAMA_REV="$(git -C "$LLAMA_DIR" rev-parse --short HEAD 2>/dev/null || echo "source tree")"

RAW="$OUT/raw.jsonl"
: > "$RAW"
log() { echo "[$(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" >&2; }

rss_row() {  # who model-name round: the peak RSS that /usr/bin/time wrote to $OUT/.rss
  python3 -c 'import json,sys
kb=int(open(sys.argv[4]).read().split()[-1])
print(json.dumps({"who":sys.argv[1],"model":sys.argv[2],"round":int(sys.argv[3]),"test":"rss_mib","tok_s":kb/1024}))' "$1" "$2" "$3" "$OUT/.rss" >> "$RAW"
}

run_llama() {  # file model-name round
  /usr/bin/time -f '%M' -o "$OUT/.rss" \
    "$LB/bin/llama-bench" -m "$1" -t "$THREADS" -p "$PROMPTS" -n "$DECODE" -r 1 -o jsonl 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    l=l.strip()
    if not l.startswith("{"): continue
    j=json.loads(l)
    t="tg%d"%j["n_gen"] if j["n_gen"] else "pp%d"%j["n_prompt"]
    print(json.dumps({"who":"llama.cpp","model":sys.argv[1],"round":int(sys.argv[2]),"test":t,"tok_s":j["avg_ts"]}))' "$2" "$3" >> "$RAW"
  rss_row llama.cpp "$2" "$3"
  local kv
  for kv in $(echo "${BATCHES:+$BATCH_KV}" | tr ',' ' '); do
    local ctx=$(( (kv + BATCH_STEPS) * $(echo "$BATCHES" | tr ',' '\n' | sort -n | tail -1) + 64 ))
    "$LB/bin/llama-batched-bench" -m "$1" -t "$THREADS" -c "$ctx" -b 2048 -ub 512 \
      -npp "$kv" -ntg "$BATCH_STEPS" -npl "$BATCHES" -pps --output-format jsonl 2>/dev/null |
      python3 -c 'import json,sys
for l in sys.stdin:
    l=l.strip()
    if not l.startswith("{"): continue
    j=json.loads(l)
    print(json.dumps({"who":"llama.cpp","model":sys.argv[1],"round":int(sys.argv[2]),"test":"b%d@kv%d"%(j["pl"],j["pp"]),"tok_s":j["speed_tg"]}))' "$2" "$3" >> "$RAW"
  done
}

run_ours() {  # file model-name round
  # shellcheck disable=SC2086
  /usr/bin/time -f '%M' -o "$OUT/.rss" \
    "$SMARTGEN" bench engine -m "$1" --threads "$THREADS" --prompt-tokens "$PROMPTS" \
    --decode-tokens "$DECODE" --reps 1 --json $SMARTGEN_ARGS 2>/dev/null |
    python3 -c 'import json,sys
seen=False
for l in sys.stdin:
    j=json.loads(l)
    m,r=sys.argv[1],int(sys.argv[2])
    print(json.dumps({"who":"smartgen","model":m,"round":r,"test":"pp%d"%j["n_prompt"],"tok_s":j["prefill_tok_s"],"rss_mb":j["peak_rss_mb"]}))
    if not seen:
        seen=True
        print(json.dumps({"who":"smartgen","model":m,"round":r,"test":"tg%d"%j["n_decode"],"tok_s":j["decode_tok_s"],"gbs":j["decode_gbs"]}))' "$2" "$3" >> "$RAW"
  rss_row smartgen "$2" "$3"
  if [ -n "$BATCHES" ]; then
    # shellcheck disable=SC2086
    "$SMARTGEN" bench engine -m "$1" --threads "$THREADS" --batch "$BATCHES" --batch-kv "$BATCH_KV" \
      --batch-steps "$BATCH_STEPS" --batch-only --reps 1 --json $SMARTGEN_ARGS 2>/dev/null |
      python3 -c 'import json,sys
for l in sys.stdin:
    j=json.loads(l)
    print(json.dumps({"who":"smartgen","model":sys.argv[1],"round":int(sys.argv[2]),"test":"b%d@kv%d"%(j["batch"],j["kv_len"]),"tok_s":j["decode_tok_s"]["value"]}))' "$2" "$3" >> "$RAW"
  fi
}

START_LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
START="$(date -u +%Y-%m-%dT%H:%M)"
for spec in $MODELS; do
  preset="${spec%%:*}"
  for type in $(echo "${spec#*:}" | tr ',' ' '); do
    f="$OUT/$preset-$type.gguf"
    [ -f "$f" ] || { log "make-model $preset $type"; "$SMARTGEN" make-model --preset "$preset" --type "$type" --seed 1 --out "$f" >/dev/null; }
    name="$preset $type"
    for r in $(seq 1 "$ROUNDS"); do
      python3 -c 'import json,sys
print(json.dumps({"who":"load","model":sys.argv[1],"round":int(sys.argv[2]),"test":"load","tok_s":float(sys.argv[3])}))' \
        "$name" "$r" "$(cut -d' ' -f1 /proc/loadavg)" >> "$RAW"
      if [ $((r % 2)) -eq 1 ]; then
        log "$name round $r: llama.cpp"; run_llama "$f" "$name" "$r"
        log "$name round $r: smartgen"; run_ours "$f" "$name" "$r"
      else
        log "$name round $r: smartgen"; run_ours "$f" "$name" "$r"
        log "$name round $r: llama.cpp"; run_llama "$f" "$name" "$r"
      fi
    done
  done
done
END_LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$RAW" "$OUT/vs_llamacpp.md" "$LLAMA_REV" "$THREADS" "$ROUNDS" "$START" "$START_LOAD" "$END_LOAD" "$SMARTGEN_ARGS" <<'EOF'
import json, sys, statistics as st
raw, out, rev, threads, rounds, start, l0, l1, extra = sys.argv[1:]
rows = [json.loads(l) for l in open(raw)]
models, tests = [], []
val = {}
loads = {}
for r in rows:
    if r["who"] == "load":
        loads.setdefault(r["model"], []).append(r["tok_s"])
        continue
    if r["model"] not in models: models.append(r["model"])
    if r["test"] not in tests: tests.append(r["test"])
    val.setdefault((r["model"], r["test"], r["who"]), []).append(r["tok_s"])
def load_cell(m):
    l = loads.get(m, [])
    return "%.1f-%.1f" % (min(l), max(l)) if l else "-"
def cell(m, t):
    # Each side's median over the rounds, and the median of the per-round ratios (ours / theirs
    # of the same round, measured back to back): on a VM whose bandwidth swings within minutes a
    # round's pair shares its minute, the two medians need not. With 3+ rounds, their range.
    a, b = val.get((m, t, "smartgen")), val.get((m, t, "llama.cpp"))
    if not a or not b: return "-"
    ratios = [x / y for x, y in zip(a, b)]
    spread = "; rounds %.2f-%.2fx" % (min(ratios), max(ratios)) if len(ratios) >= 3 else ""
    return "%.1f / %.1f (%.2fx%s)" % (st.median(a), st.median(b), st.median(ratios), spread)
single = [t for t in tests if not t.startswith("b")]
batched = [t for t in tests if t.startswith("b")]
lines = ["smartgen vs llama.cpp (%s), %s threads, median of %s alternating rounds, %s UTC, "
         "load average %s at the start, %s at the end%s. Cells: ours / llama.cpp tok/s, each the "
         "median over the rounds (median of the per-round ratios; with 3+ rounds their range)."
         % (rev, threads, rounds, start, l0, l1, (", bench engine " + extra) if extra else ""), ""]
for group, title in ((single, "model, weights"), (batched, "model, weights (batched decode: tok/s over all sequences, batch@KV)")):
    if not group: continue
    lines.append("| %s | %s | load (1 min, at each round's start) |" % (title, " | ".join(group)))
    lines.append("|" + "---|" * (len(group) + 2))
    for m in models:
        lines.append("| %s | %s | %s |" % (m, " | ".join(cell(m, t) for t in group), load_cell(m)))
    lines.append("")
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
EOF
