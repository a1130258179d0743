package experiments

import (
	"context"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// costsExec runs an experiment with command-line style values.
func costsExec(t *testing.T, e sim.Experiment, args map[string]string) (*sim.Recorder, error) {
	t.Helper()
	v, err := sim.ParseValues(e.Params(), args)
	if err != nil {
		return nil, err
	}
	rec := &sim.Recorder{}
	_, err = sim.Execute(context.Background(), e, v, 1, rec)
	return rec, err
}

// TestThroughputSynthetic runs the benchmark on the SYNTHETIC file.
func TestThroughputSynthetic(t *testing.T) {
	withCosts(t, syntheticCosts())
	for _, model := range []string{"llama-3.1-8b", "gpt-oss-20b"} {
		rec, err := costsExec(t, Throughput{}, map[string]string{"model": model, "vary-values": "1,8,32"})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(strings.Join(rec.Notes(), "\n"))
		t.Log(rec.SummaryValues())
		for _, p := range rec.Points() {
			t.Log(p)
		}
	}
}
