package presets

import (
	"strings"
	"testing"
)

// TestModelKVBytes checks the KV bytes per token against the table of
// fp8-attention.md §4.2.
func TestModelKVBytes(t *testing.T) {
	for _, tc := range []struct {
		id        string
		bf16, fp8 float64
		window    float64 // BF16 bytes of the sliding layers at a long context
	}{
		{"llama-3.1-8b", 131072, 65536, 0},
		{"llama-3.3-70b", 327680, 163840, 0},
		{"gpt-oss-20b", 24576, 12288, 2 * 12 * 8 * 64 * 2 * 128},
		{"qwen3-30b-a3b", 98304, 49152, 0},
		{"gemma-4-e2b", 6144, 3072, 2 * 12 * 1 * 256 * 2 * 512},
	} {
		m, err := LookupModel(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.KVBytesPerToken(2); got != tc.bf16 {
			t.Errorf("%s: BF16 %v B/token, want %v", tc.id, got, tc.bf16)
		}
		if got := m.KVBytesPerToken(1); got != tc.fp8 {
			t.Errorf("%s: FP8 %v B/token, want %v", tc.id, got, tc.fp8)
		}
		if got := m.WindowKVBytes(1<<20, 2); got != tc.window {
			t.Errorf("%s: window bytes %v, want %v", tc.id, got, tc.window)
		}
		if m.HasSlidingWindow() != (tc.window > 0) {
			t.Errorf("%s: HasSlidingWindow %v", tc.id, m.HasSlidingWindow())
		}
	}
	// Below the window, a sliding layer reads the whole context.
	m, _ := LookupModel("gpt-oss-20b")
	if got, want := m.WindowKVBytes(100, 1), float64(2*12*8*64*100); got != want {
		t.Errorf("gpt-oss-20b at 100 tokens: %v window bytes, want %v", got, want)
	}
}

// TestGPUs checks the datasheet bandwidths of fp8-attention.md §4.3.
func TestGPUs(t *testing.T) {
	for id, bw := range map[string]float64{"h100-sxm": 3.35e12, "h100-pcie": 2.0e12, "h100-nvl": 3.9e12, "h200": 4.8e12, "b200": 8e12} {
		g, err := LookupGPU(id)
		if err != nil {
			t.Fatal(err)
		}
		if g.Bandwidth != bw {
			t.Errorf("%s: %v B/s, want %v", id, g.Bandwidth, bw)
		}
	}
	// The Llama-3.1-8B BF16 slope at the H100 SXM roofline: 3.91e-5 ms/token (§4.4).
	g, _ := LookupGPU("h100-sxm")
	m, _ := LookupModel("llama-3.1-8b")
	if ms := m.KVBytesPerToken(2) / g.Bandwidth * 1e3; ms < 3.905e-5 || ms > 3.915e-5 {
		t.Errorf("H100 Llama-8B BF16 roofline slope %.4g ms/token, want 3.91e-5", ms)
	}
}

// TestPresetsDocumented checks that every preset names its source and that
// lookups of unknown IDs list the known ones.
func TestPresetsDocumented(t *testing.T) {
	for _, g := range GPUs() {
		if g.ID == "" || g.Name == "" || g.Bandwidth <= 0 || !strings.Contains(g.Source, "fp8-attention.md") {
			t.Errorf("GPU %+v: incomplete", g)
		}
	}
	for _, m := range Models() {
		if m.ID == "" || m.Name == "" || len(m.KV) == 0 || !strings.Contains(m.Source, "fp8-attention.md") {
			t.Errorf("model %+v: incomplete", m)
		}
	}
	if _, err := LookupGPU("a100"); err == nil || !strings.Contains(err.Error(), "h100-sxm") {
		t.Errorf("LookupGPU(a100): %v", err)
	}
	if _, err := LookupModel("llama-2"); err == nil || !strings.Contains(err.Error(), "gpt-oss-20b") {
		t.Errorf("LookupModel(llama-2): %v", err)
	}
	// Presets are copies: changing one does not change the table.
	m, _ := LookupModel("gpt-oss-20b")
	m.KV[0].Layers = 99
	if again, _ := LookupModel("gpt-oss-20b"); again.KV[0].Layers != 12 {
		t.Error("LookupModel returned the table's own slice")
	}
}

// TestGPUForAdapter: adapter names as drivers give them pick their preset
// (the H100 80GB HBM3 and H200 names are those of the device machines,
// 2026-12-07); an unknown card gets none, not a guess.
func TestGPUForAdapter(t *testing.T) {
	for _, c := range []struct {
		adapter, want string // want "": none
	}{
		{"NVIDIA H200", "h200"},
		{"NVIDIA H200 NVL", "h200"},
		{"NVIDIA H100 80GB HBM3", "h100-sxm"},
		{"nvidia h100 sxm5 80gb", "h100-sxm"},
		{"NVIDIA H100 NVL", "h100-nvl"},
		{"NVIDIA H100 PCIe", "h100-pcie"},
		{"NVIDIA B200", "b200"},
		{"NVIDIA A100-SXM4-80GB", ""},
		{"llvmpipe (LLVM 15.0.6, 256 bits)", ""},
		{"", ""},
	} {
		g, ok := GPUForAdapter(c.adapter)
		if got := map[bool]string{true: g.ID}[ok]; got != c.want {
			t.Errorf("GPUForAdapter(%q) = %q, %v; want %q", c.adapter, g.ID, ok, c.want)
		}
	}
	for _, g := range GPUs() {
		for _, a := range g.Adapters {
			if h, ok := GPUForAdapter("NVIDIA " + a); !ok || h.ID != g.ID {
				t.Errorf("preset %s: its adapter name %q gives %q", g.ID, a, h.ID)
			}
		}
	}
}
