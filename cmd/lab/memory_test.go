package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	labserver "github.com/fp8lab/fp8lab/lab"
)

func TestCgroupLimit(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text string
		want       int64
	}{
		{"v2 limit", "8589934592\n", 8 << 30},
		{"v2 unlimited", "max\n", 0},
		{"v1 unset", "9223372036854771712\n", 9223372036854771712},
		{"garbage", "lots\n", 0},
		{"empty", "", 0},
		{"zero", "0\n", 0},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		if err := os.WriteFile(p, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := cgroupLimit(p); got != c.want {
			t.Errorf("%s: cgroupLimit(%q) = %d, want %d", c.name, c.text, got, c.want)
		}
	}
	if got := cgroupLimit(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("a missing file: %d, want 0", got)
	}
}

// TestServeDefaultMaxMemory: on Linux the machine's memory is known, and
// -max-memory's default is the budget DefaultMaxMemoryFor gives it (shown
// by serve -h).
func TestServeDefaultMaxMemory(t *testing.T) {
	m := machineMemory()
	if runtime.GOOS == "linux" && m <= 0 {
		t.Fatalf("machineMemory() = %d on Linux", m)
	}
	if runtime.GOOS == "linux" && m > physicalMemory() {
		t.Errorf("machineMemory() = %d above the physical %d", m, physicalMemory())
	}
	help, _, err := lab(t, t.Context(), "serve", "-h")
	if err != nil {
		t.Fatal(err)
	}
	want := "(default " + (*byteSize)(ptr(labserver.DefaultMaxMemoryFor(m))).String() + ")"
	i := strings.Index(help, "-max-memory")
	if i < 0 || !strings.Contains(help[i:], want) {
		t.Errorf("serve -h does not give -max-memory's default as %s:\n%s", want, help)
	}
}

func ptr(v int64) *int64 { return &v }
