#!/usr/bin/env python3
"""Token index against arrival time, one line per transfer mode, from `smartgen bench ttst`
records (JSONL with `token_ms`): the stall before token 2 and the decode slope both show.

    scripts/plot_tokens.py out/ttst.jsonl out/tokens.png [--n-prompt N] [--ratio R]
"""
import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records")
    ap.add_argument("out")
    ap.add_argument("--n-prompt", type=int, default=None, help="only records of this prompt length")
    ap.add_argument("--ratio", type=float, default=None, help="only records of this target R")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_tokens: matplotlib is missing (apt-get install python3-matplotlib)", file=sys.stderr)
        return 1
    fig, ax = plt.subplots(figsize=(7, 4.5))
    seen = 0
    for line in open(a.records):
        r = json.loads(line)
        if "token_ms" not in r:
            continue
        if a.n_prompt is not None and r.get("n_prompt") != a.n_prompt:
            continue
        if a.ratio is not None and abs(r.get("target_R", 0) - a.ratio) > 1e-6:
            continue
        t = [x / 1e3 for x in r["token_ms"]]
        ax.step(t, range(1, len(t) + 1), where="post",
                label=f'{r["mode"]} (R {r.get("R", 0):.2f}, {r.get("n_prompt")} tokens)')
        seen += 1
    if seen == 0:
        print("plot_tokens: no record has token_ms", file=sys.stderr)
        return 1
    ax.set_xlabel("time since the request was sent (s)")
    ax.set_ylabel("tokens received")
    ax.set_title("Token arrival per transfer mode")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"plot_tokens: wrote {a.out} ({seen} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
