package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/sim"
)

// TestReadmeExamples checks the README's statements a change can make
// stale (issue 18: its make verify output and its list of the browser's
// experiments were): the output of `make verify` and of `lab verify` on
// the MMA-Sim records, as `lab verify` prints them now; the experiments
// the browser has (every registered one but those that read input files);
// a row of the experiments table and a screenshot in docs/img for every
// registered experiment.
func TestReadmeExamples(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	verifyLast := func(paths ...string) string {
		var out bytes.Buffer
		dispatch(context.Background(), append([]string{"verify"}, paths...), &out, &out)
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		return lines[len(lines)-1]
	}
	if _, err := os.Stat("../../../shared/golden/h200"); err != nil {
		t.Log("no ../shared/golden: the verify outputs are not checked")
	} else {
		block := regexp.MustCompile("(?s)\\$ make verify\n\\.\\.\\.\n([^\n]*)\n```").FindStringSubmatch(readme)
		mk, _ := os.ReadFile("../../Makefile")
		if !strings.Contains(string(mk), "VERIFY_PATHS = $(GOLDEN) testdata/h200-fresh $(KHATTAK) $(MMASIM)") {
			t.Error("the Makefile's VERIFY_PATHS changed: update this test")
		}
		if got := verifyLast("../../../shared/golden/h200", "../../testdata/h200-fresh", "../../../shared/golden/khattak", "../../../shared/golden/mmasim"); block == nil || block[1] != got {
			t.Errorf("README's make verify says %q, lab verify says %q", block, got)
		}
		if got := verifyLast("../../../shared/golden/mmasim"); !strings.Contains(readme, "```\n"+got+"\n```") {
			t.Errorf("README lacks the MMA-Sim verify output %q", got)
		}
	}
	var browser, all []string
	for _, e := range sim.Experiments() {
		if strings.HasPrefix(e.Name(), "lab-") || e.Name() == "demo" {
			continue
		}
		all = append(all, e.Name())
		if _, files := e.(sim.FileExperiment); !files {
			browser = append(browser, e.Name())
		}
	}
	list := regexp.MustCompile(`(?s)but the one that reads your files:\s+(.*?) \(attention-file`).FindStringSubmatch(readme)
	if list == nil {
		t.Fatal("README: no list of the browser's experiments")
	}
	got := strings.Fields(strings.NewReplacer(",", " ").Replace(list[1]))
	slices.Sort(browser)
	if !slices.Equal(got, browser) {
		t.Errorf("README's browser list %v, the browser has %v", got, browser)
	}
	for _, name := range all {
		if !strings.Contains(readme, "| `"+name+"` |") {
			t.Errorf("README's experiments table has no row for %s", name)
		}
		if _, err := os.Stat("../../docs/img/" + name + ".png"); err != nil {
			if readmeNoMeasuredCosts(t, name) {
				t.Logf("no screenshot docs/img/%s.png: this build has no measured kernel costs, so its default run has no chart (make lab-screenshot once it has)", name)
				continue
			}
			t.Errorf("no screenshot docs/img/%s.png (make lab-screenshot)", name)
		}
	}
}

// readmeNoMeasuredCosts reports whether the experiment's default run says
// the build has no measured kernel costs (summary measured_costs = 0, no
// points): it has nothing to draw until experiments/costdata has its file.
func readmeNoMeasuredCosts(t *testing.T, name string) bool {
	t.Helper()
	e, err := sim.Lookup(name)
	if err != nil {
		return false
	}
	rec := &sim.Recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := sim.Execute(ctx, e, sim.Values{}, 1, rec)
	v, ok := res.Summary["measured_costs"]
	return err == nil && ok && v == 0 && len(rec.Points()) == 0
}

// TestReadmeServeFlags: every flag of `lab serve` is in the README, and
// the README's usage line of lab serve names the flags of serveUsage.
func TestReadmeServeFlags(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	help, _, err := lab(t, context.Background(), "serve", "-h")
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`(?m)^  (-[a-z][a-z-]*)`).FindAllStringSubmatch(help, -1)
	if len(flags) < 10 {
		t.Fatalf("serve -h lists %d flags:\n%s", len(flags), help)
	}
	for _, f := range flags {
		if !regexp.MustCompile(regexp.QuoteMeta(f[1]) + `\b[^-]`).MatchString(readme) {
			t.Errorf("lab serve %s is not in the README", f[1])
		}
	}
	line := regexp.MustCompile(`(?m)^lab serve (\[.*\])$`).FindStringSubmatch(readme)
	if line == nil {
		t.Fatal("the README has no usage line of lab serve")
	}
	for _, f := range regexp.MustCompile(`\[(-[a-z-]+)`).FindAllStringSubmatch(serveUsage, -1) {
		if !strings.Contains(line[1], "["+f[1]+" ") && !strings.Contains(line[1], "["+f[1]+"]") {
			t.Errorf("the README's usage line of lab serve lacks %s: %s", f[1], line[1])
		}
	}
}
