package experiments

import (
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/experiments/costdata"
)

// withCosts runs the test with the cost file f (nil: none).
func withCosts(t *testing.T, f *costdata.File) {
	t.Helper()
	old := measuredCosts
	t.Cleanup(func() { measuredCosts = old })
	measuredCosts = func() (*costdata.File, error) {
		if f == nil {
			return nil, costdata.ErrNoMeasuredCosts
		}
		return f, nil
	}
}

// TestITLMeasuredSynthetic runs itl and skip-sw on the SYNTHETIC file:
// the notes say it is not a measurement, and every published GPU and model
// has its row.
func TestITLMeasuredSynthetic(t *testing.T) {
	withCosts(t, syntheticCosts())
	for _, e := range []struct {
		exp  string
		args map[string]string
	}{{"itl", map[string]string{"costs": "measured"}}, {"skip-sw", map[string]string{"costs": "measured", "accuracy": "false"}}} {
		var rec interface{ Notes() []string }
		var err error
		if e.exp == "itl" {
			r, er := itlExec(t, ITL{}, e.args)
			rec, err = r, er
		} else {
			r, er := itlExec(t, SkipSW{}, e.args)
			rec, err = r, er
		}
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(rec.Notes(), "\n")
		if !strings.Contains(notes, "NOT A MEASUREMENT") {
			t.Errorf("%s: the notes do not say the file is synthetic", e.exp)
		}
		t.Log(notes)
	}
}

// TestITLNoMeasuredCosts: a build without the file says so and predicts
// nothing.
func TestITLNoMeasuredCosts(t *testing.T) {
	withCosts(t, nil)
	rec, err := itlExec(t, ITL{}, map[string]string{"costs": "measured"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Points()); n != 0 {
		t.Errorf("%d points without measured costs", n)
	}
	if s := rec.SummaryValues(); len(s) != 1 || s["measured_costs"] != 0 {
		t.Errorf("summary %v, want only measured_costs = 0", s)
	}
	if !strings.Contains(strings.Join(rec.Notes(), "\n"), "no measured costs") {
		t.Errorf("notes %q do not say there are no measured costs", rec.Notes())
	}
}
