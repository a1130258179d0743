#!/usr/bin/env python3
"""The GPU/CPU wall-time table of issue 17, item 2, in a running lab: the
regime where a run with -device gpu takes the device the lab's runs share
(`lab serve -gpu-idle`), opened and with its pipelines compiled, instead of
opening its own as a fresh `lab run` process does (gpu-cpu-table.sh).

    LAB=bin/lab python3 tools/bench/lab_table.py [--reps 3] [--params JSON]
        [--idle 10m] [--max-memory SIZE] [EXP ...]

It starts `LAB serve` on a free port of 127.0.0.1 with a private data folder
and one worker (runs one at a time), runs each experiment once with -device
gpu to warm up (the device's open, the pipelines, the clocks; not counted),
then REPS times each experiment with -device cpu and -device gpu, alternated.
A run's wall time is the lab's own record of it (ended - started), so HTTP and
polling are not in it. Per experiment it prints every run's time, the median
cpu/gpu ratio with the range of the per-rep ratios, and whether every GPU
run's summary equals every CPU run's (NaN as null). EXP defaults to needle,
promotion, kv-formats and scales at their defaults; --params adds parameters
to every run (e.g. '{"trials": 2}'); --idle is the lab's -gpu-idle ('' for a
lab from before it, whose GPU runs each open their own device), --max-memory
its budget. A run the lab refuses stops the table with the lab's reason. The
exit status is 1 if a run fails or the summaries differ.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime

DEFAULT_EXPS = ["needle", "promotion", "kv-formats", "scales"]


def parse_time(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


class Lab:
    def __init__(self, binary, idle, max_memory):
        self.data = tempfile.mkdtemp(prefix="lab_table.")
        args = [binary, "serve", "-addr", "127.0.0.1:0", "-data", self.data, "-workers", "1"]
        if idle:  # a lab from before -gpu-idle (2026-12-07) takes none: give --idle ''
            args += ["-gpu-idle", idle]
        if max_memory:
            args += ["-max-memory", max_memory]
        self.log = open(os.path.join(self.data, "serve.log"), "w+")
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()  # "fp8lab lab on http://ADDR/  (notebook …)"
        if "http://" not in line:
            self.proc.kill()
            self.log.seek(0)
            raise SystemExit(f"lab_table: {' '.join(args)} printed {line!r}; its log:\n{self.log.read()}")
        self.url = line.split("http://", 1)[1].split("/", 1)[0]

    def call(self, method, path, body=None):
        req = urllib.request.Request(f"http://{self.url}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:  # the lab's answer says why (a budget, a parameter)
            raise SystemExit(f"lab_table: {method} {path} {json.dumps(body)}: {e.code} {e.read().decode(errors='replace')}")

    def run(self, exp, params, timeout=600):
        r = self.call("POST", "/api/runs", {"experiment": exp, "params": params, "seed": 1})
        rid = r.get("id") or r["run"]["id"]
        deadline = time.time() + timeout
        while time.time() < deadline:
            x = self.call("GET", f"/api/runs/{rid}")
            x = x.get("run", x)
            if x["state"] not in ("queued", "running"):
                return x
            time.sleep(0.02)
        raise SystemExit(f"lab_table: {exp} did not end within {timeout} s")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--params", default="{}", help="JSON object of parameters for every run")
    ap.add_argument("--idle", default="10m", help="the lab's -gpu-idle ('': none given, for a lab from before it)")
    ap.add_argument("--max-memory", default="", help="the lab's -max-memory (default: the lab's own)")
    ap.add_argument("exps", nargs="*", default=DEFAULT_EXPS)
    a = ap.parse_args(argv)
    extra = json.loads(a.params)
    lab = Lab(os.environ.get("LAB", "bin/lab"), a.idle, a.max_memory)
    bad = False
    try:
        info = lab.call("GET", "/api/info")
        if "max_memory" in info:  # a lab from before 2026-12-07 does not say
            print(f"lab: budget {info['max_memory'] / 2**30:.3g} GiB, {info['max_work']:.2g} operations a run", flush=True)
        for e in a.exps:  # warm-up: one GPU run each, not counted
            r = lab.run(e, {**extra, "device": "gpu"})
            print(f"warm-up {e} gpu: {r['state']} {parse_time(r['ended']) - parse_time(r['started']):.3f} s", flush=True)
        times = {e: {"cpu": [], "gpu": []} for e in a.exps}
        sums = {e: {"cpu": [], "gpu": []} for e in a.exps}
        for rep in range(a.reps):
            for e in a.exps:
                for dev in ("cpu", "gpu"):
                    r = lab.run(e, {**extra, "device": dev})
                    wall = parse_time(r["ended"]) - parse_time(r["started"])
                    print(f"rep {rep} {e} {dev}: {r['state']} {wall:.3f} s", flush=True)
                    if r["state"] != "done":
                        print(f"  error: {r.get('error')}")
                        bad = True
                        continue
                    times[e][dev].append(wall)
                    sums[e][dev].append(json.dumps(r.get("summary"), sort_keys=True))
        print("experiment   cpu s (median)  gpu s (median)  cpu/gpu (median; per-rep range)  summaries")
        for e in a.exps:
            c, g = times[e]["cpu"], times[e]["gpu"]
            if not c or not g:
                print(f"{e:12s} no complete pair")
                continue
            ratios = sorted(x / y for x, y in zip(c, g))
            same = len(set(sums[e]["cpu"] + sums[e]["gpu"])) == 1
            bad |= not same
            print(f"{e:12s} {statistics.median(c):14.3f} {statistics.median(g):15.3f} "
                  f"{statistics.median(c) / statistics.median(g):9.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})"
                  f"{'':18s}{'equal' if same else 'DIFFER'}")
    finally:
        lab.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
