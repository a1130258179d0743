package experiments

import (
	"context"
	"fmt"

	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
)

// The CPU/GPU choice of every experiment, in one place. An experiment with
// a device parameter (deviceParam: needle, promotion, kv-formats,
// sensitivity, scales, attention-file) asks wantsGPU and opens the GPU
// with openDevice; one that only runs on a GPU (gpu-accum, decode-bw)
// opens it with openGPU, or uses the Runner its caller gave.

// The values of the device parameter.
const (
	deviceCPU = "cpu"
	deviceGPU = "gpu"
)

// deviceParam is the device parameter of the needle experiments and
// scales; deviceParamDoc with its own doc for another experiment.
func deviceParam() sim.Param {
	return deviceParamDoc("where the kernels run: cpu (package attention) or gpu (the same arithmetic in WGSL through WebGPU, " +
		"bit for bit, all trials of a haystack at once) for every series the WGSL simulator runs (e4m3, e5m2, bf16, f16 MMAs and the native block-scaled path, head_dim 64/128/256); " +
		"the other series, baselines with sinks and references stay on the CPU, and the run's notes say which series ran where")
}

// deviceParamDoc is the device parameter (cpu, the default, or gpu) with
// doc.
func deviceParamDoc(doc string) sim.Param {
	return sim.Param{Name: "device", Kind: sim.KindChoice, Default: deviceCPU, Choices: []string{deviceCPU, deviceGPU}, Doc: doc}
}

// wantsGPU reports whether the run's values (of an experiment with a
// device parameter) ask for the GPU.
func wantsGPU(v sim.Values) bool { return v.String("device") == deviceGPU }

// openDevice starts opening the GPU for a run whose device parameter is
// gpu (nil for cpu; wgsl.OpenAsync), so that the run draws its inputs
// while the driver starts, and returns the function the caller defers,
// which closes it. In a run bound to a SharedGPU (the lab's) it takes that
// device instead, and the function lets it go. A failed open is the error
// of the runner's first use (its Err: "wgsl: opening the device: …";
// deviceErr prefixes "device gpu: ").
func openDevice(ctx context.Context, v sim.Values) (*wgsl.Runner, func()) {
	if !wantsGPU(v) {
		return nil, func() {}
	}
	if sr := sharedRunOf(ctx); sr != nil {
		return sr.s.take(ctx, sr)
	}
	// These runs time nothing (their kernels run untimed): no timestamp
	// queries, and so no probe of them on the open's critical path
	// (compiling and running one kernel: about 55 ms of a 205 ms open on
	// an H100, BENCHMARKS.md).
	r := wgsl.OpenAsync(ctx, wgsl.Options{NoTimestamps: true})
	return r, func() { r.Close() }
}

// deviceErr waits for g's device (nil for cpu) and returns the error of a
// failed open, starting "device gpu: ".
func deviceErr(g *wgsl.Runner) error {
	if g == nil {
		return nil
	}
	if err := g.Err(); err != nil {
		return fmt.Errorf("device gpu: %w", err)
	}
	return nil
}

// openGPU returns the GPU of experiment name, which runs only on one: r
// when the caller gave one (and a done that leaves it open), else the
// SharedGPU's device in a run bound to one (done lets it go), else a
// runner wgsl.Open opens (done closes it); the error says how to get an
// adapter.
func openGPU(ctx context.Context, r *wgsl.Runner, name string) (*wgsl.Runner, func(), error) {
	if r != nil {
		return r, func() {}, nil
	}
	needs := func(err error) error {
		return fmt.Errorf("%s needs a WebGPU adapter (a GPU driver, or lavapipe: apt-get install mesa-vulkan-drivers): %w", name, err)
	}
	if sr := sharedRunOf(ctx); sr != nil {
		r, done := sr.s.take(ctx, sr)
		if err := r.Err(); err != nil {
			done()
			return nil, nil, needs(err)
		}
		return r, done, nil
	}
	r, err := wgsl.Open(ctx, wgsl.Options{})
	if err != nil {
		return nil, nil, needs(err)
	}
	return r, func() { r.Close() }, nil
}
