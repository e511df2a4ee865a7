#!/usr/bin/env bash
# The simulator's figures in docs/RESULTS.md ("A setup like the paper's", "Load study"): runs the
# simulations (deterministic, about 20 s in all), redraws docs/sim_paper_ttst.png and
# docs/sim_load.png and prints the sections' tables to OUT/tables.md (scripts/sim_tables.py).
#   bench/sim_plots.sh [SMARTGEN_BINARY] [OUT_DIR]
# The plots need matplotlib: Debian's python3-matplotlib (scripts/setup.sh installs it), so the
# default interpreter is /usr/bin/python3, not whatever python3 comes first on PATH (PYTHON=...).
set -euo pipefail
cd "$(dirname "$0")/.."
SG="${1:-build/smartgen}"
OUT="${2:-out/sim}"
PYTHON="${PYTHON:-/usr/bin/python3}"
mkdir -p "$OUT"

# The paper-like setup: Llama-3.1-8B and Qwen3-14B, L20 and A10 nodes of 1 and 8 GPUs.
: > "$OUT/paper.jsonl"
for model in llama-3.1-8b qwen3-14b; do
  for hw in a10 l20; do
    for gpus in 1 8; do
      "$SG" simulate --model "$model" --hw "$hw" --gpus "$gpus" --link-gbps 15,25,32 \
        --prompt-tokens 8192,16384,32768,61440 --requests 1,6 --mode colocated,full,layerwise,smartgen \
        --output-tokens 64 --latency-ms 0.05 2>/dev/null >> "$OUT/paper.jsonl"
    done
  done
done

# The load study: Poisson arrivals on one shared 25 Gbit/s link, 1P:1D and 2P:4D, and the
# proactive_rate what-if.
load() {  # prefill nodes, decode nodes, modes, options
  "$SG" simulate --model llama-3.1-8b --hw l20 --gpus 8 --prefill-nodes "$1" --decode-nodes "$2" \
    --topology shared --link-gbps 25 --workload poisson --rate 0.25,0.5,0.75,1,1.25,1.5,2,2.5,3,4 \
    --requests 400 --prompt-tokens 8192 --prompt-max 32768 --output-tokens 64 --mode "$3" \
    --options "$4" --slo-ttft-ms 3000 --slo-ttst-ms 250 --slo-tbt-ms 50 2>/dev/null
}
{
  load 1 1 full,layerwise,smartgen '{}'
  load 2 4 full,layerwise,smartgen '{}'
  load 1 1 smartgen '{"proactive_rate":"share"}'
  load 2 4 smartgen '{"proactive_rate":"share"}'
} > "$OUT/load.jsonl"

"$PYTHON" scripts/plot_sim.py "$OUT/paper.jsonl" docs/sim_paper_ttst.png --x prompt_tokens \
  --facet link_gbps --y result.ttst_ms.mean,result.mean_tbt_ms.mean --logy 1,0 \
  --where model=llama-3.1-8b --where prefill_hw=8xl20 --where requests=1 \
  --title "Llama-3.1-8B, 8xL20 per role, batch 1:"
"$PYTHON" scripts/plot_sim.py "$OUT/load.jsonl" docs/sim_load.png --x rate_per_s --facet decode_nodes \
  --series mode,options.proactive_rate \
  --y result.goodput.requests_per_s,result.ttst_ms.p90,result.links.0.utilisation --logy 0,1,0 \
  --title "Llama-3.1-8B, 8xL20, shared 25 Gbit/s:"
"$PYTHON" scripts/sim_tables.py "$OUT/paper.jsonl" "$OUT/load.jsonl" > "$OUT/tables.md"
echo "data: $OUT/paper.jsonl $OUT/load.jsonl; plots: docs/sim_paper_ttst.png docs/sim_load.png; tables (docs/RESULTS.md): $OUT/tables.md"
