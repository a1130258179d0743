package lab

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fp8lab/fp8lab/lab/notebook"
)

// The tensors panel of the page: three .npy files uploaded through the
// file input (in chunks), picked for q, k, v, and attention-file run on
// them from the page.
func TestBrowserTensors(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	l := newTestLab(t, Options{TensorsDir: filepath.Join(dir, "tensors")})
	up := t.TempDir()
	var paths []string
	for name, shape := range map[string][]int{"q.npy": {1, 2, 64}, "k.npy": {200, 1, 64}, "v.npy": {200, 1, 64}} {
		p := filepath.Join(up, name)
		if err := os.WriteFile(p, npyBytes(t, shape, func(i int) float32 { return float32(i%5) - 2 }), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#exp/attention-file")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.ready === 'true' && !document.getElementById('tensors').hidden`, 20*time.Second)
	if err := chromedp.Do(tctx, chromedp.SetUploadFiles(`#tensor-upload`, paths)); err != nil {
		t.Fatal(err)
	}
	eval[chromedp.Void](t, tctx, `document.getElementById('tensor-upload-go').click()`)
	poll(t, tctx, `document.getElementById('tensor-v').value === 'v.npy' && document.getElementById('tensor-q').value === 'q.npy' && document.getElementById('tensor-k').value === 'k.npy'`, 30*time.Second)
	eval[chromedp.Void](t, tctx, `document.getElementById('tensors-run').click()`)
	poll(t, tctx, `lab.view && lab.view.kind === 'run' && lab.view.ended`, 60*time.Second)
	id := eval[string](t, tctx, `lab.view.id`)
	run := l.get(id)
	if run.State != notebook.Done || run.Experiment != "attention-file" {
		t.Fatalf("run %s: %s %s %q", id, run.Experiment, run.State, run.Error)
	}
	if pts := l.points(id); len(pts) != 4 {
		t.Errorf("%d points, want 2 heads × 2 promotions", len(pts))
	}
}
