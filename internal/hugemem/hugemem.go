// Package hugemem asks the kernel to back large buffers with transparent
// huge pages: a hint that costs one system call per buffer and changes no
// byte of it.
//
// Why: the experiments allocate gigabytes of fresh buffers per run (a
// default needle draws 48 haystacks: their values, caches, reference views
// and packed copies), and on Linux each 4 KiB page of them costs a page
// fault on the core that first touches it. With transparent huge pages in
// "madvise" mode (the default of most distributions) a 2 MiB page is only
// given to ranges that ask for it; Advise asks. A run's page faults, and
// the kernel's work freeing its pages at exit, fall by the page count.
//
// Measured (BENCHMARKS.md, 2026-12-07, three runs each): on the H100 host
// (a 16-core Xeon VM with the GPU passed through) the hint took the
// default needle's GPU run from 1.87–1.91 to 1.62–1.72 s, its page faults
// from 1.37 M to 0.31 M and its system time from 4.7–5.0 to 3.6–4.1 s,
// and made no run there slower. On the 2-core development VM it made the
// needle's CPU run slower (-trials 8: 3.6–4.2 → 4.3–4.6 s, system time
// 0.5–1.3 → 1.5–2.4 s, five runs each) with no compaction counted by the
// kernel. FP8LAB_HUGEPAGES=off in the environment turns the hint off.
package hugemem

import (
	"os"
	"sync"
	"unsafe"
)

// MinBytes is the smallest buffer Advise considers: below it the aligned
// 2 MiB pages inside are too few to be worth a system call.
const MinBytes = 4 << 20

// PageBytes is the huge page Advise aligns to (x86-64 and arm64 Linux).
const PageBytes = 2 << 20

// Advise asks that the whole 2 MiB pages inside s's capacity be backed by
// huge pages when they are first touched (Linux: madvise MADV_HUGEPAGE;
// elsewhere, for buffers under MinBytes, and with FP8LAB_HUGEPAGES=off in
// the environment, nothing). Pages already touched keep their small pages.
// It is a hint: errors are ignored, s's contents are unchanged, and it
// returns s.
func Advise[T any](s []T) []T {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n < MinBytes || off() {
		return s
	}
	p := unsafe.Pointer(unsafe.SliceData(s[:cap(s)]))
	off := (PageBytes - uintptr(p)%PageBytes) % PageBytes
	if off+PageBytes > n {
		return s
	}
	whole := (n - off) / PageBytes * PageBytes
	advise(unsafe.Slice((*byte)(unsafe.Add(p, off)), whole))
	return s
}

// off reports whether FP8LAB_HUGEPAGES=off turns the hint off (read once).
var off = sync.OnceValue(func() bool { return os.Getenv("FP8LAB_HUGEPAGES") == "off" })
