package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	labserver "github.com/fp8lab/fp8lab/lab"
	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

// TestMain lets the test binary stand in for the lab program: with
// FP8LAB_LAB_MAIN=1 it runs `lab ARGS` (the Slurm tasks of the sweep tests
// run it so, with the test experiment registered).
func TestMain(m *testing.M) {
	if os.Getenv("FP8LAB_LAB_MAIN") == "1" {
		ctx, stop := mainContext(os.Args[1:], os.Stderr)
		defer stop()
		if err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "lab:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// inProcessLab serves a lab on a fresh notebook on a real local port.
func inProcessLab(t *testing.T, slurm *labserver.SlurmOptions) (*labserver.Server, string) {
	t.Helper()
	store, err := notebook.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	srv, err := labserver.New(labserver.Options{Store: store, Workers: 2, Addr: ts.Listener.Addr().String(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Slurm: slurm})
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
	if slurm != nil {
		slurm.LabURL = ts.URL
	}
	return srv, ts.URL
}

func TestSweepCommandPool(t *testing.T) {
	_, url := inProcessLab(t, nil)
	var out, errb bytes.Buffer
	err := dispatch(context.Background(), []string{"sweep", "demo", "-trials", "5,10", "-contexts", "64;128,256", "-model", "two-level",
		"-seeds", "1..4", "-lab", url, "-group", "trials", "-quiet"}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	// Grouped by trials: points = 1 (contexts 64) or 2 (128,256): mean 1.5
	// over 4 seeds × 2 context lists, with a real interval.
	lines := strings.Split(out.String(), "\n")
	if !strings.HasPrefix(lines[0], "group") || strings.Join(strings.Fields(lines[1])[:4], " ") != "trials=5 points 8 1.5" {
		t.Errorf("table:\n%s", out.String())
	}
	out.Reset()
	err = dispatch(context.Background(), []string{"sweep", "demo", "-trials", "5", "-seeds", "1,2", "-lab", url, "-csv", "-quiet"}, &out, &errb)
	if err != nil || !strings.HasPrefix(out.String(), "kind,name,x,n,mean") {
		t.Errorf("csv: %v\n%s", err, out.String())
	}
	for _, bad := range [][]string{
		{"sweep"}, {"sweep", "nope"}, {"sweep", "demo", "-seeds", "5..1", "-lab", url},
		{"sweep", "demo", "-trials", "0,1", "-lab", url}, {"sweep", "demo", "-csv", "-json"},
		{"sweep", "demo", "-executor", "slurm", "-lab", url},
	} {
		if err := dispatch(context.Background(), bad, io.Discard, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startSlurm starts a private single-node Slurm with tools/slurm/setup.sh
// and returns its SLURM_CONF. Where it cannot start, the test fails under
// CI=true and is skipped elsewhere.
func startSlurm(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs("../../tools/slurm/setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(script, dir)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SLURMCTLD_PORT=%d", freePort(t)), fmt.Sprintf("SLURMD_PORT=%d", freePort(t)))
	out, err := cmd.CombinedOutput()
	conf := filepath.Join(dir, "slurm.conf")
	t.Cleanup(func() {
		if _, err := os.Stat(conf); err == nil {
			c := exec.Command("scancel", "--full", "-u", "root") // ours only: the private controller knows no others
			c.Env = append(os.Environ(), "SLURM_CONF="+conf)
			c.Run()
		}
		exec.Command(script, "-stop", dir).Run()
	})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Slurm did not start (CI=true: this is a failure): %v\n%s", err, out)
		}
		t.Skipf("Slurm did not start (set CI=true to make this a failure): %v\n%s", err, out)
	}
	t.Setenv("SLURM_CONF", conf) // for scancel in the cleanup and squeue below
	return conf
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestSweepSlurm runs sweeps on a real single-node Slurm: an array whose
// tasks are `lab run … -lab URL -sweep ID/N` streaming into the lab, its
// aggregate, and a cancel that reaches the jobs through scancel.
func TestSweepSlurm(t *testing.T) {
	conf := startSlurm(t)
	slurm := &labserver.SlurmOptions{Lab: os.Args[0], Dir: t.TempDir(), Poll: 200 * time.Millisecond, MinRuns: 4,
		Env: []string{"SLURM_CONF=" + conf, "FP8LAB_LAB_MAIN=1"}}
	_, url := inProcessLab(t, slurm)

	var out, errb bytes.Buffer
	start := time.Now()
	// 6 short runs take about 10 s; a Slurm that never runs them fails the
	// test here, not at the package's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := dispatch(ctx, []string{"sweep", "demo", "-trials", "5,10", "-seeds", "1..3", "-lab", url, "-json"}, &out, &errb)
	if err != nil {
		t.Fatalf("%v (after %v)\n%s", err, time.Since(start).Round(time.Second), errb.String())
	}
	t.Logf("6 runs on Slurm in %v", time.Since(start))
	if !strings.Contains(errb.String(), "6 runs of demo on the slurm") {
		t.Errorf("executor auto with 6 > 4 runs did not choose Slurm: %s", errb.String())
	}
	var agg struct {
		Sweep     notebook.Sweep
		Aggregate struct {
			Groups []struct {
				Label   string
				Runs    []string
				Summary map[string]struct{ N int }
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &agg); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if agg.Sweep.State != notebook.Done || agg.Sweep.Executor != "slurm" || len(agg.Sweep.SlurmJobs) != 2 || len(agg.Aggregate.Groups) != 2 {
		t.Fatalf("sweep %+v, %d groups", agg.Sweep, len(agg.Aggregate.Groups))
	}
	for _, g := range agg.Aggregate.Groups {
		if len(g.Runs) != 3 || g.Summary["points"].N != 3 {
			t.Errorf("group %s: %d runs, summary %v", g.Label, len(g.Runs), g.Summary)
		}
	}
	var run notebook.Run
	getJSON(t, url+"/api/runs/"+agg.Aggregate.Groups[0].Runs[0], &run)
	if run.Origin != notebook.OriginTerminal || run.Sweep != agg.Sweep.ID || run.State != notebook.Done {
		t.Errorf("a task's run: %+v", run)
	}

	// A sweep of slow runs, cancelled while its tasks run.
	out.Reset()
	err = dispatch(context.Background(), []string{"sweep", "demo", "-trials", "100", "-sleep", "100", "-seeds", "1..4",
		"-executor", "slurm", "-lab", url, "-detach"}, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out.String())
	var st labserver.SweepStatus
	deadline := time.Now().Add(20 * time.Second)
	// A task streams its run in, and squeue shows it running.
	for st.States["running"] == 0 || st.SlurmTasks["RUNNING"] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sweep %s: no task running and streaming within 20 s: runs %v, tasks %v", id, st.States, st.SlurmTasks)
		}
		time.Sleep(50 * time.Millisecond)
		getJSON(t, url+"/api/sweeps/"+id, &st)
	}
	resp, err := http.Post(url+"/api/sweeps/"+id+"/cancel", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("cancel: %v %v", resp.Status, err)
	}
	resp.Body.Close()
	job := st.SlurmJobs[0]
	deadline = time.Now().Add(20 * time.Second)
	for {
		q, err := exec.Command("squeue", "-h", "-t", "all", "-j", job, "-o", "%i|%T").Output()
		if err != nil {
			t.Fatalf("squeue: %v", err)
		}
		states := map[string]string{}
		for _, l := range strings.Fields(string(q)) {
			id, s, _ := strings.Cut(l, "|")
			states[id] = s
		}
		// Every task ends cancelled, except those that end on their own
		// before scancel's signal reaches them, which Slurm records as
		// FAILED: one that Slurm started in the moment between the sweep's
		// end and the scancel finds the sweep ended and fails at once,
		// doing nothing; a running one learns from the lab (its next
		// events are answered "cancelled") that its run was cancelled there
		// and stops (seen under make test's load: the scancel came later);
		// and one that scancel's SIGTERM reaches while it starts, before
		// its first write, dies with an empty output (seen once under
		// -race, whose runtime starts slowly). Any other failure writes its
		// error there (the task's, or slurmstepd's if the program does not
		// start), so an empty output is the signal's.
		cancelled, refused := 0, 0
		failed := map[string]string{} // a FAILED task's output
		for id, s := range states {
			switch s {
			case "CANCELLED":
				cancelled++
			case "FAILED":
				b, _ := os.ReadFile(filepath.Join(slurm.Dir, "slurm-"+id+".out"))
				failed[id] = string(b)
				ended := strings.Contains(string(b), "has ended (cancelled)") || strings.Contains(string(b), sim.ErrCancelledInLab.Error()) ||
					len(bytes.TrimSpace(b)) == 0
				if ended && !strings.Contains(string(b), "DATA RACE") { // a task built with -race still fails on a race
					refused++
				}
			}
		}
		if cancelled+refused == len(states) && cancelled > 0 {
			if refused > 0 {
				t.Logf("job %s after scancel: %v (%d tasks ended by the lab before the scancel: %q)", job, states, refused, failed)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s after scancel: %v; the failed tasks' output: %q", job, states, failed)
		}
		time.Sleep(100 * time.Millisecond)
	}
	getJSON(t, url+"/api/sweeps/"+id, &st)
	if st.State != notebook.Cancelled {
		t.Errorf("sweep %s after cancel: %s", id, st.State)
	}
}

// TestFollowSweepFinalLine: the progress line of `lab sweep` counts the
// states of the last answer only (it ended "40/40 done, 1 running, 2
// queued": JSON decoding into the previous answer's map kept its keys).
func TestFollowSweepFinalLine(t *testing.T) {
	answers := []string{
		`{"state":"running","runs":40,"states":{"done":37,"running":1,"queued":2}}`,
		`{"state":"done","runs":40,"states":{"done":40}}`,
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answers[min(n, len(answers)-1)])
		n++
	}))
	defer srv.Close()
	var stderr bytes.Buffer
	state, err := followSweep(t.Context(), &labHTTP{base: srv.URL, client: srv.Client()}, "1", &stderr, false)
	if err != nil || state != "done" {
		t.Fatalf("followSweep: %q %v", state, err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\r")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "40/40 done, 0 running, 0 queued, 0 failed") {
		t.Errorf("final line %q", last)
	}
}
