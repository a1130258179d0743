#!/usr/bin/env python3
"""Where the wall time of a run goes: the user-defined regions of an
execution trace (`lab run NAME -trace F`), summed.

    tools/bench/trace_regions.py run.trace            # a table, one row a region type
    tools/bench/trace_regions.py run.trace --timeline # and each type's busy intervals

It reads `go tool trace -d=parsed F` (GO names the go command; default
"go"). Per region type: how many, their summed duration (CPU-bound regions:
about the CPU seconds; regions that wait: the waiting), the wall time at
least one of them was open (the union of their intervals), and when the
first began and the last ended, in seconds from the trace's first event.
A region still open when the trace ends is counted up to its last event.
"""
import collections
import os
import re
import subprocess
import sys

_EVENT = re.compile(r'\bG=(-?\d+)\s+Region(Begin|End)\s+Time=(\d+).*?Type="(.*)"\s*$')
_TIME = re.compile(r'\bTime=(\d+)')


def parse(lines):
    """Returns (regions, t0, t1): regions maps a type to its [begin, end)
    intervals in nanoseconds; t0 and t1 are the first and last event times."""
    open_ = collections.defaultdict(list)  # (goroutine, type) -> begin stack
    regions = collections.defaultdict(list)
    t0 = t1 = None
    for line in lines:
        m = _TIME.search(line)
        if m:
            t = int(m.group(1))
            t0 = t if t0 is None else min(t0, t)
            t1 = t if t1 is None else max(t1, t)
        m = _EVENT.search(line)
        if not m:
            continue
        g, kind, t, typ = m.group(1), m.group(2), int(m.group(3)), m.group(4)
        if kind == "Begin":
            open_[(g, typ)].append(t)
        elif open_[(g, typ)]:
            regions[typ].append((open_[(g, typ)].pop(), t))
    for (g, typ), begins in open_.items():
        for b in begins:
            regions[typ].append((b, t1))
    return regions, t0 or 0, t1 or 0


def union(intervals):
    """The disjoint, sorted union of the intervals."""
    out = []
    for b, e in sorted(intervals):
        if out and b <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([b, e])
    return out


def table(regions, t0, t1, timeline=False):
    rows = [f"trace: {(t1 - t0) / 1e9:.3f} s from the first event to the last",
            f"{'region':<72} {'count':>6} {'sum s':>8} {'wall s':>8} {'first':>7} {'last':>7}"]
    order = sorted(regions, key=lambda k: min(b for b, _ in regions[k]))
    for typ in order:
        iv = regions[typ]
        u = union(iv)
        rows.append(f"{typ[:72]:<72} {len(iv):>6} {sum(e - b for b, e in iv) / 1e9:>8.3f} "
                    f"{sum(e - b for b, e in u) / 1e9:>8.3f} {(u[0][0] - t0) / 1e9:>7.3f} {(u[-1][1] - t0) / 1e9:>7.3f}")
        if timeline:
            rows.append("    " + " ".join(f"[{(b - t0) / 1e9:.2f}, {(e - t0) / 1e9:.2f}]" for b, e in u))
    return "\n".join(rows)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    go = os.environ.get("GO", "go")
    p = subprocess.run([go, "tool", "trace", "-d=parsed", args[0]], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"{go} tool trace -d=parsed {args[0]}: {p.stderr.strip()}", file=sys.stderr)
        return 1
    regions, t0, t1 = parse(p.stdout.splitlines())
    if not regions:
        print(f"{args[0]}: no user-defined regions in the trace", file=sys.stderr)
        return 1
    print(table(regions, t0, t1, "--timeline" in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
