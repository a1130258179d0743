package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fp8lab/fp8lab/lab/notebook"
)

// TestBrowserCharts checks the page's charts in headless Chromium on the
// lab-chart test experiment: declared axes with quantity and unit, colours
// by family (at most 10), exact zeros and a NaN drawn at the axis floor and
// noted, error bars, the reference line and the published mark, power
// ticks; the legend toggling a series and a family; an opened run filling
// the form with its own parameters; a browser run of the same parameters
// giving the same chart as the server run; and the comparison's overlay and
// table of differences.
func TestBrowserCharts(t *testing.T) {
	ctx := browser(t)
	wasmDir := buildWASM(t)
	l := newTestLab(t, Options{WASM: os.DirFS(wasmDir)})
	tctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#exp/lab-chart")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.ready === 'true' && !!document.getElementById('param-points')`, 20*time.Second)
	setParam(t, tctx, "points", "5")
	setParam(t, tctx, "scale", "2")
	eval[chromedp.Void](t, tctx, `document.getElementById('run-server').click()`)
	poll(t, tctx, `lab.view && lab.view.kind === 'run' && lab.view.ended && !lab.view.drawPending && !!lab.view.built`, 30*time.Second)
	serverID := eval[string](t, tctx, `lab.view.id`)
	eval[chromedp.Void](t, tctx, `drawRun(lab.view)`) // the summary (reference line) is in

	// Axes: quantity (unit), the declared log scales, power ticks.
	if got := eval[string](t, tctx, `JSON.stringify([lab.chart.getOption().xAxis[0].name, lab.chart.getOption().yAxis[0].name, lab.view.built.xScale, lab.chart.getOption().yAxis[0].type, lab.chart.getOption().xAxis[0].interval])`); got != `["size (elements)","error (relative)","log2","log",1]` {
		t.Errorf("axes: %s", got)
	}
	if got := eval[string](t, tctx, `[1e-8, 0.001, 100000, 1].map(lab.chart.getOption().yAxis[0].axisLabel.formatter).join(' ') + ' | ' + [10, 17, 4].map(lab.chart.getOption().xAxis[0].axisLabel.formatter).join(' ')`); got != "10⁻⁸ 0.001 10⁵ 1 | 1k 128k 16" {
		t.Errorf("ticks: %q", got)
	}

	// Every point is on the chart: the exact zeros and the NaN at the floor.
	chart := chartSeries(t, tctx)
	checkChart(t, "lab-chart", chart, l.points(serverID))
	notes := eval[string](t, tctx, `document.getElementById('chart-notes').textContent`)
	for _, want := range []string{"5 exact zeros", "1 non-finite value", "drawn as ▽ at the axis floor", "95 % intervals", "★ published 0.05"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q: %s", want, notes)
		}
	}
	if n := eval[int](t, tctx, `lab.chart.getOption().series.filter((s) => s.type === 'custom').length`); n != 1 {
		t.Errorf("%d error-bar series, want 1 (series a carries se)", n)
	}
	if got := eval[string](t, tctx, `JSON.stringify(lab.chart.getOption().series.find((s) => s.id === 'refs').markLine.data.map((d) => [d.name, d.yAxis]))`); got != `[["floor",0.00390625]]` {
		t.Errorf("reference line: %s", got)
	}

	// Colours by family, dash by variant, diamonds for measured hardware.
	var looks map[string][3]string
	if err := json.Unmarshal([]byte(eval[string](t, tctx, `JSON.stringify(Object.fromEntries(lab.chart.getOption().series.filter((s) => ['a', 'a exact', 'b', 'b fast', 'hw'].includes(s.name)).map((s) => [s.name, [s.color, JSON.stringify(s.lineStyle.type), s.symbol]])))`)), &looks); err != nil {
		t.Fatal(err)
	}
	if looks["a"][0] != looks["hw"][0] || looks["b"][0] != looks["b fast"][0] || looks["a"][0] == looks["b"][0] {
		t.Errorf("colours are not by family: %v", looks)
	}
	if looks["b"][1] == looks["b fast"][1] || looks["hw"][2] != "diamond" {
		t.Errorf("variants or the measured series not distinguished: %v", looks)
	}

	// The legend shows every series; a click hides a series, a family.
	if got := eval[string](t, tctx, `[...document.querySelectorAll('#chart-legend .lg-item')].map((b) => b.textContent).join(',')`); got != "a,a exact,hw,b fast,b,reference lines: floor,★ published figures" {
		t.Errorf("legend: %q", got)
	}
	shown := `lab.chart.getOption().series.filter((s) => s.type !== 'custom').map((s) => s.name).join(',')`
	eval[chromedp.Void](t, tctx, `document.querySelector('#chart-legend .lg-item[data-key="b"]').click()`)
	if got := eval[string](t, tctx, shown); strings.Contains(","+got+",", ",b,") {
		t.Errorf("series b still drawn after its click: %s", got)
	}
	eval[chromedp.Void](t, tctx, `document.querySelector('#chart-legend .lg-family[data-key="family:alpha"]').click()`)
	if got := eval[string](t, tctx, shown); strings.Contains(got, "a exact") || strings.Contains(got, "hw") || !strings.Contains(got, "b fast") {
		t.Errorf("after hiding family alpha: %s", got)
	}
	eval[chromedp.Void](t, tctx, `document.querySelector('#chart-legend .lg-family[data-key="family:alpha"]').click(); document.querySelector('#chart-legend .lg-item[data-key="b"]').click()`)
	if got := eval[string](t, tctx, shown); !strings.Contains(got, "a exact") || !strings.Contains(","+got+",", ",b,") {
		t.Errorf("after showing them again: %s", got)
	}

	// An opened run fills the form with its own parameters and seed.
	eval[chromedp.Void](t, tctx, `location.hash = '#exp/lab-chart'`)
	poll(t, tctx, `!lab.view`, 5*time.Second)
	setParam(t, tctx, "points", "3")
	setParam(t, tctx, "seed", "9")
	eval[chromedp.Void](t, tctx, `location.hash = '#run/`+serverID+`'`)
	poll(t, tctx, `lab.view && lab.view.filled`, 10*time.Second)
	if got := eval[string](t, tctx, `['points', 'scale', 'seed'].map((n) => document.getElementById('param-' + n).value).join(' ')`); got != "5 2 1" {
		t.Errorf("the form after opening run %s holds %q, want its parameters 5 2 1", serverID, got)
	}
	if got := eval[string](t, tctx, `document.getElementById('chart-caption').textContent`); !strings.Contains(got, "lab run lab-chart -points 5 -scale 2 -seed 1") {
		t.Errorf("reproduce line: %q", got)
	}

	// The same parameters in the browser give the same chart.
	poll(t, tctx, `document.getElementById('run-browser').dataset.ready === 'true'`, 60*time.Second)
	serverOption := eval[string](t, tctx, `JSON.stringify(lab.view.built.option)`)
	eval[chromedp.Void](t, tctx, `document.getElementById('run-browser').click()`)
	poll(t, tctx, fmt.Sprintf(`lab.view && lab.view.id !== %q && lab.view.ended && !lab.view.drawPending && !!lab.view.meta && lab.view.meta.state === 'done'`, serverID), 60*time.Second)
	browserID := eval[string](t, tctx, `lab.view.id`)
	eval[chromedp.Void](t, tctx, `drawRun(lab.view)`)
	if got := eval[string](t, tctx, `JSON.stringify(lab.view.built.option)`); got != serverOption {
		t.Errorf("the browser run's chart differs from the server run's:\n%s\n%s", got, serverOption)
	}
	if r := l.get(browserID); r.Origin != notebook.OriginBrowser {
		t.Errorf("run %s origin %s", browserID, r.Origin)
	}

	// A third run with another scale; the comparison of the three.
	code, body := l.do("POST", "/api/runs", map[string]any{"experiment": "lab-chart", "params": map[string]any{"points": 5, "scale": 4}, "seed": 1})
	if code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	thirdID := idOf(t, body)
	for l.get(thirdID).State != notebook.Done {
		time.Sleep(20 * time.Millisecond)
	}
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#compare/"+serverID+","+browserID+","+thirdID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `+(document.getElementById('compare-chart').dataset.points || 0) > 0 && document.querySelectorAll('#compare-table tr').length > 1`, 20*time.Second)
	rows := eval[string](t, tctx, `[...document.querySelectorAll('#compare-table tr')].slice(1).map((r) => r.dataset.key).join(',')`)
	if !strings.Contains(rows, "parameter:scale") || !strings.Contains(rows, "run:origin") || strings.Contains(rows, "parameter:points") || strings.Contains(rows, "run:seed") {
		t.Errorf("the table of differences has rows %s: want scale and origin, not points or seed", rows)
	}
	if got := eval[string](t, tctx, `document.querySelector('#compare-table tr[data-key="parameter:scale"]').textContent`); !strings.Contains(got, "Δ +2 (+100 %)") {
		t.Errorf("scale row %q lacks the difference", got)
	}
	cnotes := eval[string](t, tctx, `document.getElementById('compare-notes').textContent`)
	if !strings.Contains(cnotes, "identical at every point") || !strings.Contains(cnotes, "#"+serverID+" and #"+browserID) {
		t.Errorf("the comparison does not say the server and browser runs coincide: %s", cnotes)
	}
	if dir := os.Getenv("LAB_SCREENSHOTS"); dir != "" { // the comparison view, for docs/img
		if !filepath.IsAbs(dir) {
			dir = filepath.Join("..", dir)
		}
		png, err := chromedp.Run(tctx, chromedp.Screenshot(chromedp.ID("compare-view")))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "compare.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	widths := eval[string](t, tctx, `JSON.stringify(lab.compareChart.getOption().series.filter((s) => s.name.endsWith(' b')).map((s) => [s.lineStyle.width, s.symbol.startsWith('empty')]))`)
	if widths != `[[5,false],[1.8,true],[1.8,true]]` {
		t.Errorf("overlays not distinguishable (width, marker per run): %s", widths)
	}
}

// TestBrowserReport: an HTML report draws its chart with the page's chart
// code (chart.js) under the report's CSP: the declared axes, every point
// (the exact zeros and the NaN at the floor, counted in the notes), the
// same as the page shows for the run. (The report once drew with go-echarts:
// axes "x" and "y", log scales guessed from the data, zeros dropped.)
func TestBrowserReport(t *testing.T) {
	ctx := browser(t)
	l := newTestLab(t, Options{})
	run := l.wait(l.start("lab-chart", map[string]any{"points": 5, "scale": 2}, 1).ID, 10*time.Second, ended)
	if run.State != notebook.Done {
		t.Fatalf("run %s", run.State)
	}
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/api/runs/"+run.ID+"/export?format=html")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `!!document.body && !!document.body.dataset.drawn`, 20*time.Second)
	if got, want := eval[string](t, tctx, `document.body.dataset.drawn`), fmt.Sprint(len(l.points(run.ID))); got != want {
		t.Errorf("report drew %s points, the run has %s", got, want)
	}
	if got := eval[string](t, tctx, `(() => { const o = echarts.getInstanceByDom(document.getElementById('report-chart')).getOption(); return JSON.stringify([o.xAxis[0].name, o.yAxis[0].name, o.yAxis[0].type]); })()`); got != `["size (elements)","error (relative)","log"]` {
		t.Errorf("report axes: %s", got)
	}
	notes := eval[string](t, tctx, `document.getElementById('report-notes').textContent`)
	for _, want := range []string{"5 exact zeros", "1 non-finite value", "drawn as ▽ at the axis floor"} {
		if !strings.Contains(notes, want) {
			t.Errorf("report notes lack %q: %s", want, notes)
		}
	}
	if n := eval[int](t, tctx, `document.querySelectorAll('#report-legend button').length`); n < 2 {
		t.Errorf("report legend has %d entries", n)
	}
}
