package lab

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fp8lab/fp8lab/lab/notebook"
)

// TestBrowserAxisPicker: the run and comparison views put any declared
// point quantity on y or x, with its quantity and unit on the axis and its
// own interval (the field's lo and hi, its method named), count the points
// that lack it, and put a summary value (with its unit) on y, one value per
// run; the run's summary table shows every value's unit.
func TestBrowserAxisPicker(t *testing.T) {
	ctx := browser(t)
	l := newTestLab(t, Options{})
	a := l.wait(l.start("lab-chart", map[string]any{"points": 5, "scale": 2}, 1).ID, 10*time.Second, ended)
	b := l.wait(l.start("lab-chart", map[string]any{"points": 5, "scale": 4}, 1).ID, 10*time.Second, ended)
	if a.State != notebook.Done || b.State != notebook.Done {
		t.Fatalf("runs %s %s", a.State, b.State)
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#run/"+a.ID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.ready === 'true' && lab.view && lab.view.ended && !lab.view.drawPending && !!lab.view.built && document.getElementById('chart-y').options.length > 0`, 20*time.Second)

	options := eval[string](t, tctx, `[...document.getElementById('chart-y').options].map((o) => o.value + '=' + o.textContent).join('|')`)
	for _, want := range []string{"y=default: error (relative)", "p90=error, 90th percentile (relative) [p90]", "acc=accuracy (fraction of trials) [acc]", "summary:floor=floor — error floor (relative)"} {
		if !strings.Contains(options, want) {
			t.Errorf("y selector lacks %q: %s", want, options)
		}
	}
	if got := eval[string](t, tctx, `[...document.querySelectorAll('#summary tr')].map((r) => r.textContent).join('|')`); !strings.Contains(got, "floor") || !strings.Contains(got, "relative") {
		t.Errorf("summary table without the unit: %s", got)
	}

	pick := func(sel, v string) {
		eval[chromedp.Void](t, tctx, `(() => { const s = document.getElementById('`+sel+`'); s.value = '`+v+`'; s.dispatchEvent(new Event('change')); })()`)
	}
	pick("chart-y", "p90")
	if got := eval[string](t, tctx, `lab.chart.getOption().yAxis[0].name`); got != "error, 90th percentile (relative)" {
		t.Errorf("y axis after picking p90: %q", got)
	}
	notes := eval[string](t, tctx, `document.getElementById('chart-notes').textContent`)
	for _, want := range []string{"95 % test interval (p90/2, 2·p90)", `"p90_lo", "p90_hi"`, "without p90, not drawn", "a exact (5)", "hw (5)"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes with p90 on y lack %q: %s", want, notes)
		}
	}
	// a's bars are its own interval [y, 4y] (not ±1.96 se): y = 2/16 at x = 16.
	if got := eval[string](t, tctx, `JSON.stringify(lab.chart.getOption().series.find((s) => s.type === 'custom').data[0])`); got != "[4,0.125,0.5]" {
		t.Errorf("p90 interval of a's first point: %s, want [4 (log2 16), 0.125, 0.5]", got)
	}
	if got := eval[string](t, tctx, `JSON.stringify(lab.chart.getOption().series.filter((s) => s.type !== 'custom').map((s) => [s.name, s.data.length]))`); got != `[["a",5],["b",5]]` {
		t.Errorf("series with p90: %s", got)
	}

	// x = acc: a scatter of p90 against accuracy, on a linear x of [0, 1].
	pick("chart-x", "acc")
	if got := eval[string](t, tctx, `JSON.stringify([lab.chart.getOption().xAxis[0].name, lab.chart.getOption().xAxis[0].min, lab.chart.getOption().series.filter((s) => s.type !== 'custom').map((s) => s.type + ' ' + s.name)])`); got != `["accuracy (fraction of trials)",0,["scatter a"]]` {
		t.Errorf("x = acc: %s", got)
	}

	// A summary value on y: one value per run, with its unit.
	pick("chart-y", "summary:floor")
	if got := eval[string](t, tctx, `JSON.stringify([lab.chart.getOption().yAxis[0].name, lab.chart.getOption().series[0].data])`); got != `["error floor (relative)",[0.00390625]]` {
		t.Errorf("summary floor on y: %s", got)
	}
	if eval[bool](t, tctx, `!document.getElementById('chart-x').disabled`) {
		t.Error("the x selector is offered for a summary value")
	}

	// The comparison keeps the choice: floor per run, 2/2^9 and 4/2^9.
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#compare/"+a.ID+","+b.ID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `+(document.getElementById('compare-chart').dataset.points || 0) > 0 && !!lab.view.built`, 20*time.Second)
	if got := eval[string](t, tctx, `JSON.stringify([document.getElementById('compare-y').value, lab.compareChart.getOption().xAxis[0].data, lab.compareChart.getOption().series[0].data])`); got != `["summary:floor",["#`+a.ID+`","#`+b.ID+`"],[0.00390625,0.0078125]]` {
		t.Errorf("comparison of floor: %s", got)
	}
	pick("compare-y", "p90")
	if got := eval[string](t, tctx, `document.getElementById('compare-notes').textContent`); !strings.Contains(got, "without p90, acc, not drawn: a exact (10), b (10)") {
		t.Errorf("b lacks acc, still on x: %s", got)
	}
	pick("compare-x", "x")
	if got := eval[string](t, tctx, `JSON.stringify([lab.compareChart.getOption().yAxis[0].name, lab.compareChart.getOption().series.filter((s) => s.type !== 'custom').map((s) => s.name)])`); got != `["error, 90th percentile (relative)",["#`+a.ID+` a","#`+a.ID+` b","#`+b.ID+` a","#`+b.ID+` b"]]` {
		t.Errorf("comparison of p90: %s; notes %s", got, eval[string](t, tctx, `document.getElementById("compare-notes").textContent`))
	}

	// A log x below 1 (p90 of a long run, 1.2e-4 … 0.25): the y axis at the
	// chart's edge, not at x = 1 mid-chart, and one tick style (powers).
	c := l.wait(l.start("lab-chart", map[string]any{"points": 12, "scale": 2}, 1).ID, 10*time.Second, ended)
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#run/"+c.ID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `lab.view && lab.view.id === '`+c.ID+`' && lab.view.ended && !lab.view.drawPending && !!lab.view.built`, 20*time.Second)
	pick("chart-y", "y")
	pick("chart-x", "p90")
	if got := eval[string](t, tctx, `JSON.stringify([lab.chart.getOption().xAxis[0].type, lab.chart.getOption().yAxis[0].axisLine.onZero, lab.chart.getOption().xAxis[0].axisLine.onZero, [1e-4, 1e-3, 0.01, 0.1, 0.5].map(lab.chart.getOption().xAxis[0].axisLabel.formatter)])`); got != `["log",false,false,["10⁻⁴","10⁻³","10⁻²","10⁻¹","5×10⁻¹"]]` {
		t.Errorf("log x below 1: %s", got)
	}

	// The sweep view: the experiment's first declared series by default,
	// axes with the declared quantities and units, any field of the
	// points, the interval's method named (p90 is positive: bootstrap).
	sst := l.startSweep(map[string]any{"experiment": "lab-chart", "params": map[string]any{"points": 4},
		"axes": []map[string]any{{"name": "scale", "values": []any{1, 2}}}, "seeds": "1..3"})
	l.waitSweep(sst.ID, 20*time.Second, sweepEnded)
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#sweep/"+sst.ID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.sweeps === 'ready' && document.getElementById('sweep-view').dataset.shown === '`+sst.ID+`:done' && !!lab.sweeps.chart`, 20*time.Second)
	axes := `JSON.stringify([document.getElementById('sweep-quantity').value, lab.sweeps.chart.getOption().xAxis[0].name, lab.sweeps.chart.getOption().yAxis[0].name, lab.sweeps.chart.getOption().yAxis[0].type])`
	if got := eval[string](t, tctx, axes); got != `["series:a","size (elements)","error (relative)","log"]` {
		t.Errorf("sweep view: %s", got)
	}
	pick("sweep-field", "p90")
	poll(t, tctx, `lab.sweeps.view.agg && lab.sweeps.view.agg.field === 'p90'`, 10*time.Second)
	if got := eval[string](t, tctx, axes); got != `["series:a","size (elements)","error, 90th percentile (relative)","log"]` {
		t.Errorf("sweep view of p90: %s", got)
	}
	if got := eval[string](t, tctx, `document.getElementById('sweep-notes').textContent`); !strings.Contains(got, "percentile bootstrap of the mean") {
		t.Errorf("sweep notes: %q %s", got, eval[string](t, tctx, `JSON.stringify(lab.sweeps.view.agg.groups[0].series.a)`))
	}
	if got := eval[string](t, tctx, `[...document.getElementById('sweep-quantity').options].map((o) => o.textContent).join('|')`); !strings.Contains(got, "floor (relative)") {
		t.Errorf("summary options without units: %s", got)
	}

	// Two curves 3 % apart over seven decades of a log axis are drawn on
	// top of each other: the notes name them (contraction's sm90.wgmma
	// never under sm89.mma.sync), and not a curve twice as high.
	id := l.clientRun(map[string]any{"experiment": "lab-chart"})
	var pts []map[string]any
	for k := range 6 {
		y := math.Pow(10, -float64(k)-2)
		x := math.Ldexp(1, 4+k)
		pts = append(pts, map[string]any{"series": "lo", "x": x, "y": 1e-9},
			map[string]any{"series": "never", "x": x, "y": y}, map[string]any{"series": "sm89", "x": x, "y": 1.03 * y},
			map[string]any{"series": "double", "x": x, "y": 2 * y})
	}
	if status, b := l.do("POST", "/api/runs/"+id+"/events", map[string]any{"from": 0, "points": pts, "end": map[string]any{"state": "done"}}); status != 200 {
		t.Fatalf("events: %d %s", status, b)
	}
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#run/"+id)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `lab.view && lab.view.id === '`+id+`' && lab.view.ended && !lab.view.drawPending && !!lab.view.built`, 20*time.Second)
	eval[chromedp.Void](t, tctx, `lab.axes = {}; drawRun(lab.view)`)
	if got := eval[string](t, tctx, `document.getElementById('chart-notes').textContent`); !strings.Contains(got, "drawn on top of each other") || !strings.Contains(got, "never ≈ sm89") || strings.Contains(got, "double") {
		t.Errorf("near-identical curves not named (or a distinct one named): %s", got)
	}

	// itl's two break-evens (7156 and 7010 tokens on a 125k axis, its
	// bandwidth model) share one label: two labels on almost the same line
	// could not be read.
	itl := l.wait(l.start("itl", map[string]any{"costs": "bandwidth"}, 1).ID, 20*time.Second, ended)
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#run/"+itl.ID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `lab.view && lab.view.id === '`+itl.ID+`' && lab.view.ended && !lab.view.drawPending && !!lab.view.built && lab.chart.getOption().series.some((s) => s.id === 'refs')`, 20*time.Second)
	if got := eval[string](t, tctx, `JSON.stringify(lab.chart.getOption().series.find((s) => s.id === 'refs').markLine.data.map((d) => d.label.show === false ? 'hidden' : d.label.formatter))`); got != `["hidden","FP8 break-even (published) = 7010; FP8 break-even (model) = 7156.37"]` {
		t.Errorf("itl's break-even labels: %s", got)
	}
	// Its answer in numbers under the chart, with units; the published
	// fits drawn as thin dashed lines without markers.
	if got := eval[string](t, tctx, `document.querySelector('#chart-notes .note-show').textContent`); !strings.Contains(got, "ITL slope ratio (over bf16) [slope_ratio] = 0.5 ratio") || !strings.Contains(got, "[break_even_published] = 7010 tokens") {
		t.Errorf("itl's shown values: %q", got)
	}
	if got := eval[string](t, tctx, `JSON.stringify(lab.chart.getOption().series.filter((s) => s.name.endsWith('published fit')).map((s) => [s.showSymbol, s.lineStyle.type]))`); got != `[[false,[7,4]],[false,[7,4]]]` {
		t.Errorf("published fits: %s", got)
	}
}
