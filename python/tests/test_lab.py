"""fp8lab.lab.Client against a real `lab serve` on a free loopback port:
a client run registered, streamed (idempotently: a repeated batch is taken
once), ended and read back as NumPy columns beside a run the lab computed;
the comparison report shows both; a cancel in the lab reaches the client;
a sweep's aggregate reads back as a table."""

import json
import math
import time
import urllib.request

import numpy as np
import pytest

from fp8lab.lab import CancelledInLab, Client, LabError


def test_client_run_beside_a_simulated_run(lab_url):
    lab = Client(lab_url)
    assert "build" in lab.info()
    xs = [1024, 4096, 16384]
    with lab.register("python-kernel-error", params={"kernel": "test", "dtype": "e4m3"}, seed=7, title="from pytest") as run:
        for i, x in enumerate(xs):
            run.point("measured", x, 1e-3 * (i + 1), p99=2e-3 * (i + 1))
        run.point("measured", 65536, math.nan)  # non-finite: null on the wire, NaN back
        run.note("a note")
        run.progress(4, 4)
        run.summary({"max_err": 3e-3})
        run.flush()
        # A lost answer: the same batch sent again from the same index is
        # taken once (the lab holds the points already).
        held = run.sent
        run._sent -= 2
        run._pending = [{"series": "measured", "x": 4096.0, "y": 2e-3, "extra": {"p99": 4e-3}},
                        {"series": "measured", "x": 16384.0, "y": 3e-3, "extra": {"p99": 6e-3}}]
        run.flush()
        assert run.sent == held
    rec = lab.run(run.id)
    assert rec["state"] == "done" and rec["origin"] == "client" and rec["points"] == 4
    assert rec["summary"]["max_err"] == 3e-3 and "a note" in "\n".join(rec.get("notes") or [])
    pts = lab.points(run.id)
    assert list(pts["series"]) == ["measured"] * 4
    assert np.array_equal(pts["x"], [1024, 4096, 16384, 65536])
    assert np.allclose(pts["y"][:3], [1e-3, 2e-3, 3e-3]) and math.isnan(pts["y"][3])
    assert np.allclose(pts["p99"][:3], [2e-3, 4e-3, 6e-3])
    x, y = pts.by_series()["measured"]
    assert len(x) == 4

    # A run the lab simulates, and the report overlaying both.
    sim = lab.start("contraction", params={"K": [1024, 4096], "trials": 2, "series": "sm90"}, seed=1)
    done = lab.wait(sim["id"], timeout=120)
    assert done["state"] == "done", done
    assert len(lab.points(sim["id"])) > 0
    html = urllib.request.urlopen(lab.report_url([sim["id"], run.id]), timeout=60).read().decode()
    assert "python-kernel-error" in html and "contraction" in html
    assert lab.compare_url([sim["id"], run.id]).endswith("#compare/%s,%s" % (sim["id"], run.id))
    ids = [r["id"] for r in lab.runs(experiment="python-kernel-error")]
    assert run.id in ids


def test_failed_and_cancelled_runs(lab_url):
    lab = Client(lab_url)
    with pytest.raises(ZeroDivisionError):
        with lab.register("python-kernel-error", params={"kernel": "fails"}) as run:
            run.point("measured", 1, 1)
            1 / 0
    rec = lab.run(run.id)
    assert rec["state"] == "failed" and "ZeroDivisionError" in rec["error"]

    run = lab.register("python-kernel-error", params={"kernel": "cancelled"})
    run.point("measured", 1, 1)
    run.flush()
    req = urllib.request.Request(lab_url + "/api/runs/%s/cancel" % run.id, data=b"", method="POST")
    urllib.request.urlopen(req, timeout=10).read()
    with pytest.raises(CancelledInLab):
        run.point("measured", 2, 2)
        run.flush()
    assert lab.run(run.id)["state"] == "cancelled"


def test_lab_errors(lab_url):
    lab = Client(lab_url)
    with pytest.raises(LabError, match="no run"):
        lab.run("999999")
    with pytest.raises(LabError) as e:
        lab.start("contraction", params={"K": [0]})
    assert e.value.status == 400 and "K" in e.value.message
    with pytest.raises(Exception, match="not an http"):
        Client("ftp://x")


def test_sweep_aggregate(lab_url):
    lab = Client(lab_url)
    body = {"experiment": "contraction", "params": {"K": [1024], "trials": 2, "series": "sm90"},
            "axes": [{"name": "dist", "values": ["pv", "normal"]}], "seeds": "1..2"}
    sw = lab._request("POST", "/api/sweeps", body)
    deadline = time.monotonic() + 120
    while lab.sweep(sw["id"])["state"] not in ("done", "failed", "cancelled"):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    agg = lab.aggregate(sw["id"])
    t = agg["table"]
    assert len(t) > 0 and set(t["n"]) == {2.0}
    assert set(t["key.dist"]) == {"pv", "normal"}
    assert np.all(np.isfinite(t["mean"]))
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas is not installed"):
            t.to_pandas()
    else:
        assert len(t.to_pandas()) == len(t)
