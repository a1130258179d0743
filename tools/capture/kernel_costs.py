#!/usr/bin/env python3
"""Kernel costs of LLM decode and prefill on the GPU at hand (issue 20),
as data for fp8lab's cost experiments (itl, skip-sw, throughput): the
file experiments/costdata/h200-kernel-costs.json.

Run on the H200 device machine (PyTorch and Triton are there):
    OUT=/tmp/costs python3 tools/capture/kernel_costs.py [--quick] [--commit SHA]
It writes $OUT/kernel-costs.json and prints one line per row.

What is timed (each an "op" row; every time is ONE layer's call):
  decode    one decode step's attention for `batch` sequences of `context`
            cached tokens: our FA-style split-KV Triton kernel
            (impl triton-splitkv) on a BF16 cache and on an FP8 e4m3 cache
            with per-tensor or per-KV-head scales (kv bf16 | fp8-tensor |
            fp8-head), its query heads of one KV head packed in the 64 rows
            of a wgmma tile (FA3's PackGQA), tiles of BLOCK_N keys, splits
            chosen by FA3's num_splits_heuristic over 132 SMs (the same rule
            as attention.Plan.AutoSplits), the split combine a second kernel;
            and PyTorch's scaled_dot_product_attention on BF16 (impl sdpa,
            "backend" the first of flash, cudnn, efficient, math that runs).
            The FP8 kernel reads a query already in e4m3 (q_quant is its own
            row), quantizes P to e4m3 and accumulates P.V two-level (FP32
            promotion every tile), as vLLM's FA3 path; impl
            triton-splitkv-dequant reads the same FP8 cache, converts K and V
            to FP16 after the load and multiplies in FP16 (vLLM's Triton
            decode, FlashInfer's decode on an FP8 cache). FP8 tiles hold
            twice the keys of a BF16 tile (the same bytes), three stages.
  kv_write  writing `batch` new tokens' K and V of one layer into the cache
            at given slots: one fused Triton kernel (as vLLM's
            reshape_and_cache_flash): a copy for bf16, scale + saturate +
            cast for fp8-tensor / fp8-head.
  q_quant   the query's e4m3 quantization before FP8 attention (one Triton
            kernel, per-tensor scale).
  prefill   a causal prefill (query = KV = `context` tokens) of one layer:
            one Triton FA2/FA3-style kernel in three variants with the same
            tiles: triton-bf16, triton-fp8-1level (P.V accumulated in the
            tensor core's chain across tiles: acc = dot(P, V, acc*alpha)),
            triton-fp8-2level (pv = dot(P, V) in a second register tile,
            then acc = acc*alpha + pv: FA3's promotion); "registers" and
            "spills" from Triton's compiled kernel; and sdpa (BF16).
  linear    a BF16 torch.matmul [m x k] @ [k x n] of a named layer shape.
  stream    a device-to-device copy of `bytes` bytes (read + written).
  launch    per-kernel cost: a CUDA graph of 100 one-element adds replayed
            (impl graph), and the same 100 launched eagerly (impl eager).

Method: every op except launch is captured in a CUDA graph and replayed
(vLLM decodes under CUDA graphs); before each timed replay a 256 MiB buffer
is written, so L2 (60 MB on the H200) holds none of the op's data, as in a
real step where the other layers' weights and caches pass through L2
between two calls of one layer. Times are CUDA-event times of one replay:
warm-up replays for 0.1 s (after one 2 s warm-up at the start: the GPU's
clock ramps from 345 MHz at idle), then `reps` timed replays; the row gives the median and quartiles
in microseconds. nvidia-smi samples the SM clock every 500 ms throughout
(provenance.clocks). Caches are contiguous per sequence (no page table:
vLLM's paged cache adds one indirection per block, not measured here).
Rows that fail (a backend refusing a shape, memory) are written with an
"error" field instead of a time, never silently dropped.
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import threading
import time

SMS = 132  # the H200's SM count (attention.Arches hopper)


def fa_num_splits(total, sms, n_blocks, m_blocks, kv_head_bytes, causal_or_local, max_splits=128):
    """FA3's num_splits_heuristic, as attention's faNumSplits (config.go)."""
    if total >= 0.8 * sms:
        l2 = 50 << 20
        if kv_head_bytes > l2 and m_blocks >= 2 * sms and not causal_or_local:
            return min((kv_head_bytes + l2 - 1) // l2, max_splits)
        return 1
    if n_blocks <= 4:
        return 1
    max_splits = min(max_splits, sms, n_blocks)
    eff = []
    for s in range(1, max_splits + 1):
        waves = total * s / sms
        eff.append(waves / math.ceil(waves))
    best = max(eff)
    for s in range(1, max_splits + 1):
        if eff[s - 1] >= 0.85 * best:
            return s
    return 1


class ClockSampler:
    """nvidia-smi's SM and memory clocks every 500 ms, in a thread."""

    def __init__(self):
        self.sm, self.mem, self.max_sm, self.proc = [], [], None, None
        try:
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm",
                                          "--format=csv,noheader,nounits", "-lms=500"],
                                         stdout=subprocess.PIPE, text=True)
        except OSError as ex:
            self.why = repr(ex)
            return
        self.why = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                sm, mem, mx = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.sm.append(sm)
            self.mem.append(mem)
            self.max_sm = mx

    def summary(self):
        if self.proc:
            self.proc.kill()
        if not self.sm:
            return {"why": self.why or "no samples"}
        s = sorted(self.sm)
        return {"sm_mhz": [s[0], s[len(s) // 2], s[-1]], "sm_mhz_max": self.max_sm,
                "mem_mhz": sorted(self.mem)[len(self.mem) // 2], "samples": len(s),
                "source": "nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm -lms=500"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a few rows of each op (a smoke test)")
    ap.add_argument("--commit", default="", help="fp8lab's commit, for the provenance")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--ops", default="launch,stream,decode,kv_write,q_quant,prefill,linear",
                    help="comma-separated ops to time (default all)")
    args = ap.parse_args()

    import torch
    import triton
    import triton.language as tl

    out_dir = os.environ.get("OUT", "/tmp/costs")
    os.makedirs(out_dir, exist_ok=True)
    dev = "cuda"
    F8 = torch.float8_e4m3fn
    clocks = ClockSampler()
    flush_buf = torch.empty(256 << 20, dtype=torch.uint8, device=dev)

    def time_graph(fn, reps=args.reps, warm_s=0.1):
        """Capture fn in a CUDA graph; median and quartiles of `reps` replays
        after warm_s of warm-up replays, L2 flushed before each (µs)."""
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()  # compile / autotune outside the capture
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        t0 = time.time()
        while time.time() - t0 < warm_s:
            flush_buf.fill_(1)
            g.replay()
            torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            flush_buf.fill_(0)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        ts.sort()
        n = len(ts)
        return {"us": ts[n // 2], "us_q1": ts[n // 4], "us_q3": ts[(3 * n) // 4], "reps": n}

    # ---------------------------------------------------------------- decode
    @triton.jit
    def decode_split(Q, K, V, Qs, Ks, Vs, Os, Lse, L, s_kb, s_kn, s_kh, s_ob, HQ, HKV,
                     blocks_per_split, n_splits, sm_scale_log2,
                     G: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr, FP8: tl.constexpr, PER_HEAD: tl.constexpr,
                     DEQUANT: tl.constexpr):
        # DEQUANT (with FP8): the e4m3 K and V are converted to FP16 after the
        # load (cvt.f16x2.e4m3x2: one instruction per two values; e4m3 to BF16
        # takes several) and both products are FP16 wgmmas on an FP16 query
        # (vLLM's Triton decode and FlashInfer's decode on an FP8 cache);
        # without it the query is e4m3 and both products are FP8 wgmmas
        # (FA3's path). FP8 tiles hold twice the keys (the bytes of a BF16
        # tile) and three stages are in flight.
        bh = tl.program_id(0)
        sp = tl.program_id(1)
        b = bh // HKV
        h = bh % HKV
        rm = tl.arange(0, 64)
        rd = tl.arange(0, D)
        rn = tl.arange(0, BLOCK_N)
        qmask = rm < G
        q = tl.load(Q + (b * HQ + h * G + rm)[:, None] * D + rd[None, :], mask=qmask[:, None], other=0.0)
        scale = sm_scale_log2
        vscale = 1.0
        if FP8:
            if PER_HEAD:
                scale = scale * tl.load(Ks + h) * tl.load(Qs)
                vscale = tl.load(Vs + h)
            else:
                scale = scale * tl.load(Ks) * tl.load(Qs)
                vscale = tl.load(Vs)
        m_i = tl.full([64], float("-inf"), tl.float32)
        l_i = tl.zeros([64], tl.float32)
        acc = tl.zeros([64, D], tl.float32)
        n_blocks = tl.cdiv(L, BLOCK_N)
        lo = sp * blocks_per_split
        hi = tl.minimum(lo + blocks_per_split, n_blocks)
        kb = K + b * s_kb + h * s_kh
        vb = V + b * s_kb + h * s_kh
        for blk in range(lo, hi):
            offs = blk * BLOCK_N + rn
            kmask = offs < L
            k = tl.load(kb + offs[:, None] * s_kn + rd[None, :], mask=kmask[:, None], other=0.0)
            if DEQUANT:
                k = k.to(tl.float16)
            sc = tl.dot(q, tl.trans(k)) * scale
            sc = tl.where(kmask[None, :], sc, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(sc, 1))
            alpha = tl.exp2(m_i - m_new)
            v = tl.load(vb + offs[:, None] * s_kn + rd[None, :], mask=kmask[:, None], other=0.0)
            if DEQUANT:
                p = tl.exp2(sc - m_new[:, None] + 8.0)
                pv = tl.dot(p.to(tl.float16), v.to(tl.float16))
            elif FP8:
                p = tl.exp2(sc - m_new[:, None] + 8.0)
                pv = tl.dot(p.to(tl.float8e4nv), v)
            else:
                p = tl.exp2(sc - m_new[:, None])
                pv = tl.dot(p.to(tl.bfloat16), v)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + pv
            m_i = m_new
        has = l_i > 0.0
        inv = tl.where(has, vscale / l_i, 0.0)
        lse = tl.where(has, m_i + tl.log2(l_i), float("-inf"))
        if FP8:
            lse = lse - 8.0
        rows = b * HQ + h * G + rm
        tl.store(Os + rows[:, None] * s_ob + sp * D + rd[None, :], acc * inv[:, None], mask=qmask[:, None])
        tl.store(Lse + rows * n_splits + sp, lse, mask=qmask)

    @triton.jit
    def combine_splits(Os, Lse, O, n_splits, s_ob, D: tl.constexpr, SP: tl.constexpr):
        r = tl.program_id(0)
        rs = tl.arange(0, SP)
        rd = tl.arange(0, D)
        lse = tl.load(Lse + r * n_splits + rs, mask=rs < n_splits, other=float("-inf"))
        m = tl.max(lse, 0)
        w = tl.exp2(lse - m)
        den = tl.sum(w, 0)
        acc = tl.zeros([D], tl.float32)
        for s in range(0, n_splits):
            ws = tl.exp2(tl.load(Lse + r * n_splits + s) - m)
            acc += ws * tl.load(Os + r * s_ob + s * D + rd)
        tl.store(O + r * D + rd, (acc / den).to(tl.bfloat16))

    def decode_block_n(D):
        return {64: 128, 128: 128, 256: 64, 512: 32}[D]

    def decode_warps(D):
        return 8 if D >= 512 else 4

    def make_decode(B, L, HQ, HKV, D, kv, dequant=False):
        G = HQ // HKV
        # An FP8 tile of twice the keys holds the bytes of a BF16 tile.
        BN = decode_block_n(D) * (2 if kv != "bf16" else 1)
        n_blocks = -(-L // BN)
        elem = 1 if kv != "bf16" else 2
        S = fa_num_splits(B * HKV, SMS, n_blocks, 1, L * 2 * D * elem, False)
        bps = -(-n_blocks // S)
        dt = F8 if kv != "bf16" else torch.bfloat16
        Kc = torch.randn(B, L, HKV, D, device=dev).to(dt)
        Vc = torch.randn(B, L, HKV, D, device=dev).to(dt)
        q = torch.randn(B, HQ, D, device=dev).to(torch.float16 if dequant else dt)
        nsc = HKV if kv == "fp8-head" else 1
        ks = torch.full((nsc,), 0.05, device=dev)
        vs = torch.full((nsc,), 0.05, device=dev)
        qs = torch.ones(1, device=dev)
        Os = torch.empty(B * HQ, S, D, device=dev)
        Lse = torch.empty(B * HQ, S, device=dev)
        O = torch.empty(B * HQ, D, device=dev, dtype=torch.bfloat16)
        SP = max(2, triton.next_power_of_2(S))
        fp8 = kv != "bf16"

        cfg = {"stages": 2 if kv == "bf16" else 3}

        def launch():
            decode_split[(B * HKV, S)](q, Kc, Vc, qs, ks, vs, Os, Lse, L, Kc.stride(0), Kc.stride(1), Kc.stride(2),
                                       Os.stride(0), HQ, HKV, bps, S, (1.0 / math.sqrt(D)) * 1.4426950408889634,
                                       G=G, D=D, BLOCK_N=BN, FP8=fp8, PER_HEAD=(kv == "fp8-head"), DEQUANT=dequant,
                                       num_warps=decode_warps(D), num_stages=cfg["stages"])
        try:
            launch()  # compile now: three stages may not fit in shared memory
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 - fall back to two stages
            if cfg["stages"] == 2:
                raise
            cfg["stages"] = 2
            launch()
            torch.cuda.synchronize()

        def fn():
            launch()
            if S > 1:
                combine_splits[(B * HQ,)](Os, Lse, O, S, Os.stride(0), D=D, SP=SP, num_warps=4)
        return fn, {"splits": S, "block_n": BN, "stages": cfg["stages"], "kernels": 1 + (S > 1)}

    def make_sdpa_decode(B, L, HQ, HKV, D):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        import torch.nn.functional as Fn
        q = torch.randn(B, HQ, 1, D, device=dev, dtype=torch.bfloat16)
        k = torch.randn(B, HKV, L, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn(B, HKV, L, D, device=dev, dtype=torch.bfloat16)
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                         ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)):
            try:
                with sdpa_kernel([be]):
                    Fn.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - the next backend
                continue

            def fn(be=be):
                with sdpa_kernel([be]):
                    Fn.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            return fn, {"backend": name}
        raise RuntimeError("no SDPA backend ran this shape")

    # --------------------------------------------------------------- kv write
    @triton.jit
    def kv_write(Kn, Vn, Kc, Vc, slots, Ks, Vs, HKV, D: tl.constexpr, FP8: tl.constexpr, PER_HEAD: tl.constexpr):
        t = tl.program_id(0)
        h = tl.program_id(1)
        rd = tl.arange(0, D)
        slot = tl.load(slots + t)
        k = tl.load(Kn + (t * HKV + h) * D + rd).to(tl.float32)
        v = tl.load(Vn + (t * HKV + h) * D + rd).to(tl.float32)
        dst = (slot * HKV + h) * D + rd
        if FP8:
            if PER_HEAD:
                ik = 1.0 / tl.load(Ks + h)
                iv = 1.0 / tl.load(Vs + h)
            else:
                ik = 1.0 / tl.load(Ks)
                iv = 1.0 / tl.load(Vs)
            k = tl.minimum(tl.maximum(k * ik, -448.0), 448.0)
            v = tl.minimum(tl.maximum(v * iv, -448.0), 448.0)
            tl.store(Kc + dst, k.to(tl.float8e4nv))
            tl.store(Vc + dst, v.to(tl.float8e4nv))
        else:
            tl.store(Kc + dst, k.to(tl.bfloat16))
            tl.store(Vc + dst, v.to(tl.bfloat16))

    def make_kv_write(T, HKV, D, kv, cache_tokens=1 << 20):
        dt = F8 if kv != "bf16" else torch.bfloat16
        cache_tokens = max(cache_tokens // max(1, (HKV * D) // 1024), 4 * T)
        Kc = torch.empty(cache_tokens, HKV, D, device=dev, dtype=dt)
        Vc = torch.empty(cache_tokens, HKV, D, device=dev, dtype=dt)
        Kn = torch.randn(T, HKV, D, device=dev, dtype=torch.bfloat16)
        Vn = torch.randn(T, HKV, D, device=dev, dtype=torch.bfloat16)
        slots = torch.randperm(cache_tokens, device=dev)[:T].to(torch.int64)
        nsc = HKV if kv == "fp8-head" else 1
        ks = torch.full((nsc,), 0.05, device=dev)
        vs = torch.full((nsc,), 0.05, device=dev)

        def fn():
            kv_write[(T, HKV)](Kn, Vn, Kc, Vc, slots, ks, vs, HKV, D=D, FP8=(kv != "bf16"), PER_HEAD=(kv == "fp8-head"), num_warps=1)
        return fn

    @triton.jit
    def q_quant(Qin, Qout, Qs, N, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < N
        x = tl.load(Qin + i, mask=m, other=0.0).to(tl.float32) * (1.0 / tl.load(Qs))
        x = tl.minimum(tl.maximum(x, -448.0), 448.0)
        tl.store(Qout + i, x.to(tl.float8e4nv), mask=m)

    def make_q_quant(T, HQ, D):
        n = T * HQ * D
        qi = torch.randn(n, device=dev, dtype=torch.bfloat16)
        qo = torch.empty(n, device=dev, dtype=F8)
        qs = torch.ones(1, device=dev)

        def fn():
            q_quant[(triton.cdiv(n, 1024),)](qi, qo, qs, n, BLOCK=1024, num_warps=4)
        return fn

    # ---------------------------------------------------------------- prefill
    @triton.jit
    def prefill(Q, K, V, O, T, HQ, HKV, sm_scale_log2,
                G: tl.constexpr, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, MODE: tl.constexpr):
        # MODE 0: bf16; 1: fp8 single-level (P.V chained in the tensor core);
        # 2: fp8 two-level (P.V in its own tile, promoted every tile).
        mb = tl.program_id(0)
        hq = tl.program_id(1)
        h = hq // G
        rm = mb * BM + tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rd = tl.arange(0, D)
        q = tl.load(Q + (rm[:, None] * HQ + hq) * D + rd[None, :], mask=rm[:, None] < T, other=0.0)
        m_i = tl.full([BM], float("-inf"), tl.float32)
        l_i = tl.zeros([BM], tl.float32)
        acc = tl.zeros([BM, D], tl.float32)
        hi = tl.minimum((mb + 1) * BM, T)
        for n0 in range(0, hi, BN):
            offs = n0 + rn
            k = tl.load(K + (offs[:, None] * HKV + h) * D + rd[None, :], mask=offs[:, None] < T, other=0.0)
            sc = tl.dot(q, tl.trans(k)) * sm_scale_log2
            sc = tl.where(offs[None, :] <= rm[:, None], sc, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(sc, 1))
            alpha = tl.exp2(m_i - m_new)
            v = tl.load(V + (offs[:, None] * HKV + h) * D + rd[None, :], mask=offs[:, None] < T, other=0.0)
            if MODE == 0:
                p = tl.exp2(sc - m_new[:, None])
                acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
            elif MODE == 1:
                p = tl.exp2(sc - m_new[:, None] + 8.0)
                acc = tl.dot(p.to(tl.float8e4nv), v, acc * alpha[:, None])
            else:
                p = tl.exp2(sc - m_new[:, None] + 8.0)
                pv = tl.dot(p.to(tl.float8e4nv), v)
                acc = acc * alpha[:, None] + pv
            l_i = l_i * alpha + tl.sum(p, 1)
            m_i = m_new
        o = acc / l_i[:, None]
        tl.store(O + (rm[:, None] * HQ + hq) * D + rd[None, :], o.to(tl.bfloat16), mask=rm[:, None] < T)

    def prefill_tiles(D):
        # (BM, BN, warps, stages): one configuration per head_dim, the same
        # for the three variants so that they differ in accumulation only.
        return {128: (128, 64, 8, 2), 256: (128, 64, 8, 2)}[D]

    def make_prefill(T, HQ, HKV, D, mode):
        BM, BN, warps, stages = prefill_tiles(D)
        dt = torch.bfloat16 if mode == 0 else F8
        q = torch.randn(T, HQ, D, device=dev).to(dt)
        k = torch.randn(T, HKV, D, device=dev).to(dt)
        v = torch.randn(T, HKV, D, device=dev).to(dt)
        o = torch.empty(T, HQ, D, device=dev, dtype=torch.bfloat16)
        holder = {}

        def fn():
            holder["k"] = prefill[(triton.cdiv(T, BM), HQ)](q, k, v, o, T, HQ, HKV, (1.0 / math.sqrt(D)) * 1.4426950408889634,
                                                           G=HQ // HKV, D=D, BM=BM, BN=BN, MODE=mode, num_warps=warps, num_stages=stages)
        return fn, holder, {"block_m": BM, "block_n": BN, "warps": warps, "stages": stages}

    def make_sdpa_prefill(T, HQ, HKV, D):
        import torch.nn.functional as Fn
        q = torch.randn(1, HQ, T, D, device=dev, dtype=torch.bfloat16)
        k = torch.randn(1, HKV, T, D, device=dev, dtype=torch.bfloat16)
        v = torch.randn(1, HKV, T, D, device=dev, dtype=torch.bfloat16)

        def fn():
            Fn.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return fn

    # ---------------------------------------------------------------- the rest
    def make_linear(m, n, k):
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(k, n, device=dev, dtype=torch.bfloat16)

        def fn():
            torch.matmul(a, w)
        return fn

    def make_stream(nbytes):
        src = torch.empty(nbytes, dtype=torch.uint8, device=dev).fill_(1)
        dst = torch.empty_like(src)

        def fn():
            dst.copy_(src)
        return fn

    def launch_rows():
        x = torch.zeros(1, device=dev)
        rows = []
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            x.add_(1)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(100):
                x.add_(1)
        for impl in ("graph", "eager"):
            ts = []
            for _ in range(args.reps):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                a.record()
                if impl == "graph":
                    g.replay()
                else:
                    for _ in range(100):
                        x.add_(1)
                b.record()
                b.synchronize()
                ts.append(a.elapsed_time(b) * 1e3 / 100)
            ts.sort()
            n = len(ts)
            rows.append({"op": "launch", "impl": impl, "us": ts[n // 2], "us_q1": ts[n // 4], "us_q3": ts[(3 * n) // 4],
                         "reps": n, "note": "per kernel, of 100 one-element adds"})
        return rows

    rows = []
    ops = set(args.ops.split(","))

    def emit(row, make):
        if row["op"] not in ops:
            return
        t0 = time.time()
        try:
            row.update(make())
        except Exception as ex:  # noqa: BLE001 - recorded in the row
            row["error"] = (type(ex).__name__ + ": " + str(ex))[:300]
        row["wall_s"] = round(time.time() - t0, 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()

    # The grid.
    shapes = [(32, 8, 128, "llama-3.1-8b"), (64, 8, 64, "gpt-oss-20b"), (8, 1, 256, "gemma-4-e2b sliding"),
              (8, 1, 512, "gemma-4-e2b full")]
    contexts = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
    batches = [1, 8, 32]
    if args.quick:
        shapes, contexts, batches = shapes[:1] + shapes[3:], [4096, 32768], [1]

    def smi(q):
        try:
            return subprocess.run(["nvidia-smi", "--query-gpu=" + q, "--format=csv,noheader"], capture_output=True,
                                  text=True, timeout=30).stdout.strip()
        except Exception as ex:  # noqa: BLE001
            return repr(ex)

    def write(rows, complete):
        doc = {
            "schema": "fp8lab-kernel-costs/1",
            "complete": complete,
            "provenance": {
                "gpu": torch.cuda.get_device_name(), "driver": smi("driver_version"), "cuda": torch.version.cuda,
                "torch": torch.__version__, "triton": triton.__version__,
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "commit": args.commit, "script": "tools/capture/kernel_costs.py" + (" --quick" if args.quick else ""),
                "sms": torch.cuda.get_device_properties(0).multi_processor_count,
                "method": ("each op captured in a CUDA graph; before each timed replay a 256 MiB buffer is written "
                           "(L2 cold); warm-up replays for 0.1 s (2 s once at the start), then the median and quartiles of the timed replays by "
                           "CUDA events; caches contiguous per sequence (no page table); splits by FA3's "
                           "num_splits_heuristic over 132 SMs"),
                "clocks": clocks.summary(),
            },
            "rows": rows,
        }
        path = os.path.join(out_dir, "kernel-costs.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        bad = [r for r in rows if "error" in r]
        print(f"wrote {path}: {len(rows)} rows, {len(bad)} with an error", flush=True)

    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    complete = False
    try:
        for rows_fn in ((launch_rows,) if "launch" in ops else ()):
            for r in rows_fn():
                rows.append(r)
                print(json.dumps(r), flush=True)
        time_graph(make_stream(1 << 30), reps=3, warm_s=2.0)  # the clock up before the first row
        for nbytes in ([1 << 30] if args.quick else [64 << 20, 256 << 20, 1 << 30, 4 << 30]):
            emit({"op": "stream", "impl": "copy", "bytes": 2 * nbytes}, lambda nbytes=nbytes: time_graph(make_stream(nbytes)))

        def timed(make):
            """time_graph of the op make() builds, with make's extra fields."""
            fn, extra = make()
            r = time_graph(fn)
            r.update(extra)
            return r

        def decode_rows(B):
            for HQ, HKV, D, model in shapes:
                for L in contexts:
                    if B * L > 32 * 32768 and B > 8:
                        continue
                    # (impl, kv, builder) in the order the file has always listed them.
                    variants = []
                    for kv in ("bf16", "fp8-tensor", "fp8-head"):
                        variants.append(("triton-splitkv", kv, lambda kv=kv: make_decode(B, L, HQ, HKV, D, kv)))
                        if kv != "bf16":
                            variants.append(("triton-splitkv-dequant", kv,
                                             lambda kv=kv: make_decode(B, L, HQ, HKV, D, kv, dequant=True)))
                    variants.append(("sdpa", "bf16", lambda: make_sdpa_decode(B, L, HQ, HKV, D)))
                    for impl, kv, make in variants:
                        emit({"op": "decode", "impl": impl, "kv": kv, "batch": B, "context": L, "q_heads": HQ,
                              "kv_heads": HKV, "head_dim": D, "model": model}, lambda make=make: timed(make))

        decode_rows(1)
        wshapes = [(HKV, D) for _, HKV, D, _ in shapes]
        for HKV, D in wshapes:
            for T in ([1, 2048] if args.quick else [1, 8, 32, 256, 2048]):
                for kv in ("bf16", "fp8-tensor", "fp8-head"):
                    emit({"op": "kv_write", "impl": "triton", "kv": kv, "batch": T, "kv_heads": HKV, "head_dim": D},
                         lambda T=T, HKV=HKV, D=D, kv=kv: time_graph(make_kv_write(T, HKV, D, kv)))
        for HQ, _, D, _ in shapes:
            for T in ([1, 2048] if args.quick else [1, 8, 32, 256, 2048]):
                emit({"op": "q_quant", "impl": "triton", "kv": "fp8-tensor", "batch": T, "q_heads": HQ, "head_dim": D},
                     lambda T=T, HQ=HQ, D=D: time_graph(make_q_quant(T, HQ, D)))

        pshapes = [(32, 8, 128), (32, 8, 256), (8, 1, 256)]
        for HQ, HKV, D in (pshapes[:2] if args.quick else pshapes):
            for T in ([4096] if args.quick else [4096, 16384, 32768]):
                for mode, impl in ((0, "triton-bf16"), (1, "triton-fp8-1level"), (2, "triton-fp8-2level")):
                    def run_p(T=T, HQ=HQ, HKV=HKV, D=D, mode=mode):
                        fn, holder, extra = make_prefill(T, HQ, HKV, D, mode)
                        r = time_graph(fn, reps=min(args.reps, 15))
                        k = holder.get("k")
                        r["registers"] = int(getattr(k, "n_regs", -1)) if k is not None else -1
                        r["spills"] = int(getattr(k, "n_spills", -1)) if k is not None else -1
                        r.update(extra)
                        return r
                    emit({"op": "prefill", "impl": impl, "context": T, "q_heads": HQ, "kv_heads": HKV, "head_dim": D}, run_p)
                emit({"op": "prefill", "impl": "sdpa", "context": T, "q_heads": HQ, "kv_heads": HKV, "head_dim": D},
                     lambda T=T, HQ=HQ, HKV=HKV, D=D: time_graph(make_sdpa_prefill(T, HQ, HKV, D), reps=min(args.reps, 15)))

        lin = [("llama-3.1-8b qkv", 6144, 4096), ("llama-3.1-8b o", 4096, 4096), ("llama-3.1-8b gate_up", 28672, 4096),
               ("llama-3.1-8b down", 4096, 14336), ("llama-3.1-8b lm_head", 128256, 4096),
               ("gpt-oss-20b qkv", 5120, 2880), ("gpt-oss-20b o", 2880, 4096)]
        for name, n, k in (lin[:2] if args.quick else lin):
            for m in ([1, 2048] if args.quick else [1, 8, 32, 256, 2048, 8192]):
                emit({"op": "linear", "impl": "torch.matmul", "name": name, "m": m, "n": n, "k": k},
                     lambda m=m, n=n, k=k: time_graph(make_linear(m, n, k)))

        for B in batches[1:]:
            decode_rows(B)

        complete = True
    finally:
        write(rows, complete)
    return 0


if __name__ == "__main__":
    sys.exit(main())
