package experiments

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fp8lab/fp8lab/experiments/costdata"
)

// syntheticCostsGPU names the SYNTHETIC file's GPU so that no output made
// from it can pass for a measurement.
const syntheticCostsGPU = "SYNTHETIC (tests only: formulas, not measurements)"

// syntheticCostsJSON is a SYNTHETIC kernel-cost file in the schema of the
// capture, every time from a formula of bytes and FLOPs (a 4 TB/s, 600
// TFLOP/s device with fixed costs of a few µs), for the tests of the cost
// models' invariants only. It is not an H200's and not a prediction.
func syntheticCostsJSON(extra ...map[string]any) []byte {
	rows := append([]map[string]any(nil), extra...)
	add := func(r map[string]any) { rows = append(rows, r) }
	elem := map[string]float64{"bf16": 2, "fp8-tensor": 1, "fp8-head": 1}
	eff := map[string]float64{"bf16": 0.85, "fp8-tensor": 0.8, "fp8-head": 0.78}
	shapes := [][3]int{{32, 8, 128}, {64, 8, 64}, {8, 1, 256}, {8, 1, 512}}
	for _, s := range shapes {
		qh, kvh, hd := s[0], s[1], s[2]
		for _, kv := range []string{"bf16", "fp8-tensor", "fp8-head"} {
			for _, b := range []int{1, 8, 32} {
				for _, L := range []int{1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072} {
					bytes := float64(b*L*2*kvh*hd) * elem[kv]
					add(map[string]any{"op": "decode", "impl": "triton-splitkv", "kv": kv, "batch": b, "context": L,
						"q_heads": qh, "kv_heads": kvh, "head_dim": hd, "us": 6 + bytes/(4e12*eff[kv])*1e6, "reps": 10})
				}
			}
			for _, t := range []int{1, 8, 32, 256, 2048} {
				add(map[string]any{"op": "kv_write", "kv": kv, "batch": t, "kv_heads": kvh, "head_dim": hd,
					"us": 2 + float64(t*2*kvh*hd)*(2+elem[kv])/3e12*1e6})
				if kv != "bf16" {
					add(map[string]any{"op": "q_quant", "kv": kv, "batch": t, "q_heads": qh, "head_dim": hd, "us": 2 + float64(t*qh*hd)*3/3e12*1e6})
				}
			}
		}
	}
	for _, s := range [][3]int{{32, 8, 128}, {8, 1, 256}} {
		qh, kvh, hd := s[0], s[1], s[2]
		for _, im := range []struct {
			impl string
			f    float64
		}{{"triton-bf16", 1}, {"triton-fp8-1level", 0.6}, {"triton-fp8-2level", 0.9 + 0.95*float64(hd/256)}, {"sdpa", 1.1}} {
			impl, f := im.impl, im.f
			for _, L := range []int{4096, 16384, 32768} {
				pairs := float64(L) * float64(L) / 2
				add(map[string]any{"op": "prefill", "impl": impl, "context": L, "q_heads": qh, "kv_heads": kvh, "head_dim": hd,
					"us": 10 + f*pairs*float64(qh*hd)*4/6e14*1e6, "registers": 168 + 40*hd/256, "spills": 8 * (hd / 256)})
			}
		}
	}
	for _, l := range [][3]any{{"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096}, {"down", 4096, 14336}, {"lm_head", 128256, 4096},
		{"gpt-oss qkv", 5120, 2880}, {"gpt-oss o", 2880, 4096}} {
		n, k := float64(l[1].(int)), float64(l[2].(int))
		for _, m := range []int{1, 8, 32, 256, 2048, 8192} {
			mf := float64(m)
			us := 3 + max(2*(mf*k+k*n+mf*n)/4e12, 2*mf*n*k/6e14)*1e6
			add(map[string]any{"op": "linear", "name": l[0], "m": m, "n": l[1], "k": l[2], "us": us})
		}
	}
	add(map[string]any{"op": "stream", "bytes": 1 << 30, "us": 2.0 * (1 << 30) / 4e12 * 1e6})
	add(map[string]any{"op": "launch", "impl": "graph", "us": 2.5})
	add(map[string]any{"op": "launch", "impl": "eager", "us": 6})
	b, err := json.Marshal(map[string]any{"schema": costdata.Schema, "rows": rows, "provenance": map[string]any{
		"gpu": syntheticCostsGPU, "driver": "none", "cuda": "none", "date": "1970-01-01T00:00:00Z", "commit": "synthetic",
		"script": "experiments/costs_synthetic_test.go", "method": "formulas of bytes and FLOPs (tests only)",
		"clocks": map[string]any{"sm_mhz_max": 1980, "sm_mhz": []float64{1980, 1980, 1980}, "mem_mhz": 3201},
	}})
	if err != nil {
		panic(err)
	}
	return b
}

// syntheticCosts parses syntheticCostsJSON with the extra rows.
func syntheticCosts(extra ...map[string]any) *costdata.File {
	f, err := costdata.Parse("synthetic-kernel-costs (tests only)", syntheticCostsJSON(extra...))
	if err != nil {
		panic(fmt.Sprintf("the synthetic cost file does not parse: %v", err))
	}
	return f
}

// A build without measured costs tests the models on the synthetic file;
// a build with them uses them (the invariant tests that need the synthetic
// file's shape call syntheticCosts themselves).
func init() {
	if _, err := measuredCosts(); errors.Is(err, costdata.ErrNoMeasuredCosts) {
		measuredCosts = func() (*costdata.File, error) { return syntheticCosts(), nil }
	}
}
