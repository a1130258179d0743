package main

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/fp8lab/fp8lab/sim"
)

// machineMemory is the memory this process may use, in bytes: the
// machine's physical memory (physicalMemory), or the limit of its cgroup
// (cgroup v2's memory.max, v1's memory.limit_in_bytes) where that is lower.
// It returns 0 where neither can be read; lab serve's default budget then
// stays labserver.DefaultMaxMemory.
func machineMemory() int64 {
	m := physicalMemory()
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if c := cgroupLimit(f); c > 0 && (m == 0 || c < m) {
			m = c
		}
	}
	return m
}

// cgroupLimit reads a cgroup memory limit file: a number of bytes, or
// "max" (no limit: 0, as for a missing or unreadable file). cgroup v1
// writes an unset limit as a number near 2^63, which physicalMemory's
// lower figure replaces.
func cgroupLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}

// goMemoryLimit sets the Go runtime's soft memory limit
// (runtime/debug.SetMemoryLimit) to limit bytes, at least minGoLimit,
// unless the GOMEMLIMIT environment variable is set (the user's setting
// wins, "off" included) or limit is not positive. It returns the limit now
// in force (math.MaxInt64: none) and a function that puts back the one
// before (lab run's limit lasts for its run only: the tests run the lab's
// commands in one process).
//
// Why: the experiments' estimates (sim.Cost.Memory) count the bytes a run
// holds live, and a lab's budget adds them up. Go's collector lets the
// heap grow to about twice its live bytes before it collects (GOGC=100),
// so without a limit a run may hold more than its estimate although its
// live bytes are well under it: the default needle with -device gpu held
// 4.4–4.7 GB of Go heap for 2.9–3.0 GB live at most on lavapipe with 16 Ps
// (2026-12-07). With a limit the collector runs earlier as the heap nears
// it, and only then. Memory outside Go's heap (a GPU driver's, lavapipe's
// device buffers: sim.Cost.Outside) is not under the limit, which is why
// lab run's limit is Memory − Outside.
func goMemoryLimit(limit int64) (int64, func()) {
	before := debug.SetMemoryLimit(-1)
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok || limit <= 0 {
		return before, func() {}
	}
	limit = max(limit, minGoLimit)
	debug.SetMemoryLimit(limit)
	return limit, func() { debug.SetMemoryLimit(before) }
}

// minGoLimit is the least limit goMemoryLimit sets: the experiments'
// estimates start at 64 MiB (their base), and a limit near the runtime's
// own few MiB would keep the collector running without end.
const minGoLimit = 64 << 20

// goLimitText writes a Go memory limit for the log ("none" for
// math.MaxInt64, the runtime's "no limit").
func goLimitText(limit int64) string {
	if limit == math.MaxInt64 {
		return "none"
	}
	return sim.Bytes(limit)
}
