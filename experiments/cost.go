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
	var mem, work int64
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
