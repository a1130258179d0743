package experiments

import (
	"github.com/fp8lab/fp8lab/sim"
)

// The cost estimates of the experiments (sim.Coster), one method each,
// beside its experiment (NAME_chart.go or the experiment's own file;
// TestEveryExperimentHasACost checks that every registered experiment has
// one), from the buffers each allocates and the loops it runs. The per-element
// costs are nanoseconds on one core of the development machine (a 2-core
// x86-64 VM), measured with TestCostCalibration; they are meant to be right
// within a small factor. This file holds what several share.
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

// attnNeedleCost is the cost of attnNeedleContext over contexts with the
// given runs: per context, a group of haystacks at a time (attnGroup: as
// many as hold 1 GiB, each a cache per dtype and the more of K and V as
// float32 and the views the references keep of the caches (attention's
// refView); with
// device gpu the group's packed caches too, and the groups drawn ahead),
// a borrowed copy of each cache per worker (an upper bound: only a
// block-scaled cache is copied, the others are read through the trial's
// tokens), the scores of the references computed a chunk of trials at a
// time, and per trial every series' kernel over the context, a baseline
// and (withErr) the quantized reference.
// cpuDtypes is the number of caches whose kernels run on the CPU (all of
// them with device cpu).
func attnNeedleCost(v sim.Values, contexts []int, trials int, dtypes, cpuDtypes, kernels int64, withErr bool) sim.Cost {
	d := int64(attnNeedleFromValues(v).d)
	m := int64(v.Int("candidates"))
	haystacks := int64(min(v.Int("haystacks"), trials))
	workers := int64(sim.Workers(trials))
	var mem, work, device int64
	for _, c := range contexts {
		n := int64(c)
		nd := sim.MulSat(n, d)
		// one haystack: its caches, and first its values, then instead of
		// them the references' views of the caches (attnGroup)
		per := sim.AddSat(sim.MulSat(dtypes, nd, 4), max(sim.MulSat(nd, 8), sim.MulSat(dtypes, nd, 4)))
		group := min(haystacks, max(1, attnGroupMemory(v)/max(per, 1)))
		if wantsGPU(v) {
			per = sim.AddSat(per, sim.MulSat(dtypes, nd, 4)) // its caches packed for the GPU as it is drawn (at most 16 bits a code)
		}
		held := int64(1) // groups in memory at once: the one read, and those drawn ahead
		if wantsGPU(v) {
			held += gpuDrawAhead
		}
		hay := sim.AddSat(sim.MulSat(held, group, per), sim.MulSat(dtypes, min(workers, 64), nd, 4))
		perWorker := sim.AddSat(sim.MulSat(n, 16), sim.MulSat(m, d, 4))
		// The references of a chunk of a haystack's trials, computed
		// together (attnRefs): a score per key and trial of the chunk, one
		// chunk a cache and haystack of the group at once at most.
		refs := sim.MulSat(min(workers, sim.MulSat(group, dtypes)), attnRefChunk, n, 8)
		mem = max(mem, sim.AddSat(sim.AddSat(hay, sim.MulSat(workers, perWorker)), refs))
		// the device's buffers: one batch (a group) of caches at a time
		device = max(device, sim.MulSat(group, dtypes, nd, 4))
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
	return withGPU(v, sim.Cost{Memory: sim.AddSat(costBase, mem), Work: work}, device)
}

// gpuStackBytes is the host memory a GPU run's stack holds beside the
// run's own (the WebGPU library, the driver, its pipelines and upload's
// two 32 MiB staging buffers), an upper-end figure. Measured as the peak
// RSS of a small run with -device gpu less that with -device cpu
// (2026-12-07): needle -contexts 4096 -trials 8, 261 MiB on lavapipe and
// 293 MiB on an H200 (NVIDIA 580.159.04); kv-formats the same, 256 MiB on
// the H200.
const gpuStackBytes = 512 << 20

// withGPU adds to c, for a run whose values ask for the GPU, what its GPU
// holds outside Go's heap (sim.Cost.Outside): the stack (gpuStackBytes)
// and device bytes of buffers, which lavapipe keeps in host memory.
func withGPU(v sim.Values, c sim.Cost, device int64) sim.Cost {
	if !wantsGPU(v) {
		return c
	}
	gpu := sim.AddSat(gpuStackBytes, device)
	c.Outside, c.Memory = sim.AddSat(c.Outside, gpu), sim.AddSat(c.Memory, gpu)
	return c
}
