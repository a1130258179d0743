package experiments

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/sim"
)

// TestEveryExperimentHasACost: the lab refuses runs over its budget from
// these estimates, so every registered experiment gives one, and its
// defaults fit a laptop (4 GiB, an hour of CPU).
func TestEveryExperimentHasACost(t *testing.T) {
	for _, e := range sim.Experiments() {
		if strings.HasPrefix(e.Name(), "lab-") {
			continue // the lab's test experiments
		}
		v, err := sim.Defaults(e.Params())
		if err != nil {
			t.Fatal(err)
		}
		c, ok := sim.Estimate(e, v)
		if !ok {
			t.Errorf("%s has no cost estimate (implement sim.Coster)", e.Name())
			continue
		}
		if c.Memory <= 0 || c.Work <= 0 || c.Memory > 4<<30 || c.Work > 3600e9 {
			t.Errorf("%s at its defaults: %v", e.Name(), c)
		}
		t.Logf("%-14s defaults: %v", e.Name(), c)
	}
}

// TestCostOfTheAttacks: the runs of issue 9, item 5 (each parameter within
// its limits, their product not) are estimated far beyond a laptop.
func TestCostOfTheAttacks(t *testing.T) {
	for _, tt := range []struct {
		exp  sim.Experiment
		args map[string]string
		mem  int64 // at least
		work int64 // at least
	}{
		// 0.55 GiB per trial before a trial was streamed; months of CPU.
		{Contraction{}, map[string]string{"K": "4194304", "trials": "100000", "cols": "64"}, 0, 1e15},
		// 6.2 GiB and months of CPU.
		{Needle{}, map[string]string{"contexts": "1048576", "trials": "1000000", "head_dim": "256", "candidates": "1024"}, 4 << 30, 1e16},
		{Scales{}, map[string]string{"tokens": "1048576", "kv_heads": "64"}, 64 << 30, 1e13},
		{SkipSW{}, map[string]string{"acc-contexts": "1048576", "trials": "10000"}, 0, 1e15},
		{H200Attention{}, map[string]string{"N": "1048576"}, 1 << 30, 1e12},
	} {
		v, err := sim.ParseValues(tt.exp.Params(), tt.args)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := sim.Estimate(tt.exp, v)
		if c.Memory < tt.mem || c.Work < tt.work {
			t.Errorf("%s %v: %v", tt.exp.Name(), tt.args, c)
		}
		t.Logf("%s %v: %v", tt.exp.Name(), tt.args, c)
	}
}

// TestCostCalibration compares estimates with the CPU time of small runs
// on one core (FP8LAB_COST_CALIBRATION=1; it takes a minute). The ratios
// are reported, not asserted: they depend on the machine.
func TestCostCalibration(t *testing.T) {
	if os.Getenv("FP8LAB_COST_CALIBRATION") == "" {
		t.Skip("set FP8LAB_COST_CALIBRATION=1")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, tt := range []struct {
		exp  sim.Experiment
		args map[string]string
	}{
		{Contraction{}, map[string]string{"K": "65536", "trials": "4", "captures": "off"}},
		{Needle{}, map[string]string{"contexts": "16384", "trials": "16"}},
		{Promotion{}, map[string]string{"context": "16384", "trials": "8"}},
		{Scales{}, map[string]string{"tokens": "4096", "trials": "2", "outlier": "1,10"}},
		{SkipSW{}, map[string]string{"acc-contexts": "16384", "trials": "2"}},
		{H200Attention{}, map[string]string{"N": "4096"}},
	} {
		v, err := sim.ParseValues(tt.exp.Params(), tt.args)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := sim.Estimate(tt.exp, v)
		start := time.Now()
		if _, err := sim.Execute(context.Background(), tt.exp, v, 1, nil); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		t.Logf("%-14s %v: estimated %s, took %v: ratio %.2f", tt.exp.Name(), tt.args, sim.CPUTime(c.Work), took.Round(time.Millisecond), float64(c.Work)/float64(took.Nanoseconds()))
	}
}

// TestScalesCostGPU: with device gpu a scales run holds its caches packed
// for the GPU and starts extra workers while trials wait for the device
// (Scales.Run), so on 16 cores its estimate is above the CPU run's by at
// least that: 23 trials of 50 bytes a K element against 16 of 40. On the
// H200 host the default GPU run's peak RSS was 3.42 GiB against an
// estimate of 2.56 GiB before it counted them.
func TestScalesCostGPU(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	est := func(dev string) sim.Cost {
		v, err := sim.ParseValues(Scales{}.Params(), map[string]string{"device": dev})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := sim.Estimate(Scales{}, v)
		return c
	}
	cpu, gpu := est("cpu"), est("gpu")
	nhd := int64(4096 * 8 * 128)
	if want := int64(costBase) + 23*50*nhd; gpu.Memory < want {
		t.Errorf("scales -device gpu on 16 cores: %v, want at least %s", gpu, sim.Bytes(want))
	}
	if want := int64(costBase) + 16*40*nhd; cpu.Memory != want {
		t.Errorf("scales -device cpu on 16 cores: %v, want %s", cpu, sim.Bytes(want))
	}
	if gpu.Memory < 3672000000 { // 3.42 GiB
		t.Errorf("scales -device gpu on 16 cores: %v, below the 3.42 GiB measured on the H200 host", gpu)
	}
}

// TestCostOutside: a GPU run's estimate counts what its GPU holds outside
// Go's heap (the stack and the device's buffers), as part of its memory; a
// CPU run's counts nothing there.
func TestCostOutside(t *testing.T) {
	for _, name := range []string{"needle", "promotion", "kv-formats", "sensitivity", "scales"} {
		e, err := sim.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		est := func(dev string) sim.Cost {
			v, err := sim.ParseValues(e.Params(), map[string]string{"device": dev})
			if err != nil {
				t.Fatal(err)
			}
			return e.(sim.Coster).Cost(v)
		}
		cpu, gpu := est("cpu"), est("gpu")
		if cpu.Outside != 0 {
			t.Errorf("%s -device cpu: Outside %d, want 0", name, cpu.Outside)
		}
		// more than the stack: the device's buffers of a batch count too
		if gpu.Outside <= gpuStackBytes || gpu.Outside >= gpu.Memory {
			t.Errorf("%s -device gpu: Outside %s of Memory %s, want above the stack's %s and below Memory",
				name, sim.Bytes(gpu.Outside), sim.Bytes(gpu.Memory), sim.Bytes(gpuStackBytes))
		}
	}
	// withGPU adds the stack and the device's bytes to Memory and Outside
	// alike, and nothing with device cpu.
	for _, dev := range []string{"cpu", "gpu"} {
		v, err := sim.ParseValues(Needle{}.Params(), map[string]string{"device": dev})
		if err != nil {
			t.Fatal(err)
		}
		got := withGPU(v, sim.Cost{Memory: 100, Outside: 0, Work: 7}, 1000)
		want := sim.Cost{Memory: 100, Work: 7}
		if dev == "gpu" {
			want = sim.Cost{Memory: 100 + gpuStackBytes + 1000, Outside: gpuStackBytes + 1000, Work: 7}
		}
		if got != want {
			t.Errorf("withGPU, device %s: %+v, want %+v", dev, got, want)
		}
	}
}
