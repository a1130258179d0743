#!/usr/bin/env python3
"""A real FP8 split-KV decode on Hopper (Triton wgmma), of exactly the
structure attention-file simulates (attention.Config.Splits, issue 15 item
5), on inputs fp8lab has not seen; its outputs are compared with
attention-file's by experiments.TestSplitKVH200Probe.

Kernel (one Triton program per split; the query heads of the one KV head
packed in the 64 rows of a wgmma, FA3's PackGQA, rows past them zero):

    tiles of kBlockN = 96 keys (FA3's decode tile for head_dim 128, FP8);
    n_tiles = ceil(N / 96); tps = ceil(n_tiles / S); split s takes tiles
    [s*tps, min((s+1)*tps, n_tiles)), newest first (an empty split writes
    O_s = 0, lse_s = -inf);
    per tile: S = (Q.K^T) x scale_log2 in FP32 (a wgmma chain of 4 k-steps
    from +0; keys past N masked to -inf); m_new = max(m, rowmax S);
    alpha = exp2(m - m_new); P = exp2(S - m_new + 8); l = l*alpha + sum P
    (the unrounded P); P -> e4m3 (cvt.rn.satfinite);
    promotion 0: acc = dot(P, V, acc*alpha)        (single level: O stays in the tensor core)
    promotion 1: acc = acc*alpha + dot(P, V)       (promoted every tile)
    the 96-key P.V as three chained 32-key dots (Triton's tl.arange needs
    powers of two; a 96-wide dot is the same three k-steps of 32 in order);
    O_s = acc * (1/l) and lse_s = (m + log2 l) - 8 in FP32, as attention's
    finalize and LSE;
    compiled with FMA contraction off (enable_fp_fusion=False), as the
    simulation rounds l*alpha and acc*alpha before each add; each run is
    repeated with contraction on (nvcc's and Triton's default: keys
    ending _fma), to show what it changes.
Combine: a torch loop in float32 on the GPU, splits in index order:
    M = max_s lse_s, w_s = exp2(lse_s - M), num = w_0*O_0 + w_1*O_1 + ...,
    den = w_0 + w_1 + ..., O = num / den (each product and sum rounded:
    attention.CombineSplits).

Inputs: ../shared/golden/h200/capture/attn_inputs.py's make(N, seed) with
an unseen seed (20270417; its generator is copied below, and fp8lab's
attention.MakeH200InputsWith regenerates it bit for bit: the sha256 in the
log lets the comparison check that): one query token, the first 8 of
make()'s 64 query rows as 8 query heads, K ~ N(0,1) and V ~ N(0.5,1) as
one KV head of head_dim 128, at N = 32768 and 131072. They are written as
float32 .npy in attention-file's thd layout ([tokens, heads, dim]) into
--inputs (default /tmp/splitkv_inputs: K and V at 128k are 64 MiB each,
too large to come back from the device); Q, K and V are cast to e4m3 by
torch's .to(float8_e4m3fn) (round to nearest even), which equals
attention-file's scale-1.0 satfinite quantization here since every |x| is
far below 448 (the probe checks it); softmax scale 1/sqrt(128).

Writes into $OUT (default /tmp/splitkv): splitkv_h200.npz (O per N,
splits S in {1, 4, 16, 64} and promotion {0, 1}: N{N}_S{S}_p{P} and
N{N}_S{S}_p{P}_fma, float32 [1, 8, 128]), splitkv_log.json (versions, GPU, sha256 of the inputs and of
their e4m3 codes, whether the kernel ran wgmma, and each O's relative L2
error against exact float64 attention on the unquantized and on the
quantized inputs), and prints the same. Run: OUT=/tmp/splitkv python3 splitkv_probe.py
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

import numpy as np

SEED = 20270417
CONTEXTS = (32768, 131072)
SPLITS = (1, 4, 16, 64)
PROMOTIONS = (0, 1)
QH, D, BLOCK_N = 8, 128, 96
LOG2E = 1.4426950408889634


# attn_inputs.py's generator (../shared/golden/h200/capture/attn_inputs.py),
# copied so that the probe runs where ../shared is not.
def _uniform(bg, n):
    return (bg.random_raw(n) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _normal(bg, shape):
    n = int(np.prod(shape))
    u = _uniform(bg, 4 * n).reshape(4, n)
    x = (((u[0] + u[1]) + u[2]) + u[3]) - 2.0
    return (x * 1.7320508075688772).reshape(shape)


def make(N, seed=SEED, alpha=0.9, mu=0.5, sigma_k=1.0, M=64):
    bg = np.random.PCG64(seed + N)
    Q = _normal(bg, (M, D))
    K = _normal(bg, (N, D)) * sigma_k
    V = _normal(bg, (N, D)) + mu
    pos = (bg.random_raw(M) % np.uint64(N)).astype(np.int64)
    signs = np.where((bg.random_raw(M * D) & np.uint64(1)).reshape(M, D) == 1, 2.0, -2.0)
    for r in range(M):
        K[pos[r]] = Q[r] * alpha
        V[pos[r]] = signs[r]
    return Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32)


def inputs(N):
    """q [1, QH, D], k and v [N, 1, D] float32, layout thd."""
    Q, K, V = make(N)
    return np.ascontiguousarray(Q[:QH][None]), np.ascontiguousarray(K[:, None, :]), np.ascontiguousarray(V[:, None, :])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", default="/tmp/splitkv_inputs", help="folder for the q/k/v .npy inputs (thd)")
    args = ap.parse_args()
    import torch
    import triton
    import triton.language as tl

    out = os.environ.get("OUT", "/tmp/splitkv")
    os.makedirs(out, exist_ok=True)
    os.makedirs(args.inputs, exist_ok=True)
    dev = "cuda"

    @triton.jit
    def splitkv_fwd(Q, K, V, Os, Lse, N, n_tiles, tps, qk_scale_log2, PROMOTE: tl.constexpr):
        s = tl.program_id(0)
        rm = tl.arange(0, 64)
        rd = tl.arange(0, 128)
        rn = tl.arange(0, 32)
        q = tl.load(Q + rm[:, None] * 128 + rd[None, :])
        m_i = tl.full([64], float("-inf"), tl.float32)
        l_i = tl.zeros([64], tl.float32)
        acc = tl.zeros([64, 128], tl.float32)
        lo = s * tps
        hi = tl.minimum(lo + tps, n_tiles)
        for t in range(lo, hi):
            start = (hi - 1 - (t - lo)) * 96  # newest first
            k0 = tl.load(K + (start + rn)[:, None] * 128 + rd[None, :])
            k1 = tl.load(K + (start + 32 + rn)[:, None] * 128 + rd[None, :])
            k2 = tl.load(K + (start + 64 + rn)[:, None] * 128 + rd[None, :])
            s0 = tl.dot(q, tl.trans(k0)) * qk_scale_log2
            s1 = tl.dot(q, tl.trans(k1)) * qk_scale_log2
            s2 = tl.dot(q, tl.trans(k2)) * qk_scale_log2
            s0 = tl.where((start + rn)[None, :] < N, s0, float("-inf"))
            s1 = tl.where((start + 32 + rn)[None, :] < N, s1, float("-inf"))
            s2 = tl.where((start + 64 + rn)[None, :] < N, s2, float("-inf"))
            m_new = tl.maximum(m_i, tl.maximum(tl.max(s0, 1), tl.maximum(tl.max(s1, 1), tl.max(s2, 1))))
            alpha = tl.exp2(m_i - m_new)
            p0 = tl.exp2(s0 - m_new[:, None] + 8.0)
            p1 = tl.exp2(s1 - m_new[:, None] + 8.0)
            p2 = tl.exp2(s2 - m_new[:, None] + 8.0)
            l_i = l_i * alpha + (tl.sum(p0, 1) + tl.sum(p1, 1) + tl.sum(p2, 1))
            v0 = tl.load(V + (start + rn)[:, None] * 128 + rd[None, :])
            v1 = tl.load(V + (start + 32 + rn)[:, None] * 128 + rd[None, :])
            v2 = tl.load(V + (start + 64 + rn)[:, None] * 128 + rd[None, :])
            q0, q1, q2 = p0.to(tl.float8e4nv), p1.to(tl.float8e4nv), p2.to(tl.float8e4nv)
            if PROMOTE == 0:
                acc = tl.dot(q0, v0, acc * alpha[:, None])
                acc = tl.dot(q1, v1, acc)
                acc = tl.dot(q2, v2, acc)
            else:
                pv = tl.dot(q0, v0)
                pv = tl.dot(q1, v1, pv)
                pv = tl.dot(q2, v2, pv)
                acc = acc * alpha[:, None] + pv
            m_i = m_new
        has = l_i > 0.0
        inv = tl.where(has, 1.0 / l_i, 0.0)
        lse = tl.where(has, (m_i + tl.log2(l_i)) - 8.0, float("-inf"))
        tl.store(Os + s * 64 * 128 + rm[:, None] * 128 + rd[None, :], acc * inv[:, None])
        tl.store(Lse + s * 64 + rm, lse)

    def smi():
        try:
            return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=30).stdout.strip()
        except Exception as ex:  # noqa: BLE001
            return repr(ex)

    log = {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(), "nvidia_smi": smi(), "numpy": np.__version__, "seed": SEED,
           "query_heads": QH, "head_dim": D, "kBlockN": BLOCK_N, "splits": list(SPLITS), "promotions": list(PROMOTIONS)}
    print(json.dumps(log), flush=True)
    res = {}
    scale = 1.0 / np.sqrt(128.0)
    for N in CONTEXTS:
        q, k, v = inputs(N)
        files = {}
        for name, x in (("q", q), ("k", k), ("v", v)):
            p = os.path.join(args.inputs, f"N{N}_{name}.npy")
            np.save(p, x)
            files[name] = hashlib.sha256(open(p, "rb").read()).hexdigest()
        log[f"N{N}_inputs_sha256"] = hashlib.sha256(q.tobytes() + k.tobytes() + v.tobytes()).hexdigest()
        log[f"N{N}_npy_sha256"] = files
        log[f"N{N}_max_abs"] = float(max(np.abs(q).max(), np.abs(k).max(), np.abs(v).max()))
        assert log[f"N{N}_max_abs"] < 448, "an input beyond e4m3's range: .to() and satfinite would differ"
        n_tiles = -(-N // BLOCK_N)
        pad = n_tiles * BLOCK_N
        Q8 = torch.zeros(64, D, dtype=torch.float8_e4m3fn, device=dev)
        Q8[:QH] = torch.from_numpy(q[0]).to(dev).to(torch.float8_e4m3fn)
        K8 = torch.zeros(pad, D, dtype=torch.float8_e4m3fn, device=dev)
        V8 = torch.zeros(pad, D, dtype=torch.float8_e4m3fn, device=dev)
        K8[:N] = torch.from_numpy(k[:, 0]).to(dev).to(torch.float8_e4m3fn)
        V8[:N] = torch.from_numpy(v[:, 0]).to(dev).to(torch.float8_e4m3fn)
        log[f"N{N}_e4m3_sha256"] = hashlib.sha256(b"".join(x.view(torch.uint8).cpu().numpy().tobytes()
                                                           for x in (Q8[:QH], K8[:N], V8[:N]))).hexdigest()
        refs = {}
        for name, (qq, kk, vv) in {"unquantized": (torch.from_numpy(q[0]).double(), torch.from_numpy(k[:, 0]).double(), torch.from_numpy(v[:, 0]).double()),
                                   "quantized": (Q8[:QH].double().cpu(), K8[:N].double().cpu(), V8[:N].double().cpu())}.items():
            qq, kk, vv = qq.to(dev), kk.to(dev), vv.to(dev)
            P = torch.softmax((qq @ kk.T) * scale, dim=1)
            refs[name] = (P @ vv).cpu().numpy()
        for S in SPLITS:
            tps = -(-n_tiles // S)
            for P, (suffix, fusion) in ((P, f) for P in PROMOTIONS for f in (("", False), ("_fma", True))):
                Os = torch.full((S, 64, D), float("nan"), device=dev)
                Lse = torch.full((S, 64), float("nan"), device=dev)
                kern = splitkv_fwd[(S,)](Q8, K8, V8, Os, Lse, N, n_tiles, tps, scale * LOG2E, PROMOTE=P, num_warps=4,
                                         enable_fp_fusion=fusion)
                torch.cuda.synchronize()
                if "wgmma" not in log:
                    try:
                        log["wgmma"] = "wgmma" in kern.asm["ptx"]
                    except Exception as ex:  # noqa: BLE001
                        log["wgmma"] = repr(ex)[:200]
                # The combine, float32, splits in index order.
                M = Lse.max(dim=0).values
                num, den = None, None
                for si in range(S):
                    w = torch.exp2(Lse[si] - M)
                    term = w[:, None] * Os[si]
                    num = term if num is None else num + term
                    den = w if den is None else den + w
                O = (num / den[:, None])[:QH].cpu().numpy().astype(np.float32)
                key = f"N{N}_S{S}_p{P}{suffix}"
                res[key] = O[None]
                line = {k: float(np.linalg.norm(O.astype(np.float64) - r) / np.linalg.norm(r)) for k, r in refs.items()}
                line["empty_splits"] = int(max(0, S - -(-n_tiles // tps)))
                log[key] = line
                print(key, json.dumps(line), flush=True)
    np.savez_compressed(os.path.join(out, "splitkv_h200.npz"), **res)
    with open(os.path.join(out, "splitkv_log.json"), "w") as f:
        json.dump(log, f, indent=1)
    print(f"wrote {out}/splitkv_h200.npz and splitkv_log.json; inputs in {args.inputs}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
