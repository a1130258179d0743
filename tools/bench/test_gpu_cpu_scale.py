"""Tests of gpu_cpu_scale.py's fit and intervals (no GPU, no lab run)."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import gpu_cpu_scale as g  # noqa: E402


def runs(a_g, b_g, a_c, b_c, sizes, noise=0.0):
    out = []
    for k, n in enumerate(sizes):
        for rep in range(3):
            e = noise * (rep - 1)
            out.append({"n": n, "device": "gpu", "wall": a_g + b_g * n + e})
            out.append({"n": n, "device": "cpu", "wall": a_c + b_c * n - e})
    return out


def test_fit_exact_line():
    a, b = g.fit([(1, 3.0), (2, 5.0), (4, 9.0)])
    assert abs(a - 1) < 1e-12 and abs(b - 2) < 1e-12


def test_fit_needs_two_sizes():
    try:
        g.fit([(3, 1.0), (3, 2.0)])
    except ValueError:
        return
    raise AssertionError("one size must not fit a line")


def test_analyse_recovers_costs_and_limit():
    sizes = [10, 40, 160]
    res = g.analyse(runs(0.5, 0.01, 0.1, 0.04, sizes), sizes)
    assert abs(res["gpu"]["a"] - 0.5) < 1e-9 and abs(res["gpu"]["b"] - 0.01) < 1e-12
    assert abs(res["limit"] - 4.0) < 1e-9
    lo, hi = res["limit_ci"]
    assert lo - 1e-9 <= 4.0 <= hi + 1e-9
    # the ratio at each size is the two lines' quotient
    for r in res["ratios"]:
        want = (0.1 + 0.04 * r["n"]) / (0.5 + 0.01 * r["n"])
        assert abs(r["ratio"] - want) < 1e-9


def test_interval_widens_with_noise():
    sizes = [10, 40, 160]
    quiet = g.analyse(runs(0.5, 0.01, 0.1, 0.04, sizes, noise=0.001), sizes)["limit_ci"]
    loud = g.analyse(runs(0.5, 0.01, 0.1, 0.04, sizes, noise=0.2), sizes)["limit_ci"]
    assert loud[1] - loud[0] > quiet[1] - quiet[0] > 0


def test_crossover():
    # (0.1 + 0.04 n) / (0.5 + 0.01 n) = 3 at n = (1.5 - 0.1) / (0.04 - 0.03) = 140
    assert abs(g.crossover(0.5, 0.01, 0.1, 0.04, 3) - 140) < 1e-9
    assert g.crossover(0.5, 0.02, 0.1, 0.04, 3) == float("inf")  # tends to 2
    assert g.crossover(0.1, 0.02, 0.5, 0.04, 2) == 0  # 5 at n = 0, 2 for large n
    sizes = [10, 40, 160]
    res = g.analyse(runs(0.5, 0.01, 0.1, 0.04, sizes), sizes, 3.0)
    assert abs(res["crossover"] - 140) < 1e-6
    lo, hi = res["crossover_ci"]
    assert lo - 1e-6 <= 140 <= hi + 1e-6
    # a free GPU cost per unit: the CPU line over the GPU's fixed cost
    for r in res["ratios"]:
        assert abs(r["free_gpu"] - (0.1 + 0.04 * r["n"]) / 0.5) < 1e-9


def usage_error(capsys, argv):
    """main(argv)'s standard error; it must exit 2, a usage error."""
    try:
        g.main(argv)
    except SystemExit as e:
        assert e.code == 2
    else:
        raise AssertionError(f"{argv}: no error")
    return capsys.readouterr().err


def test_bad_input_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.setenv("LAB", "/nonexistent/lab")
    assert "not an executable file" in usage_error(capsys, ["needle", "trials", "96,288"])
    for argv in (["needle", "trials", "96,x"], ["needle", "trials", "96"]):
        usage_error(capsys, argv)
    monkeypatch.setenv("LAB", "/bin/true")
    for argv, want in [(["needle", "trials", "96,x"], "comma-separated integers"),
                       (["needle", "trials", "96,0"], "positive"), (["needle", "trials", "96,96"], "two different")]:
        assert want in usage_error(capsys, argv)
