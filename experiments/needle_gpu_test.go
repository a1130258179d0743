package experiments

import (
	"maps"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// The GPU path of needle, promotion, kv-formats and scales (device gpu: the FP8 kernels in WGSL,
// every trial of a haystack in one batch) gives the CPU path's numbers
// exactly, with sinks (replaced tokens before the needle, baselines from
// the weights) and without, for every series, in the prefill and the
// decode regime (split-KV).
func TestNeedleGPUEqualsCPU(t *testing.T) {
	gpuTestGPU(t) // fails under CI without an adapter, skips elsewhere
	for _, c := range []struct {
		name string
		exp  sim.Experiment
		args map[string]string
	}{
		{"needle", Needle{}, map[string]string{"contexts": "700,3000", "trials": "10", "head_dim": "64", "haystacks": "2", "margin": "9"}},
		{"needle sinks", Needle{}, map[string]string{"contexts": "2000", "trials": "8", "head_dim": "128", "sinks": "3", "series": "fp8-two-level"}},
		{"needle legacy, sinks", Needle{}, map[string]string{"contexts": "1000", "trials": "4", "head_dim": "64", "sinks": "2", "probe": "legacy", "series": "fp8"}},
		{"needle llama31-8b stats", Needle{}, map[string]string{"contexts": "900", "trials": "4", "head_dim": "64", "stats": "llama31-8b", "series": "fp8-two-level"}},
		{"needle, one haystack a GPU batch", Needle{}, map[string]string{"contexts": "66000", "trials": "4", "head_dim": "64", "haystacks": "2", "series": "fp8", "group-memory": "64"}},
		{"needle decode, splits auto", Needle{}, map[string]string{"contexts": "3000", "trials": "6", "head_dim": "64", "haystacks": "2", "regime": "decode", "probe": "legacy"}},
		{"promotion", Promotion{}, map[string]string{"context": "1500", "trials": "6", "head_dim": "64", "intervals": "0,1,2", "kBlockN": "64,128"}},
		{"promotion decode, 5 splits", Promotion{}, map[string]string{"context": "2500", "trials": "4", "head_dim": "128", "intervals": "0,1,4", "regime": "decode", "splits": "5", "haystacks": "2"}},
		{"kv-formats", KVFormats{}, map[string]string{"contexts": "700,2100", "trials": "4", "set": "all", "promotions": "0,1,4", "head_dim": "64", "sinks": "1"}},
		{"scales", Scales{}, map[string]string{"tokens": "600", "trials": "2", "kv-heads": "2", "q-per-kv": "2", "outlier": "1,100", "promotion": "1"}},
	} {
		cpu, gpu := maps.Clone(c.args), maps.Clone(c.args)
		cpu["device"], gpu["device"] = "cpu", "gpu"
		ra, err := attnExec(t, c.exp, 5, cpu)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := attnExec(t, c.exp, 5, gpu)
		if err != nil {
			t.Fatal(err)
		}
		a, b := ra.SummaryValues(), rb.SummaryValues()
		if len(a) == 0 || !maps.Equal(a, b) {
			t.Errorf("%s: device gpu differs from cpu:\ncpu %v\ngpu %v", c.name, a, b)
		} else {
			t.Logf("%s: %d summary values equal on cpu and gpu", c.name, len(a))
		}
	}
}

// kv-formats on the GPU runs there every series the WGSL simulator runs
// (e4m3, e5m2, bf16, f16 MMAs: direct, dequantized, tcgen05; the native
// block-scaled ones) and says so.
func TestKVFormatsGPUNote(t *testing.T) {
	gpuTestGPU(t)
	r, err := attnExec(t, KVFormats{}, 1, map[string]string{"contexts": "256", "trials": "1", "set": "all", "promotions": "0", "device": "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(r.Notes(), "\n")
	for _, want := range []string{"19 of 19 kernels on the GPU", "bf16 p0; ", "nvfp4 amax →e4m3 tcgen05 p0", "mxfp8 native tcgen05 p0"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes do not say %q:\n%s", want, notes)
		}
	}
}
