package lab

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserSweep drives the page's sweep: the form under the experiment,
// the sweep's view with its aggregate table, CI chart and parallel
// coordinates, the runs list's query filter and a run's tags. It writes a
// screenshot of the sweep's view to $LAB_SCREENSHOTS/sweep.png when
// LAB_SCREENSHOTS is set (make lab-screenshot).
func TestBrowserSweep(t *testing.T) {
	ctx := browser(t)
	l := newTestLab(t, Options{Workers: 2})
	tctx, cancel := context.WithTimeout(ctx, 180*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#exp/lab-demo")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.sweeps === 'ready' && !!document.getElementById('sweep-n')`, 20*time.Second)
	eval[chromedp.Void](t, tctx, `(() => {
		document.getElementById('sweep-form').open = true;
		document.getElementById('param-series').value = '1';
		document.getElementById('sweep-n').value = '5, 10';
		document.getElementById('sweep-seeds').value = '1..4';
		document.getElementById('sweep-start').click();
	})()`)
	poll(t, tctx, `location.hash.startsWith('#sweep/') && !document.getElementById('sweep-view').hidden`, 10*time.Second)
	poll(t, tctx, `document.getElementById('sweep-view').dataset.shown === '1:done'`, 20*time.Second)
	poll(t, tctx, `document.querySelectorAll('#sweep-table tr').length === 3`, 5*time.Second)
	row := eval[string](t, tctx, `document.querySelectorAll('#sweep-table tr')[2].textContent`)
	if !strings.HasPrefix(row, "n=10n410") { // group, summary n, 4 runs, mean 10
		t.Errorf("table row %q", row)
	}
	poll(t, tctx, `lab.sweeps.par && lab.sweeps.par.getOption().series[0].data.length === 8`, 5*time.Second)
	// The view opens on the experiment's own quantity, a series (not the
	// first summary key): mean and interval bars per group.
	if got := eval[string](t, tctx, `document.getElementById('sweep-quantity').value`); !strings.HasPrefix(got, "series:") {
		t.Errorf("the sweep view opens on %q, want a series", got)
	}
	eval[chromedp.Void](t, tctx, `(() => { const s = document.getElementById('sweep-quantity'); s.value = 'series:s0'; s.dispatchEvent(new Event('change')); })()`)
	if n := eval[int](t, tctx, `lab.sweeps.chart.getOption().series.length`); n != 4 {
		t.Errorf("series chart: %d series, want 2 groups × (mean, bars)", n)
	}
	// The summary n: 2 means, 2 intervals, the method named under the chart.
	eval[chromedp.Void](t, tctx, `(() => { const s = document.getElementById('sweep-quantity'); s.value = 'summary:n'; s.dispatchEvent(new Event('change')); })()`)
	if n := eval[int](t, tctx, `lab.sweeps.chart.getOption().series[0].data.length`); n != 2 {
		t.Errorf("summary chart: %d means", n)
	}
	if got := eval[string](t, tctx, `document.getElementById('sweep-notes').textContent`); !strings.Contains(got, "95 % Student-t interval of the mean") {
		t.Errorf("the interval's method is not named: %q", got)
	}
	// Group by nothing: one group of 8 runs.
	eval[chromedp.Void](t, tctx, `(() => { const b = document.querySelector('#sweep-groups input[data-axis=n]'); b.checked = false; b.dispatchEvent(new Event('change')); })()`)
	poll(t, tctx, `document.querySelectorAll('#sweep-table tr').length === 2 && document.querySelectorAll('#sweep-table tr')[1].textContent.startsWith('all runsn8')`, 5*time.Second)
	if href := eval[string](t, tctx, `document.getElementById('sweep-csv').getAttribute('href')`); !strings.Contains(href, "format=csv&group=") {
		t.Errorf("csv link %q", href)
	}

	// The runs list's filter: a bad query says why; a good one filters.
	eval[chromedp.Void](t, tctx, `(() => { const q = document.getElementById('run-query'); q.value = 'n IN (5'; q.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'})); })()`)
	poll(t, tctx, `document.getElementById('run-query-error').textContent.includes('query: at')`, 5*time.Second)
	eval[chromedp.Void](t, tctx, `(() => { const q = document.getElementById('run-query'); q.value = 'n = 5 AND seed IN (1, 2)'; q.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'})); })()`)
	poll(t, tctx, `document.querySelectorAll('#run-list li').length === 2`, 5*time.Second)

	// Tags of a run, then filtered by them.
	id := eval[string](t, tctx, `document.querySelector('#run-list li').dataset.id`)
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#run/"+id)); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.sweeps === 'ready' && document.getElementById('run-tags') && document.getElementById('run-tags').dataset.run === '`+id+`'`, 10*time.Second)
	eval[chromedp.Void](t, tctx, `(() => { document.getElementById('run-tags-input').value = 'paper, best'; document.getElementById('run-tags-save').click(); })()`)
	poll(t, tctx, `document.getElementById('run-tags-status').textContent === 'saved'`, 5*time.Second)
	if run := l.get(id); strings.Join(run.Tags, ",") != "best,paper" {
		t.Errorf("tags %v", run.Tags)
	}
	if dir := os.Getenv("LAB_SCREENSHOTS"); dir != "" {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join("..", dir)
		}
		screenshotSweep(t, tctx, l, dir)
	}
}

// screenshotSweep runs a contraction sweep from the page (the two-level
// wgmma series over kBlockN × 8 seeds) and writes its default view (the
// series' mean against K per kBlockN, bootstrap intervals) to
// dir/sweep.png.
func screenshotSweep(t *testing.T, ctx context.Context, l *testLab, dir string) {
	if err := chromedp.Do(ctx, chromedp.Navigate(l.url+"/#exp/contraction")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, `document.body.dataset.sweeps === 'ready' && !!document.getElementById('sweep-k-block-n')`, 20*time.Second)
	eval[chromedp.Void](t, ctx, `(() => {
		document.getElementById('sweep-form').open = true;
		document.getElementById('param-K').value = '1024,4096,16384';
		document.getElementById('param-trials').value = '16';
		document.getElementById('param-series').value = 'wgmma-kblockn';
		document.getElementById('param-captures').value = 'off';
		document.getElementById('sweep-k-block-n').value = '32,64,128,256';
		document.getElementById('sweep-seeds').value = '1..8';
		document.getElementById('sweep-start').click();
	})()`)
	poll(t, ctx, `location.hash !== '#sweep/1' && document.getElementById('sweep-view').dataset.shown === location.hash.slice(7) + ':done'`, 120*time.Second)
	poll(t, ctx, `document.querySelectorAll('#sweep-quantity option').length > 0`, 5*time.Second)
	time.Sleep(time.Second)
	eval[chromedp.Void](t, ctx, `window.scrollTo(0, document.getElementById('sweep-view').offsetTop)`)
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sweep.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
