package main

import (
	"os"
	"strconv"
	"strings"
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
