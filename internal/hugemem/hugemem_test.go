package hugemem

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestAdviseKeepsContents: Advise returns its argument, contents and
// all, for buffers of every size (empty, under MinBytes, unaligned, large)
// and element type.
func TestAdviseKeepsContents(t *testing.T) {
	for _, n := range []int{0, 1, 1000, MinBytes/4 - 1, MinBytes / 4, 3*MinBytes + 12345} {
		b := make([]float32, n)
		for i := range b {
			b[i] = float32(i)
		}
		got := Advise(b[:n/2])
		if len(got) != n/2 || cap(got) != n || unsafe.SliceData(got) != unsafe.SliceData(b) {
			t.Fatalf("n %d: Advise returned len %d cap %d, another slice", n, len(got), cap(got))
		}
		for i := range b {
			if b[i] != float32(i) {
				t.Fatalf("n %d: element %d changed to %v", n, i, b[i])
			}
		}
	}
	Advise([]struct{}{}) // zero-size elements: nothing to advise
}

// TestAdviseMarksHugePages (Linux): after Advise, the mapping that holds
// the buffer's first whole 2 MiB page carries the kernel's "hg" flag
// (MADV_HUGEPAGE) in /proc/self/smaps; with FP8LAB_HUGEPAGES=off it does
// not.
func TestAdviseMarksHugePages(t *testing.T) {
	if !Enabled {
		t.Skip("Advise makes no system call on " + runtime.GOOS)
	}
	b := Advise(make([]byte, 16<<20))
	p := uintptr(unsafe.Pointer(&b[0]))
	page := (p + PageBytes - 1) / PageBytes * PageBytes
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps: ", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(line, ":") && len(strings.Fields(line)) >= 5 {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			z, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(a) <= page && page < uintptr(z)
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			if want := !off(); strings.Contains(line, " hg") != want {
				t.Errorf("the buffer's mapping has %q; the hg flag wanted: %v", line, want)
			}
			runtime.KeepAlive(b)
			return
		}
	}
	t.Errorf("no mapping of /proc/self/smaps holds %#x", page)
}
