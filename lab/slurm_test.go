package lab

import (
	"strings"
	"testing"
)

func TestSlurmHelpers(t *testing.T) {
	states := map[string]string{}
	parseStates("12_0|COMPLETED\n12_1|CANCELLED by 0\n12_[2-5]|PENDING\n\nnoise\n", states)
	if len(states) != 3 || states["12_1"] != "CANCELLED" || states["12_[2-5]"] != "PENDING" {
		t.Errorf("parseStates: %v", states)
	}
	if allEnded(states) {
		t.Error("a pending task counted as ended")
	}
	delete(states, "12_[2-5]")
	if !allEnded(states) {
		t.Error("completed and cancelled tasks not ended")
	}
	jobs := []string{"3", "4", "|", "9", "|"}
	if got := strings.Join(lastSubmission(jobs), ","); got != "9" || countSubmissions(jobs) != 2 {
		t.Errorf("last submission %q, %d submissions", got, countSubmissions(jobs))
	}
	if got := lastSubmission([]string{"3", "4", "|"}); strings.Join(got, ",") != "3,4" {
		t.Errorf("last of one submission: %v", got)
	}
	if shellQuote("it's") != `'it'\''s'` {
		t.Errorf("shellQuote: %s", shellQuote("it's"))
	}
}
