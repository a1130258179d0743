package experiments

import (
	"runtime"

	"github.com/fp8lab/fp8lab/sim"
)

// scales's chart and cost estimate (sim.Charter, sim.Coster).

// Chart declares scales' chart.
func (Scales) Chart() sim.Chart {
	ref := "exact float64 attention on the unquantized inputs"
	return sim.Chart{
		X:      sim.Axis{Quantity: "magnitude factor of the outlier heads", Unit: "×", Log: true},
		Y:      sim.Axis{Quantity: "relative L2 error of O vs " + ref + ", mean over query heads", Unit: "%", Log: true},
		Lo:     "relerr_lo",
		Hi:     "relerr_hi",
		Method: "95 % intervals from the variation between trials (t on the log scale; each trial a cache of its own)",
		Summary: []sim.SummaryField{
			{Match: "relerr_*", Axis: sim.Axis{Quantity: "relative L2 error of O vs " + ref + ", mean over query heads and trials", Unit: "%", Log: true}},
			{Match: "worst_*", Axis: sim.Axis{Quantity: "relative L2 error of the worst query head", Unit: "%", Log: true}},
			{Match: "alpha_*", Axis: sim.Axis{Quantity: "shrinkage α, mean over query heads and trials", Unit: "ratio"}},
		},
		Fields: []sim.Field{
			{Key: "relerr", Axis: sim.Axis{Quantity: "relative L2 error of O vs " + ref + ", mean over query heads", Unit: "%", Log: true}, Lo: "relerr_lo", Hi: "relerr_hi"},
			{Key: "alpha", Axis: sim.Axis{Quantity: "shrinkage α = ⟨O, O*⟩/⟨O*, O*⟩, mean over query heads", Unit: "ratio"}, Lo: "alpha_lo", Hi: "alpha_hi"},
			{Key: "residual", Axis: sim.Axis{Quantity: "residual ‖O − αO*‖/‖O*‖, mean over query heads", Unit: "%", Log: true}, Lo: "residual_lo", Hi: "residual_hi"},
			{Key: "worst", Axis: sim.Axis{Quantity: "relative L2 error of the worst query head", Unit: "%", Log: true}},
			{Key: "normal", Axis: sim.Axis{Quantity: "relative L2 error, mean over the ordinary heads", Unit: "%", Log: true}},
			{Key: "outlier", Axis: sim.Axis{Quantity: "relative L2 error, mean over the outlier heads", Unit: "%", Log: true}},
			{Key: "saturated", Axis: sim.Axis{Quantity: "K/V/Q elements the cast clamps to ±max", Unit: "fraction"}},
			{Key: "underflow", Axis: sim.Axis{Quantity: "K/V/Q elements the cast flushes to 0", Unit: "fraction"}},
		},
		Styles: []sim.Style{
			{Match: "scale 1.0", Family: "fp8", Variant: "scale 1.0"},
			{Match: "per-tensor amax", Family: "fp8", Variant: "per-tensor amax"},
			{Match: "per-head amax", Family: "fp8", Variant: "per-head amax"},
			{Match: "bf16", Family: "bf16"},
		},
	}
}

func (Scales) Cost(v sim.Values) sim.Cost {
	const d = 128
	n, kvh, group := int64(v.Int("tokens")), int64(v.Int("kv-heads")), int64(v.Int("q-per-kv"))
	trials, factors := v.Int("trials"), int64(len(v.Ints("outlier")))
	nhd := sim.MulSat(n, kvh, d)
	// A trial holds K and V as float32 and float64 and four caches (its
	// series run side by side), K and V 16-bit codes each.
	perTrial := sim.AddSat(sim.MulSat(nhd, 2*4+2*8), sim.MulSat(nhd, 4*4))
	// Every factor's trials share one pool (sim.TrialSets): as many at once
	// as there are cores; with device gpu each trial's caches packed for
	// the GPU too, and the extra workers Run starts while trials wait for
	// the device (scalesWaitBytes of their inputs).
	all := min(sim.MulSat(factors, int64(trials)), 1<<30)
	workers := int64(sim.Workers(int(all)))
	if wantsGPU(v) {
		perTrial = sim.AddSat(perTrial, sim.MulSat(nhd, 10))
		cores := int64(runtime.GOMAXPROCS(0))
		workers = min(all, cores+min(cores, scalesWaitBytes/max(sim.MulSat(nhd, scalesTrialBytes), 1)))
	}
	mem := sim.AddSat(costBase, sim.MulSat(workers, perTrial))
	// Per trial: drawing, the reference for every query head, two caches
	// and three kernel runs (per-head scales, per-tensor scale, bf16).
	// The parts add up to a fifth of what TestCostCalibration measures (one
	// core, 2026-11-30: 57.6 s for 10.3 s estimated), hence the factor 5.
	perTrialWork := sim.MulSat(5, sim.AddSat(sim.MulSat(nhd, 2*costNormal+4*costQuant), sim.MulSat(nhd, group, costRef+3*costKernel)))
	// On the device: each waiting trial's packed caches (as many bytes as
	// on the host).
	device := sim.MulSat(workers, nhd, 10)
	return withGPU(v, sim.Cost{Memory: mem, Work: sim.MulSat(factors, int64(trials), perTrialWork)}, device)
}
