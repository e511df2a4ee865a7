#!/usr/bin/env python3
"""Plots `smartgen simulate --out` JSON lines: one line per mode (or --series key), a metric
against a swept setting, one panel per value of --facet.

  plot_sim.py sweep.jsonl out.png --x prompt_tokens --y result.ttst_ms.mean --facet link_gbps
  plot_sim.py load.jsonl load.png --x rate_per_s --y result.goodput.requests_per_s \
      --facet decode_nodes --logy 0

--y takes a dotted path into a record (list items by index: result.links.0.utilisation);
several comma-separated paths draw one panel row each. --series mode,options.proactive_rate
names lines by several keys.
--where key=value keeps only matching records (repeatable)."""
import argparse
import json
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def get(record, path):
    v = record
    for part in path.split("."):
        if isinstance(v, list) and part.isdigit() and int(part) < len(v):
            v = v[int(part)]
        elif isinstance(v, dict) and part in v:
            v = v[part]
        else:
            return None
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("records")
    ap.add_argument("png")
    ap.add_argument("--x", default="prompt_tokens")
    ap.add_argument("--y", default="result.ttst_ms.mean")
    ap.add_argument("--series", default="mode", help="key(s), comma-separated, naming a line")
    ap.add_argument("--facet", default=None)
    ap.add_argument("--where", action="append", default=[])
    ap.add_argument("--logy", default="1", help="1/0, or one per --y path: 0,1,0")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    records = [json.loads(line) for line in open(a.records) if line.strip()]
    for cond in a.where:
        k, v = cond.split("=", 1)
        records = [r for r in records if str(get(r, k)) == v]
    facets = sorted({get(r, a.facet) for r in records}) if a.facet else [None]
    ys = a.y.split(",")
    logy = [int(x) for x in a.logy.split(",")]
    logy += [logy[-1]] * (len(ys) - len(logy))
    fig, axes = plt.subplots(len(ys), len(facets), figsize=(5 * len(facets), 3.8 * len(ys)),
                             squeeze=False)
    for row, ypath in enumerate(ys):
        for col, f in enumerate(facets):
            ax = axes[row][col]
            series = defaultdict(list)
            for r in records:
                if a.facet and get(r, a.facet) != f:
                    continue
                x, y = get(r, a.x), get(r, ypath)
                if x is None or y is None:
                    continue
                series["/".join(str(get(r, k)) for k in a.series.split(","))].append((x, y))
            for name, pts in sorted(series.items(), key=lambda kv: str(kv[0])):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=str(name))
            ax.set_xlabel(a.x)
            ax.set_ylabel(ypath)
            if logy[row]:
                ax.set_yscale("log")
            ax.grid(True, alpha=0.3)
            ax.set_title(f"{a.title} {a.facet}={f}" if a.facet else a.title)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)


if __name__ == "__main__":
    main()
