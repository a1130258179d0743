package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
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

// TestGoMemoryLimit: the limit is set from a positive budget or estimate
// (at least minGoLimit), left alone where GOMEMLIMIT is set (whatever its
// value) or there is nothing to set it from, and put back after.
func TestGoMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		env   string // "" leaves GOMEMLIMIT unset
		limit int64
		want  int64 // math.MaxInt64: none set
	}{
		{"a budget", "", 3 << 30, 3 << 30},
		{"a small estimate", "", 1 << 20, minGoLimit},
		{"no estimate", "", 0, math.MaxInt64},
		{"negative", "", -1, math.MaxInt64},
		{"the user's limit", "2GiB", 3 << 30, math.MaxInt64},
		{"the user's off", "off", 3 << 30, math.MaxInt64},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("GOMEMLIMIT", c.env)
			} else if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
				t.Setenv("GOMEMLIMIT", v) // restored after the subtest
				os.Unsetenv("GOMEMLIMIT")
			}
			before := debug.SetMemoryLimit(math.MaxInt64)
			defer debug.SetMemoryLimit(before)
			got, restore := goMemoryLimit(c.limit)
			if now := debug.SetMemoryLimit(-1); got != c.want || now != c.want {
				t.Errorf("goMemoryLimit(%d) = %d, the runtime's limit %d; want %d", c.limit, got, now, c.want)
			}
			if s := goLimitText(got); (c.want == math.MaxInt64) != (s == "none") {
				t.Errorf("goLimitText(%d) = %q", got, s)
			}
			restore()
			if now := debug.SetMemoryLimit(-1); now != math.MaxInt64 {
				t.Errorf("after restore the limit is %d, want none", now)
			}
		})
	}
}

// TestRunSetsMemoryLimit: lab run holds its process to the run's estimate
// while it runs (the demo's 1 MiB, raised to minGoLimit), and no longer.
func TestRunSetsMemoryLimit(t *testing.T) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Skip("GOMEMLIMIT is set: lab run leaves the user's limit alone (TestGoMemoryLimit)")
	}
	before := debug.SetMemoryLimit(-1)
	demoLimit.Store(0)
	if _, _, err := lab(t, context.Background(), "run", "demo", "-trials", "2", "-contexts", "1", "-quiet"); err != nil {
		t.Fatal(err)
	}
	if got := demoLimit.Load(); got != minGoLimit {
		t.Errorf("the limit during the run was %d, want %d", got, minGoLimit)
	}
	if now := debug.SetMemoryLimit(-1); now != before {
		t.Errorf("after the run the limit is %d, want %d as before", now, before)
	}
}
