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
