#!/bin/bash
# The GPU/CPU table of issue 17 (BENCHMARKS.md): every experiment that
# takes -device gpu, at its default sizes, with -device gpu and -device
# cpu, one after the other on an otherwise idle machine; per run the wall
# time, the CPU time (user + system) and the summary, and whether the two
# summaries are equal; the GPU runs also write a CPU profile
# (go tool pprof -top LAB OUT/NAME-gpu.pprof) and an execution trace
# (tools/bench/trace_regions.py OUT/NAME-gpu.trace: when each phase ran;
# TRACE=0 leaves it out, for a binary older than lab run -trace).
# Run it on the machine with
# the GPU, the binary built with cgo (make build, or go build ./cmd/lab):
#   LAB=bin/lab OUT=dir tools/bench/gpu-cpu-table.sh
# attention-file reads a dump: DUMP=dir (tools/dump_qkv.py's output) or,
# without one, random tensors written here with NumPy (a 131072-token
# layer: 32 query heads over 8 KV heads, head_dim 128, thd).
# nvidia-smi's clocks before and after each run go to OUT/clocks.txt.
# Each row's second line gives the wall ratio and its ceiling: the GPU
# run's CPU seconds spread perfectly over every core are a floor on its
# wall time, so cpu/gpu cannot exceed (CPU run's wall) × cores / (GPU
# run's CPU seconds) unless that CPU work shrinks or leaves the host.
# On a machine without a Vulkan loader, run cmd/gpucheck/run.sh once first
# (it unpacks the loader packages); the NVIDIA ICD is picked as it does.
set -uo pipefail
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -z "${VK_ICD_FILENAMES:-}" ]; then
  for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
    if [ -f "$j" ]; then export VK_DRIVER_FILES=$j; break; fi
  done
fi
LAB=${LAB:-bin/lab}
OUT=${OUT:-gpu-cpu-table}
mkdir -p "$OUT"
if [ -z "${DUMP:-}" ]; then
  DUMP=$OUT/random-dump
  if [ ! -f "$DUMP/layer0_q.npy" ]; then
    mkdir -p "$DUMP"
    python3 - "$DUMP" <<'PY' || { echo "NumPy needed for the random attention-file inputs (or give DUMP=dir)"; exit 1; }
import sys, numpy as np
d = sys.argv[1]; rng = np.random.default_rng(17); n = 131072
np.save(f"{d}/layer0_q.npy", rng.standard_normal((1, 32, 128), dtype=np.float32))
np.save(f"{d}/layer0_k.npy", rng.standard_normal((n, 8, 128), dtype=np.float32))
np.save(f"{d}/layer0_v.npy", (0.5 + rng.standard_normal((n, 8, 128))).astype(np.float32))
PY
  fi
fi
clocks() { command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv,noheader | sed "s/^/$1 /" >>"$OUT/clocks.txt"; }
row() { # name, device, args...
  local name=$1 dev=$2; shift 2
  clocks "$name-$dev before:"
  local prof=()
  [ "$dev" = gpu ] && prof=(-cpuprofile "$OUT/$name-gpu.pprof")
  [ "$dev" = gpu ] && [ "${TRACE:-1}" = 1 ] && prof+=(-trace "$OUT/$name-gpu.trace")
  local TIMEFORMAT='%R %U %S' rc
  { time "$LAB" run "$@" -device "$dev" -json -quiet "${prof[@]}" >"$OUT/$name-$dev.jsonl" 2>"$OUT/$name-$dev.err"; rc=$?; } 2>"$OUT/$name-$dev.time"
  clocks "$name-$dev after:"
  read -r w u s <"$OUT/$name-$dev.time"
  printf "%-14s %-4s rc %d  wall %8.1f s  CPU %8.1f s\n" "$name" "$dev" "$rc" "$w" "$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')"
}
for e in "needle needle" "promotion promotion" "kv-formats kv-formats" "scales scales" \
         "attention-file attention-file -dump $DUMP -promotions 0,1 -splits auto"; do
  set -- $e
  name=$1; shift
  row "$name" gpu "$@"
  row "$name" cpu "$@"
  python3 - "$OUT/$name-gpu.jsonl" "$OUT/$name-cpu.jsonl" "$OUT/$name-gpu.time" "$OUT/$name-cpu.time" "$(nproc)" <<'PY'
import json, sys
def secs(p):
    w, u, s = map(float, open(p).read().split()[:3])
    return w, u + s
(wg, cg), (wc, cc), cores = secs(sys.argv[3]), secs(sys.argv[4]), int(sys.argv[5])
# The GPU run lasts at least its CPU seconds spread over every core, so its
# cpu/gpu wall ratio cannot exceed wc / (cg / cores) while it does the CPU
# work it does now.
ceiling = f"{wc * cores / cg:.2f}" if cg > 0 else "unbounded"
print(f"               cpu/gpu wall {wc / max(wg, 1e-9):.2f}; at most {ceiling} with this CPU work ({cg:.1f} CPU-s on {cores} cores)")
def summary(p):
    for l in open(p):
        r = json.loads(l)
        if r.get("type") == "summary":
            return r.get("values", r)
a, b = summary(sys.argv[1]), summary(sys.argv[2])
print("               summaries", "EQUAL" if a == b and a else "DIFFER", f"({len(a or {})} values)")
PY
done
