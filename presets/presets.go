// Package presets holds the hardware and model presets of the decode cost
// model (experiments itl and skip-sw): GPU datasheet figures and LLM
// shapes, each with its source in ../shared/docs/fp8-attention.md §4.
package presets

import (
	"fmt"
	"slices"
	"strings"
)

// This file holds the hardware and model presets of the decode cost model
// (experiments itl and skip-sw). Every figure comes from
// ../shared/docs/fp8-attention.md §4 (its tables 4.1–4.3, which quote NVIDIA's
// headline specifications and the models' config.json files); the Source of
// each preset says which line, and where a number is derived rather than
// quoted. Published measurements of decode speed are not presets: they live
// beside the experiments that compare against them.

// Byte counts are decimal where vendors quote them so: 1 TB/s = 1e12 bytes/s.
const (
	// TB is 10^12 bytes.
	TB = 1e12
	// GB is 10^9 bytes.
	GB = 1e9
)

// GPU holds a GPU's datasheet figures for the decode cost model.
type GPU struct {
	ID        string  // parameter value, e.g. "h100-sxm"
	Name      string  // display name, e.g. "H100 SXM"
	Memory    float64 // HBM capacity in bytes
	Bandwidth float64 // peak HBM bandwidth in bytes per second (datasheet, "up to")
	// BF16FLOPS and FP8FLOPS are the dense tensor-core throughputs in FLOP/s
	// (0 where the source gives none).
	BF16FLOPS, FP8FLOPS float64
	Source              string // where the figures come from
	// Adapters are the names the driver gives this card (the WebGPU
	// adapter's, as nvidia-smi's), any part of which identifies it
	// (GPUForAdapter); none where it is not known.
	Adapters []string
}

// gpuPresets are the GPUs of fp8-attention.md §4.3.
var gpuPresets = []GPU{
	{ID: "h100-sxm", Name: "H100 SXM", Memory: 80 * GB, Bandwidth: 3.35 * TB, BF16FLOPS: 989e12, FP8FLOPS: 1979e12,
		Source: "fp8-attention.md §4.3 (NVIDIA headline specs): H100 SXM5, 80 GB HBM3, 3.35 TB/s, ≈989 / 1979 dense BF16 / FP8 TFLOP/s; " +
			"the card of the published H100 figures (§4.3: their slope needs 3.0 TB/s, more than a PCIe card has)",
		Adapters: []string{"H100 80GB HBM3", "H100 SXM"}},
	{ID: "h100-nvl", Name: "H100 NVL", Memory: 94 * GB, Bandwidth: 3.9 * TB,
		Source:   "fp8-attention.md §4.3: H100 NVL, 94 GB, 3.9 TB/s (no compute figures given)",
		Adapters: []string{"H100 NVL"}},
	{ID: "h100-pcie", Name: "H100 PCIe", Memory: 80 * GB, Bandwidth: 2.0 * TB,
		Source:   "fp8-attention.md §4.3: H100 PCIe, 80 GB, ≈2.0 TB/s (no compute figures given)",
		Adapters: []string{"H100 PCIe"}},
	{ID: "h200", Name: "H200", Memory: 141 * GB, Bandwidth: 4.8 * TB, BF16FLOPS: 989e12, FP8FLOPS: 1979e12,
		Source:   "fp8-attention.md §4.3: H200, 141 GB HBM3e, 4.8 TB/s, compute as H100 SXM",
		Adapters: []string{"H200"}},
	{ID: "b200", Name: "B200", Memory: 180 * GB, Bandwidth: 8 * TB, BF16FLOPS: 2.25e15, FP8FLOPS: 4.5e15,
		Source:   "fp8-attention.md §4.3: B200, 180–192 GB HBM3e (the lower figure here), 8 TB/s (\"up to\"), ≈2.25 / 4.5 dense BF16 / FP8 PFLOP/s",
		Adapters: []string{"B200"}},
}

// GPUs returns the GPU presets in a fixed order (a copy).
func GPUs() []GPU { return slices.Clone(gpuPresets) }

// GPUForAdapter returns the GPU preset whose Adapters name a part of the
// adapter name (case aside; the longest such part wins, so that "H100 NVL"
// is not taken for another H100), and false where none does: an adapter
// of unknown peak figures, which a caller must not guess.
func GPUForAdapter(name string) (GPU, bool) {
	name = strings.ToLower(name)
	var best GPU
	n := 0
	for _, g := range gpuPresets {
		for _, a := range g.Adapters {
			if len(a) > n && strings.Contains(name, strings.ToLower(a)) {
				best, n = g, len(a)
			}
		}
	}
	return best, n > 0
}

// GPUIDs returns the IDs of the GPU presets, for a choice parameter.
func GPUIDs() []string {
	ids := make([]string, len(gpuPresets))
	for i, g := range gpuPresets {
		ids[i] = g.ID
	}
	return ids
}

// LookupGPU returns the GPU preset with the given ID, or an error listing the
// known IDs.
func LookupGPU(id string) (GPU, error) {
	for _, g := range gpuPresets {
		if g.ID == id {
			return g, nil
		}
	}
	return GPU{}, fmt.Errorf("unknown GPU %q (known: %s)", id, strings.Join(GPUIDs(), ", "))
}

// LayerGroup is a set of attention layers that store their own KV cache and
// have the same shape.
type LayerGroup struct {
	Layers  int // number of layers
	KVHeads int // KV heads per layer
	HeadDim int // head dimension of K and V
	// Window is the sliding window in tokens (the cache holds at most Window
	// tokens); 0 for full attention, whose cache grows with the context.
	Window int
}

// Model describes a language model for the decode cost model: the shape of
// its KV cache and the bytes of weights one decode step reads.
type Model struct {
	ID     string // parameter value, e.g. "llama-3.1-8b"
	Name   string // display name, e.g. "Llama-3.1-8B"
	Layers int    // decoder layers
	QHeads int    // query heads per layer
	// KV lists the layers that keep a KV cache, grouped by shape (layers
	// that share another layer's cache are not counted).
	KV []LayerGroup
	// WeightBytes is the bytes of weights a decode step at batch 1 reads:
	// the parameters at their stored width, counted as fp8-attention.md §4.5
	// counts them (all of them, so the embedding table, of which a step reads
	// one row, makes it a slight overestimate); 0 where the source does not
	// give enough to say (mixture-of-experts models).
	WeightBytes float64
	Source      string // where the figures come from, and what is derived
}

// modelPresets are the models of fp8-attention.md §4.1–4.2.
var modelPresets = []Model{
	{ID: "llama-3.1-8b", Name: "Llama-3.1-8B", Layers: 32, QHeads: 32,
		KV:          []LayerGroup{{Layers: 32, KVHeads: 8, HeadDim: 128}},
		WeightBytes: 8.03e9 * 2,
		Source: "fp8-attention.md §4.1: 32 layers, 32 q / 8 KV heads, head_dim 128, all full; " +
			"about 8.03B parameters read as BF16 (§4.5: 8.03e9 × 2 B)"},
	{ID: "llama-3.3-70b", Name: "Llama-3.3-70B", Layers: 80, QHeads: 64,
		KV:          []LayerGroup{{Layers: 80, KVHeads: 8, HeadDim: 128}},
		WeightBytes: 70.55e9 * 2,
		Source: "fp8-attention.md §4.1: 80 layers, 64 q / 8 KV heads, head_dim 128, all full, hidden 8192, MLP 28672; " +
			"weights [derived]: 70.55B parameters from those dimensions with Llama-3's 128256-token vocabulary " +
			"(untied embeddings), read as BF16 (141 GB: more than one GPU of the presets but B200/H200 at TP ≥ 2 holds)"},
	{ID: "gpt-oss-20b", Name: "gpt-oss-20b", Layers: 24, QHeads: 64,
		KV: []LayerGroup{
			{Layers: 12, KVHeads: 8, HeadDim: 64},              // odd layers: full attention
			{Layers: 12, KVHeads: 8, HeadDim: 64, Window: 128}, // even layers: sliding window 128
		},
		Source: "fp8-attention.md §4.1: 24 layers, 64 q / 8 KV heads, head_dim 64; even-index layers sliding " +
			"(window 128), odd layers full (12 + 12); MoE with MXFP4 experts, 3.6B of 21B parameters active: " +
			"the bytes read per step are not given, so WeightBytes is 0"},
	{ID: "qwen3-30b-a3b", Name: "Qwen3-30B-A3B", Layers: 48, QHeads: 32,
		KV: []LayerGroup{{Layers: 48, KVHeads: 4, HeadDim: 128}},
		Source: "fp8-attention.md §4.1: Qwen3-30B-A3B-2507, 48 layers, 32 q / 4 KV heads, head_dim 128, all full; " +
			"MoE 128 experts top-8 (active bytes not given, so WeightBytes is 0)"},
	{ID: "gemma-4-e2b", Name: "gemma-4-E2B", Layers: 35, QHeads: 8,
		KV: []LayerGroup{
			{Layers: 3, KVHeads: 1, HeadDim: 512},               // stored full layers (global_head_dim 512)
			{Layers: 12, KVHeads: 1, HeadDim: 256, Window: 512}, // stored sliding layers
		},
		Source: "fp8-attention.md §4.1–4.2: the write-up's \"head_dim 256\" model, whose context-scaling (full) layers are head_dim 512; 35 layers, 8 q / 1 KV head, " +
			"sliding layers head_dim 256 with window 512, 7 full layers with global_head_dim 512; " +
			"num_kv_shared_layers = 20, so only 15 layers store KV (3 full + 12 sliding); weights not given. " +
			"§4.4: not bandwidth-bound at decode (about 3% of HBM bandwidth), a bandwidth model cannot predict it"},
}

// Models returns the model presets in a fixed order (a copy).
func Models() []Model {
	out := slices.Clone(modelPresets)
	for i := range out {
		out[i].KV = slices.Clone(out[i].KV)
	}
	return out
}

// ModelIDs returns the IDs of the model presets, for a choice parameter.
func ModelIDs() []string {
	ids := make([]string, len(modelPresets))
	for i, m := range modelPresets {
		ids[i] = m.ID
	}
	return ids
}

// LookupModel returns the model preset with the given ID, or an error listing
// the known IDs.
func LookupModel(id string) (Model, error) {
	for _, m := range modelPresets {
		if m.ID == id {
			m.KV = slices.Clone(m.KV)
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("unknown model %q (known: %s)", id, strings.Join(ModelIDs(), ", "))
}

// bytesPerToken returns 2 (K and V) × layers × KV heads × head_dim × elem
// summed over the groups for which keep reports true.
func (m Model) bytesPerToken(elem float64, keep func(LayerGroup) bool) float64 {
	b := 0.0
	for _, g := range m.KV {
		if keep(g) {
			b += 2 * float64(g.Layers*g.KVHeads*g.HeadDim) * elem
		}
	}
	return b
}

// KVBytesPerToken returns the KV-cache bytes per token of context that a
// decode step reads from the full-attention layers, with elem bytes per
// element (2 for BF16/FP16, 1 for FP8): 2 × layers × KV heads × head_dim ×
// elem (fp8-attention.md §4.2). Sliding-window layers are left out: their
// cache is bounded (see [Model.WindowKVBytes]).
func (m Model) KVBytesPerToken(elem float64) float64 {
	return m.bytesPerToken(elem, func(g LayerGroup) bool { return g.Window == 0 })
}

// WindowKVBytes returns the KV-cache bytes a decode step reads from the
// sliding-window layers at a context of L tokens, with elem bytes per
// element: each such layer reads min(L, Window) tokens.
func (m Model) WindowKVBytes(L int, elem float64) float64 {
	b := 0.0
	for _, g := range m.KV {
		if g.Window > 0 {
			b += 2 * float64(g.Layers*g.KVHeads*g.HeadDim) * elem * float64(min(L, g.Window))
		}
	}
	return b
}

// HasSlidingWindow reports whether some layers of the model use a sliding
// window.
func (m Model) HasSlidingWindow() bool {
	return slices.ContainsFunc(m.KV, func(g LayerGroup) bool { return g.Window > 0 })
}
