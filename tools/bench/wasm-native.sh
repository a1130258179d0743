#!/bin/bash
# The browser against one native core (issue 17, BENCHMARKS.md): the wasm
# package's BenchmarkBrowserRuns (contraction, needle and scales at fixed
# sizes) natively on one core (-test.cpu 1, GOMAXPROCS=1) and as
# WebAssembly under node (Go's wasm_exec_node.js, single-threaded), for one
# or two builds of the module, interleaved, REPS times; one process per run,
# so that each line has the run's wall time and its CPU time (user + system,
# /usr/bin/time): on a shared machine the CPU time is the steadier figure.
# Every line also carries the run's point count and checksum: the two
# platforms and the two builds must agree on both.
#
#   tools/bench/wasm-native.sh [OLD_TREE]      # OLD_TREE: a worktree of the previous code
#
# PUREGO=1 also runs the native build with -tags purego (the pure-Go
# kernels WebAssembly runs, compiled for amd64), so that wasm/native splits
# into wasm/purego (what Go's WebAssembly code costs against its amd64
# code for the same source) times purego/native (what the vector kernels
# save natively).
#
# Output: one line per run, "build platform experiment wall_s cpu_s check
# points run_s" (run_s: the run's own time inside the process, the
# benchmark's ns/op, without the process's start, which for WebAssembly is
# node's start and V8's compiling of the module: about 0.6 CPU-s here),
# then per build, platform and experiment the minimum wall, CPU and run
# times over the repetitions and the wasm/native ratios of each.
set -euo pipefail
REPS=${REPS:-3}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
rm -f "$OUT/runs.txt" # an OUT used before keeps no runs of its own in the minimums
EXEC="$(go env GOROOT)/lib/wasm/wasm_exec_node.js"
trees=("new=$PWD")
[ $# -ge 1 ] && trees=("old=$1" "${trees[@]}")
for t in "${trees[@]}"; do
  name=${t%%=*} dir=${t#*=}
  (cd "$dir" && go test -c -o "$OUT/$name-native.test" ./wasm &&
    GOOS=js GOARCH=wasm go test -c -o "$OUT/$name-wasm.test" ./wasm &&
    if [ -n "${PUREGO:-}" ]; then go test -tags purego -c -o "$OUT/$name-purego.test" ./wasm; fi)
done
plats="native wasm"
[ -n "${PUREGO:-}" ] && plats="native purego wasm"
cd wasm # the test binaries' working directory, as go test gives it
for rep in $(seq "$REPS"); do
  for e in contraction needle scales; do
    for t in "${trees[@]}"; do
      name=${t%%=*}
      for plat in $plats; do
        if [ $plat != wasm ]; then
          cmd=("$OUT/$name-$plat.test" -test.cpu 1)
        else
          cmd=(node --stack-size=8192 "$EXEC" "$OUT/$name-wasm.test")
        fi
        line=$(GOMAXPROCS=1 /usr/bin/time -f "TIME %e %U %S" "${cmd[@]}" -test.run '^$' \
          -test.bench "BrowserRuns/$e\$" -test.benchtime 1x 2>&1 | grep -E '^(TIME|BenchmarkBrowserRuns)')
        wall=$(awk '/^TIME/{print $2}' <<<"$line")
        cpu=$(awk '/^TIME/{print $3+$4}' <<<"$line")
        check=$(awk '/^Bench/{for(i=1;i<NF;i++) if($(i+1)=="check") c=$i; else if($(i+1)=="points") p=$i; print c, p}' <<<"$line")
        # The run's own time inside the process (the benchmark's ns/op, one
        # op): what a lab user waits for after Run, the module already
        # compiled (the page's worker compiles it once, when the page loads).
        run=$(awk '/^Bench/{for(i=1;i<NF;i++) if($(i+1)=="ns/op") printf "%.2f", $i/1e9}' <<<"$line")
        echo "$name $plat $e $wall $cpu $check $run" | tee -a "$OUT/runs.txt"
      done
    done
  done
done
# The minimum wall, CPU and run times per build, experiment and platform,
# once: "A" lines against native, "B" lines (PUREGO=1) the purego split, "C"
# lines the runs' own times.
awk -v purego="${PUREGO:-}" '{key = $1 " " $3 " " $2
    if (!(key in w) || $4 < w[key]) w[key] = $4
    if (!(key in c) || $5 < c[key]) c[key] = $5
    if ($8 != "" && (!(key in r) || $8 < r[key])) r[key] = $8
    ks[$1 " " $3] = 1}
  END {for (k in ks) {
      printf "A %s  %.2f %.2f  %.2f %.2f  %.2f %.2f\n", k, w[k " native"], c[k " native"], w[k " wasm"], c[k " wasm"],
        w[k " wasm"] / w[k " native"], c[k " wasm"] / c[k " native"]
      if ((k " native") in r && (k " wasm") in r)
        printf "C %s  %.2f  %.2f  %.2f\n", k, r[k " native"], r[k " wasm"], r[k " wasm"] / r[k " native"]
      if (purego) printf "B %s  %.2f %.2f  %.2f  %.2f\n", k, w[k " purego"], c[k " purego"],
        c[k " wasm"] / c[k " purego"], c[k " purego"] / c[k " native"]}}' "$OUT/runs.txt" | sort >"$OUT/minimums.txt"
echo "--- minimum over $REPS runs: build experiment native(wall cpu) wasm(wall cpu) wasm/native(wall cpu)"
sed -n 's/^A //p' "$OUT/minimums.txt"
if [ -n "${PUREGO:-}" ]; then
  echo "--- purego: build experiment purego(wall cpu) wasm/purego(cpu) purego/native(cpu)"
  sed -n 's/^B //p' "$OUT/minimums.txt"
fi
echo "--- the run inside the process (ns/op): build experiment native_s wasm_s wasm/native"
sed -n 's/^C //p' "$OUT/minimums.txt"
echo "--- experiment checksum points: one line per experiment when every build and platform agree"
awk '{print $3, $6, $7}' "$OUT/runs.txt" | sort -u
echo "runs in $OUT/runs.txt"
