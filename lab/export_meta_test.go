package lab

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

// csvData returns a run CSV without its preamble (the "# " lines).
func csvData(body string) string {
	var out []string
	for _, line := range strings.SplitAfter(body, "\n") {
		if !strings.HasPrefix(line, "# ") && !strings.HasPrefix(line, `"# `) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// TestExportsCarryParamsAndUnits: a run's CSV says, before its header,
// which run it is and how many lines precede the header, its reproduce
// line, parameters and seed, its build, and the quantity and unit of every
// column; its JSON carries the record (parameters) and the experiment's
// chart (quantities and units of x, y, the fields and the summary) (issue
// 18: CSV exports did not carry their parameters).
func TestExportsCarryParamsAndUnits(t *testing.T) {
	l := newTestLab(t, Options{})
	run := l.wait(l.start("lab-chart", map[string]any{"points": 4, "scale": 2}, 5).ID, 10*time.Second, ended)
	if run.State != notebook.Done {
		t.Fatalf("run %s", run.State)
	}
	_, body := l.doHeader("/api/runs/"+run.ID+"/export?format=csv", nil)
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err == nil {
		t.Fatal("the preamble's one-cell rows and the table's rows read as one table")
	}
	r := csv.NewReader(strings.NewReader(body))
	r.FieldsPerRecord = -1
	if rows, err = r.ReadAll(); err != nil {
		t.Fatal(err)
	}
	pre := []string{}
	for _, row := range rows {
		if !strings.HasPrefix(row[0], "# ") {
			break
		}
		pre = append(pre, row[0])
	}
	text := strings.Join(pre, "\n")
	for _, want := range []string{"# fp8lab run " + run.ID + " of lab-chart (done): 5 lines before the header (pandas: skiprows=5)",
		"# reproduce: lab run lab-chart -points 4 -scale 2 -seed 5", `"points":4`, `"scale":2`, "seed: 5",
		"x = size (elements)", "y = error (relative)", "p90 = error, 90th percentile (relative)", "acc = accuracy (fraction of trials)", "se = standard error of y (relative)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the CSV preamble lacks %q:\n%s", want, text)
		}
	}
	if len(pre) != 5 || rows[5][0] != "series" {
		t.Errorf("%d preamble lines, then %v", len(pre), rows[min(5, len(rows)-1)])
	}
	_, body = l.doHeader("/api/runs/"+run.ID+"/export?format=json", nil)
	var exp struct {
		Run   notebook.Run `json:"run"`
		Chart *sim.Chart   `json:"chart"`
	}
	if err := json.Unmarshal([]byte(body), &exp); err != nil || exp.Chart == nil || exp.Chart.Y.Unit != "relative" || len(exp.Chart.Fields) != 2 || exp.Run.Params["scale"] != float64(2) {
		t.Errorf("JSON export: %v %+v %+v", err, exp.Chart, exp.Run.Params)
	}
}
