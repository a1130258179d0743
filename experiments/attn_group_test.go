package experiments

import (
	"runtime"
	"testing"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
)

// TestAttnGroup: a haystack's values and the views and tiles its trials
// build later are not held at once (the more of them counts), unless the
// exact reference keeps the values; so the default needle at 128k tokens
// draws 4 haystacks a group with a GPU (8 bytes a token-channel of
// codes, 8 of values or views: 16 in all, 1 GiB / 256 MiB) and 3 without
// (the CPU kernels' tiles too: 20).
func TestAttnGroup(t *testing.T) {
	if runtime.GOMAXPROCS(0) == 1 {
		t.Skip("one core without a GPU draws one haystack at a time")
	}
	v, err := sim.ParseValues(Needle{}.Params(), map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	base := attnNeedleFromValues(v)
	runs, err := needleRuns(base, "all", 0, attnRegime{}, 131072)
	if err != nil {
		t.Fatal(err)
	}
	mxfp8 := []attnNeedleRun{{dtype: fp8.FormatE4M3, spec: &attention.KVSpec{Format: attention.KVMXFP8, Path: attention.PathBlockScaled}}}
	for _, c := range []struct {
		name       string
		gpu, exact bool
		n, hays    int
		runs       []attnNeedleRun
		groupMiB   int64
		want       int
	}{
		{"gpu 128k", true, false, 131072, 8, runs, 1024, 4},
		{"cpu 128k", false, false, 131072, 8, runs, 1024, 3},
		{"gpu 128k exact", true, true, 131072, 8, runs, 1024, 2},
		{"cpu 128k exact", false, true, 131072, 8, runs, 1024, 2},
		{"gpu 64k", true, false, 65536, 8, runs, 1024, 8},
		{"gpu 64k few haystacks", true, false, 65536, 3, runs, 1024, 3},
		{"gpu 128k 2 GiB", true, false, 131072, 8, runs, 2048, 8},
		{"gpu 1M at least one", true, false, 1 << 20, 8, runs, 1024, 1},
		{"block-scaled gpu: codes 10, values 8", true, false, 131072, 8, mxfp8, 1024, 3},
	} {
		tk := base
		tk.exactErr = c.exact
		tk.groupBytes = c.groupMiB << 20
		if c.gpu {
			tk.gpu = &wgsl.Runner{} // attnGroup only asks whether there is one
		}
		if got := tk.attnGroup(c.n, c.hays, c.runs); got != c.want {
			t.Errorf("%s: attnGroup = %d, want %d", c.name, got, c.want)
		}
	}
}
