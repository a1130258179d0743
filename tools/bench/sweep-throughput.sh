#!/bin/bash
# The sweep-throughput figure of BENCHMARKS.md: N small contraction runs
# (K ≤ 16384) as a shell loop of `lab run` (one after another, and
# $(nproc) at a time with xargs -P), and as one `lab sweep` in a lab
# (its pool: one worker per CPU). Prints wall seconds and runs/s of each.
#   tools/bench/sweep-throughput.sh [N]     (uses bin/lab: make build first)
# MODES (default "serial parallel lab") picks and orders the measurements.
set -euo pipefail
N=${1:-200}
LAB=${LAB:-bin/lab}
ARGS=(-K 1024,4096,16384 -trials 16 -captures off)
now() { date +%s.%N; }
# CPU seconds (user + system) of this shell's finished children, and of a process.
# (times runs in this shell, not in a command substitution, which has no children.)
tf=$(mktemp)
snap() { times >"$tf"; tail -1 "$tf" | awk '{ split($1, u, "m"); split($2, s, "m"); print u[1] * 60 + u[2] + s[1] * 60 + s[2] }' >"$tf.c"; }
childcpu() { cat "$tf.c"; }
pidcpu() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
cpurate() { awk -v n="$N" -v a="$1" -v b="$2" 'BEGIN { printf "; %.3f CPU s per run", (b - a) / n }'; }
rate() { awk -v n="$N" -v a="$1" -v b="$2" 'BEGIN { printf "%.2f s, %.2f runs/s", b - a, n / (b - a) }'; }

MODES=${MODES:-serial parallel lab}
serial() {
snap; c0=$(childcpu)
t0=$(now)
for s in $(seq 1 "$N"); do "$LAB" run contraction "${ARGS[@]}" -seed "$s" -quiet >/dev/null; done
t1=$(now)
snap
echo "shell loop, one at a time:      $(rate "$t0" "$t1")$(cpurate "$c0" "$(childcpu)")"
}
parallel() {
snap; c0=$(childcpu)
t0=$(now)
seq 1 "$N" | xargs -P "$(nproc)" -I{} "$LAB" run contraction "${ARGS[@]}" -seed {} -quiet >/dev/null
t1=$(now)
snap
echo "shell loop, $(nproc) at a time (xargs): $(rate "$t0" "$t1")$(cpurate "$c0" "$(childcpu)")"
}

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$LAB" serve -addr "127.0.0.1:$port" -data "$dir" >/dev/null 2>"$dir/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir" "$tf" "$tf.c"' EXIT
until curl -fsS "http://127.0.0.1:$port/api/info" >/dev/null 2>&1; do sleep 0.05; done
lab() {
snap; c0=$(childcpu)
p0=$(pidcpu $pid)
t0=$(now)
"$LAB" sweep contraction "${ARGS[@]}" -seeds "1..$N" -executor pool -lab "http://127.0.0.1:$port" -quiet >/dev/null
t1=$(now)
snap; c1=$(childcpu)
p1=$(pidcpu $pid)
echo "lab sweep (pool of $(nproc)):     $(rate "$t0" "$t1")$(cpurate 0 "$(awk -v a="$c0" -v b="$c1" -v c="$p0" -v d="$p1" 'BEGIN { print b - a + d - c }')") (lab serve + lab sweep)"
}
for m in $MODES; do "$m"; done
