"""fp8lab.attention gives the O of `lab run attention-file` bit for bit on
the same tensors (np.save'd here, read by the lab program), with the error
decomposition rel_l2^2 = (1 - alpha)^2 + residual^2; split-KV and bad input."""

import json
import os
import subprocess

import numpy as np
import pytest

import fp8lab


@pytest.mark.parametrize("layout,params", [
    ("thd", {"promotions": "0,1"}),
    ("htd", {"format": "e5m2", "scale": "amax", "causal": True, "window": 200, "promotions": [0, 4]}),
    ("thd", {"format": "nvfp4", "path": "block-scaled", "arch": "blackwell", "promotions": [1]}),
])
def test_equals_attention_file(lab_bin, tmp_path, layout, params):
    r = np.random.default_rng(5)
    mq, qh, n, kvh, d = 3, 4, 500, 2, 128
    q = r.standard_normal((mq, qh, d)).astype(np.float32)
    k = r.standard_normal((n, kvh, d)).astype(np.float32)
    v = r.standard_normal((n, kvh, d)).astype(np.float32)
    if layout == "htd":
        q, k, v = (x.transpose(1, 0, 2).copy() for x in (q, k, v))
    for name, x in (("q", q), ("k", k), ("v", v)):
        np.save(tmp_path / (name + ".npy"), x)
    res = fp8lab.attention(q, k, v, layout=layout, **params)
    proms = params["promotions"] if isinstance(params["promotions"], list) else [int(p) for p in params["promotions"].split(",")]
    args = [lab_bin, "run", "attention-file", "-layout", layout, "-q", str(tmp_path / "q.npy"), "-k", str(tmp_path / "k.npy"),
            "-v", str(tmp_path / "v.npy"), "-o", str(tmp_path), "-json"]
    for key, val in params.items():
        args.append("-%s=%s" % (key.replace("_", "-"), ",".join(map(str, val)) if isinstance(val, list) else str(val).lower()))
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    summary = {}
    for line in out.stdout.splitlines():
        rec = json.loads(line)
        summary.update(rec.get("summary") or {})
    for p in proms:
        want = np.load(tmp_path / ("o_promotion%d.npy" % p))  # [mq, qh, dv]
        got = res.o[p] if layout == "thd" else res.o[p].transpose(1, 0, 2)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), "promotion %d" % p
        e = res.errors[p]["vs_exact"]
        if summary:
            assert e["rel_l2"] == pytest.approx(summary["relerr_p%d" % p], rel=1e-12)
        assert e["rel_l2"] ** 2 == pytest.approx((1 - e["alpha"]) ** 2 + e["residual"] ** 2, rel=1e-9)
        assert len(res.errors[p]["per_head"]) == qh
    exact = np.load(tmp_path / "o_exact.npy")
    ex = res.exact if layout == "thd" else res.exact.transpose(1, 0, 2)
    assert np.array_equal(ex.astype(np.float32), exact)


def test_splits_auto_and_errors():
    r = np.random.default_rng(6)
    q = r.standard_normal((1, 8, 128)).astype(np.float32)
    k = r.standard_normal((8192, 1, 128)).astype(np.float32)
    v = r.standard_normal((8192, 1, 128)).astype(np.float32)
    res = fp8lab.attention(q, k, v, splits="auto", promotions=[0])
    assert res.plan["splits"] > 1 and res.plan["decode"]
    one = fp8lab.attention(q, k, v, promotions=[0])
    assert one.plan["splits"] == 1
    assert res.errors[0]["vs_exact"]["rel_l2"] < 2 * one.errors[0]["vs_exact"]["rel_l2"] + 1e-4
    bad = q.copy()
    bad[0, 0, 3] = np.nan
    for call, msg in (
        (lambda: fp8lab.attention(bad, k, v), "every input must be finite"),
        (lambda: fp8lab.attention(q, k[:, :, :64], v), "head dim"),
        (lambda: fp8lab.attention(q, k, v, window=-1), 'parameter "window"'),
        (lambda: fp8lab.attention(q, k, v, format="e9m9"), 'parameter "format"'),
        (lambda: fp8lab.attention(q, k, v, colour="red"), "unknown parameter"),
        (lambda: fp8lab.attention(q[:, :3], np.concatenate([k, k], 1), np.concatenate([v, v], 1)), "GQA"),
        (lambda: fp8lab.attention(q.astype(np.int32), k, v), "must be floats"),
    ):
        with pytest.raises(fp8lab.Error, match=msg):
            call()
