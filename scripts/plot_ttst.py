#!/usr/bin/env python3
"""Plots TTST against the transfer ratio R (or the link rate) per mode, from `smartgen bench
ttst` records (JSONL). Usage: plot_ttst.py records.jsonl out.png"""
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    lengths = sorted({r["n_prompt"] for r in records})
    # The target R (set from the calibrated prefill time) is the stable x; the measured R of
    # each request varies with its own prefill time.
    def ratio(r):
        return r.get("target_R") or r["R"]

    use_r = all(ratio(r) > 0 for r in records if r["mode"] != "colocated")
    fig, axes = plt.subplots(1, len(lengths), figsize=(6 * len(lengths), 4.5), squeeze=False)
    for ax, n in zip(axes[0], lengths):
        series = defaultdict(list)
        for r in records:
            if r["n_prompt"] != n:
                continue
            x = ratio(r) if use_r else r["link_gbps"]
            series[r["mode"]].append((x, r["ttst_ms"]))
        for mode, pts in sorted(series.items()):
            # Mean over repetitions at the same x.
            by_x = defaultdict(list)
            for x, y in pts:
                by_x[x].append(y)
            xs = sorted(by_x)
            ys = [sum(by_x[x]) / len(by_x[x]) for x in xs]
            ax.plot(xs, ys, marker="o", label=mode)
        ax.set_xlabel("transfer ratio R (full-KV link time / prefill time)" if use_r else "link rate (Gbit/s)")
        ax.set_ylabel("TTST (ms)")
        ax.set_yscale("log")
        ax.set_title(f"{n}-token prompt")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
