#!/usr/bin/env python3
"""How the GPU/CPU wall ratio of an experiment moves with its size (issue 17).

The table of tools/bench/gpu-cpu-table.sh measures the default sizes only,
where a GPU run's fixed costs (the device's open, the shaders' pipelines,
the first group drawn before the GPU has work) weigh most. This script runs
one experiment at several values of one size flag (-trials by default),
-device gpu and -device cpu alternated, fresh processes, and fits each
device's wall time as a + b*n by least squares over every run:

  a  the fixed cost of a run (s), b  the cost of one more unit (s/unit),

so that cpu/gpu at size n is (a_c + b_c n) / (a_g + b_g n), and the ratio
toward which it tends for large runs is b_c / b_g. Two more figures follow
from the fit: the size from which cpu/gpu reaches --target (3 by default;
n* = (T a_g - a_c) / (b_c - T b_g), none when b_c <= T b_g), and, at each
measured size, the most cpu/gpu could be if the GPU run's cost per unit
were zero while its fixed cost stayed, (a_c + b_c n) / a_g. Intervals are 95 %
percentile bootstraps over the runs (resampled within each size), so they
say how well these runs pin the figures down on this machine, not how
another machine would do. Every run's summary must equal its pair's on the
other device (written into the output; a difference is reported, not
hidden).

  LAB=bin/lab python3 tools/bench/gpu_cpu_scale.py needle trials 96,384,1536 --reps 2 [-- more lab run flags]

Prints one line per run and the fit; --json FILE writes every run. It only
starts processes and reads their output: the timings are `lab run`'s, with
resource usage of the child for CPU seconds.
"""

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time


def run(lab, exp, flag, n, dev, extra):
    """Runs one fresh `lab run`; returns wall s, CPU s, the summary, rc."""
    cmd = [lab, "run", exp, flag, str(n), "-device", dev, "-json", "-quiet"] + extra
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = None
    for line in p.stdout.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("type") == "summary":
            summary = r.get("values", r)
    return {"n": n, "device": dev, "wall": wall, "cpu": cpu, "rc": p.returncode,
            "summary": summary, "stderr": p.stderr[-400:] if p.returncode else ""}


def fit(points):
    """Least squares of y = a + b x over (x, y) pairs; returns a, b."""
    m = len(points)
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    d = m * sxx - sx * sx
    if m < 2 or d == 0:
        raise ValueError("a fit needs at least two sizes")
    b = (m * sxy - sx * sy) / d
    return (sy - b * sx) / m, b


def bootstrap(runs, stats, reps=2000, seed=1):
    """95 % percentile intervals of each of stats(resampled runs), a dict
    of named figures, resampling the runs of each (size, device) with
    replacement; a figure a resample cannot give (a fit of one size, a
    division by zero) is left out of that figure's interval."""
    rng = random.Random(seed)
    cells = {}
    for r in runs:
        cells.setdefault((r["n"], r["device"]), []).append(r)
    vals = {}
    for _ in range(reps):
        sample = []
        for cell in cells.values():
            sample += [rng.choice(cell) for _ in cell]
        try:
            figs = stats(sample)
        except ValueError:
            continue
        for k, f in figs.items():
            try:
                vals.setdefault(k, []).append(f())
            except ZeroDivisionError:
                pass
    out = {}
    for k, v in vals.items():
        v.sort()
        out[k] = (v[int(0.025 * (len(v) - 1))], v[int(0.975 * (len(v) - 1))]) if v else (float("nan"), float("nan"))
    return out


def crossover(ag, bg, ac, bc, target):
    """The size at which (ac + bc n) / (ag + bg n) reaches target; inf
    when it never does, 0 when it always does."""
    if bc <= target * bg:
        return 0.0 if ac >= target * ag else float("inf")
    return max(0.0, (target * ag - ac) / (bc - target * bg))


def analyse(runs, sizes, target=3.0):
    """The fit per device, the ratio at each size and its limit, with intervals."""
    def stats(sample):
        # Each figure as a function of the two fits, computed once a sample.
        (ag, bg), (ac, bc) = [fit([(r["n"], r["wall"]) for r in sample if r["device"] == d]) for d in ("gpu", "cpu")]
        figs = {"gpu.a": lambda: ag, "gpu.b": lambda: bg, "cpu.a": lambda: ac, "cpu.b": lambda: bc,
                "limit": lambda: bc / bg, "crossover": lambda: crossover(ag, bg, ac, bc, target)}
        for n in sizes:
            figs[f"free_gpu.{n}"] = lambda n=n: (ac + bc * n) / ag
        return figs

    point = {k: f() for k, f in stats(runs).items()}
    ci = bootstrap(runs, stats)
    out = {dev: {"a": point[dev + ".a"], "b": point[dev + ".b"], "a_ci": ci[dev + ".a"], "b_ci": ci[dev + ".b"]}
           for dev in ("gpu", "cpu")}
    out["limit"], out["limit_ci"] = point["limit"], ci["limit"]
    out["target"] = target
    out["crossover"], out["crossover_ci"] = point["crossover"], ci["crossover"]
    out["ratios"] = []
    for n in sizes:
        g = [r["wall"] for r in runs if r["n"] == n and r["device"] == "gpu"]
        c = [r["wall"] for r in runs if r["n"] == n and r["device"] == "cpu"]
        out["ratios"].append({"n": n, "gpu": statistics.median(g), "cpu": statistics.median(c),
                              "ratio": statistics.median(c) / statistics.median(g),
                              "lo": min(c) / max(g), "hi": max(c) / min(g),
                              "free_gpu": point[f"free_gpu.{n}"], "free_gpu_ci": ci[f"free_gpu.{n}"]})
    return out


def reanalyse(path, target=3.0):
    """The fit of a --json file written before, printed again."""
    d = json.load(open(path))
    ok = [r for r in d["runs"] if r["rc"] == 0]
    return analyse(ok, d["sizes"], target)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment")
    ap.add_argument("flag", help="the size flag without its dash, e.g. trials")
    ap.add_argument("sizes", help="comma-separated values, at least two")
    ap.add_argument("--reps", type=int, default=2, help="runs per size and device (default 2)")
    ap.add_argument("--json", help="write every run and the fit here")
    ap.add_argument("--target", type=float, default=3.0, help="the cpu/gpu ratio whose crossover size is given (default 3)")
    argv = sys.argv[1:] if argv is None else argv
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    a = ap.parse_args(argv)
    a.extra = extra
    lab = os.environ.get("LAB", "bin/lab")
    a.flag = "-" + a.flag.lstrip("-")
    if not (os.path.isfile(lab) and os.access(lab, os.X_OK)):
        ap.error(f"LAB={lab}: not an executable file (build it: make build, or go build -o bin/lab ./cmd/lab)")
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        ap.error(f"sizes {a.sizes!r}: want comma-separated integers, e.g. 96,288,864")
    if any(n <= 0 for n in sizes):
        ap.error(f"sizes {a.sizes!r}: each must be positive")
    if len(set(sizes)) < 2:
        ap.error("give at least two different sizes")
    runs = []
    for rep in range(a.reps):
        for n in sizes:
            devs = ("gpu", "cpu") if rep % 2 == 0 else ("cpu", "gpu")
            pair = {}
            for dev in devs:
                r = run(lab, a.experiment, a.flag, n, dev, a.extra)
                pair[dev] = r
                runs.append(r)
                print(f"{a.experiment} {a.flag} {n:>8} {dev} rc {r['rc']} wall {r['wall']:7.2f} s CPU {r['cpu']:7.2f} s",
                      flush=True)
                if r["rc"]:
                    print("  stderr:", r["stderr"].strip().replace("\n", " | "), flush=True)
            same = pair["gpu"]["summary"] == pair["cpu"]["summary"] and pair["gpu"]["summary"] is not None
            for dev in devs:
                pair[dev]["summaries_equal"] = same
            print(f"  summaries {'EQUAL' if same else 'DIFFER'}", flush=True)
    ok = [r for r in runs if r["rc"] == 0]
    res = analyse(ok, sizes, a.target)
    for dev in ("gpu", "cpu"):
        f = res[dev]
        print(f"{dev}: wall = {f['a']:.3f} s [{f['a_ci'][0]:.3f}, {f['a_ci'][1]:.3f}] + "
              f"{f['b'] * 1e3:.3f} ms [{f['b_ci'][0] * 1e3:.3f}, {f['b_ci'][1] * 1e3:.3f}] per unit of {a.flag}")
    for r in res["ratios"]:
        print(f"{a.flag} {r['n']:>8}: gpu {r['gpu']:.2f} s, cpu {r['cpu']:.2f} s, cpu/gpu {r['ratio']:.2f} "
              f"(runs' range {r['lo']:.2f}-{r['hi']:.2f}); at most {r['free_gpu']:.2f} "
              f"[{r['free_gpu_ci'][0]:.2f}, {r['free_gpu_ci'][1]:.2f}] with a free GPU cost per unit")
    print(f"cpu/gpu for large runs (b_cpu / b_gpu): {res['limit']:.2f} [{res['limit_ci'][0]:.2f}, {res['limit_ci'][1]:.2f}]")
    print(f"cpu/gpu reaches {a.target:g} from {a.flag} {res['crossover']:.0f} "
          f"[{res['crossover_ci'][0]:.0f}, {res['crossover_ci'][1]:.0f}] (inf: never, on this fit)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"experiment": a.experiment, "flag": a.flag, "sizes": sizes, "runs": runs, "fit": res}, f, indent=1)
    return 0 if len(ok) == len(runs) and all(r.get("summaries_equal") for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
