#!/bin/bash
# The most -device gpu can gain on an experiment, from a -device cpu run's
# CPU profile (issue 17, BENCHMARKS.md): the CPU seconds of the simulated
# kernels (the samples under attention.runKernels, which a GPU run sends
# to the GPU) against the run's whole CPU seconds. A GPU run still does
# the rest on the host (drawing and quantizing the inputs, the float64
# references, reading and hashing files) and adds its own (packing,
# uploads, opening the device), so were its kernels free and its host work
# as parallel as the CPU run's, cpu/gpu wall could not exceed
#   bound = total / (total − kernels).
# It needs no GPU: run it on the machine whose cores you ask about.
#   LAB=bin/lab OUT=dir DUMP=dir tools/bench/amdahl.sh
# DUMP: an attention-file dump (tools/dump_qkv.py, or gpu-cpu-table.sh's
# random one); without it attention-file is left out.
set -uo pipefail
LAB=${LAB:-bin/lab}
OUT=${OUT:-amdahl}
GO=${GO:-go}
mkdir -p "$OUT"
runs=("needle needle" "promotion promotion" "kv-formats kv-formats" "scales scales")
[ -n "${DUMP:-}" ] && runs+=("attention-file attention-file -dump $DUMP -promotions 0,1 -splits auto")
printf "%-14s %10s %12s %8s %8s\n" experiment "CPU s" "kernels s" share bound
for e in "${runs[@]}"; do
  set -- $e
  name=$1; shift
  "$LAB" run "$@" -device cpu -json -quiet -cpuprofile "$OUT/$name.pprof" >"$OUT/$name.jsonl" || { echo "$name: run failed"; continue; }
  # pprof's durations: "26.75s", "980ms", "1.2mins".
  secs() { awk '{v=$1+0; if ($1 ~ /ms$/) v/=1000; else if ($1 ~ /mins$/) v*=60; else if ($1 ~ /hrs$/) v*=3600; printf "%.3f", v}' <<<"$1"; }
  tot=$("$GO" tool pprof -top "$LAB" "$OUT/$name.pprof" 2>/dev/null | sed -n 's/.*Total samples = \([0-9.]*[a-z]*\).*/\1/p')
  ker=$("$GO" tool pprof -top -focus 'attention\.runKernels' "$LAB" "$OUT/$name.pprof" 2>/dev/null | sed -n 's/^Showing nodes accounting for \([0-9.]*[a-z]*\),.*/\1/p')
  tot=$(secs "$tot"); ker=$(secs "${ker:-0s}")
  awk -v n="$name" -v t="$tot" -v k="$ker" 'BEGIN { printf "%-14s %10.2f %12.2f %7.0f%% %8.2f\n", n, t, k, 100*k/t, t/(t-k) }'
done
