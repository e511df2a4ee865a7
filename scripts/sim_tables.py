#!/usr/bin/env python3
"""The simulator's tables in docs/RESULTS.md ("A setup like the paper's", "Load study"), printed
as Markdown from the JSON lines bench/sim_plots.sh writes:

    scripts/sim_tables.py out/sim/paper.jsonl out/sim/load.jsonl
"""
import json
import sys

NODES = ["a10", "8xa10", "l20", "8xl20"]
PROMPTS = [8192, 16384, 32768, 61440]
LINKS = [15.0, 25.0, 32.0]
RATES = [0.5, 1.0, 1.5, 2.0, 2.5]


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def stat(record, key, field="mean"):
    value = record["result"].get(key)
    return value.get(field) if isinstance(value, dict) else value


def paper_tables(records):
    by = {(r["model"], r["decode_hw"], r["link_gbps"], r["prompt_tokens"], r["requests"], r["mode"]): r
          for r in records}
    models = sorted({r["model"] for r in records})

    def ttst(model, node, link, prompt, batch, mode):
        r = by.get((model, node, link, prompt, batch, mode))
        return "-" if r is None else "%.0f" % stat(r, "ttst_ms")

    print("Batch 1, TTST in ms (R / full / layerwise / smartgen):\n")
    print("| model | node | prompt | 15 Gbit/s: R / full / layerwise / smartgen TTST ms | 25 Gbit/s | 32 Gbit/s |")
    print("|---|---|---|---|---|---|")
    for model in models:
        for node in NODES:
            for prompt in PROMPTS:
                cells = []
                for link in LINKS:
                    full = by.get((model, node, link, prompt, 1, "full"))
                    if full is None:
                        cells.append("-")
                        continue
                    ratio = full["full_kv_bytes"] * 8 / (link * 1e9) / full["prefill_s_estimate"]
                    cells.append("%.2f / %s" % (ratio, " / ".join(
                        ttst(model, node, link, prompt, 1, m) for m in ("full", "layerwise", "smartgen"))))
                print("| %s | %s | %d | %s |" % (model, node, prompt, " | ".join(cells)))

    print("\n25 Gbit/s, batches of 1 and 6: TTST (mean over the batch) and mean TBT against colocated:\n")
    print("| model | node | prompt | batch | TTST ms full / layerwise / smartgen / colocated "
          "| mean TBT ms colocated / layerwise / smartgen | smartgen TBT / colocated |")
    print("|---|---|---|---|---|---|---|")
    for model in models:
        for node in NODES:
            for prompt in (8192, 61440):
                for batch in (1, 6):
                    row = {m: by.get((model, node, 25.0, prompt, batch, m))
                           for m in ("full", "layerwise", "smartgen", "colocated")}
                    if any(v is None for v in row.values()):
                        continue
                    tbt = {m: stat(row[m], "mean_tbt_ms") for m in ("colocated", "layerwise", "smartgen")}
                    print("| %s | %s | %d | %d | %s | %s | %.2f |" % (
                        model, node, prompt, batch,
                        " / ".join("%.0f" % stat(row[m], "ttst_ms") for m in ("full", "layerwise", "smartgen", "colocated")),
                        " / ".join("%.1f" % tbt[m] for m in ("colocated", "layerwise", "smartgen")),
                        tbt["smartgen"] / tbt["colocated"]))


def load_table(records):
    print("| cluster | mode | goodput at %s req/s | peak goodput | link utilisation at 1.0 / 2.0 req/s "
          "| TTST p90 at 1.0 / 2.0 req/s | bytes / full at 1.0 / 2.0 req/s |" % " / ".join("%g" % r for r in RATES))
    print("|---|---|---|---|---|---|---|")
    series = {}
    for r in records:
        what_if = r["options"].get("proactive_rate", "configured") != "configured"
        key = ("%dP:%dD" % (r["prefill_nodes"], r["decode_nodes"]), r["mode"], what_if)
        series.setdefault(key, {})[r["rate_per_s"]] = r
    for (cluster, mode, what_if), points in sorted(series.items(), key=lambda kv: (kv[0][0], kv[0][2])):
        def at(rate, fn, fmt):
            r = points.get(rate)
            return "-" if r is None else fmt % fn(r)
        good = lambda r: r["result"]["goodput"]["requests_per_s"]
        peak_rate = max(points, key=lambda rate: good(points[rate]))
        label = mode + (', `{"proactive_rate":"share"}` (what-if)' if what_if else "")
        print("| %s | %s | %s | %.2f at %g | %s | %s | %s |" % (
            cluster, label,
            " / ".join(at(rate, good, "%.2f") for rate in RATES),
            good(points[peak_rate]), peak_rate,
            " / ".join(at(rate, lambda r: r["result"]["links"][0]["utilisation"], "%.2f") for rate in (1.0, 2.0)),
            " / ".join(at(rate, lambda r: stat(r, "ttst_ms", "p90"), "%.0f") for rate in (1.0, 2.0)) + " ms",
            " / ".join(at(rate, lambda r: stat(r, "bytes_over_full"), "%.2f") for rate in (1.0, 2.0))))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    paper_tables(read(sys.argv[1]))
    print()
    load_table(read(sys.argv[2]))


if __name__ == "__main__":
    main()
