#!/usr/bin/env python3
"""The figures behind the simulator's GPU presets (src/sim/hardware.cc), measured on the GPU at hand.

Needs PyTorch with CUDA (not a project dependency: run it where a GPU machine is lent).
  python3 bench/gpu_presets.py [out.json]   # OUT=dir also works; SMALL=1: a CPU dry run;
                                            # PARTS=copy,decode,prefill,subset: some parts only

Four parts, each timed with device events (median of the repetitions, after warm-ups), on
random bf16 data:
  copy      device-to-device copy of 4 GiB: the bandwidth ceiling (bytes read + written).
  prefill   the linear layers of Llama-3.1-8B and Qwen3-14B as GEMMs at 2K-32K tokens, and
            causal attention (SDPA: FlashAttention, and cuDNN's where it runs) at 4K-32K: FLOP/s over the sum, the
            preset's compute efficiency.
  decode    one decode step's weight products over 8 distinct layers (batch 1-16), eagerly and
            replayed from a CUDA graph: weight bytes / time, the preset's memory efficiency, and
            the per-layer launch overhead (eager - graph).
  subset    decode attention over a subset of 16-token KV blocks of a 32K context (Llama-3.1-8B
            layer: 32 query heads over 8 KV heads): dense FlashAttention, gather-then-attend, and
            FlexAttention with a block mask, and a split-K paged decode kernel over a block
            table (Triton, in this file: vLLM's paged attention reduced to its core); each checked against a float64 reference, timed
            eagerly and replayed from a CUDA graph (the figure: what the kernels take).
Every part runs alone (an error is recorded, the rest go on). The summary table is printed last.
"""
import json
import math
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

SMALL = os.environ.get("SMALL") == "1"
DEV = "cpu" if SMALL else "cuda"
BF16 = torch.bfloat16
T0 = time.time()
BUDGET_S = float(os.environ.get("BUDGET_S", "300"))  # parts after this are skipped

# name: (hidden, q heads, kv heads, head dim, ffn)
MODELS = {"llama-3.1-8b": (4096, 32, 8, 128, 14336), "qwen3-14b": (5120, 40, 8, 128, 17408)}
if SMALL:
    MODELS = {"tiny": (256, 4, 2, 64, 512)}


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def timed(fn, warmup=3, reps=20):
    """Median seconds of fn() over reps runs."""
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(reps):
        if DEV == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        else:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def timed_graph(fn, reps=20):
    """Median seconds of fn() replayed from a CUDA graph (no host-side launch cost); on the CPU
    dry run, timed(fn)."""
    if DEV != "cuda":
        return timed(fn, reps=reps)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return timed(g.replay, reps=reps)


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    if not torch.isfinite(out).all():
        return float("nan")
    return ((out - ref).norm() / ref.norm()).item()


def part_copy(r):
    n = (1 << 16) if SMALL else (2 << 30)  # bf16 elements: 4 GiB
    a = torch.randn(n, device=DEV, dtype=BF16)
    b = torch.empty_like(a)
    t = timed(lambda: b.copy_(a))
    assert torch.equal(a[:1024], b[:1024])
    r["copy_gbs"] = 2 * a.numel() * 2 / t / 1e9


def linear_shapes(hidden, hq, hkv, d, ffn):
    """(in, out) of one layer's weight products: qkv, o, gate+up, down."""
    return [(hidden, (hq + 2 * hkv) * d), (hq * d, hidden), (hidden, 2 * ffn), (ffn, hidden)]


def flash_or_default(attend, notes, backend="FLASH_ATTENTION"):
    """attend() under the SDPA backend named (FlashAttention by default) when it runs there,
    else as is (noted)."""
    if SMALL:
        return attend
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def run():
            with sdpa_kernel(getattr(SDPBackend, backend)):
                return attend()

        run()
        return run
    except Exception as e:  # noqa: BLE001 - record which backend ran
        notes[f"attention_{backend.lower()}_note"] = f"not forced: {type(e).__name__}: {e}"[:300]
        return attend


def causal_err(out_head, q, k, v):
    """rel_err of causal attention's first rows against float64 (the first query heads only)."""
    rows, h = out_head.shape[2], 2
    qs, ks, vs = (x[:, :h, :rows].double() for x in (q, k, v))
    s = qs @ ks.transpose(-1, -2) / math.sqrt(q.shape[-1])
    s = s.masked_fill(torch.ones(rows, rows, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return rel_err(out_head[:, :h], torch.softmax(s, -1) @ vs)


def part_prefill(r):
    out = {}
    tokens = [256] if SMALL else [2048, 8192, 32768]
    for name, (hidden, hq, hkv, d, ffn) in MODELS.items():
        m = {}
        ws = [torch.randn(o, i, device=DEV, dtype=BF16) / math.sqrt(i) for i, o in linear_shapes(hidden, hq, hkv, d, ffn)]
        for n in tokens:
            flops, secs = 0.0, 0.0
            for w in ws:
                x = torch.randn(n, w.shape[1], device=DEV, dtype=BF16)
                secs += timed(lambda: F.linear(x, w), reps=10)
                flops += 2.0 * n * w.shape[0] * w.shape[1]
                del x
            m[f"linear_{n}_tflops"] = flops / secs / 1e12
        for n in ([128] if SMALL else [4096, 16384, 32768, 65536]):
            q = torch.randn(1, hq, n, d, device=DEV, dtype=BF16)
            k = torch.randn(1, hq, n, d, device=DEV, dtype=BF16)  # GQA expanded: same FLOPs
            v = torch.randn(1, hq, n, d, device=DEV, dtype=BF16)
            attend = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
            for backend, tag in [("FLASH_ATTENTION", ""), ("CUDNN_ATTENTION", "_cudnn")]:
                if SMALL and tag:
                    continue
                notes = {}
                run = flash_or_default(attend, notes, backend)
                if notes:  # the backend refused: the default's figure would be a duplicate
                    m.update(notes)
                    continue
                if tag:  # against a float64 reference on a 1/16 slice of the queries
                    m[f"attention_{n}{tag}_err"] = causal_err(run()[:, :, : n // 16], q, k, v)
                t = timed(run, reps=5)
                m[f"attention_{n}{tag}_tflops"] = 4.0 * hq * d * n * (n + 1) / 2 / t / 1e12
            del q, k, v
        out[name] = m
        del ws
    r["prefill"] = out


def part_decode(r):
    out = {}
    layers = 2 if SMALL else 8
    for name, (hidden, hq, hkv, d, ffn) in MODELS.items():
        shapes = linear_shapes(hidden, hq, hkv, d, ffn)
        ws = [[torch.randn(o, i, device=DEV, dtype=BF16) / math.sqrt(i) for i, o in shapes] for _ in range(layers)]
        wbytes = sum(w.numel() * 2 for layer in ws for w in layer)
        m = {"weight_bytes": wbytes}
        for b in [1, 4, 16]:
            xs = [torch.randn(b, i, device=DEV, dtype=BF16) for i, _ in shapes]
            outs = [torch.empty(b, o, device=DEV, dtype=BF16) for _, o in shapes]

            def step():
                for layer in ws:
                    for x, w, y in zip(xs, layer, outs):
                        torch.matmul(x, w.t(), out=y)

            t_eager = timed(step)
            m[f"b{b}_eager_gbs"] = wbytes / t_eager / 1e9
            if DEV == "cuda":
                t_graph = timed_graph(step)
                m[f"b{b}_graph_gbs"] = wbytes / t_graph / 1e9
                m[f"b{b}_layer_overhead_us"] = (t_eager - t_graph) / layers * 1e6
            ref = xs[0].double() @ ws[-1][0].double().t()
            m[f"b{b}_err"] = rel_err(outs[0], ref)
        out[name] = m
        del ws
    r["decode"] = out


def part_subset(r):
    """Decode attention over selected 16-token blocks of a long context, one layer."""
    hidden, hq, hkv, d, _ = MODELS["tiny" if SMALL else "llama-3.1-8b"]
    ctx = 1024 if SMALL else 32768
    bt = 16
    nblocks = ctx // bt
    group = hq // hkv
    out = {"context": ctx, "block_tokens": bt}
    gen = torch.Generator(device="cpu").manual_seed(7)
    for batch in [1, 6]:
        # Paged layout as vLLM keeps it: [blocks, block tokens, kv heads, dim].
        kc = torch.randn(batch * nblocks, bt, hkv, d, device=DEV, dtype=BF16)
        vc = torch.randn(batch * nblocks, bt, hkv, d, device=DEV, dtype=BF16)
        q = torch.randn(batch, hq, 1, d, device=DEV, dtype=BF16)
        # Contiguous per-sequence view for dense attention: [batch, kv heads, ctx, dim].
        kd = kc.view(batch, nblocks * bt, hkv, d).transpose(1, 2).contiguous()
        vd = vc.view(batch, nblocks * bt, hkv, d).transpose(1, 2).contiguous()
        qg = q.view(batch, hkv, group, d)  # GQA: a KV head's query heads as query rows
        dense = flash_or_default(lambda: F.scaled_dot_product_attention(qg, kd, vd), out)
        t = timed(dense)
        out[f"b{batch}_dense_eager_us"] = t * 1e6
        t = timed_graph(dense)
        out[f"b{batch}_dense_us"] = t * 1e6
        out[f"b{batch}_dense_gbs"] = 2 * batch * ctx * hkv * d * 2 / t / 1e9
        # Selections of 16-token blocks, scattered one by one (g16) or in runs of 8 (g128: the
        # granularity FlexAttention's kernels tile by).
        for gran in [16, 128]:
            flex_for = flex_runner(batch, hkv, group, ctx, gran, d)
            for frac in [1.0, 0.5, 0.25, 0.125, 0.0625]:
                nsel = max(1, int(ctx // gran * frac))
                runs = torch.stack([torch.randperm(ctx // gran, generator=gen)[:nsel].sort().values
                                    for _ in range(batch)])
                per = gran // bt
                sel = (runs.unsqueeze(-1) * per + torch.arange(per)).flatten(1)  # 16-token blocks
                measure_subset(out, f"b{batch}_g{gran}_f{frac}", kc, vc, kd, vd, qg, sel, runs, flex_for)
        del kc, vc, kd, vd
    r["subset"] = out


def measure_subset(out, key, kc, vc, kd, vd, qg, sel, runs, flex_for):
    """Gather-then-attend and FlexAttention over the 16-token blocks `sel` ([batch, n]) of each
    sequence; `runs`: the same selection at the flex mask's granularity."""
    batch, hkv, group, d = qg.shape
    nblocks, bt = kc.shape[0] // batch, kc.shape[1]
    nsel = sel.shape[1]
    idx = (sel + torch.arange(batch).unsqueeze(1) * nblocks).to(DEV).flatten()
    sel_bytes = 2 * batch * nsel * bt * hkv * d * 2

    def gather():
        ks = kc[idx].view(batch, nsel * bt, hkv, d).transpose(1, 2)
        vs = vc[idx].view(batch, nsel * bt, hkv, d).transpose(1, 2)
        return F.scaled_dot_product_attention(qg, ks, vs)

    ref_k = kc[idx].double().view(batch, nsel * bt, hkv, d).transpose(1, 2)
    ref_v = vc[idx].double().view(batch, nsel * bt, hkv, d).transpose(1, 2)
    ref = torch.softmax(qg.double() @ ref_k.transpose(-1, -2) / math.sqrt(d), -1) @ ref_v
    out[f"{key}_gather_err"] = rel_err(gather(), ref)
    t = timed_graph(gather)
    out[f"{key}_gather_us"] = t * 1e6
    out[f"{key}_gather_gbs"] = sel_bytes / t / 1e9
    if not SMALL:
        try:
            table = idx.view(batch, nsel).to(torch.int32)
            attend = lambda: paged_decode(qg, kc, vc, table)
            out[f"{key}_paged_err"] = rel_err(attend(), ref)
            t = timed_graph(attend)
            out[f"{key}_paged_us"] = t * 1e6
            out[f"{key}_paged_gbs"] = sel_bytes / t / 1e9
        except Exception as e:  # noqa: BLE001
            out[f"{key}_paged_note"] = f"{type(e).__name__}: {e}"[:400]
    if isinstance(flex_for, str):
        out[f"{key}_flex_note"] = flex_for
        return
    try:
        flex = flex_for(runs)
        out[f"{key}_flex_err"] = rel_err(flex(qg, kd, vd), ref)
        t = timed(lambda: flex(qg, kd, vd))
        out[f"{key}_flex_eager_us"] = t * 1e6
        t = timed_graph(lambda: flex(qg, kd, vd))
        out[f"{key}_flex_us"] = t * 1e6
        out[f"{key}_flex_gbs"] = sel_bytes / t / 1e9
    except Exception as e:  # noqa: BLE001
        out[f"{key}_flex_note"] = f"{type(e).__name__}: {e}"[:300]


_PAGED = []


def paged_kernel():
    """A split-K paged decode-attention kernel over a block table (Triton), built on first use:
    one program per (sequence, KV head, split of the table), NB blocks per step, online softmax;
    the splits' partial results are merged by their log-sum-exp in paged_decode."""
    if _PAGED:
        return _PAGED[0]
    global triton, tl  # the kernel's source resolves tl through the module's globals
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(q_ptr, kc_ptr, vc_ptr, table_ptr, o_ptr, m_ptr, l_ptr, nsel, per_split, scale,
               HKV: tl.constexpr, GROUP: tl.constexpr, GPAD: tl.constexpr, BT: tl.constexpr,
               D: tl.constexpr, NB: tl.constexpr):
        bh = tl.program_id(0)
        split = tl.program_id(1)
        nsplit = tl.num_programs(1)
        b = bh // HKV
        h = bh % HKV
        g = tl.arange(0, GPAD)
        dd = tl.arange(0, D)
        rr = tl.arange(0, NB * BT)
        q = tl.load(q_ptr + (bh * GROUP + g)[:, None] * D + dd[None, :], mask=(g < GROUP)[:, None], other=0.0)
        m_i = tl.full([GPAD], float("-inf"), tl.float32)
        l_i = tl.zeros([GPAD], tl.float32)
        acc = tl.zeros([GPAD, D], tl.float32)
        start = split * per_split
        end = tl.minimum(start + per_split, nsel)
        for j in range(start, end, NB):
            pos = j + rr // BT
            valid = pos < end
            blk = tl.load(table_ptr + b * nsel + pos, mask=valid, other=0).to(tl.int64)
            off = blk[:, None] * (BT * HKV * D) + ((rr % BT) * (HKV * D) + h * D)[:, None] + dd[None, :]
            k = tl.load(kc_ptr + off, mask=valid[:, None], other=0.0)
            v = tl.load(vc_ptr + off, mask=valid[:, None], other=0.0)
            sc = tl.dot(q, tl.trans(k)) * scale
            sc = tl.where(valid[None, :], sc, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(sc, 1))
            alpha = tl.exp(m_i - m_new)
            pr = tl.exp(sc - m_new[:, None])
            l_i = l_i * alpha + tl.sum(pr, 1)
            acc = acc * alpha[:, None] + tl.dot(pr.to(v.dtype), v)
            m_i = m_new
        row = (bh * nsplit + split) * GPAD + g
        tl.store(o_ptr + row[:, None] * D + dd[None, :], acc)
        tl.store(m_ptr + row, m_i)
        tl.store(l_ptr + row, l_i)

    _PAGED.append(kernel)
    return kernel


def paged_decode(qg, kc, vc, table, nb=4):
    """Attention of qg ([batch, kv heads, group, d]) over the blocks `table` ([batch, n] int32
    block ids into kc / vc, [blocks, block tokens, kv heads, d])."""
    batch, hkv, group, d = qg.shape
    bt, nsel = kc.shape[1], table.shape[1]
    gpad = 16
    steps = (nsel + nb - 1) // nb
    nsplit = max(1, min(steps, (4 * 132 + batch * hkv - 1) // (batch * hkv)))
    per_split = ((steps + nsplit - 1) // nsplit) * nb
    nsplit = (nsel + per_split - 1) // per_split
    rows = batch * hkv * nsplit * gpad
    o = torch.empty(rows, d, device=DEV, dtype=torch.float32)
    m = torch.empty(rows, device=DEV, dtype=torch.float32)
    l = torch.empty(rows, device=DEV, dtype=torch.float32)
    paged_kernel()[(batch * hkv, nsplit)](qg.contiguous(), kc, vc, table, o, m, l, nsel, per_split,
                                          1.0 / math.sqrt(d), HKV=hkv, GROUP=group, GPAD=gpad, BT=bt,
                                          D=d, NB=nb)
    o = o.view(batch, hkv, nsplit, gpad, d)[..., :group, :]
    m = m.view(batch, hkv, nsplit, gpad)[..., :group]
    l = l.view(batch, hkv, nsplit, gpad)[..., :group]
    w = torch.exp(m - m.amax(2, keepdim=True))
    return ((o * w.unsqueeze(-1)).sum(2) / (l * w).sum(2).unsqueeze(-1)).to(qg.dtype)


def flex_runner(batch, hkv, group, ctx, bt, d):
    """A function (selected bt-token blocks -> attend(q, k, v)) running FlexAttention with a
    block mask of bt-token blocks, or a note why not. One mask buffer per batch size, refilled in place, so the compiled kernel is
    reused across selections."""
    if SMALL:
        return "skipped on the CPU dry run"
    if time.time() - T0 > BUDGET_S:
        return "skipped: over the time budget"
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except Exception as e:  # noqa: BLE001
        return f"no flex_attention: {e}"
    compiled = torch.compile(flex_attention, dynamic=False)
    keep = torch.zeros(batch, ctx // bt, dtype=torch.bool, device=DEV)

    def mask_mod(b, h, q_idx, kv_idx):
        return keep[b, kv_idx // bt]

    def for_selection(sel):
        keep.zero_()
        keep.scatter_(1, sel.to(DEV), True)
        bm = create_block_mask(mask_mod, batch, None, 1, ctx, device=DEV, BLOCK_SIZE=bt)
        # q: [batch, kv heads, group, d] viewed back as [batch, q heads, 1, d] (GQA).
        return lambda q, k, v: compiled(q.reshape(batch, hkv * group, 1, d), k, v, block_mask=bm,
                                        enable_gqa=True).reshape(batch, hkv, group, d)

    return for_selection


def main():
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("OUT", "."), "gpu_presets.json")
    r = {"torch": torch.__version__, "small": SMALL}
    if DEV == "cuda":
        p = torch.cuda.get_device_properties(0)
        r.update(device=p.name, sms=p.multi_processor_count, memory_gb=p.total_memory / 1e9)
    parts = [part_copy, part_decode, part_prefill, part_subset]
    if os.environ.get("PARTS"):  # e.g. PARTS=prefill,subset
        parts = [p for p in parts if p.__name__[5:] in os.environ["PARTS"].split(",")]
    for part in parts:
        t = time.time()
        try:
            part(r)
        except Exception:  # noqa: BLE001 - record it, run the next part
            r[f"{part.__name__}_error"] = traceback.format_exc()[-2000:]
        r[f"{part.__name__}_s"] = time.time() - t
        if DEV == "cuda":
            torch.cuda.empty_cache()
        with open(dest, "w") as f:
            json.dump(r, f, indent=1)
        print(f"{part.__name__}: {time.time() - t:.1f} s", flush=True)
    summary(r)


def summary(r):
    """The figures the presets take, one per line."""
    print("== summary ==")
    print(f"device {r.get('device', 'cpu')}, torch {r['torch']}")
    print(f"copy {r.get('copy_gbs', 0):.0f} GB/s (read + written)")
    for name, m in r.get("decode", {}).items():
        print(name, "decode GB/s:", " ".join(f"{k}={v:.0f}" for k, v in m.items() if k.endswith("gbs")),
              "| overhead us/layer:", " ".join(f"{v:.1f}" for k, v in m.items() if k.endswith("overhead_us")))
    for name, m in r.get("prefill", {}).items():
        print(name, "prefill TFLOP/s:", " ".join(f"{k}={v:.0f}" for k, v in m.items() if k.endswith("tflops")))
    sub = r.get("subset", {})
    for k, v in sub.items():
        if k.endswith("_us") and not k.endswith("eager_us"):
            print(f"subset {k} {v:.1f} us, {sub.get(k[:-3] + '_gbs', 0):.0f} GB/s, err {sub.get(k[:-3] + '_err', 0):.1e}")
        elif k.endswith("_note"):
            print(f"subset {k}: {v}")
    for k, v in r.items():
        if k.endswith("_error"):
            print(f"{k}: {v[-600:]}")


if __name__ == "__main__":
    main()
