package cpufeat

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// On Linux the features agree with the kernel's /proc/cpuinfo flags (which
// also reflect what the OS enables); FMA and F16C are reported only with
// AVX2.
func TestAgreesWithCPUInfo(t *testing.T) {
	if (FMA || F16C) && !AVX2 {
		t.Errorf("FMA %v, F16C %v without AVX2", FMA, F16C)
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" || err != nil {
		t.Skipf("no /proc/cpuinfo of an amd64 Linux to compare with (%s/%s, %v)", runtime.GOOS, runtime.GOARCH, err)
	}
	var flags map[string]bool
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = map[string]bool{}
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break
		}
	}
	if flags == nil {
		t.Skip("no flags line in /proc/cpuinfo")
	}
	if purego {
		if AVX2 {
			t.Error("AVX2 reported with the purego tag")
		}
		return
	}
	for name, got := range map[string]bool{"avx2": AVX2, "fma": FMA && AVX2, "f16c": F16C && AVX2} {
		if want := flags[name] && flags["avx2"]; got != want {
			t.Errorf("%s: %v, /proc/cpuinfo says %v", name, got, want)
		}
	}
}

// TestSlowGatherVendor checks the vendor rule, and that SlowGather agrees
// with /proc/cpuinfo's vendor_id where there is one.
func TestSlowGatherVendor(t *testing.T) {
	for _, c := range []struct {
		v    string
		want bool
	}{{"AuthenticAMD", true}, {"HygonGenuine", true}, {"GenuineIntel", false}, {"", false}, {"AuthenticAM", false}} {
		if got := slowGatherVendor(c.v); got != c.want {
			t.Errorf("slowGatherVendor(%q) = %v, want %v", c.v, got, c.want)
		}
	}
	if SlowGather && !AVX2 {
		t.Error("SlowGather without AVX2")
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" || err != nil || purego {
		t.Skipf("no /proc/cpuinfo of an amd64 Linux with assembly to compare with (%s/%s, purego %v, %v)", runtime.GOOS, runtime.GOARCH, purego, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "vendor_id" {
			if want := AVX2 && slowGatherVendor(strings.TrimSpace(v)); SlowGather != want {
				t.Errorf("SlowGather %v, /proc/cpuinfo's vendor %q says %v", SlowGather, strings.TrimSpace(v), want)
			}
			return
		}
	}
	t.Skip("no vendor_id line in /proc/cpuinfo")
}
