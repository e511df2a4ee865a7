#!/usr/bin/env python3
"""Markdown tables from `smartgen bench ttst` records (JSONL): per prompt length and transfer
ratio, TTFT / TTST / TBT / e2e / bytes per mode, TTST as a ratio of layerwise's, time to exact
against layerwise's transfer completion, and the full-KV link time in decode steps.
Usage: summarize_ttst.py records.jsonl"""
import json
import sys
from collections import defaultdict
from statistics import median


def main():
    records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    groups = defaultdict(lambda: defaultdict(list))
    for r in records:
        key = (r["n_prompt"], round(r.get("target_R") or r["R"], 3), r["link_gbps"])
        groups[key][r["mode"]].append(r)

    def med(rs, field):
        vals = [x.get(field) for x in rs if x.get(field) is not None]
        return median(vals) if vals else None

    print("| prompt | R | link Mbit/s | full-KV link time (decode steps) | mode | TTFT ms | TTST ms | "
          "TTST / layerwise | mean TBT ms | e2e ms | KV bytes / full | time to exact ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (n, ratio, gbps), modes in sorted(groups.items()):
        lw = med(modes.get("layerwise", []), "ttst_ms")
        colo_tbt = med(modes.get("colocated", []), "tbt_ms")
        any_rec = next(iter(modes.values()))[0]
        link_ms = any_rec.get("full_kv_link_ms", 0)
        steps = f"{link_ms / colo_tbt:.0f}" if colo_tbt else "-"
        for mode in ["colocated", "full", "layerwise", "smartgen", "auto"]:
            rs = modes.get(mode)
            if not rs:
                continue
            ttst = med(rs, "ttst_ms")
            rel = f"{ttst / lw:.3f}" if lw and ttst is not None else "-"
            kv = any_rec.get("kv_bytes") or 0
            sent = med(rs, "bytes_transferred") or 0
            exact = med(rs, "time_to_exact_ms")
            print(f"| {n} | {ratio:g} | {gbps * 1000:.1f} | {steps} | {mode} | {med(rs, 'ttft_ms'):.0f} | "
                  f"{ttst:.0f} | {rel} | {med(rs, 'tbt_ms'):.1f} | {med(rs, 'e2e_ms'):.0f} | "
                  f"{sent / kv if kv else 0:.3f} | {exact:.0f} |" if exact is not None else
                  f"| {n} | {ratio:g} | {gbps * 1000:.1f} | {steps} | {mode} | {med(rs, 'ttft_ms'):.0f} | "
                  f"{ttst:.0f} | {rel} | {med(rs, 'tbt_ms'):.1f} | {med(rs, 'e2e_ms'):.0f} | "
                  f"{sent / kv if kv else 0:.3f} | - |")


if __name__ == "__main__":
    main()
