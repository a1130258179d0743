package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	labserver "github.com/fp8lab/fp8lab/lab"
	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/tensorfile"
)

// reproduceArgs are small parameters of each experiment for
// TestReproduceLinesRun; an experiment not listed runs at its defaults
// when they cost at most reproduceMaxWork, and fails the test otherwise
// (give it small parameters here).
var reproduceArgs = map[string]map[string]any{
	"contraction":    {"K": "64,128", "trials": 2},
	"needle":         {"contexts": "256", "trials": 2, "head-dim": "64"},
	"promotion":      {"context": 512, "trials": 2, "head-dim": "64", "k-block-n": "64,96"},
	"scales":         {"outlier": "1,10", "trials": 1, "tokens": 256, "kv-heads": 2, "q-per-kv": 1},
	"skip-sw":        {"acc-contexts": "256", "trials": 1},
	"h200-attention": {"N": "128"},
	"kv-formats":     {"contexts": "256", "trials": 2, "head-dim": "64", "promotions": "0,1"},
	"sensitivity":    {"vary": "splits", "context": 1024, "trials": 2, "haystacks": 2, "head-dim": "64"},
	"attention-file": {"promotions": "0,1"},
	"gpu-accum":      {"K": "32,64", "trials": 2},
	"decode-bw":      {"contexts": "64,128", "reps": 1, "batch": 1, "kv-heads": 1, "q-heads": 1},
	"throughput":     {"requests": 20, "output": 200, "concurrencies": "8"},
	"prefill-cost":   {"acc-contexts": "256", "trials": 1},
}

const reproduceMaxWork = 2e9

// reproduceTimed are the experiments whose y are timings of this machine:
// a second run gives the same series and x, not the same y.
var reproduceTimed = map[string]bool{"decode-bw": true}

// TestReproduceLinesRun: for every registered experiment, the reproduce
// line a server run's record gives (the one the page and the HTML report
// print) runs as printed through `lab run`, and gives the run's points,
// bit for bit (issue 18: attention-file's line dropped its files; every
// line must run). attention-file joins once its line names its files
// (ReproduceFlags, on the attnfile branch); until then it is skipped,
// saying so.
func TestReproduceLinesRun(t *testing.T) {
	data := t.TempDir()
	store, err := notebook.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	tensors := filepath.Join(data, "tensors")
	ts := httptest.NewUnstartedServer(nil)
	srv, err := labserver.New(labserver.Options{Store: store, Workers: 2, Addr: ts.Listener.Addr().String(), TensorsDir: tensors,
		FilesDir: filepath.Join(data, "files"), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		store.Close()
	})
	post := func(path string, body any) notebook.Run {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(ts.URL+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r notebook.Run
		rb, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(rb, &r) != nil {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, rb)
		}
		return r
	}
	get := func(path string, out any) {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range sim.Experiments() {
		name := e.Name()
		if strings.HasPrefix(name, "lab-") || name == "demo" {
			continue // test experiments
		}
		t.Run(name, func(t *testing.T) {
			args, listed := reproduceArgs[name]
			if !listed {
				v, err := sim.ParseValues(e.Params(), nil)
				c, ok := sim.Estimate(e, v)
				if err != nil || !ok || c.Work > reproduceMaxWork {
					t.Fatalf("%s costs %v at its defaults: give it small parameters in reproduceArgs", name, c)
				}
			}
			var run notebook.Run
			if fe, ok := e.(sim.FileExperiment); ok {
				run = post("/api/tensors/run", map[string]any{"files": writeTensors(t, tensors, fe), "params": args, "seed": 3})
			} else {
				run = post("/api/runs", map[string]any{"experiment": name, "params": args, "seed": 3})
			}
			for deadline := time.Now().Add(2 * time.Minute); !run.State.Final(); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("run %s still %s", run.ID, run.State)
				}
				get("/api/runs/"+run.ID, &run)
			}
			if run.State != notebook.Done {
				t.Fatalf("server run %s: %s %s", run.ID, run.State, run.Error)
			}
			if _, ok := e.(sim.FileExperiment); ok && !strings.Contains(" "+run.Reproduce+" ", " -q ") {
				t.Skipf("the reproduce line %q does not name its files yet (ReproduceFlags, the attnfile branch)", run.Reproduce)
			}
			words, err := shellWords(run.Reproduce)
			if err != nil || len(words) < 3 || words[0] != "lab" || words[1] != "run" || words[2] != name {
				t.Fatalf("reproduce line %q: %v", run.Reproduce, err)
			}
			var out, errb bytes.Buffer
			if err := dispatch(t.Context(), append(words[1:], "-json", "-quiet"), &out, &errb); err != nil {
				t.Fatalf("%s: %v\n%s", run.Reproduce, err, errb.String())
			}
			var page struct {
				Points []struct {
					Series string             `json:"series"`
					X      *float64           `json:"x"`
					Y      *float64           `json:"y"`
					Extra  map[string]float64 `json:"extra"`
				} `json:"points"`
			}
			get(fmt.Sprintf("/api/runs/%s/points?limit=100000", run.ID), &page)
			var lab []sim.Point
			for _, p := range page.Points {
				lab = append(lab, sim.Point{Series: p.Series, X: orNaN(p.X), Y: orNaN(p.Y), Extra: p.Extra})
			}
			again := jsonPoints(t, out.Bytes())
			if !samePoints(lab, again, reproduceTimed[name]) {
				t.Errorf("`%s` gave other points than run %s:\n%d points: %v\n%d points: %v", run.Reproduce, run.ID, len(again), head(again), len(lab), head(lab))
			}
		})
	}
}

// writeTensors writes small q, k, v (.npy) into the tensors folder for the
// file experiment's required roles and returns the role → name map.
func writeTensors(t *testing.T, dir string, fe sim.FileExperiment) map[string]string {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	rng := rand.New(rand.NewPCG(1, 2))
	files := map[string]string{}
	for _, r := range fe.FileRoles() {
		tokens := map[string]int{"q": 1, "k": 64, "v": 64}[r.Name]
		if tokens == 0 {
			continue
		}
		x := make([]float32, tokens*64)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		if err := tensorfile.WriteNPY(filepath.Join(dir, r.Name+".npy"), []int{tokens, 1, 64}, x); err != nil {
			t.Fatal(err)
		}
		files[r.Name] = r.Name + ".npy"
	}
	return files
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// jsonPoints reads the points of `lab run -json` output.
func jsonPoints(t *testing.T, b []byte) []sim.Point {
	t.Helper()
	var out []sim.Point
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		if m["type"] != "point" {
			continue
		}
		p := sim.Point{Series: m["series"].(string), X: num(m["x"]), Y: num(m["y"])}
		for k, v := range m {
			if k != "type" && k != "series" && k != "x" && k != "y" {
				if p.Extra == nil {
					p.Extra = map[string]float64{}
				}
				p.Extra[k] = num(v)
			}
		}
		out = append(out, p)
	}
	return out
}

func num(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return math.NaN()
}

// samePoints compares two runs' points in (series, x) order: all of them
// bit for bit (NaN equal to NaN), or series and x only when timed.
func samePoints(a, b []sim.Point, timed bool) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(p sim.Point) string { return fmt.Sprintf("%s\x00%v\x00%v", p.Series, p.X, p.Y) }
	sort := func(ps []sim.Point) []sim.Point {
		ps = slices.Clone(ps)
		slices.SortStableFunc(ps, func(p, q sim.Point) int { return strings.Compare(key(p), key(q)) })
		return ps
	}
	a, b = sort(a), sort(b)
	eq := func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }
	for i := range a {
		p, q := a[i], b[i]
		if p.Series != q.Series || !eq(p.X, q.X) {
			return false
		}
		if timed {
			continue
		}
		if !eq(p.Y, q.Y) || len(p.Extra) != len(q.Extra) {
			return false
		}
		for k, v := range p.Extra {
			if w, ok := q.Extra[k]; !ok || !eq(v, w) {
				return false
			}
		}
	}
	return true
}

func head(ps []sim.Point) []sim.Point { return ps[:min(len(ps), 3)] }

// shellWords splits a command line as a POSIX shell does for the words
// sim.Reproduce writes: blanks between words, '…' quoting, nothing else.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, inQuote := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote && c == '\'':
			inQuote = false
		case inQuote:
			cur.WriteByte(c)
		case c == '\'':
			inQuote, in = true, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case strings.ContainsRune("\"$`;&|<>(){}*?[]~", rune(c)):
			return nil, fmt.Errorf("unquoted %q at %d: the shell would not read it as written", c, i)
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated quote")
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}
