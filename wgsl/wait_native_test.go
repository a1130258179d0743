//go:build !js && cgo

package wgsl

import (
	"context"
	"encoding/binary"
	"testing"
	"time"
)

// xorshift32 is the spin kernel's step, n times from x.
func xorshift32(x uint32, n int) uint32 {
	for range n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
	}
	return x
}

// spinRun dispatches the spin kernel over groups workgroups of 256
// invocations and returns the wall time of run (which waits for the GPU).
func spinRun(t *testing.T, g *gpu, groups int, src, dst buffer, check bool) time.Duration {
	t.Helper()
	const wg, steps = 256, 60000
	k := &kernelSpec{file: "probe", entry: "spin", consts: []constDecl{cU32("WG", wg)}, storage: []access{readOnly, readWrite}}
	gx := min(groups, 32768)
	gy := (groups + gx - 1) / gx
	n := groups * wg
	t0 := time.Now()
	if _, err := g.run(context.Background(), []call{{k: k, bufs: []buffer{src, dst}, params: []uint32{steps, uint32(n), 0, 0}, x: uint32(gx), y: uint32(gy)}}, false); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(t0)
	if !g.dev.Poll(false, nil) {
		t.Fatalf("run returned after %v with the GPU queue still busy: the wait gave up early", wall)
	}
	if check {
		raw, err := g.read(context.Background(), dst, uint64(4*n))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i += max(1, n/97) {
			if got, want := binary.LittleEndian.Uint32(raw[4*i:]), xorshift32(uint32(i+1), steps); got != want {
				t.Fatalf("spin invocation %d: got %08x, want %08x (work not finished when read?)", i, got, want)
			}
		}
	}
	return wall
}

// TestWaitOutlastsPollTimeout runs one dispatch longer than the 5 s after
// which a waiting wgpu-native poll gives up and treats the work as done
// (then frees its command buffer under the driver: the segmentation faults
// of a cold-cache `make test` on lavapipe). The wait must last until the
// queue is really empty, and the results must be complete.
func TestWaitOutlastsPollTimeout(t *testing.T) {
	r := testGPU(t)
	if testing.Short() {
		t.Skip("-short: the 6 s dispatch is not run")
	}
	g, ok := r.be.(*gpu)
	if !ok {
		t.Skipf("backend %T is not the native one", r.be)
	}
	if err := r.lock(); err != nil {
		t.Fatal(err)
	}
	defer r.mu.Unlock()
	const maxGroups = 1 << 16
	dst, err := g.alloc("spin.r", 4*256*maxGroups)
	if err != nil {
		t.Fatal(err)
	}
	defer g.free(dst)
	src, err := g.alloc("spin.x", 16) // bound, never read
	if err != nil {
		t.Fatal(err)
	}
	defer g.free(src)
	// Calibrate (the first run also compiles the kernel), then size one
	// dispatch to about 7 s: long enough to pass the 5 s timeout with a
	// margin, whatever the speed of the device.
	groups := 8
	var per time.Duration
	for {
		d := spinRun(t, g, groups, src, dst, false)
		per = d / time.Duration(groups)
		if d > 300*time.Millisecond || groups >= maxGroups {
			break
		}
		groups = min(4*groups, maxGroups)
	}
	// Workgroups run in parallel, so the calibration is only a first
	// guess: grow the dispatch until one lasts past the timeout.
	want := int(7 * time.Second / max(per, 1))
	for try := 0; ; try++ {
		if want > maxGroups {
			t.Skipf("device too fast for a 7 s dispatch of %d workgroups: the timeout is not reached here", maxGroups)
		}
		wall := spinRun(t, g, want, src, dst, true)
		t.Logf("one dispatch of %d workgroups: %v", want, wall)
		if wall >= 5500*time.Millisecond {
			return
		}
		if try == 2 {
			t.Fatalf("no dispatch lasted past the 5 s poll timeout in 3 tries (last %v): the test did not exercise it", wall)
		}
		want = int(float64(want) * 7 / wall.Seconds())
	}
}
