"""fp8lab.mmasim: MMA-Sim's entry points.  The MMA-Sim-shaped calls give
MMA-Sim's own outputs (the peer records of ../shared/golden/mmasim, each
file's instruction made from its `# source:` line, the MMA-Sim class, arch
and qualifier that wrote it) but for the documented deviations; a script
written against MMA-Sim runs with its import changed; uncovered
instructions are refused by name."""

import os
import re

import numpy as np
import pytest

import fp8lab
import fp8lab.mmasim
from fp8lab.mmasim.simulator import amd, nv_ptx

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = re.compile(r'mmasim\.simulator\.(nv_ptx|amd)\.(\w+)\("([^"]+)", "([^"]+)"\)')
FLOAT = {"f16": np.float16, "f32": np.float32, "tf32": np.float32, "f64": np.float64}
BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _values(codes, fmt):
    """Codes as the array MMA-Sim's call takes: floats for f16/tf32/f32/f64
    (xf32's f32 too), codes otherwise."""
    f = {"xf32": "f32"}.get(fmt, fmt)
    if f in FLOAT:
        return codes.astype(BITS[np.dtype(FLOAT[f]).itemsize]).view(FLOAT[f])
    return codes


def _pack(codes, axis):
    lo = np.take(codes, np.arange(0, codes.shape[axis], 2), axis=axis)
    hi = np.take(codes, np.arange(1, codes.shape[axis], 2), axis=axis)
    return (lo | (hi << 4)).astype(np.uint8)


def _peer_files(golden):
    d = os.path.join(golden, "mmasim")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".tsv.gz"))


def test_peer_records_through_mmasim_calls(golden):
    files = _peer_files(golden)
    assert len(files) == 51
    for path in files:
        heads, lines, a, b, sa, sb, c, d = fp8lab.golden.read_peer(path)
        mod, cls, arch, qual = SOURCE.search(heads["source"]).groups()
        sim = getattr(nv_ptx if mod == "nv_ptx" else amd, cls)(arch, qual)
        rep = fp8lab.golden.verify(path)
        deviating = set(rep.checks[0].deviating)
        picks = sorted(set(np.linspace(0, len(d) - 1, 24).astype(int)) | deviating)
        m, n, k, p = sim.m, sim.n, sim.k, sim.packing
        af, bf, cf = heads["a-format"], heads["b-format"], heads["c-format"]
        for start in range(0, len(picks), n):
            idx = picks[start:start + n]
            A = np.zeros((m, a.shape[1]), a.dtype)
            B = np.zeros((a.shape[1], n), b.dtype)
            C = np.zeros((m, n), c.dtype)
            for j, r in enumerate(idx):
                A[j, :a.shape[1]] = a[r]
                B[:b.shape[1], j] = b[r]
                C[j, j] = c[r]
            args = [_values(_pack(A, 1) if p == 2 else A, af), _values(_pack(B, 0) if p == 2 else B, bf), _values(C, cf)]
            if sa is not None:
                SA = np.full((m, sa.shape[1]), 127, np.uint8)
                SB = np.full((sa.shape[1], n), 127, np.uint8)
                for j, r in enumerate(idx):
                    SA[j] = sa[r]
                    SB[:, j] = sb[r]
                args += [SA, SB]
            D = sim(*args)
            assert D.shape == (m, n) and D.dtype == FLOAT[heads["d-format"]]
            got = D.view(BITS[D.dtype.itemsize])
            for j, r in enumerate(idx):
                g, want = int(got[j, j]), int(d[r])
                model = int(fp8lab.step(rep.model, a[r], b[r], c[r], scale_a=None if sa is None else sa[r],
                                        scale_b=None if sb is None else sb[r], bits=True))
                assert g == model, "%s line %d: the MMA-Sim-shaped call gives %x, fp8lab.step %x" % (path, lines[r], g, model)
                if r in deviating:
                    assert g != want  # a documented deviation stays one
                else:
                    same = g == want or (np.isnan(np.array([g]).astype(BITS[D.dtype.itemsize]).view(D.dtype))[0]
                                         and np.isnan(np.array([want]).astype(BITS[D.dtype.itemsize]).view(D.dtype))[0])
                    assert same, "%s line %d: %x, MMA-Sim wrote %x" % (path, lines[r], g, want)


def test_mmasim_style_script_runs_with_the_import_changed():
    # A script in MMA-Sim's own style (its README's example, NumPy where it
    # takes tensors), importing mmasim; only its imports are rewritten.
    src = open(os.path.join(HERE, "mmasim_style.py")).read()
    assert "from mmasim.nv_ptx.sim import MMA" in src
    changed = src.replace("from mmasim.", "from fp8lab.mmasim.")
    assert sum(a != b for a, b in zip(src.splitlines(), changed.splitlines())) == 2  # the two import lines
    env = {}
    exec(compile(changed, "mmasim_style.py", "exec"), env)
    assert env["checked"] > 0


def test_readme_example_with_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: MMA-Sim's README example uses torch tensors "
                                                "(the NumPy form of it runs in test_mmasim_style_script_runs_with_the_import_changed)")
    from fp8lab.mmasim.nv_ptx.sim import MMA
    from fp8lab.mmasim.amd.sim import MFMA
    mma_a100 = MMA("Ampere", "m16n8k16.f32.f16.f16.f32")
    mfma_mi300 = MFMA("CDNA3", "f32_16x16x16_f16")
    A = torch.randn([16, 16], dtype=torch.float16)
    B = torch.randn([16, 16], dtype=torch.float16)
    C = torch.zeros([16, 16], dtype=torch.float32)
    D_a100 = torch.cat([mma_a100(A, B[:, :8], C[:, :8]), mma_a100(A, B[:, 8:], C[:, 8:])], dim=1)
    D_mi300 = mfma_mi300(A, B, C)
    assert isinstance(D_a100, torch.Tensor) and D_a100.dtype == torch.float32
    assert (D_a100 - D_mi300).abs().max() < 1e-2


@pytest.mark.parametrize("cls,arch,qual,msg", [
    ("MMA", "Turing", "m16n8k8.f32.f16.f16.f32", "does not model"),
    ("MMA", "Hopper", "m16n8k16.f32.f16.f16.f32", "does not model"),
    ("WGMMA", "Hopper", "m64n8k32.f32.e4m3.e5m2", "does not model"),
    ("MMA", "Ampere", "not-a-qualifier", "does not model"),
])
def test_uncovered_refused(cls, arch, qual, msg):
    from fp8lab.mmasim.nv_ptx import sim
    with pytest.raises(fp8lab.mmasim.NotCovered, match=msg):
        getattr(sim, cls)(arch, qual)


def test_shapes_and_dtypes_checked():
    from fp8lab.mmasim.nv_ptx.sim import MMA, WGMMA
    s = MMA("Ampere", "m16n8k16.f32.f16.f16.f32")
    with pytest.raises(fp8lab.Error, match="shape"):
        s(np.zeros((16, 8), np.float16), np.zeros((16, 8), np.float16), np.zeros((16, 8), np.float32))
    with pytest.raises(fp8lab.Error, match="dtype"):
        s(np.zeros((16, 16), np.float32), np.zeros((16, 8), np.float16), np.zeros((16, 8), np.float32))
    w = WGMMA("Hopper", "m64n16k32.f32.e4m3.e4m3")
    assert w.model == "sm90.wgmma.e4m3.f32" and (w.m, w.n, w.k) == (64, 16, 32)
    with pytest.raises(fp8lab.Error, match="holds floats"):
        w(np.zeros((64, 32), np.float32), np.zeros((32, 16), np.uint8), np.zeros((64, 16), np.float32))
