#!/bin/bash
# The sweep-throughput figure of BENCHMARKS.md: N small contraction runs
# (K ≤ 16384) as a shell loop of `lab run` (one after another, and
# $(nproc) at a time with xargs -P), and as one `lab sweep` in a lab
# (its pool: one worker per CPU). Prints wall seconds and runs/s of each.
#   tools/bench/sweep-throughput.sh [N]     (uses bin/lab: make build first)
set -euo pipefail
N=${1:-200}
LAB=${LAB:-bin/lab}
ARGS=(-K 1024,4096,16384 -trials 16 -captures off)
now() { date +%s.%N; }
rate() { awk -v n="$N" -v a="$1" -v b="$2" 'BEGIN { printf "%.2f s, %.2f runs/s", b - a, n / (b - a) }'; }

t0=$(now)
for s in $(seq 1 "$N"); do "$LAB" run contraction "${ARGS[@]}" -seed "$s" -quiet >/dev/null; done
t1=$(now)
echo "shell loop, one at a time:      $(rate "$t0" "$t1")"

t0=$(now)
seq 1 "$N" | xargs -P "$(nproc)" -I{} "$LAB" run contraction "${ARGS[@]}" -seed {} -quiet >/dev/null
t1=$(now)
echo "shell loop, $(nproc) at a time (xargs): $(rate "$t0" "$t1")"

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$LAB" serve -addr "127.0.0.1:$port" -data "$dir" >/dev/null 2>"$dir/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
until curl -fsS "http://127.0.0.1:$port/api/info" >/dev/null 2>&1; do sleep 0.05; done
t0=$(now)
"$LAB" sweep contraction "${ARGS[@]}" -seeds "1..$N" -executor pool -lab "http://127.0.0.1:$port" -quiet >/dev/null
t1=$(now)
echo "lab sweep (pool of $(nproc)):     $(rate "$t0" "$t1")"
