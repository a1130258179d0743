//go:build !js

package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLab is the part of the lab's API that LabClient uses.
type fakeLab struct {
	mu       sync.Mutex
	created  map[string]any
	points   []map[string]any
	notes    []string
	progress map[string]any
	summary  map[string]any
	end      map[string]any
	fail     int  // answer this many events requests with 503 first
	cancel   bool // answer events with cancel
	refuse   string
}

func (f *fakeLab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, `{"error":"not JSON"}`, 415)
		return
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/api/runs":
		if f.refuse != "" {
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(map[string]string{"error": f.refuse, "param": "n"})
			return
		}
		json.Unmarshal(body, &f.created)
		w.WriteHeader(201)
		w.Write([]byte(`{"id":"7"}`))
	case r.URL.Path == "/api/runs/7/events":
		if f.fail > 0 {
			f.fail--
			http.Error(w, `{"error":"busy"}`, 503)
			return
		}
		var ev struct {
			From     int64            `json:"from"`
			Points   []map[string]any `json:"points"`
			Notes    []string         `json:"notes"`
			Progress map[string]any   `json:"progress"`
			Summary  map[string]any   `json:"summary"`
			End      map[string]any   `json:"end"`
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, `{"error":"bad JSON: `+err.Error()+`"}`, 400)
			return
		}
		if ev.From != int64(len(f.points)) {
			w.WriteHeader(409)
			json.NewEncoder(w).Encode(map[string]any{"error": "gap", "points": len(f.points)})
			return
		}
		f.points = append(f.points, ev.Points...)
		f.notes = append(f.notes, ev.Notes...)
		if ev.Progress != nil {
			f.progress = ev.Progress
		}
		if ev.End != nil {
			f.summary, f.end = ev.Summary, ev.End
		}
		json.NewEncoder(w).Encode(map[string]any{"points": len(f.points), "cancel": f.cancel})
	default:
		http.NotFound(w, r)
	}
}

// counter emits n points, one note, progress and a summary; it fails when
// asked and waits for cancellation when slow.
type counter struct {
	fail, slow bool
}

func (counter) Name() string { return "counter" }
func (counter) Doc() string  { return "Counts." }
func (counter) Params() []Param {
	return []Param{{Name: "n", Doc: "points", Kind: KindInt, Default: 10, Min: 1, Max: 1e6}}
}

func (c counter) Run(ctx context.Context, run *Run) error {
	n := run.Values.Int("n")
	run.Note("counting")
	for i := range n {
		if err := run.Emit(Point{Series: "c", X: float64(i), Y: math.Sqrt(float64(i) - 1), Extra: map[string]float64{"i": float64(i)}}); err != nil {
			return err
		}
		run.Progress(int64(i+1), int64(n))
	}
	run.Summary(map[string]float64{"n": float64(n), "inf": math.Inf(1)})
	if c.fail {
		return errors.New("counted wrong")
	}
	if c.slow {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func TestLabClient(t *testing.T) {
	f := &fakeLab{fail: 2}
	ts := httptest.NewServer(f)
	defer ts.Close()
	c := &LabClient{URL: ts.URL + "/", FlushEvery: 5 * time.Millisecond}
	values, _ := ValuesFromMap(counter{}.Params(), map[string]any{"n": 5000})
	var rec Recorder
	res, err := c.Execute(context.Background(), counter{}, values, 3, &rec)
	if err != nil || res.Points != 5000 || len(rec.Points()) != 5000 {
		t.Fatalf("execute: %v %+v", err, res)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.created["experiment"] != "counter" || f.created["seed"] != 3.0 || f.created["origin"] != "client" || f.created["version"] == "" ||
		f.created["params"].(map[string]any)["n"] != 5000.0 {
		t.Errorf("created %v", f.created)
	}
	if len(f.points) != 5000 || f.points[0]["y"] != nil || f.points[4999]["x"] != 4999.0 || f.points[2]["extra"].(map[string]any)["i"] != 2.0 {
		t.Errorf("%d points; first %v", len(f.points), f.points[0])
	}
	if len(f.notes) != 1 || f.progress["done"] != 5000.0 || f.summary["n"] != 5000.0 || f.summary["inf"] != nil || f.end["state"] != "done" {
		t.Errorf("notes %v progress %v summary %v end %v", f.notes, f.progress, f.summary, f.end)
	}
}

func TestLabClientFailedRun(t *testing.T) {
	f := &fakeLab{}
	ts := httptest.NewServer(f)
	defer ts.Close()
	_, err := (&LabClient{URL: ts.URL}).Execute(context.Background(), counter{fail: true}, Values{}, 1, nil)
	if err == nil || !strings.Contains(err.Error(), "counted wrong") {
		t.Fatalf("error %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.end["state"] != "failed" || !strings.Contains(f.end["error"].(string), "counted wrong") || len(f.points) != 10 {
		t.Errorf("end %v with %d points", f.end, len(f.points))
	}
}

func TestLabClientCancelledInLab(t *testing.T) {
	f := &fakeLab{cancel: true}
	ts := httptest.NewServer(f)
	defer ts.Close()
	c := &LabClient{URL: ts.URL, FlushEvery: 5 * time.Millisecond}
	done := make(chan error, 1)
	var lr *LabRun
	go func() {
		var err error
		lr, err = c.Start(context.Background(), counter{slow: true}, Values{}, 1)
		if err != nil {
			done <- err
			return
		}
		_, err = Execute(lr.Context(), counter{slow: true}, Values{}, 1, lr)
		if ferr := lr.Finish(err); ferr != nil {
			err = ferr
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !errors.Is(context.Cause(lr.Context()), ErrCancelledInLab) {
			t.Errorf("run error %v, cause %v", err, context.Cause(lr.Context()))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run was not cancelled")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.end != nil {
		t.Errorf("an end was sent for a run the lab cancelled: %v", f.end)
	}
}

func TestLabClientRefused(t *testing.T) {
	f := &fakeLab{refuse: `parameter "n": 0 is below the minimum 1`}
	ts := httptest.NewServer(f)
	defer ts.Close()
	_, err := (&LabClient{URL: ts.URL}).Execute(context.Background(), counter{}, Values{}, 1, nil)
	if err == nil || err.Error() != `lab: parameter "n": 0 is below the minimum 1 (HTTP 400)` {
		t.Errorf("error %v", err)
	}
	for _, u := range []string{"", "ftp://x", "127.0.0.1:8080", "http://"} {
		if _, err := (&LabClient{URL: u}).Start(context.Background(), counter{}, Values{}, 1); err == nil || !strings.Contains(err.Error(), "want http://host:port") {
			t.Errorf("URL %q: %v", u, err)
		}
	}
}

func TestBuild(t *testing.T) {
	b := Build()
	if b.Version == "" || !strings.HasPrefix(b.GoVersion, "go") || !strings.Contains(b.Platform, "/") {
		t.Errorf("%+v", b)
	}
	old := buildRevision
	buildRevision = "abc123"
	defer func() { buildRevision = old }()
	if Build().Revision != "abc123" {
		t.Error("-ldflags revision ignored")
	}
}

func TestAppendPointsJSON(t *testing.T) {
	got := string(AppendPointsJSON(nil, []Point{{Series: `a"b`, X: 1, Y: math.NaN()}, {Series: "c", X: math.Inf(-1), Y: 2.5, Extra: map[string]float64{"z": 1, "a": math.Inf(1)}}}))
	want := `[{"series":"a\"b","x":1,"y":null},{"series":"c","x":null,"y":2.5,"extra":{"a":null,"z":1}}]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var v any
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Error(err)
	}
}
