#!/bin/bash
# Runs the WebGPU tests (packages wgsl and cmd/gpucheck) N times (default 10),
# each with a fresh, empty Mesa shader cache, as on a fresh machine: the
# lavapipe compiles every shader again, so the first dispatches are slow
# (this is what crashed `make test` before wgsl's wait stopped trusting
# wgpu-native's 5 s waiting poll). Prints "N passed, M failed" and exits 1
# on any failure. Needs mesa-vulkan-drivers (make test-deps).
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
GO=${GO:-go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp/xdg CI=${CI:-true}
mkdir -m 700 "$XDG_RUNTIME_DIR"
$GO test -c -o "$tmp/wgsl.test" ./wgsl || exit 1
$GO test -c -o "$tmp/gpucheck.test" ./cmd/gpucheck || exit 1
pass=0 fail=0
for i in $(seq 1 "$runs"); do
	export MESA_SHADER_CACHE_DIR=$tmp/cache$i
	start=$SECONDS
	ok=1
	(cd wgsl && "$tmp/wgsl.test" -test.count=1 >"$tmp/wgsl$i.log" 2>&1) || ok=0
	(cd cmd/gpucheck && "$tmp/gpucheck.test" -test.count=1 >"$tmp/gpucheck$i.log" 2>&1) || ok=0
	if [ $ok = 1 ]; then
		pass=$((pass + 1))
		echo "run $i: ok ($((SECONDS - start)) s, cold cache)"
	else
		fail=$((fail + 1))
		echo "run $i: FAILED ($((SECONDS - start)) s); the end of its logs:"
		tail -n 5 "$tmp/wgsl$i.log" "$tmp/gpucheck$i.log"
	fi
	rm -rf "$MESA_SHADER_CACHE_DIR"
done
echo "cold-cache WebGPU tests: $pass passed, $fail failed"
[ $fail = 0 ]
