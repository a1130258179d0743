// Package experiments holds fp8lab's experiments, registered with the sim
// runtime by name from their init functions: each in a file of its own
// (its chart and cost estimate, sim.Charter and sim.Coster, in
// NAME_chart.go beside it where they are long), with what several share
// in attn_*.go, charts.go, cost.go and device.go (the CPU/GPU choice). A
// blank import (import _ "github.com/fp8lab/fp8lab/experiments") makes them
// all available to [sim.Lookup]; cmd/lab and the wasm page do that.
//
// Each experiment answers one question of ARCHITECTURE.md's table
// (TestDocClaims checks that this list names every registered one):
//
//   - contraction: relative error of a K-long FP8 dot product against the
//     exact value, per tensor-core model and promotion interval, next to the
//     H200 long-contraction captures;
//   - itl: the decode cost model of fp8-attention.md §4 (inter-token latency
//     against context length for BF16 and FP8 KV caches, slope ratio and
//     break-even), predicted from the measured H200 kernel costs of package
//     costdata (or, with -costs bandwidth, from bytes per token and
//     bandwidth) and set beside the published figures (costmodel.go,
//     itl_costs.go; ../docs/cost-model.md);
//   - skip-sw: gpt-oss-20b with FP8 everywhere against its sliding-window
//     layers kept in BF16;
//   - throughput: a serving schedule on the same kernel costs, BF16 against
//     FP8 under load;
//   - prefill-cost: the measured head_dim-128 and -256 prefill beside the
//     accuracy of single- and two-level accumulation;
//   - kv-formats: the KV-cache formats of attention.KVFormatTable on the
//     synthetic needle, per dequantizing path and arithmetic;
//   - attention-file: the simulator on the user's own Q, K, V files;
//   - needle, promotion, scales, sensitivity, h200-attention, gpu-accum,
//     decode-bw: see their files.
//
// Unexported helpers are prefixed with their experiment's name (for example
// contractionSeries, itlPublished), so that the files stay independent.
//
// The package owns no arithmetic: number formats are in package fp8,
// accumulation in accum, attention and the KV formats in attention, the
// runtime in sim, the hardware and model presets in presets. It is pure Go
// and builds for GOOS=js GOARCH=wasm.
package experiments
