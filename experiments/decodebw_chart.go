package experiments

import (
	"github.com/fp8lab/fp8lab/sim"
)

// decode-bw's chart and cost estimate (sim.Charter, sim.Coster).

// Chart declares decode-bw's chart.
func (DecodeBW) Chart() sim.Chart {
	return sim.Chart{
		X:      axisContext,
		Y:      sim.Axis{Quantity: "time per decode step, median", Unit: "ms"},
		Lo:     "ms_min",
		Hi:     "ms_max",
		Method: "the fastest and slowest of the timed repetitions after the warm-up (wgsl.DefaultWarmup), each 1 to 512 decode steps back to back (about 10 ms of GPU work, one step where a step takes longer), per step",
		Styles: []sim.Style{
			{Match: "fp16", Family: "fp16 KV", Variant: "this GPU", Measured: true},
			{Match: "e4m3", Family: "fp8 e4m3 KV", Variant: "this GPU", Measured: true},
			{Match: "fp16" + decodeBWFit, Family: "fp16 KV", Variant: "least-squares line", Fit: true},
			{Match: "e4m3" + decodeBWFit, Family: "fp8 e4m3 KV", Variant: "least-squares line", Fit: true},
		},
		Show: []string{"fp16_slope_ns", "e4m3_slope_ns", "slope_ratio"},
		Fields: []sim.Field{
			{Key: "bandwidth_gbs", Axis: sim.Axis{Quantity: "KV bytes read per step / time", Unit: "GB/s"}},
			{Key: "batch", Axis: sim.Axis{Quantity: "sequences per step", Unit: "sequences"}},
			{Key: "timestamp", Axis: sim.Axis{Quantity: "timed by GPU timestamps", Unit: "1 yes, 0 wall clock"}},
			{Key: "ms_min", Axis: sim.Axis{Quantity: "time per decode step, fastest timed repetition", Unit: "ms"}},
			{Key: "ms_max", Axis: sim.Axis{Quantity: "time per decode step, slowest timed repetition", Unit: "ms"}},
			{Key: "ms_q1", Axis: sim.Axis{Quantity: "time per decode step, first quartile", Unit: "ms"}},
			{Key: "ms_q3", Axis: sim.Axis{Quantity: "time per decode step, third quartile", Unit: "ms"}},
			{Key: "reps", Axis: sim.Axis{Quantity: "timed repetitions (steps decode steps each)", Unit: "repetitions"}},
			{Key: "warmups", Axis: sim.Axis{Quantity: "untimed warm-up repetitions", Unit: "repetitions"}},
			{Key: "warmup_s", Axis: sim.Axis{Quantity: "warm-up time", Unit: "s"}},
			{Key: "steps", Axis: sim.Axis{Quantity: "decode steps back to back in one repetition (about 10 ms of GPU work, at most 512)", Unit: "steps"}},
			{Key: "sm_mhz", Axis: sim.Axis{Quantity: "SM clock when the warm-up ended (nvidia-smi; 0 without it)", Unit: "MHz"}},
			{Key: "sm_end_mhz", Axis: sim.Axis{Quantity: "SM clock after the timed repetitions (nvidia-smi; 0 without it)", Unit: "MHz"}},
			{Key: "stable", Axis: sim.Axis{Quantity: "the warm-up ended on a stable time (1) or at its cap (0)", Unit: "boolean"}},
		},
		Summary: []sim.SummaryField{
			{Match: "*_slope_ns", Axis: sim.Axis{Quantity: "decode time slope against context (whole batch)", Unit: "ns/token"}},
			{Match: "*_intercept_ms", Axis: sim.Axis{Quantity: "decode time at zero context (fitted intercept)", Unit: "ms"}},
			{Match: "slope_ratio", Axis: sim.Axis{Quantity: "e4m3 slope over fp16 slope", Unit: "ratio"}},
			{Match: "*_gbs", Axis: sim.Axis{Quantity: "bandwidth", Unit: "GB/s"}},
			{Match: "batch", Axis: sim.Axis{Quantity: "sequences per step", Unit: "sequences"}},
			{Match: "hardware", Axis: sim.Axis{Quantity: "a hardware GPU (not a CPU adapter)", Unit: "1 yes, 0 no"}},
			{Match: "math_qreg", Axis: sim.Axis{Quantity: "math f32-qreg", Unit: "1 yes, 0 no"}},
		},
	}
}

func (DecodeBW) Cost(v sim.Values) sim.Cost {
	const d = 128
	batch := int64(v.Int("batch"))
	if batch == 0 {
		batch = 64
	}
	kvh, reps := int64(v.Int("kv-heads")), int64(v.Int("reps"))
	var mem, work int64
	for _, n := range v.Ints("contexts") {
		elems := sim.MulSat(int64(n), batch, kvh, d, 2) // K and V
		// The caches are filled on the host (fp16 and e4m3) and timed on
		// the adapter (a CPU adapter computes them).
		mem = max(mem, sim.MulSat(elems, 2+1))
		work = sim.AddSat(work, sim.MulSat(elems, 2*costNormal+reps*4))
	}
	return sim.Cost{Memory: sim.AddSat(256<<20, mem), Work: work}
}
