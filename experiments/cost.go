package experiments

import (
	"slices"

	"github.com/fp8lab/fp8lab/sim"
)

// The cost estimates of the experiments (sim.Coster), one function each,
// from the buffers each allocates and the loops it runs. The per-element
// costs are nanoseconds on one core of the development machine (a 2-core
// x86-64 VM), measured with TestCostCalibration; they are meant to be right
// within a small factor.
const (
	costChain  = 25 // accum.Chain, per element and model
	costExact  = 6  // accum.ExactDot, per element
	costDraw   = 12 // one alias-sampled code
	costNormal = 25 // one normal draw and its arithmetic
	costQuant  = 90 // attention.NewKV, per element of K or of V
	costKernel = 45 // attention kernel, per token·dim of a query, per promotion scheme
	costRef    = 4  // float64 reference attention from the codes, per token·dim of a query
	costBase   = 64 << 20
)

// costs are the experiments' estimates, by name; TestEveryExperimentHasACost
// checks that every registered experiment has one.
func (Contraction) Cost(v sim.Values) sim.Cost {
	ks, trials, cols := v.Ints("K"), int64(v.Int("trials")), int64(v.Int("cols"))
	models := int64(len(contractionSelect(v.String("series"))))
	var work, maxK int64
	for _, k := range ks {
		maxK = max(maxK, int64(k))
		perCol := sim.MulSat(int64(k), models*costChain+costExact+costDraw)
		work = sim.AddSat(work, sim.MulSat(trials, sim.AddSat(sim.MulSat(cols, perCol), sim.MulSat(int64(k), 2*costNormal))))
	}
	// A trial holds its row (2 B), one column (2 B) and the row's logits
	// (8 B) per element, and its results.
	perTrial := sim.MulSat(maxK, 12)
	mem := sim.AddSat(costBase, sim.MulSat(int64(sim.Workers(int(trials))), perTrial))
	mem = sim.AddSat(mem, sim.MulSat(trials, models, 16+64))
	return sim.Cost{Memory: mem, Work: work}
}

// attnNeedleCost is the cost of attnNeedleContext over contexts with the
// given runs: per context, a group of haystacks at a time (attnGroup: as
// many as hold 1 GiB, each K and V as float32 and a cache per dtype; with
// device gpu the group's packed caches too) and a borrowed copy of each
// cache per worker, and per trial every series' kernel over the context, a
// baseline and (withErr) the quantized reference.
// cpuDtypes is the number of caches whose kernels run on the CPU (all of
// them with device cpu).
func attnNeedleCost(v sim.Values, contexts []int, trials int, dtypes, cpuDtypes, kernels int64, withErr bool) sim.Cost {
	d := int64(attnNeedleFromValues(v).d)
	m := int64(v.Int("candidates"))
	haystacks := int64(min(v.Int("haystacks"), trials))
	workers := int64(sim.Workers(trials))
	var mem, work int64
	for _, c := range contexts {
		n := int64(c)
		nd := sim.MulSat(n, d)
		per := sim.AddSat(sim.MulSat(nd, 8), sim.MulSat(dtypes, nd, 4)) // one haystack: values and caches
		group := min(haystacks, max(1, attnGroupBytes/max(per, 1)))
		if v.String("device") == deviceGPU {
			per = sim.AddSat(per, sim.MulSat(nd, 4)) // its caches packed for the GPU, one format at a time
		}
		hay := sim.AddSat(sim.MulSat(group, per), sim.MulSat(dtypes, min(workers, 64), nd, 4))
		perWorker := sim.AddSat(sim.MulSat(n, 16), sim.MulSat(m, d, 4))
		mem = max(mem, sim.AddSat(hay, sim.MulSat(workers, perWorker)))
		build := sim.MulSat(haystacks, nd, 2*costNormal+2*costQuant*dtypes)
		perTrial := sim.MulSat(nd, kernels*costKernel+cpuDtypes*8)
		if v.Int("sinks") > 0 { // the baseline needs the exact weights
			perTrial = sim.AddSat(perTrial, sim.MulSat(nd, dtypes*costRef))
		}
		if withErr {
			perTrial = sim.AddSat(perTrial, sim.MulSat(nd, dtypes*costRef))
		}
		work = sim.AddSat(work, sim.AddSat(build, sim.MulSat(int64(trials), perTrial)))
	}
	return sim.Cost{Memory: sim.AddSat(costBase, mem), Work: work}
}

func (Needle) Cost(v sim.Values) sim.Cost {
	t := attnNeedleFromValues(v)
	cs := v.Ints("contexts")
	runs, err := needleRuns(t, v.String("series"), v.Int("k-block-n"), attnRegimeFromValues(v), slices.Max(cs))
	if err != nil {
		runs = nil
	}
	var kernels, cpuDtypes int64
	gpu := v.String("device") == deviceGPU
	for _, r := range runs {
		if gpu && t.onGPU(r) {
			continue // runs on the GPU: the CPU only packs the cache once per batch
		}
		kernels += int64(len(r.promotions))
		cpuDtypes++
	}
	return attnNeedleCost(v, cs, v.Int("trials"), int64(len(runs)), cpuDtypes, kernels, true)
}

func (Promotion) Cost(v sim.Values) sim.Cost {
	blocks, intervals := int64(len(v.Ints("k-block-n"))), int64(len(v.Ints("intervals")))
	dtypes, kernels := blocks, blocks*intervals
	if v.String("device") == deviceGPU {
		kernels = 0 // the fp8 kernels run on the GPU
	}
	if v.Bool("bf16") {
		dtypes, kernels = dtypes+1, kernels+1
	}
	cpuDtypes := dtypes
	if v.String("device") == deviceGPU {
		cpuDtypes = dtypes - blocks
	}
	return attnNeedleCost(v, []int{v.Int("context")}, v.Int("trials"), dtypes, cpuDtypes, kernels, true)
}

func (Scales) Cost(v sim.Values) sim.Cost {
	const d = 128
	n, kvh, group := int64(v.Int("tokens")), int64(v.Int("kv-heads")), int64(v.Int("q-per-kv"))
	trials, factors := v.Int("trials"), int64(len(v.Ints("outlier")))
	nhd := sim.MulSat(n, kvh, d)
	// A trial holds K and V as float32 and float64 and four caches (its
	// series run side by side), K and V 16-bit codes each.
	perTrial := sim.AddSat(sim.MulSat(nhd, 2*4+2*8), sim.MulSat(nhd, 4*4))
	mem := sim.AddSat(costBase, sim.MulSat(int64(sim.Workers(trials)), perTrial))
	// Per trial: drawing, the reference for every query head, two caches
	// and three kernel runs (per-head scales, per-tensor scale, bf16).
	// The parts add up to a fifth of what TestCostCalibration measures (one
	// core, 2026-11-30: 57.6 s for 10.3 s estimated), hence the factor 5.
	perTrialWork := sim.MulSat(5, sim.AddSat(sim.MulSat(nhd, 2*costNormal+4*costQuant), sim.MulSat(nhd, group, costRef+3*costKernel)))
	return sim.Cost{Memory: mem, Work: sim.MulSat(factors, int64(trials), perTrialWork)}
}

func (H200Attention) Cost(v sim.Values) sim.Cost {
	const q, d = 64, 128
	blocks, modes := int64(len(v.Ints("block-n"))), int64(len(v.Ints("modes")))
	kernels, dtypes := blocks*modes, blocks
	if v.Bool("bf16") {
		kernels, dtypes = kernels+1, dtypes+1
	}
	var mem, work int64
	for _, n := range v.Ints("N") {
		nd := sim.MulSat(int64(n), d)
		// Inputs as float32 (and their float64 generation), one cache, and
		// the quantized reference.
		mem = max(mem, sim.MulSat(nd, 2*4+2*8+4))
		work = sim.AddSat(work, sim.AddSat(sim.MulSat(nd, 2*costNormal+dtypes*2*costQuant), sim.MulSat(q, nd, kernels*costKernel+dtypes*costRef)))
	}
	return sim.Cost{Memory: sim.AddSat(costBase, mem), Work: work}
}

func (GPUAccum) Cost(v sim.Values) sim.Cost {
	trials := int64(v.Int("trials"))
	var mem, work int64
	for _, k := range v.Ints("K") {
		tk := sim.MulSat(trials, int64(k))
		// Codes and float32 inputs for the GPU, and the CPU models' check.
		mem = max(mem, sim.MulSat(tk, 2+2*4+8))
		work = sim.AddSat(work, sim.MulSat(tk, 4*costChain+costExact+2*costDraw))
	}
	return sim.Cost{Memory: sim.AddSat(256<<20, mem), Work: work}
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
