"""A real kernel's measured error per context length, logged into the lab
beside fp8lab's prediction for the same inputs (open the printed
#compare/... address: the page overlays the two runs).

The measured kernel is PyTorch's scaled_dot_product_attention on the CPU
(torch.nn.functional, float32) over a KV cache stored in FP8 e4m3 (K and V
cast with .to(torch.float8_e4m3fn), as a cache write would, then read back
to float32), one decode query, error against float64 attention on the
unquantized tensors.  --kernel numpy measures the same kernel written in
NumPy (float32) when PyTorch is not installed.  The prediction is
fp8lab.attention on the same Q, K, V: the same e4m3 cache (PyTorch's nosat
cast) read by FlashAttention-3's FP8 kernel on Hopper, through the
bit-exact wgmma model, with and without two-level accumulation.  The CPU
kernel computes in FP32, so its error is the cache quantization alone; the
prediction adds what FA3's FP8 kernel does beyond the cache: Q and P cast
to e4m3 and the tensor cores' accumulation.

    python3 examples/kernel_error_vs_sim.py --lab http://127.0.0.1:8080
"""

import argparse
import sys

import numpy as np

import fp8lab
from fp8lab.lab import Client


def exact_attention(q, k, v):
    """float64 attention of one query per head: q [1, H, d], k/v [n, H, d]."""
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = np.einsum("qhd,nhd->hqn", q64, k64) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hqn,nhd->qhd", p, v64)


def torch_kernel(q, k, v):
    import torch
    import torch.nn.functional as F
    kq = torch.from_numpy(k).to(torch.float8_e4m3fn).to(torch.float32)
    vq = torch.from_numpy(v).to(torch.float8_e4m3fn).to(torch.float32)
    qt = torch.from_numpy(q)
    o = F.scaled_dot_product_attention(qt.permute(1, 0, 2), kq.permute(1, 0, 2), vq.permute(1, 0, 2))
    return o.permute(1, 0, 2).numpy().astype(np.float64)


def numpy_kernel(q, k, v):
    kq = fp8lab.decode("e4m3", fp8lab.encode("e4m3", k, sat="nosat"))
    vq = fp8lab.decode("e4m3", fp8lab.encode("e4m3", v, sat="nosat"))
    s = np.einsum("qhd,nhd->hqn", q, kq).astype(np.float32) * np.float32(1 / np.sqrt(q.shape[-1]))
    p = np.exp(s - s.max(axis=-1, keepdims=True)).astype(np.float32)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hqn,nhd->qhd", p, vq).astype(np.float64)


def rel_l2(o, ref):
    return float(np.linalg.norm(o - ref) / np.linalg.norm(ref))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lab", default="http://127.0.0.1:8080")
    ap.add_argument("--contexts", default="1024,4096,16384")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kernel", choices=["torch", "numpy"], default="torch")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if args.kernel == "torch":
        try:
            import torch  # noqa: F401
        except ImportError:
            print("PyTorch is not installed: use --kernel numpy, or install a CPU build of torch", file=sys.stderr)
            return 2
    kernel = torch_kernel if args.kernel == "torch" else numpy_kernel
    contexts = [int(x) for x in args.contexts.split(",")]
    lab = Client(args.lab)
    params = {"kernel": "torch sdpa fp32, e4m3 KV cache" if args.kernel == "torch" else "numpy fp32, e4m3 KV cache",
              "heads": args.heads, "head_dim": 128, "contexts": contexts}
    measured = lab.register("kernel-error", params=dict(params, source="measured"), seed=args.seed,
                            title="%s kernel: measured error" % args.kernel)
    predicted = lab.register("kernel-error", params=dict(params, source="fp8lab prediction (FA3 FP8 on Hopper)"),
                             seed=args.seed, title="fp8lab prediction")
    rng = np.random.default_rng(args.seed)
    with measured, predicted:
        for i, n in enumerate(contexts):
            q = rng.standard_normal((1, args.heads, 128)).astype(np.float32)
            k = rng.standard_normal((n, args.heads, 128)).astype(np.float32)
            v = rng.standard_normal((n, args.heads, 128)).astype(np.float32)
            ref = exact_attention(q, k, v)
            err = rel_l2(kernel(q, k, v), ref)
            measured.point("measured " + args.kernel, n, 100 * err)
            sim = fp8lab.attention(q, k, v, format="e4m3", saturation="nosat", promotions=[0, 1])
            for p, name in ((0, "fp8lab FA3 single-level"), (1, "fp8lab FA3 two-level")):
                e = sim.errors[p]["vs_exact"]
                predicted.point(name, n, 100 * e["rel_l2"], alpha=e["alpha"], residual=100 * e["residual"])
            measured.progress(i + 1, len(contexts))
            predicted.progress(i + 1, len(contexts))
            print("n=%6d  measured %.4f%%  predicted %.4f%% (two-level %.4f%%)" % (
                n, 100 * err, 100 * sim.errors[0]["vs_exact"]["rel_l2"], 100 * sim.errors[1]["vs_exact"]["rel_l2"]))
    print("runs", measured.id, predicted.id)
    print("compare:", lab.compare_url([predicted.id, measured.id]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
