package lab

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserLanding: the page opens on contraction (not on attention-file,
// first in the alphabet, which needs the user's files); an experiment the
// browser cannot run is offered no "Run in this browser" button, saying
// why (attention-file's browser runs always failed and were kept in the
// notebook); the lab answers /favicon.ico (it was a 404 on every page).
func TestBrowserLanding(t *testing.T) {
	ctx := browser(t)
	wasmDir := buildWASM(t)
	l := newTestLab(t, Options{WASM: os.DirFS(wasmDir)})
	resp, err := http.Get(l.url + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("/favicon.ico: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `document.body.dataset.ready === 'true' && !!lab.exp`, 20*time.Second)
	if got := eval[string](t, tctx, `location.hash + ' ' + lab.exp.name`); got != "#exp/contraction contraction" {
		t.Errorf("the landing page: %q", got)
	}
	poll(t, tctx, `document.getElementById('run-browser').dataset.ready === 'true'`, 90*time.Second)
	if err := chromedp.Do(tctx, chromedp.Navigate(l.url+"/#exp/attention-file")); err != nil {
		t.Fatal(err)
	}
	poll(t, tctx, `lab.exp && lab.exp.name === 'attention-file' && !!lab.wasm.build`, 30*time.Second)
	if !eval[bool](t, tctx, `document.getElementById('run-browser').hidden && document.getElementById('run-browser').disabled`) {
		t.Error("attention-file offers a browser run")
	}
	if note := eval[string](t, tctx, `document.getElementById('browser-note').textContent`); !strings.Contains(note, "run it on the server") {
		t.Errorf("browser note %q", note)
	}
	if eval[bool](t, tctx, `lab.wasm.experiments.has('attention-file')`) {
		t.Error("the browser's registry lists attention-file")
	}
}
