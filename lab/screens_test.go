package lab

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/tensorfile"
)

// screenshotParams are the parameters of the runs whose charts go into
// docs/img: the defaults, except fewer trials (or contexts) where the
// default run costs minutes of CPU on a 2-core machine. The axes, series
// and styles are those of the default run; the caption under each chart
// is the run's reproduce line, so the figures say what they hold.
var screenshotParams = map[string]map[string]any{
	"needle":         {"trials": 24},
	"promotion":      {"trials": 24},
	"sensitivity":    {"context": 32768, "trials": 16},
	"contraction":    {"trials": 16},
	"h200-attention": {"N": "4096,16384,65536"},
	"scales":         {"trials": 2},
	"skip-sw":        {"trials": 2},
	"kv-formats":     {"set": "all", "contexts": []int{4096, 16384, 32768}, "trials": 12},
}

// TestScreenshots runs every registered experiment (the test experiment
// aside) on the server, opens each run in the page and saves its chart (the
// run's title, the chart, its legend and its notes) as
// $LAB_SCREENSHOTS/NAME.png. `make lab-screenshot` sets LAB_SCREENSHOTS to
// docs/img; without it the test is skipped: it runs every experiment at its
// defaults, minutes of CPU.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("LAB_SCREENSHOTS")
	if dir == "" {
		t.Skip("LAB_SCREENSHOTS is not set (make lab-screenshot sets it to docs/img)")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir) // relative to the module root
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	tensors := filepath.Join(t.TempDir(), "tensors")
	l := newTestLab(t, Options{Workers: 1, TensorsDir: tensors})
	only := os.Getenv("LAB_SCREENSHOTS_ONLY") // comma-separated names, to refresh a few
	var ids []string
	var names []string
	for _, e := range sim.Experiments() {
		if strings.HasPrefix(e.Name(), "lab-") || (only != "" && !strings.Contains(","+only+",", ","+e.Name()+",")) {
			continue
		}
		params := screenshotParams[e.Name()]
		if params == nil {
			params = map[string]any{}
		}
		var code int
		var body []byte
		if fe, ok := e.(sim.FileExperiment); ok {
			// Its own small Q, K, V in the tensors folder (one query
			// head per KV head, 4096 tokens).
			code, body = l.do("POST", "/api/tensors/run", map[string]any{"files": screenshotTensors(t, tensors, fe), "params": params, "seed": 1})
		} else {
			code, body = l.do("POST", "/api/runs", map[string]any{"experiment": e.Name(), "params": params, "seed": 1})
		}
		if code != 201 {
			t.Fatalf("%s: %d %s", e.Name(), code, body)
		}
		ids = append(ids, idOf(t, body))
		names = append(names, e.Name())
	}
	for i, id := range ids {
		deadline := time.Now().Add(20 * time.Minute)
		for {
			r := l.get(id)
			if r.State != notebook.Running && r.State != notebook.Queued {
				if r.State != notebook.Done {
					t.Errorf("%s: run %s %s %s", names[i], id, r.State, r.Error)
				}
				t.Logf("%s: %s in %v, %d points", names[i], r.State, r.Ended.Sub(*r.Started).Round(time.Millisecond), r.Points)
				if v, ok := r.Summary["measured_costs"]; ok && v == 0 && r.Points == 0 {
					t.Logf("%s: no measured kernel costs in this build, nothing to draw: no screenshot", names[i])
					ids[i] = ""
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %s after 20 minutes", names[i], r.State)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1100)); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if id == "" {
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#run/"+id)); err != nil {
			t.Fatal(err)
		}
		poll(t, tctx, `document.body.dataset.ready === 'true' && lab.view && lab.view.ended && !lab.view.drawPending && +document.getElementById('chart').dataset.points > 0`, 30*time.Second)
		eval[chromedp.Void](t, tctx, `lab.chart.resize()`)
		time.Sleep(300 * time.Millisecond)
		png, err := chromedp.Run(tctx, chromedp.Screenshot(chromedp.ID("chart-panel")))
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		path := filepath.Join(dir, names[i]+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s; chart: %s", path, eval[string](t, ctx, `JSON.stringify(lab.chart.getOption().series.map((s) => [s.type, s.name, (s.data || []).length]))`))
	}
}

// screenshotTensors writes Q [1, 8, 128], K and V [4096, 8, 128] (.npy,
// normal values, V with mean 0.5) for the file experiment's required roles
// into dir and returns the role → name map.
func screenshotTensors(t *testing.T, dir string, fe sim.FileExperiment) map[string]string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	files := map[string]string{}
	for _, r := range fe.FileRoles() {
		tokens, mean := map[string]int{"q": 1, "k": 4096, "v": 4096}[r.Name], map[string]float64{"v": 0.5}[r.Name]
		if tokens == 0 {
			continue
		}
		x := make([]float32, tokens*8*128)
		for i := range x {
			x[i] = float32(mean + rng.NormFloat64())
		}
		if err := tensorfile.WriteNPY(filepath.Join(dir, r.Name+".npy"), []int{tokens, 8, 128}, x); err != nil {
			t.Fatal(err)
		}
		files[r.Name] = r.Name + ".npy"
	}
	return files
}

func idOf(t *testing.T, body []byte) string {
	t.Helper()
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.ID == "" {
		t.Fatalf("no run id in %s: %v", body, err)
	}
	return r.ID
}

// TestViewScreenshots writes the screenshots of the views beyond an
// experiment's default chart to $LAB_SCREENSHOTS (docs/img): fields.png
// (h200-attention with another field on y: the simulated minus the H200's
// error, %), dist.png (the distribution of contraction's trials at one K),
// paired.png (two contraction runs on the same seeds, their paired
// difference with its interval). Skipped without LAB_SCREENSHOTS.
func TestViewScreenshots(t *testing.T) {
	dir := os.Getenv("LAB_SCREENSHOTS")
	if dir == "" {
		t.Skip("LAB_SCREENSHOTS is not set (make lab-screenshot sets it to docs/img)")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir)
	}
	ctx := browser(t)
	l := newTestLab(t, Options{Workers: 2})
	h := l.start("h200-attention", map[string]any{"N": "4096,16384,65536"}, 1)
	cp := func(kb int) map[string]any {
		return map[string]any{"K": "1024,4096,16384,65536", "trials": 64, "series": "wgmma-kblockn", "k-block-n": kb, "captures": "off"}
	}
	a, b := l.start("contraction", cp(64), 1), l.start("contraction", cp(512), 1)
	for _, id := range []string{h.ID, a.ID, b.ID} {
		if r := l.wait(id, 10*time.Minute, ended); r.State != notebook.Done {
			t.Fatalf("run %s: %s %s", id, r.State, r.Error)
		}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1100)); err != nil {
		t.Fatal(err)
	}
	shot := func(name, id string) {
		t.Helper()
		time.Sleep(400 * time.Millisecond)
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.ID(id)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", name)
	}
	pick := func(sel, v string) {
		eval[chromedp.Void](t, ctx, `(() => { const s = document.getElementById('`+sel+`'); s.value = '`+v+`'; s.dispatchEvent(new Event('change')); })()`)
	}
	open := func(hash, ready string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(l.url+"/"+hash)); err != nil {
			t.Fatal(err)
		}
		poll(t, ctx, `document.body.dataset.ready === 'true' && `+ready, 30*time.Second)
	}
	open("#run/"+h.ID, `lab.view && lab.view.ended && !lab.view.drawPending && !!lab.view.built`)
	pick("chart-y", "diff_pct")
	shot("fields.png", "chart-panel")
	pick("chart-y", "y")

	open("#run/"+a.ID, `lab.view && lab.view.ended && !lab.view.drawPending && !document.getElementById('dist-panel').hidden`)
	eval[chromedp.Void](t, ctx, `document.getElementById('dist-panel').open = true`)
	pick("dist-x", "65536")
	poll(t, ctx, `!!lab.distChart`, 10*time.Second)
	eval[chromedp.Void](t, ctx, `lab.distChart.resize()`)
	shot("dist.png", "dist-panel")

	open("#compare/"+a.ID+","+b.ID, `!!lab.view && !!lab.view.built && [...document.getElementById('compare-y').options].some((o) => o.value === 'paired:y')`)
	pick("compare-y", "paired:y")
	eval[chromedp.Void](t, ctx, `lab.compareChart.resize()`)
	shot("paired.png", "compare-view")
	pick("compare-y", "y")
}
