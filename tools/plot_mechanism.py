#!/usr/bin/env python3
"""Draws docs/img/mechanism.svg, the figure of docs/mechanism.md, from the
JSON lines of `lab run ... -json` in docs/runs/2026-12-01-h200 and the H200
split-KV probe's log (testdata/h200-splitkv/splitkv_log.json). Standard
library only; every number drawn is read from those files.

    python3 tools/plot_mechanism.py [RUNS_DIR] [OUT.svg]
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "docs", "runs", "2026-12-01-h200")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "docs", "img", "mechanism.svg")
PROBE = os.path.join(HERE, "..", "testdata", "h200-splitkv", "splitkv_log.json")

BLUE, ORANGE, GREEN, GREY, VERM = "#0072B2", "#E69F00", "#009E73", "#3f3f3f", "#D55E00"


def points(name):
    out = []
    with open(os.path.join(RUNS, name + ".jsonl")) as f:
        for line in f:
            d = json.loads(line)
            if d.get("type") == "point":
                out.append(d)
    return out


class Panel:
    """One chart: data → pixel transforms, axes with ticks, series."""

    def __init__(self, x0, y0, w, h, xr, yr, xlog=False, ylog=False, title="", xlabel="", ylabel=""):
        self.x0, self.y0, self.w, self.h = x0, y0, w, h
        self.xr, self.yr, self.xlog, self.ylog = xr, yr, xlog, ylog
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.items = []

    def _t(self, v, r, log):
        if log:
            v, r = math.log(v), (math.log(r[0]), math.log(r[1]))
        return (v - r[0]) / (r[1] - r[0])

    def px(self, x):
        return self.x0 + self._t(x, self.xr, self.xlog) * self.w

    def py(self, y):
        return self.y0 + self.h - self._t(y, self.yr, self.ylog) * self.h

    def line(self, xs, ys, color, dash="", marker="circle", lo=None, hi=None, label=None):
        pts = " ".join(f"{self.px(x):.1f},{self.py(y):.1f}" for x, y in zip(xs, ys))
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.items.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{d}/>')
        for i, (x, y) in enumerate(zip(xs, ys)):
            if lo is not None:
                self.items.append(f'<line x1="{self.px(x):.1f}" x2="{self.px(x):.1f}" y1="{self.py(lo[i]):.1f}" y2="{self.py(hi[i]):.1f}" stroke="{color}" stroke-width="1.5"/>')
            self.marker(x, y, color, marker)

    def marker(self, x, y, color, kind):
        X, Y = self.px(x), self.py(y)
        if kind == "diamond":
            self.items.append(f'<polygon points="{X:.1f},{Y-7:.1f} {X+7:.1f},{Y:.1f} {X:.1f},{Y+7:.1f} {X-7:.1f},{Y:.1f}" fill="{color}" stroke="white"/>')
        elif kind == "square":
            self.items.append(f'<rect x="{X-4:.1f}" y="{Y-4:.1f}" width="8" height="8" fill="{color}"/>')
        else:
            self.items.append(f'<circle cx="{X:.1f}" cy="{Y:.1f}" r="3.5" fill="{color}"/>')

    def legend(self, entries, x, y):
        for i, (label, color, dash, marker) in enumerate(entries):
            yy = y + 16 * i
            d = f' stroke-dasharray="{dash}"' if dash else ""
            if dash != "none":
                self.items.append(f'<line x1="{x}" x2="{x+22}" y1="{yy}" y2="{yy}" stroke="{color}" stroke-width="2"{d}/>')
            X, Y = x + 11, yy
            if marker == "diamond":
                self.items.append(f'<polygon points="{X},{Y-6} {X+6},{Y} {X},{Y+6} {X-6},{Y}" fill="{color}"/>')
            else:
                self.items.append(f'<circle cx="{X}" cy="{Y}" r="3" fill="{color}"/>')
            self.items.append(f'<text x="{x+28}" y="{yy+4}" font-size="11">{label}</text>')

    def svg(self, xticks, yticks, xfmt=str, yfmt=str):
        s = [f'<rect x="{self.x0}" y="{self.y0}" width="{self.w}" height="{self.h}" fill="none" stroke="#888"/>']
        for t in xticks:
            X = self.px(t)
            s.append(f'<line x1="{X:.1f}" x2="{X:.1f}" y1="{self.y0+self.h}" y2="{self.y0+self.h+4}" stroke="#444"/>')
            s.append(f'<text x="{X:.1f}" y="{self.y0+self.h+16}" font-size="11" text-anchor="middle">{xfmt(t)}</text>')
        for t in yticks:
            Y = self.py(t)
            s.append(f'<line x1="{self.x0-4}" x2="{self.x0+self.w}" y1="{Y:.1f}" y2="{Y:.1f}" stroke="#e4e4e4"/>')
            s.append(f'<text x="{self.x0-7}" y="{Y+4:.1f}" font-size="11" text-anchor="end">{yfmt(t)}</text>')
        s.append(f'<text x="{self.x0}" y="{self.y0-10}" font-size="13" font-weight="bold">{self.title}</text>')
        s.append(f'<text x="{self.x0+self.w/2}" y="{self.y0+self.h+34}" font-size="12" text-anchor="middle">{self.xlabel}</text>')
        s.append(f'<text transform="translate({self.x0-46},{self.y0+self.h/2}) rotate(-90)" font-size="12" text-anchor="middle">{self.ylabel}</text>')
        return "\n".join(s + self.items)


def kfmt(v):
    return f"{int(v // 1024)}k" if v >= 1024 else f"{v:g}"


def series(pts, name, key):
    p = [q for q in pts if q["series"] == name]
    return [q["x"] for q in p], [q[key] for q in p], [q.get(key + "_lo", q[key]) for q in p], [q.get(key + "_hi", q[key]) for q in p]


def main():
    parts = []
    ctx = [4096, 8192, 16384, 32768, 65536, 131072]
    # (a) shrinkage and residual vs context, prefill (the needle's defaults).
    pre = points("needle-prefill-balanced")
    a = Panel(80, 50, 380, 230, (3000, 180000), (0.5, 1.0), xlog=True,
              title="(a) FP8 single-level O is a uniform shrinkage", xlabel="context length (tokens), prefill, V mean 0.5σ",
              ylabel="shrinkage α = ⟨O,O*⟩/⟨O*,O*⟩")
    for name, color, dash in (("fp8", VERM, ""), ("fp8-two-level", BLUE, "6 3"), ("bf16", GREY, "2 3")):
        x, y, lo, hi = series(pre, name, "alpha")
        a.line(x, y, color, dash, lo=lo, hi=hi)
    a.legend([("fp8 single-level (FA3 as shipped)", VERM, "", "circle"), ("fp8 promoted every tile", BLUE, "6 3", "circle"),
              ("bf16", GREY, "2 3", "circle")], 100, 200)
    x, y, _, _ = series(pre, "fp8", "residual")
    x2, y2, _, _ = series(pre, "fp8-two-level", "relerr")
    a.items.append(f'<text x="100" y="252" font-size="11">single-level residual after α: {min(y):.2f}–{max(y):.2f} %</text>')
    a.items.append(f'<text x="100" y="266" font-size="11">two-level, whole error: {min(y2):.2f}–{max(y2):.2f} %</text>')
    parts.append(a.svg(ctx, [0.5, 0.6, 0.7, 0.8, 0.9, 1.0], kfmt, lambda v: f"{v:.1f}"))

    # (b) shrinkage vs the values' mean (sensitivity, 128k prefill).
    vm = points("sens-value-mean")
    b = Panel(580, 50, 380, 230, (-0.02, 0.52), (0.5, 1.0),
              title="(b) …that needs a non-zero value mean", xlabel="mean of V in units of its std (128k, prefill)",
              ylabel="shrinkage α")
    for name, color, dash in (("fp8 single-level", VERM, ""), ("fp8 two-level", BLUE, "6 3")):
        x, y, lo, hi = series(vm, name, "alpha")
        b.line(x, y, color, dash, lo=lo, hi=hi)
    parts.append(b.svg([0, 0.1, 0.2, 0.3, 0.4, 0.5], [0.5, 0.6, 0.7, 0.8, 0.9, 1.0], lambda v: f"{v:g}", lambda v: f"{v:.1f}"))

    # (c) single-level error vs splits at 128k: the simulation (decode) and
    # the H200 split-KV kernel (its own inputs).
    sp = points("sens-splits")
    c = Panel(80, 380, 380, 230, (0.8, 80), (0.02, 100), xlog=True, ylog=True,
              title="(c) split-KV decode shortens the chain", xlabel="split-KV ranges S (128k tokens, decode, kBlockN 96)",
              ylabel="relative L2 error of O (%)")
    for name, color, dash in (("fp8 single-level", VERM, ""), ("fp8 two-level", BLUE, "6 3")):
        x, y, lo, hi = series(sp, name, "relerr")
        c.line(x, y, color, dash, lo=lo, hi=hi)
    with open(PROBE) as f:
        log = json.load(f)
    hx, hy0, hy1 = [], [], []
    for s in (1, 4, 16, 64):
        e0 = log.get(f"N131072_S{s}_p0", {}).get("quantized")
        e1 = log.get(f"N131072_S{s}_p1", {}).get("quantized")
        if e0 is not None:
            hx.append(s)
            hy0.append(100 * e0)
            hy1.append(100 * e1)
    for s, e in zip(hx, hy0):
        c.marker(s, e, VERM, "diamond")
    for s, e in zip(hx, hy1):
        c.marker(s, e, BLUE, "diamond")
    c.legend([("single-level, simulated", VERM, "", "circle"),
              ("H200 split-KV kernel (own inputs)", VERM, "none", "diamond"),
              ("promoted every tile (◆ H200)", BLUE, "6 3", "circle")], 95, 484)
    c.items.append('<text x="95" y="600" font-size="10" fill="#555">error vs exact attention on the same e4m3 inputs</text>')
    parts.append(c.svg([1, 2, 4, 8, 16, 32, 64], [0.1, 1, 10, 100], lambda v: f"{v:g}", lambda v: f"{v:g}"))

    # (d) retrieval: the legacy probe collapses, the zero-sum probe does not.
    leg = points("needle-prefill-legacy")
    d = Panel(580, 380, 380, 230, (3000, 180000), (0, 1.05), xlog=True,
              title="(d) the collapse is the probe's, not the output's", xlabel="context length (tokens), prefill",
              ylabel="retrieval accuracy (95 % between-haystack)")
    x, y, lo, hi = series(pre, "fp8", "acc")
    d.line(x, y, VERM, "", lo=lo, hi=hi)
    x, y, lo, hi = series(leg, "fp8", "acc")
    d.line(x, y, VERM, "6 3", marker="square", lo=lo, hi=hi)
    x, y, lo, hi = series(pre, "bf16", "acc")
    d.line(x, y, GREY, "2 3", lo=lo, hi=hi)
    d.legend([("fp8 single-level, zero-sum probe (default)", VERM, "", "circle"), ("fp8 single-level, legacy probe (code sums ≠ 0)", VERM, "6 3", "circle"),
              ("bf16, zero-sum probe", GREY, "2 3", "circle")], 600, 540)
    parts.append(d.svg(ctx, [0, 0.2, 0.4, 0.6, 0.8, 1.0], kfmt, lambda v: f"{v:.1f}"))

    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="680" font-family="sans-serif">',
           '<rect width="1000" height="680" fill="white"/>'] + parts + [
           '<text x="80" y="668" font-size="10" fill="#555">fp8lab, 2026-12-01: needle task, e4m3 scale 1.0, head_dim 128, 8 haystacks × 12 trials (a, d) or × 6 (b, c); '
           'bars: 95 % intervals between haystacks; docs/mechanism.md</text>', '</svg>']
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("\n".join(svg) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
