package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	_ "github.com/fp8lab/fp8lab/lab/labtest"
	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

// testLab is a Server on a notebook in a temporary folder behind an
// httptest server.
type testLab struct {
	t     testing.TB
	srv   *Server
	ts    *httptest.Server
	store *notebook.Bolt
	url   string
}

func newTestLab(t testing.TB, opts Options) *testLab {
	t.Helper()
	store, err := notebook.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	opts.Store = store
	opts.Addr = ts.Listener.Addr().String()
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	l := &testLab{t: t, srv: srv, ts: ts, store: store, url: ts.URL}
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		store.Close()
	})
	return l
}

// do sends a request with a JSON body (when body is not nil) and returns
// the status and the body.
func (l *testLab) do(method, path string, body any) (int, []byte) {
	l.t.Helper()
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				l.t.Fatal(err)
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, l.url+path, rd)
	if err != nil {
		l.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// start starts a server run and returns it.
func (l *testLab) start(exp string, params map[string]any, seed uint64) notebook.Run {
	l.t.Helper()
	status, b := l.do("POST", "/api/runs", map[string]any{"experiment": exp, "params": params, "seed": seed})
	if status != http.StatusCreated {
		l.t.Fatalf("start %s %v: %d %s", exp, params, status, b)
	}
	var run notebook.Run
	if err := json.Unmarshal(b, &run); err != nil {
		l.t.Fatal(err)
	}
	return run
}

func (l *testLab) get(id string) notebook.Run {
	l.t.Helper()
	status, b := l.do("GET", "/api/runs/"+id, nil)
	if status != http.StatusOK {
		l.t.Fatalf("get run %s: %d %s", id, status, b)
	}
	var run notebook.Run
	if err := json.Unmarshal(b, &run); err != nil {
		l.t.Fatal(err)
	}
	return run
}

// wait polls the run until its state satisfies ok or the timeout passes.
func (l *testLab) wait(id string, timeout time.Duration, ok func(notebook.Run) bool) notebook.Run {
	l.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		run := l.get(id)
		if ok(run) {
			return run
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("run %s: still %s after %v (%d points)", id, run.State, timeout, run.Points)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ended(r notebook.Run) bool { return r.State.Final() }

// apiPoint is a point as the API writes it.
type apiPoint struct {
	Series string             `json:"series"`
	X      *float64           `json:"x"`
	Y      *float64           `json:"y"`
	Extra  map[string]float64 `json:"extra"`
}

func (p apiPoint) sim() sim.Point {
	q := sim.Point{Series: p.Series, X: nanIfNull(p.X), Y: nanIfNull(p.Y)}
	if len(p.Extra) > 0 {
		q.Extra = p.Extra
	}
	return q
}

func (l *testLab) points(id string) []sim.Point {
	l.t.Helper()
	status, b := l.do("GET", "/api/runs/"+id+"/points?limit=100000", nil)
	if status != http.StatusOK {
		l.t.Fatalf("points of %s: %d %s", id, status, b)
	}
	var ans struct {
		Points []apiPoint `json:"points"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		l.t.Fatal(err)
	}
	out := make([]sim.Point, len(ans.Points))
	for i, p := range ans.Points {
		out[i] = p.sim()
	}
	return out
}

// streamMsg is one message of a run's stream.
type streamMsg struct {
	Type   string       `json:"type"`
	From   int64        `json:"from"`
	Points []apiPoint   `json:"points"`
	Run    notebook.Run `json:"run"`
}

func (l *testLab) dial(id, query string, header http.Header) (*websocket.Conn, *http.Response, error) {
	u := "ws" + strings.TrimPrefix(l.url, "http") + "/api/runs/" + id + "/stream" + query
	return websocket.DefaultDialer.Dial(u, header)
}

// watch reads a run's stream to its end and returns the points and the
// final record.
func watch(t testing.TB, c *websocket.Conn) ([]sim.Point, notebook.Run) {
	t.Helper()
	defer c.Close()
	var pts []sim.Point
	var next int64 = -1
	for {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		var m streamMsg
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("stream: %v after %d points", err, len(pts))
		}
		switch m.Type {
		case "points":
			if next >= 0 && m.From != next {
				t.Fatalf("stream: points from %d, want %d", m.From, next)
			}
			next = m.From + int64(len(m.Points))
			for _, p := range m.Points {
				pts = append(pts, p.sim())
			}
		case "end":
			return pts, m.Run
		case "run":
		default:
			t.Fatalf("stream: message type %q", m.Type)
		}
	}
}

// watchResume reads a run's stream to its end like the page does: when the
// server drops the connection (a viewer too slow for WriteTimeout), it
// reconnects with ?from=N and goes on. It returns the points, the final
// record and the number of reconnections.
func (l *testLab) watchResume(id string) ([]sim.Point, notebook.Run, int) {
	l.t.Helper()
	var pts []sim.Point
	resumes := -1
	for {
		resumes++
		if resumes > 100 {
			l.t.Fatalf("stream of run %s: too many reconnections", id)
		}
		c, _, err := l.dial(id, fmt.Sprintf("?from=%d", len(pts)), nil)
		if err != nil {
			l.t.Fatal(err)
		}
		for {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			var m streamMsg
			if err := c.ReadJSON(&m); err != nil {
				break // dropped: resume
			}
			if m.Type == "points" {
				if m.From != int64(len(pts)) {
					l.t.Fatalf("stream: points from %d after %d", m.From, len(pts))
				}
				for _, p := range m.Points {
					pts = append(pts, p.sim())
				}
			}
			if m.Type == "end" {
				c.Close()
				return pts, m.Run, resumes
			}
		}
		c.Close()
	}
}

// liveCount is the number of runs the server still holds in memory: queued,
// running, or ended but not yet committed and forgotten.
func (s *Server) liveCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lives)
}
