package lab

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

func (l *testLab) startSweep(body map[string]any) SweepStatus {
	l.t.Helper()
	status, b := l.do("POST", "/api/sweeps", body)
	if status != http.StatusCreated {
		l.t.Fatalf("start sweep: %d %s", status, b)
	}
	var st SweepStatus
	if err := json.Unmarshal(b, &st); err != nil {
		l.t.Fatal(err)
	}
	return st
}

func (l *testLab) sweepStatus(id string) SweepStatus {
	l.t.Helper()
	status, b := l.do("GET", "/api/sweeps/"+id, nil)
	if status != http.StatusOK {
		l.t.Fatalf("sweep %s: %d %s", id, status, b)
	}
	var st SweepStatus
	if err := json.Unmarshal(b, &st); err != nil {
		l.t.Fatal(err)
	}
	return st
}

func (l *testLab) waitSweep(id string, timeout time.Duration, ok func(SweepStatus) bool) SweepStatus {
	l.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := l.sweepStatus(id)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("sweep %s: %s %v after %v", id, st.State, st.States, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sweepEnded(st SweepStatus) bool { return st.State != notebook.Running }

type aggAnswer struct {
	Aggregate struct {
		GroupBy  []string `json:"group_by"`
		Summary  []string `json:"summary"`
		Series   []string `json:"series"`
		Excluded []string `json:"excluded"`
		Groups   []struct {
			Key     map[string]any `json:"key"`
			Label   string         `json:"label"`
			Runs    []string       `json:"runs"`
			Summary map[string]struct {
				N    int      `json:"n"`
				Mean *float64 `json:"mean"`
				SD   *float64 `json:"sd"`
			} `json:"summary"`
			Series map[string][]struct {
				X    float64  `json:"x"`
				N    int      `json:"n"`
				Mean *float64 `json:"mean"`
				Lo   *float64 `json:"ci95_lo"`
				Hi   *float64 `json:"ci95_hi"`
			} `json:"series"`
		} `json:"groups"`
	} `json:"aggregate"`
}

func TestSweepPoolAggregateFilter(t *testing.T) {
	l := newTestLab(t, Options{Workers: 2})
	st := l.startSweep(map[string]any{
		"experiment": "lab-demo", "params": map[string]any{"series": 1},
		"axes":  []map[string]any{{"name": "n", "values": []any{5, 10}}, {"name": "end", "values": []any{"ok"}}},
		"seeds": "1..3", "tags": []string{"grid"}, "executor": "auto",
	})
	if st.Runs != 6 || st.Executor != "pool" {
		t.Fatalf("sweep %+v", st.Sweep)
	}
	st = l.waitSweep(st.ID, 20*time.Second, sweepEnded)
	if st.State != notebook.Done || st.States["done"] != 6 {
		t.Fatalf("sweep ended %s %v %s", st.State, st.States, st.Error)
	}
	run := l.get(st.RunIDs[5])
	if run.Sweep != st.ID || run.SweepRun != 5 || run.Seed != 3 || run.Params["n"] != float64(10) || len(run.Tags) != 1 {
		t.Errorf("run 5 of the sweep: %+v", run)
	}

	status, b := l.do("GET", "/api/sweeps/"+st.ID+"/aggregate?group=n", nil)
	if status != http.StatusOK {
		t.Fatalf("aggregate: %d %s", status, b)
	}
	var agg aggAnswer
	if err := json.Unmarshal(b, &agg); err != nil {
		t.Fatal(err)
	}
	a := agg.Aggregate
	if len(a.Groups) != 2 || a.Groups[1].Label != "n=10" || len(a.Groups[1].Runs) != 3 || len(a.Excluded) != 0 {
		t.Fatalf("groups: %s", b)
	}
	if s := a.Groups[1].Summary["n"]; s.N != 3 || *s.Mean != 10 || *s.SD != 0 {
		t.Errorf("summary n of n=10: %+v", s)
	}
	// Point (s0, x=0) over seeds 1..3: the lab-demo y of each seed's first
	// point; check the mean against the runs' own points.
	var ys []float64
	for _, id := range a.Groups[0].Runs {
		for _, p := range l.points(id) {
			if p.Series == "s0" && p.X == 0 {
				ys = append(ys, p.Y)
			}
		}
	}
	pt := a.Groups[0].Series["s0"][0]
	if len(ys) != 3 || pt.N != 3 || !closeTo(*pt.Mean, (ys[0]+ys[1]+ys[2])/3) || !(*pt.Lo < *pt.Mean && *pt.Mean < *pt.Hi) {
		t.Errorf("series point %+v from %v", pt, ys)
	}

	status, b = l.do("GET", "/api/sweeps/"+st.ID+"/aggregate?format=csv&group=", nil)
	if status != http.StatusOK || !strings.HasPrefix(string(b), "kind,name,x,n,mean,sd,se,ci95_lo,ci95_hi,nonfinite,ci95_method,field,unit\nsummary,n,,6,7.5,") {
		t.Errorf("csv without groups: %d %.200s", status, b)
	}
	for _, bad := range []string{"?group=trials", "?format=xml", "?field=nope", "?field=x"} {
		if status, b := l.do("GET", "/api/sweeps/"+st.ID+"/aggregate"+bad, nil); status != http.StatusBadRequest {
			t.Errorf("aggregate%s: %d %s", bad, status, b)
		}
	}

	// The runs list's query filter.
	filtered := func(q string) []notebook.Run {
		status, b := l.do("GET", "/api/runs?q="+urlQuery(q), nil)
		if status != http.StatusOK {
			t.Fatalf("q=%s: %d %s", q, status, b)
		}
		var out struct{ Runs []notebook.Run }
		json.Unmarshal(b, &out)
		return out.Runs
	}
	if got := filtered("sweep = " + st.ID + " AND n IN (10) AND seed >= 2"); len(got) != 2 {
		t.Errorf("filter: %d runs", len(got))
	}
	if got := filtered("tag = grid OR experiment = nothing"); len(got) != 6 {
		t.Errorf("tag filter: %d runs", len(got))
	}
	if status, b := l.do("GET", "/api/runs?q="+urlQuery("n IN (1"), nil); status != http.StatusBadRequest || !strings.Contains(string(b), "query: at") {
		t.Errorf("bad query: %d %s", status, b)
	}

	// Tags.
	status, b = l.do("PUT", "/api/runs/"+st.RunIDs[0]+"/tags", map[string]any{"tags": []string{"b", "a", "b"}})
	if status != http.StatusOK || !strings.Contains(string(b), `"tags":["a","b"]`) {
		t.Errorf("tags: %d %s", status, b)
	}
	if got := filtered("tag = a"); len(got) != 1 || got[0].ID != st.RunIDs[0] {
		t.Errorf("tag a: %v", got)
	}
	for _, bad := range []any{map[string]any{"tags": []string{"has space"}}, map[string]any{}, map[string]any{"tags": make([]string, 33)}} {
		if status, b := l.do("PUT", "/api/runs/"+st.RunIDs[0]+"/tags", bad); status != http.StatusBadRequest {
			t.Errorf("tags %v: %d %s", bad, status, b)
		}
	}
	if status, _ := l.do("PUT", "/api/runs/999/tags", map[string]any{"tags": []string{}}); status != http.StatusNotFound {
		t.Errorf("tags of no run: %d", status)
	}

	// The list, and a cancel of an ended sweep.
	status, b = l.do("GET", "/api/sweeps", nil)
	if status != http.StatusOK || !strings.Contains(string(b), `"experiment":"lab-demo"`) {
		t.Errorf("list: %d %s", status, b)
	}
	if status, _ := l.do("POST", "/api/sweeps/"+st.ID+"/cancel", nil); status != http.StatusConflict {
		t.Errorf("cancel of an ended sweep: %d", status)
	}
}

func closeTo(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

func urlQuery(s string) string {
	r := strings.NewReplacer(" ", "%20", "=", "%3D", "(", "%28", ")", "%29", ">", "%3E", "<", "%3C", ",", "%2C")
	return r.Replace(s)
}

func TestSweepRequestChecks(t *testing.T) {
	l := newTestLab(t, Options{Workers: 1})
	good := map[string]any{"experiment": "lab-demo", "axes": []map[string]any{{"name": "n", "values": []any{1, 2}}}, "seeds": []int{1}}
	cases := []struct {
		body   any
		status int
		want   string
	}{
		{map[string]any{"experiment": "nope"}, 400, "unknown experiment"},
		{map[string]any{"experiment": "lab-demo", "seeds": "3..1"}, 400, "lo ≤ hi"},
		{map[string]any{"experiment": "lab-demo", "seeds": "1..5000"}, 400, "1000"},
		{map[string]any{"experiment": "lab-demo", "axes": []map[string]any{{"name": "n", "values": []any{0}}}}, 400, "minimum"},
		{map[string]any{"experiment": "lab-demo", "axes": []map[string]any{{"name": "zz", "values": []any{0}}}}, 400, "no such parameter"},
		{map[string]any{"experiment": "lab-demo", "executor": "slurm"}, 400, "without Slurm"},
		{map[string]any{"experiment": "lab-demo", "executor": "k8s"}, 400, "auto, pool or slurm"},
		{map[string]any{"experiment": "lab-demo", "tags": []string{"a b"}}, 400, "tag"},
		{map[string]any{"experiment": "lab-demo", "bogus": 1}, 400, "unknown field"},
		{[]byte(`{"experiment": "lab-demo", "axes": [{"name": "n", "values": [1, 2]}]} {}`), 400, "trailing"},
		{[]byte(`{"experiment": "lab-demo", "axes": 3}`), 400, "request body"},
	}
	for i, c := range cases {
		status, b := l.do("POST", "/api/sweeps", c.body)
		if status != c.status || !strings.Contains(string(b), c.want) {
			t.Errorf("case %d: %d %s, want %d with %q", i, status, b, c.status, c.want)
		}
	}
	// The same origin, type and size checks as the other endpoints.
	body, _ := json.Marshal(good)
	req, _ := http.NewRequest("POST", l.url+"/api/sweeps", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin sweep: %v %v", resp.StatusCode, err)
	}
	req, _ = http.NewRequest("POST", l.url+"/api/sweeps/1/cancel", nil)
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin cancel: %v %v", resp.StatusCode, err)
	}
	req, _ = http.NewRequest("PUT", l.url+"/api/runs/1/tags", strings.NewReader(`{"tags":["a"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin tags: %v %v", resp.StatusCode, err)
	}
	req, _ = http.NewRequest("GET", l.url+"/api/sweeps", nil)
	req.Host = "evil.example:80"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %v %v", resp.StatusCode, err)
	}
	req, _ = http.NewRequest("POST", l.url+"/api/sweeps", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain sweep: %v %v", resp.StatusCode, err)
	}
	big := `{"experiment": "lab-demo", "title": "` + strings.Repeat("x", maxBody) + `"}`
	if status, _ := l.do("POST", "/api/sweeps", []byte(big)); status != http.StatusRequestEntityTooLarge {
		t.Errorf("huge sweep body: %d", status)
	}
	// A grid point over the lab's budget is refused before anything runs.
	small := newTestLab(t, Options{Workers: 1, MaxWork: 1e6})
	status, b := small.do("POST", "/api/sweeps", map[string]any{"experiment": "lab-demo", "axes": []map[string]any{{"name": "n", "values": []any{10, 100000}}}})
	if status != http.StatusBadRequest || !strings.Contains(string(b), "grid point -n 100000") || !strings.Contains(string(b), "budget") {
		t.Errorf("sweep over the budget: %d %s", status, b)
	}
	if status, b := small.do("GET", "/api/sweeps", nil); status != http.StatusOK || !strings.Contains(string(b), `"sweeps":[]`) {
		t.Errorf("a refused sweep was recorded: %s", b)
	}
	for _, p := range []string{"/api/sweeps/9", "/api/sweeps/x/aggregate", "/api/sweeps/9/aggregate"} {
		if status, _ := l.do("GET", p, nil); status != http.StatusNotFound {
			t.Errorf("%s: %d", p, status)
		}
	}
	if status, _ := l.do("DELETE", "/api/sweeps/1", nil); status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE sweep: %d", status)
	}
}

// TestSweepClientRuns: a run streamed in with "sweep" is checked against
// the grid, recorded under its number, and completes the sweep; the
// cancel of the sweep reaches a live client run.
// fakeSlurm returns SlurmOptions whose sbatch accepts every array as job
// 42 and whose squeue reports its tasks pending forever, so that a test
// plays the tasks itself with the lines the lab wrote for them.
func fakeSlurm(t *testing.T) *SlurmOptions {
	t.Helper()
	bin := t.TempDir()
	for name, body := range map[string]string{"sbatch": "echo 42", "squeue": `echo "42_[0-99]|PENDING"`, "scancel": "true", "sacct": "true"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &SlurmOptions{Bin: bin, Dir: t.TempDir(), Lab: "/bin/true", Poll: 50 * time.Millisecond}
}

// sweepTaskRef returns the -sweep of task n of a sweep's first array, as
// the lab wrote it into the task list.
func sweepTaskRef(t *testing.T, o *SlurmOptions, id string, n int) string {
	t.Helper()
	var b []byte
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if b, err = os.ReadFile(filepath.Join(o.Dir, "sweep-"+id, "a0-0.tasks")); err == nil || time.Now().After(deadline) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	line := strings.Split(string(b), "\n")[n]
	_, ref, ok := strings.Cut(line, "-sweep=")
	if !ok {
		t.Fatalf("task %d: %q", n, line)
	}
	return strings.Fields(ref)[0]
}

// TestSweepClientRuns: a client registers as run N of a Slurm sweep only
// with the key the lab wrote into run N's task (issue 18, red team: any
// client could register as run N of a pool sweep and replace it in the
// aggregate); not for a pool sweep, not with another run's key, not over
// a run that is live or ended done.
func TestSweepClientRuns(t *testing.T) {
	slurm := fakeSlurm(t)
	l := newTestLab(t, Options{Workers: 1, Slurm: slurm})
	// A Slurm sweep whose tasks this test plays, to be cancelled.
	st := l.startSweep(map[string]any{"experiment": "lab-demo", "params": map[string]any{"pause": 60000},
		"axes": []map[string]any{{"name": "n", "values": []any{3, 4}}}, "seeds": "1..2", "executor": "slurm"})
	exp, _ := sim.Lookup("lab-demo")
	vals, _ := sim.ValuesFromMap(exp.Params(), map[string]any{"pause": 60000, "n": 4})
	ctx := context.Background()
	ref2 := sweepTaskRef(t, slurm, st.ID, 2)
	// Run 2 is n=4 seed 1; seed 2 is refused.
	c := &sim.LabClient{URL: l.url, Sweep: ref2}
	if _, err := c.Start(ctx, exp, vals, 2); err == nil || !strings.Contains(err.Error(), "not this run") {
		t.Errorf("wrong seed: %v", err)
	}
	ref0 := sweepTaskRef(t, slurm, st.ID, 0)
	for _, ref := range []string{"x", st.ID + "/-1", st.ID + "/9", "99/0", st.ID + "/2", st.ID + "/2/" + strings.Repeat("0", 32), st.ID + "/2/" + ref0[strings.LastIndex(ref0, "/")+1:]} {
		c.Sweep = ref
		if _, err := c.Start(ctx, exp, vals, 1); err == nil {
			t.Errorf("sweep ref %q accepted", ref)
		}
	}
	// A pool sweep takes no client.
	pool := l.startSweep(map[string]any{"experiment": "lab-demo", "params": map[string]any{"pause": 60000},
		"axes": []map[string]any{{"name": "n", "values": []any{3, 4}}}, "seeds": "1..2", "executor": "pool"})
	c.Sweep = pool.ID + "/2"
	if _, err := c.Start(ctx, exp, vals, 1); err == nil || !strings.Contains(err.Error(), "lab's pool") {
		t.Errorf("a client as run 2 of a pool sweep: %v", err)
	}
	l.do("POST", "/api/sweeps/"+pool.ID+"/cancel", nil)
	c.Sweep = ref2
	lr, err := c.Start(ctx, exp, vals, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := l.get(lr.ID()); r.Sweep != st.ID || r.SweepRun != 2 {
		t.Errorf("client run: sweep %q/%d", r.Sweep, r.SweepRun)
	}
	if got := l.sweepStatus(st.ID); got.RunIDs[2] != lr.ID() {
		t.Errorf("run 2 of the sweep is %q, want the client's %s", got.RunIDs[2], lr.ID())
	}
	if _, err := c.Start(ctx, exp, vals, 1); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("a second client over a live run 2: %v", err)
	}
	status, b := l.do("POST", "/api/sweeps/"+st.ID+"/cancel", nil)
	if status != http.StatusOK {
		t.Fatalf("cancel: %d %s", status, b)
	}
	// The client learns it with the answer to its next events (an idle
	// client sends every 10 s; this one reports progress).
	deadline := time.After(5 * time.Second)
wait:
	for i := int64(1); ; i++ {
		lr.Progress(i, 1000)
		select {
		case <-lr.Context().Done():
			break wait
		case <-deadline:
			t.Error("the client's run was not cancelled with its sweep")
			break wait
		case <-time.After(20 * time.Millisecond):
		}
	}
	lr.Finish(context.Canceled)
	end := l.waitSweep(st.ID, 5*time.Second, sweepEnded)
	if end.State != notebook.Cancelled {
		t.Errorf("sweep %s", end.State)
	}
	for _, id := range end.RunIDs {
		if id != "" {
			l.wait(id, 5*time.Second, ended)
		}
	}
	// Resumed, the cancelled runs run again (quickly now: "pause" is a
	// fixed parameter, so resume with a sweep that has none instead).
	if status, b := l.do("POST", "/api/sweeps/"+st.ID+"/resume", nil); status != http.StatusOK || !strings.Contains(string(b), `"state":"running"`) {
		t.Errorf("resume: %d %s", status, b)
	}
	if status, _ := l.do("POST", "/api/sweeps/"+st.ID+"/resume", nil); status != http.StatusConflict {
		t.Errorf("resume of a running sweep: %d", status)
	}
	l.do("POST", "/api/sweeps/"+st.ID+"/cancel", nil)
	if status, _ := l.do("POST", "/api/sweeps/99/resume", nil); status != http.StatusNotFound {
		t.Errorf("resume of no sweep: %d", status)
	}
}

// TestSweepResumeFailed: a sweep whose runs failed is resumed by hand and
// only the failed runs run again.
func TestSweepResumeFailed(t *testing.T) {
	l := newTestLab(t, Options{Workers: 2})
	st := l.startSweep(map[string]any{"experiment": "lab-demo", "params": map[string]any{"n": 3},
		"axes": []map[string]any{{"name": "end", "values": []any{"ok", "error"}}}, "seeds": "1..2"})
	end := l.waitSweep(st.ID, 10*time.Second, sweepEnded)
	if end.State != notebook.Failed || end.States["done"] != 2 || end.States["failed"] != 2 || !strings.Contains(end.Error, "2 of 4") {
		t.Fatalf("sweep %s %v %q", end.State, end.States, end.Error)
	}
	if status, b := l.do("POST", "/api/sweeps/"+st.ID+"/resume", nil); status != http.StatusOK {
		t.Fatalf("resume: %d %s", status, b)
	}
	again := l.waitSweep(st.ID, 10*time.Second, sweepEnded)
	if again.State != notebook.Failed || again.RunIDs[0] != end.RunIDs[0] || again.RunIDs[1] != end.RunIDs[1] || again.RunIDs[2] == end.RunIDs[2] {
		t.Errorf("resumed: %s, runs %v (before %v): the done runs must stay, the failed ones run again", again.State, again.RunIDs, end.RunIDs)
	}
}

// TestSweepResume: a lab shut down in the middle of a sweep resumes it
// when it starts again; the runs that had ended done are not computed
// again.
func TestSweepResume(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Server, *httptest.Server, *notebook.Bolt) {
		store, err := notebook.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewUnstartedServer(nil)
		srv, err := New(Options{Store: store, Workers: 1, Addr: ts.Listener.Addr().String(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ts.Config.Handler = srv
		ts.Start()
		return srv, ts, store
	}
	stop := func(srv *Server, ts *httptest.Server, store *notebook.Bolt) {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		store.Close()
	}
	srv, ts, store := open()
	l := &testLab{t: t, srv: srv, ts: ts, store: store, url: ts.URL}
	st := l.startSweep(map[string]any{"experiment": "lab-demo", "params": map[string]any{"n": 20, "delay": 2000.0},
		"axes": []map[string]any{{"name": "series", "values": []any{1, 2}}}, "seeds": "1..3"})
	// 6 runs of ~40 ms, one at a time: stop after the second has ended.
	mid := l.waitSweep(st.ID, 20*time.Second, func(s SweepStatus) bool { return s.States["done"] >= 2 })
	before := map[int]string{}
	stop(srv, ts, store)

	store2, err := notebook.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := store2.SweepRuns(st.ID)
	for n, id := range runs {
		if r, _ := store2.Get(id); r.State == notebook.Done {
			before[n] = id
		}
	}
	rec, _ := store2.GetSweep(st.ID)
	store2.Close()
	if rec.State != notebook.Running || len(before) < 2 || len(before) == 6 {
		t.Fatalf("after the shutdown: sweep %s, %d runs done (status then %v)", rec.State, len(before), mid.States)
	}

	srv, ts, store = open()
	l = &testLab{t: t, srv: srv, ts: ts, store: store, url: ts.URL}
	defer stop(srv, ts, store)
	end := l.waitSweep(st.ID, 20*time.Second, sweepEnded)
	if end.State != notebook.Done || end.States["done"] != 6 {
		t.Fatalf("resumed sweep: %s %v %s", end.State, end.States, end.Error)
	}
	for n, id := range before {
		if end.RunIDs[n] != id {
			t.Errorf("run %d was computed again: %s, before %s", n, end.RunIDs[n], id)
		}
	}
	all, _ := store.List(notebook.Query{})
	interrupted := 0
	for _, r := range all {
		if r.State == notebook.Interrupted {
			interrupted++
		}
	}
	if len(all) != 6+interrupted {
		t.Errorf("%d runs in the notebook: 6 + %d interrupted expected", len(all), interrupted)
	}
}
