package experiments

import (
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// With device gpu the fp8 kernels of needle do not count as CPU work: the
// H200 record run (1M tokens x 1000 trials, 11 s on an H200) fits the
// lab's default budget, its CPU twin does not.
func TestNeedleCostOnGPU(t *testing.T) {
	args := map[string]string{"contexts": "1048576", "trials": "1000", "series": "fp8-two-level"}
	est := func(device string) sim.Cost {
		a := map[string]string{"device": device}
		for k, v := range args {
			a[k] = v
		}
		v, err := sim.ParseValues(Needle{}.Params(), a)
		if err != nil {
			t.Fatal(err)
		}
		return Needle{}.Cost(v)
	}
	cpu, gpu := est("cpu"), est("gpu")
	t.Logf("needle 1M x 1000: cpu %.3g operations, gpu %.3g", float64(cpu.Work), float64(gpu.Work))
	if !(gpu.Work < cpu.Work/10) {
		t.Errorf("gpu work %d is not far below cpu work %d", gpu.Work, cpu.Work)
	}
	if gpu.Work > 3.6e12 {
		t.Errorf("gpu estimate %.3g is above the lab's default -max-work 3.6e12", float64(gpu.Work))
	}
}
