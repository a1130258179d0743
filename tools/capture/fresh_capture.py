# Fresh H200 ground truth for fp8lab, written directly in the formats of
# ../shared/golden/h200 (see its README) so that `lab verify` checks it:
#   - one wgmma step per record, new seed: e4m3/e5m2 with c inside, e4m3 from
#     zero and promoted (fadd), f16/bf16 with c inside;
#   - long P.V-like contractions (K up to 262144) promoted every 32 / 128,
#     with cuBLASLt for comparison.
# Needs an NVIDIA Hopper GPU with PyTorch and Triton. Usage:
#   OUT=/tmp/fresh SEED=777 python3 fresh_capture.py
import os, sys
import numpy as np, torch, triton, triton.language as tl

OUT = os.environ.get("OUT", "/tmp/fresh"); os.makedirs(OUT, exist_ok=True)
SEED = int(os.environ.get("SEED", "777"))
dev = "cuda"
torch.manual_seed(SEED)
F8 = torch.float8_e4m3fn
gpu = torch.cuda.get_device_name()
DEVICE = f"# device: {gpu} (sm_{''.join(map(str, torch.cuda.get_device_capability()))}), PyTorch {torch.__version__}, Triton {triton.__version__}, seed {SEED}"

@triton.jit
def step(A, B, C, D, K: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    rm = tl.arange(0, 64); rn = tl.arange(0, 64); rk = tl.arange(0, K)
    a = tl.load(A + pid * 64 * K + rm[:, None] * K + rk[None, :])
    b = tl.load(B + pid * K * 64 + rk[:, None] * 64 + rn[None, :])
    c = tl.load(C + pid * 64 * 64 + rm[:, None] * 64 + rn[None, :])
    if MODE == 0:      # c inside the step
        d = tl.dot(a, b, c)
    elif MODE == 1:    # step from zero, then one FP32 add
        d = tl.dot(a, b) + c
    else:              # step from zero
        d = tl.dot(a, b)
    tl.store(D + pid * 64 * 64 + rm[:, None] * 64 + rn[None, :], d)

def codes(fmt, shape, mode):
    if fmt in ("e4m3", "e5m2"):
        dt = torch.float8_e4m3fn if fmt == "e4m3" else torch.float8_e5m2
        if mode == "allcodes":
            x = torch.randint(0, 256, shape, device=dev, dtype=torch.int32).to(torch.uint8).view(dt).float()
            return torch.where(torch.isfinite(x), x, torch.zeros_like(x)).to(dt)
        if mode == "normal":
            return torch.randn(shape, device=dev).to(dt)
        x = (torch.rand(shape, device=dev) * 15 + 1) * torch.where(torch.rand(shape, device=dev) < 0.5, -1.0, 1.0)
        return x.to(dt)
    dt = torch.float16 if fmt == "f16" else torch.bfloat16
    if mode == "allcodes":
        x = torch.randint(0, 65536, shape, device=dev, dtype=torch.int32).to(torch.int16).view(dt).float()
        x = torch.where(torch.isfinite(x), x, torch.zeros_like(x))
        x = torch.where(x.abs() > 2**10, x * 2**-20, x)
        return x.to(dt)
    if mode == "normal":
        return torch.randn(shape, device=dev).to(dt)
    x = (torch.rand(shape, device=dev) * 15 + 1) * torch.where(torch.rand(shape, device=dev) < 0.5, -1.0, 1.0)
    return x.to(dt)

def hexrow(u, digits):
    return "".join(f"{int(v):0{digits}x}" for v in u)

MODEL = {"e4m3": "sm90.wgmma.e4m3.f32", "e5m2": "sm90.wgmma.e5m2.f32", "f16": "sm90.wgmma.f16.f32", "bf16": "sm90.wgmma.bf16.f32"}
RECORD = {0: "d = step(a, b, c)", 1: "d = fadd(step(a, b, 0), c)", 2: "d = step(a, b, c)"}
KIND = {0: "inside", 1: "promote", 2: "zero"}
summary = []
for fmt, K, modes in [("e4m3", 32, (0, 1, 2)), ("e5m2", 32, (0,)), ("f16", 16, (0,)), ("bf16", 16, (0,))]:
    for inputs in ["allcodes", "normal", "narrow"]:
        for mode in modes:
            A = codes(fmt, (1, 64, K), inputs); B = codes(fmt, (1, K, 64), inputs)
            base = (A.float().abs().amax(dim=2, keepdim=True) * B.float().abs().amax(dim=1, keepdim=True)).clamp(min=2**-20)
            e = torch.randint(-30, 31, (1, 64, 64), device=dev).float()
            C = (torch.randn(1, 64, 64, device=dev) * base * torch.exp2(e)).float()
            C[:, :8, :] = 0.0
            if mode == 2:
                C.zero_()
            D = torch.empty(1, 64, 64, device=dev).fill_(float("nan"))
            step[(1,)](A, B, C, D, K=K, MODE=mode, num_warps=4)
            torch.cuda.synchronize()
            iw = torch.uint8 if fmt in ("e4m3", "e5m2") else torch.int16
            digits = 2 if iw == torch.uint8 else 4
            a = A.view(iw).cpu().numpy()[0].astype(np.int64) & (0xff if digits == 2 else 0xffff)
            b = B.view(iw).cpu().numpy()[0].astype(np.int64) & (0xff if digits == 2 else 0xffff)
            c = C.cpu().numpy()[0]; d = D.cpu().numpy()[0]
            cb = c.view(np.uint32); db = d.view(np.uint32)
            name = f"fresh_wgmma_{fmt}_{KIND[mode]}_{inputs}.tsv"
            n = 0
            with open(os.path.join(OUT, name), "w") as f:
                f.write("# fp8lab golden records v1\n")
                f.write(f"# model: {MODEL[fmt]}\n# record: {RECORD[mode]}\n# a-format: {fmt}\n# L: {K}\n")
                f.write(DEVICE + "\n")
                f.write(f"# op: Triton tl.dot on {fmt}, mode {KIND[mode]}; inputs: {inputs}\n")
                for i in range(64):
                    for j in range(64):
                        if not (np.isfinite(c[i, j]) and np.isfinite(d[i, j])):
                            continue
                        f.write(f"{hexrow(a[i], digits)}\t{hexrow(b[:, j], digits)}\t{int(cb[i, j]):08x}\t{int(db[i, j]):08x}\n")
                        n += 1
            summary.append(f"{name}: {n} records")

@triton.jit
def loop_kernel(A, B, D, K, BLOCK_K: tl.constexpr, MAXIMP: tl.constexpr):
    rm = tl.arange(0, 64); rn = tl.arange(0, 64); rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((64, 64), tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * 64 + rn[None, :])
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=MAXIMP)
    tl.store(D + rm[:, None] * 64 + rn[None, :], acc)

one = torch.tensor(1.0, device=dev)
for K in [2048, 131072, 262144]:
    logits = torch.randn(64, K, device=dev) * 2.0
    P = torch.softmax(logits, dim=1)
    pscale = 448.0 / P.amax()
    Pq = (P * pscale).clamp(max=448).to(F8)
    V = torch.randn(K, 64, device=dev).to(F8)
    ref = (Pq.double() @ V.double()).cpu().numpy()
    outs = {}
    for key, bk, imp in [("every32", 32, 32), ("every128", 128, 128)]:
        D = torch.empty(64, 64, device=dev).fill_(float("nan"))
        loop_kernel[(1,)](Pq, V, D, K, BLOCK_K=bk, MAXIMP=imp, num_warps=4)
        torch.cuda.synchronize(); outs[key] = D.cpu().numpy()
    for key, fast in [("cublas_fast", True), ("cublas", False)]:
        outs[key] = torch._scaled_mm(Pq, V.t().contiguous().t(), scale_a=one, scale_b=one, out_dtype=torch.float32, use_fast_accum=fast).cpu().numpy()
    A8 = Pq[:8].view(torch.uint8).cpu().numpy(); B8 = V[:, :8].contiguous().view(torch.uint8).cpu().numpy()
    name = f"fresh_long_e4m3_K{K}.txt"
    with open(os.path.join(OUT, name), "w") as f:
        f.write("# fp8lab golden long contraction v1\n# model: sm90.wgmma.e4m3.f32\n" + DEVICE + "\n")
        f.write(f"K {K}\npscale {pscale.item():.17g}\n")
        for i in range(8):
            f.write(f"a {i} {hexrow(A8[i], 2)}\n")
        for j in range(8):
            f.write(f"b {j} {hexrow(B8[:, j], 2)}\n")
        for i in range(8):
            for j in range(8):
                vals = " ".join(f"{k}={int(np.float32(outs[k][i, j]).view(np.uint32)):08x}" for k in ["every32", "every128", "cublas_fast", "cublas"])
                f.write(f"d {i} {j} {vals} ref={ref[i, j]:.17g}\n")
    summary.append(f"{name}: 64 outputs")
print("\n".join(summary))
