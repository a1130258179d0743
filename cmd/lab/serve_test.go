package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/fp8lab/fp8lab/lab/labtest"
	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

// TestServeHelper is not a test: it is the lab server that the crash tests
// start as a subprocess (the test binary itself, so that the test
// experiment is registered) and kill.
func TestServeHelper(t *testing.T) {
	dir := os.Getenv("LAB_SERVE_HELPER_DATA")
	if dir == "" {
		t.Skip("the subprocess of TestServeCrash")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := dispatch(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-data", dir, "-workers", "2"}, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// labProcess is a `lab serve` subprocess.
type labProcess struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
}

func startLab(t *testing.T, dir string) *labProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelper$", "-test.v=false")
	cmd.Env = append(os.Environ(), "LAB_SERVE_HELPER_DATA="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &labProcess{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("lab serve: %v\n%s", err, p.stderr)
	}
	// "fp8lab lab on http://127.0.0.1:PORT/  (notebook …)"
	_, rest, ok := strings.Cut(line, "http://")
	if !ok {
		t.Fatalf("lab serve printed %q", line)
	}
	addr, _, _ := strings.Cut(rest, "/")
	p.url = "http://" + addr
	go io.Copy(io.Discard, out)
	return p
}

func (p *labProcess) call(t *testing.T, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.url+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

func (p *labProcess) waitRun(t *testing.T, id string, ok func(notebook.Run) bool) notebook.Run {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var r notebook.Run
		p.call(t, "GET", "/api/runs/"+id, nil, &r)
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %s with %d points\n%s", id, r.State, r.Points, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeCrash kills the lab with SIGKILL in the middle of a server run
// and of a client's run, restarts it on the same data folder, and checks
// that the finished run is intact and the cut ones are shown interrupted
// with the points they had committed.
func TestServeCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	dir := t.TempDir()
	p := startLab(t, dir)

	var done, slow notebook.Run
	p.call(t, "POST", "/api/runs", map[string]any{"experiment": "lab-demo", "params": map[string]any{"n": 500}, "seed": 3}, &done)
	done = p.waitRun(t, done.ID, func(r notebook.Run) bool { return r.State == notebook.Done })
	if code := p.call(t, "PATCH", "/api/runs/"+done.ID, map[string]any{"note": "before the crash"}, nil); code != 200 {
		t.Fatalf("annotate: %d", code)
	}
	var donePts struct{ Points []json.RawMessage }
	p.call(t, "GET", "/api/runs/"+done.ID+"/points?limit=100000", nil, &donePts)

	p.call(t, "POST", "/api/runs", map[string]any{"experiment": "lab-demo", "params": map[string]any{"n": 1000000, "delay": 500}, "seed": 4}, &slow)
	p.waitRun(t, slow.ID, func(r notebook.Run) bool { return r.Points > 300 })

	// A client streaming into the lab at the same time.
	exp, _ := sim.Lookup("lab-demo")
	values, _ := sim.ValuesFromMap(exp.Params(), map[string]any{"n": 1000000, "delay": 500})
	lr, err := (&sim.LabClient{URL: p.url, FlushEvery: 20 * time.Millisecond}).Start(context.Background(), exp, values, 5)
	if err != nil {
		t.Fatal(err)
	}
	clientDone := make(chan error, 1)
	go func() {
		_, err := sim.Execute(lr.Context(), exp, values, 5, lr)
		clientDone <- err
	}()
	p.waitRun(t, lr.ID(), func(r notebook.Run) bool { return r.Points > 100 })

	var before notebook.Run
	p.call(t, "GET", "/api/runs/"+slow.ID, nil, &before)
	killed := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	select { // the client notices: its run stops with an error within 30 s of retries; don't wait for it
	case <-clientDone:
	default:
	}

	p2 := startLab(t, dir)
	t.Logf("restarted %v after the kill", time.Since(killed).Round(time.Millisecond))
	var d, s, c notebook.Run
	p2.call(t, "GET", "/api/runs/"+done.ID, nil, &d)
	p2.call(t, "GET", "/api/runs/"+slow.ID, nil, &s)
	p2.call(t, "GET", "/api/runs/"+lr.ID(), nil, &c)
	var dPts struct{ Points []json.RawMessage }
	p2.call(t, "GET", "/api/runs/"+done.ID+"/points?limit=100000", nil, &dPts)
	if d.State != notebook.Done || d.Points != 550 || d.Note != "before the crash" || len(dPts.Points) != 550 || fmt.Sprint(dPts.Points) != fmt.Sprint(donePts.Points) {
		t.Errorf("finished run after the crash: %s, %d points (%d served), note %q", d.State, d.Points, len(dPts.Points), d.Note)
	}
	for _, r := range []notebook.Run{s, c} {
		var pts struct {
			Count int64 `json:"count"`
		}
		p2.call(t, "GET", "/api/runs/"+r.ID+"/points?limit=100000", nil, &pts)
		if r.State != notebook.Interrupted || !strings.Contains(r.Error, "crash or kill") || r.Points == 0 || pts.Count != r.Points || r.Ended == nil {
			t.Errorf("run %s (%s) after the crash: %s %q, %d points, %d served", r.ID, r.Origin, r.State, r.Error, r.Points, pts.Count)
		}
	}
	lost := before.Points - s.Points
	t.Logf("crash: the finished run is intact (550 points, its note kept); the server run kept %d points (the API showed %d just before the kill; commits every 100 ms) and the client's run %d, both marked interrupted",
		s.Points, before.Points, c.Points)
	if lost > 0 && lost > before.Points/2 {
		t.Errorf("lost %d of %d points", lost, before.Points)
	}

	// A graceful stop records the run in progress as interrupted by the shutdown.
	var g notebook.Run
	p2.call(t, "POST", "/api/runs", map[string]any{"experiment": "lab-demo", "params": map[string]any{"n": 1000000, "delay": 500}}, &g)
	p2.waitRun(t, g.ID, func(r notebook.Run) bool { return r.Points > 10 })
	start := time.Now()
	p2.cmd.Process.Signal(syscall.SIGTERM)
	if err := p2.cmd.Wait(); err != nil {
		t.Errorf("lab serve after SIGTERM: %v\n%s", err, p2.stderr)
	}
	t.Logf("SIGTERM: the lab stopped in %v", time.Since(start).Round(time.Millisecond))
	p3 := startLab(t, dir)
	p3.call(t, "GET", "/api/runs/"+g.ID, nil, &g)
	if g.State != notebook.Interrupted || !strings.Contains(g.Error, "shut down") || g.Points == 0 {
		t.Errorf("run after a graceful stop: %s %q %d points", g.State, g.Error, g.Points)
	}
	p3.cmd.Process.Signal(syscall.SIGTERM)
	p3.cmd.Wait()
}

func TestServeFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-addr", "nope", "-data", t.TempDir()}, "lab serve: listen tcp: address nope"},
		{[]string{"serve", "extra"}, `lab serve: unexpected argument "extra"`},
		{[]string{"serve", "-bogus"}, "lab serve: flag provided but not defined: -bogus"},
		{[]string{"serve", "-data", t.TempDir(), "-addr", "127.0.0.1:0", "-wasm", t.TempDir()}, "lab serve: -wasm"},
		{[]string{"serve", "-data", t.TempDir(), "-addr", "127.0.0.1:0", "-gpu-idle", "-1s"}, "lab serve: -gpu-idle -1s: want 0 to 1h"},
		{[]string{"serve", "-data", t.TempDir(), "-addr", "127.0.0.1:0", "-gpu-idle", "2h"}, "lab serve: -gpu-idle 2h0m0s: want 0 to 1h"},
		{[]string{"serve", "-gpu-idle", "soon"}, `lab serve: invalid value "soon" for flag -gpu-idle`},
	} {
		_, _, err := lab(t, context.Background(), tt.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%v: %v, want prefix %q", tt.args, err, tt.want)
		}
	}
	out, _, err := lab(t, context.Background(), "serve", "-h")
	if err != nil || !strings.Contains(out, "-addr") {
		t.Errorf("serve -h: %v %s", err, out)
	}
}

// TestRunIntoLab: `lab run NAME -lab URL` streams the run into a lab and
// keeps its terminal output.
func TestRunIntoLab(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	p := startLab(t, t.TempDir())
	out, errOut, err := lab(t, context.Background(), "run", "lab-demo", "-n", "30", "-seed", "2", "-lab", p.url, "-json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "streaming into the lab: "+p.url+"/#run/") || strings.Count(out, `"type":"point"`) != 33 {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
	var list struct{ Runs []notebook.Run }
	p.call(t, "GET", "/api/runs", nil, &list)
	if len(list.Runs) != 1 || list.Runs[0].Origin != notebook.OriginTerminal || list.Runs[0].State != notebook.Done || list.Runs[0].Points != 33 {
		t.Errorf("runs in the lab: %+v", list.Runs)
	}
	_, _, err = lab(t, context.Background(), "run", "lab-demo", "-n", "0", "-lab", p.url)
	if err == nil || !strings.Contains(err.Error(), `parameter "n": 0 is below the minimum 1`) {
		t.Errorf("bad parameter: %v", err)
	}
	_, _, err = lab(t, context.Background(), "run", "lab-demo", "-lab", "http://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "lab:") {
		t.Errorf("no lab: %v", err)
	}
}

// TestServeWithoutCommand: `lab -addr … -data …` is `lab serve -addr …
// -data …`, as the usage line shows (it used to be `unknown command
// "-addr"`).
func TestServeWithoutCommand(t *testing.T) {
	_, _, err := lab(t, context.Background(), "-addr", "nope", "-data", t.TempDir())
	if err == nil || !strings.HasPrefix(err.Error(), "lab serve: listen tcp: address nope") {
		t.Errorf("lab -addr nope: %v, want the listen error of lab serve", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out syncBuffer
	go func() {
		done <- dispatch(ctx, []string{"-addr", "127.0.0.1:0", "-data", t.TempDir()}, &out, io.Discard)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "fp8lab lab on http://127.0.0.1:") {
		if time.Now().After(deadline) {
			t.Fatalf("lab -addr 127.0.0.1:0 -data DIR did not start: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("lab -addr … -data …: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
