package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fp8lab/fp8lab/lab/notebook"
)

// TestBrowserTrialsAndPairs: a run whose experiment keeps per-trial values
// (contraction) offers their distribution over one point (histogram, CDF,
// per trial, with the quantity and unit; the trials are not drawn as
// lines), and two runs on the same seeds compare trial by trial: the
// paired difference of a quantity with its 95 % t interval, the method
// and the number of pairs named.
func TestBrowserTrialsAndPairs(t *testing.T) {
	ctx := browser(t)
	l := newTestLab(t, Options{Workers: 1})
	params := func(kb int) map[string]any {
		return map[string]any{"K": "1024,4096", "trials": 12, "series": "wgmma-kblockn", "k-block-n": kb, "captures": "off"}
	}
	a := l.wait(l.start("contraction", params(64), 1).ID, 60*time.Second, ended)
	b := l.wait(l.start("contraction", params(256), 1).ID, 60*time.Second, ended)
	if a.State != notebook.Done || b.State != notebook.Done {
		t.Fatalf("runs %s %s", a.State, b.State)
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#run/"+a.ID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.ready === 'true' && lab.view && lab.view.ended && !lab.view.drawPending && !!lab.view.built && !document.getElementById('dist-panel').hidden`, 30*time.Second)
	if got := eval[string](t, tctx, `JSON.stringify(lab.chart.getOption().series.filter((s) => s.type !== 'custom').map((s) => s.name))`); got != `["sm90.wgmma every64 (kBlockN)"]` {
		t.Errorf("the chart draws %s (the trials are not a line)", got)
	}
	eval[chromedp.Void](t, tctx, `document.getElementById('dist-panel').open = true`)
	poll(t, tctx, `!!lab.distChart && lab.distChart.getOption().series.length === 1`, 10*time.Second)
	if got := eval[string](t, tctx, `(() => { const o = lab.distChart.getOption(); return JSON.stringify([o.series[0].type, o.series[0].data.reduce((a, b) => a + b, 0), o.xAxis[0].name]); })()`); got != `["bar",12,"relative L2 error over the columns, mean over trials (relative), bins equal on the log scale"]` {
		t.Errorf("histogram of the 12 trials at K = 4096: %s", got)
	}
	if got := eval[string](t, tctx, `document.getElementById('dist-notes').textContent`); !strings.Contains(got, "12 trials") {
		t.Errorf("distribution notes: %q", got)
	}
	eval[chromedp.Void](t, tctx, `(() => { const s = document.getElementById('dist-kind'); s.value = 'cdf'; s.dispatchEvent(new Event('change')); })()`)
	if got := eval[string](t, tctx, `(() => { const o = lab.distChart.getOption(); return JSON.stringify([o.series[0].type, o.series[0].data.length, o.yAxis[0].max]); })()`); got != `["line",24,1]` {
		t.Errorf("CDF: %s", got)
	}
	eval[chromedp.Void](t, tctx, `(() => { const s = document.getElementById('dist-field'); s.value = 'bias'; s.dispatchEvent(new Event('change')); })()`)
	if got := eval[string](t, tctx, `lab.distChart.getOption().xAxis[0].name`); !strings.Contains(got, "bias") {
		t.Errorf("CDF of the bias: x axis %q", got)
	}

	// The pair: every64 against every256 on the same seeds.
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#compare/"+a.ID+","+b.ID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `+(document.getElementById('compare-chart').dataset.points || 0) > 0 && !!lab.view.built && [...document.getElementById('compare-y').options].some((o) => o.value === 'paired:y')`, 20*time.Second)
	eval[chromedp.Void](t, tctx, `(() => { const s = document.getElementById('compare-y'); s.value = 'paired:y'; s.dispatchEvent(new Event('change')); })()`)
	got := eval[string](t, tctx, `(() => { const o = lab.compareChart.getOption(); return JSON.stringify([o.yAxis[0].name, o.series.filter((s) => s.type === 'line' && s.id !== 'refs').map((s) => s.data.length), o.series.filter((s) => s.type === 'custom').length]); })()`)
	if !strings.HasPrefix(got, `["difference of relative L2 error over the columns, mean over trials, #`+b.ID+` − #`+a.ID+`, mean over paired trials (relative)",[2],1]`) {
		t.Errorf("paired differences: %s", got)
	}
	notes := eval[string](t, tctx, `document.getElementById('compare-notes').textContent`)
	notes += eval[string](t, tctx, `document.getElementById('compare-legend').textContent`)
	for _, want := range []string{"24 pairs of trials", "95 % paired Student-t interval", "same seeds", "no difference", "every64 (kBlockN) ↔ sm90.wgmma every256 (kBlockN)"} {
		if !strings.Contains(notes, want) {
			t.Errorf("paired notes lack %q: %s", want, notes)
		}
	}

	// A sweep over k-block-n: the series differ by group (every64,
	// every128), one choice of the declared style shows them all.
	st := l.startSweep(map[string]any{"experiment": "contraction", "params": map[string]any{"K": "1024,2048", "trials": 4, "series": "wgmma-kblockn", "captures": "off"},
		"axes": []map[string]any{{"name": "k-block-n", "values": []any{64, 128}}}, "seeds": "1..2"})
	l.waitSweep(st.ID, 60*time.Second, sweepEnded)
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#sweep/"+st.ID)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.sweeps === 'ready' && document.getElementById('sweep-view').dataset.shown === '`+st.ID+`:done' && !!lab.sweeps.chart`, 20*time.Second)
	if got := eval[string](t, tctx, `JSON.stringify([document.getElementById('sweep-quantity').selectedOptions[0].textContent, lab.sweeps.chart.getOption().series.filter((s) => s.type === 'line').map((s) => [s.name, s.data.length])])`); got != `["sm90.wgmma every* (kBlockN) (each group's series)",[["k-block-n=64",2],["k-block-n=128",2]]]` {
		t.Errorf("the sweep's default view: %s", got)
	}
}
