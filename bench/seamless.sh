#!/usr/bin/env bash
# Seamless SmartGen on trained weights (issue 15): accuracy, TTST and TBT of every mode from the
# same requests, through a real local deployment (`smartgen bench ttst`), plus the ablation
# (each new mechanism off in turn) and the accuracy-against-wait-bound curves.
#   bench/seamless.sh [SMARTGEN_BINARY] [OUT_DIR]
# Needs ../shared/models (kv-retrieval-tiny.gguf, stories260K.gguf). Takes about 15 minutes
# on 2 cores. Writes OUT_DIR/*.jsonl and prints each run's table.
set -euo pipefail
cd "$(dirname "$0")/.."
SG="${1:-build/smartgen}"
OUT="${2:-out/seamless}"
MODELS="${SMARTGEN_MODELS:-../shared/models}"
mkdir -p "$OUT"
# The main points use --ratio 4 (the link rate from a calibration prefill, which a loaded
# machine makes slow); the ablation and the curves use one fixed rate per model, about R = 4 at
# this machine's quiet prefill speed, so their rows compare with each other (96 and 10.5 Mbit/s:
# R = 4 in the quiet 2026-12-01 18:34 main runs; 30 and 3 Mbit/s before the engine's prefill
# got faster, now R of about 13).
RETRIEVAL_LINK="${RETRIEVAL_LINK:---link-gbps 0.096}"
STORIES_LINK="${STORIES_LINK:---link-gbps 0.0105}"
retrieval() {  # name, prompts, lengths, modes, options, link
  echo "== retrieval $1 ($2 prompts, ${3} tokens, options $5, ${6:---ratio 4})"
  # shellcheck disable=SC2086
  "$SG" bench ttst -m "$MODELS/kv-retrieval-tiny.gguf" --prompt-set retrieval --prompts "$2" \
    --prompt-tokens "$3" ${6:---ratio 4} --output-tokens 16 --modes "$4" --options "$5" --plot "" \
    --data "$OUT/retrieval_$1.jsonl" 2>/dev/null
}
stories() {  # name, modes, options, link
  echo "== stories $1 (options $3, ${4:---ratio 4})"
  # shellcheck disable=SC2086
  "$SG" bench ttst -m "$MODELS/stories260K.gguf" --prompt-set tests/data/stories260k_prompts.jsonl \
    ${4:---ratio 4} --output-tokens 64 --modes "$2" --options "$3" --plot "" \
    --data "$OUT/stories_$1.jsonl" 2>/dev/null
}
[ "${SKIP_MAIN:-0}" = "1" ] || {
# Items 2 and 3: every mode, 200 retrieval prompts at 1K and 2K (2032 + 16 output = the model's
# 2048 context), the 24 story prompts.
retrieval main 200 1024,2032 colocated,layerwise,smartgen '{}'
stories main colocated,layerwise,smartgen '{}'
}
# Item 4: the ablation, one mechanism off at a time (retrieval 1K, 100 prompts; stories), and
# int8 on the wire on.
for name_opt in 'default|{}' 'no_first_step|{"first_step": false}' 'no_attend_present|{"attend_present": false}' \
                'no_wait_bound|{"wait_bound_ms": 1e6}' 'no_hysteresis|{"hysteresis": 0}' \
                'no_on_demand|{"on_demand": false}' 'no_speculative|{"speculative": false}' \
                'int8_wire|{"int8_wire": true}'; do
  name="${name_opt%%|*}"
  opt="${name_opt#*|}"
  retrieval "$name" 100 1024 colocated,smartgen "$opt" "$RETRIEVAL_LINK"
  stories "$name" colocated,smartgen "$opt" "$STORIES_LINK"
done
# The curves: accuracy against the first step's wait (retrieval, where step 2 decides) and
# against the per-step wait bound (stories, where every step counts).
for w in 0 5 8 15 30; do
  retrieval "first_wait_$w" 100 1024 colocated,smartgen "{\"first_wait_ms\": $w}" "$RETRIEVAL_LINK"
done
for b in 0 0.5 2 8; do
  stories "wait_$b" colocated,smartgen "{\"wait_bound_ms\": $b}" "$STORIES_LINK"
done
