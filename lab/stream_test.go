package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

func TestStreamReplayAndLive(t *testing.T) {
	l := newTestLab(t, Options{})
	done := l.wait(l.start("lab-demo", map[string]any{"n": 5000}, 1).ID, 10*time.Second, ended)
	want := l.points(done.ID)

	// A finished run: history from the notebook, then the end.
	c, _, err := l.dial(done.ID, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, end := watch(t, c)
	if !reflect.DeepEqual(got, want) || end.State != notebook.Done || end.Points != 5500 {
		t.Errorf("replay: %d points, end %s %d", len(got), end.State, end.Points)
	}
	// Resuming from N sends the rest only.
	c, _, err = l.dial(done.ID, "?from=4990", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := watch(t, c); !reflect.DeepEqual(got, want[4990:]) {
		t.Errorf("resume: %d points", len(got))
	}

	// A live run joined mid-way: history then live, no loss, same as the
	// notebook afterwards.
	run := l.start("lab-demo", map[string]any{"n": 2000, "delay": 200}, 2)
	l.wait(run.ID, 5*time.Second, func(r notebook.Run) bool { return r.Points > 100 })
	c, _, err = l.dial(run.ID, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, end = watch(t, c)
	if end.State != notebook.Done || int64(len(got)) != end.Points || !reflect.DeepEqual(got, l.points(run.ID)) {
		t.Errorf("live: %d points, end %s %d", len(got), end.State, end.Points)
	}

	// Cross-origin viewers are refused.
	_, resp, err := l.dial(done.ID, "", http.Header{"Origin": {"http://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin stream: %v %v", err, resp)
	}
	if _, _, err := l.dial(done.ID, "", http.Header{"Origin": {l.url}}); err != nil {
		t.Errorf("same-origin stream: %v", err)
	}
}

// TestSlowViewer: a viewer that never reads does not hold up the run or a
// good viewer, and is disconnected once a write has waited WriteTimeout.
func TestSlowViewer(t *testing.T) {
	l := newTestLab(t, Options{WriteTimeout: time.Second})
	big := l.start("lab-demo", map[string]any{"n": 200000, "series": 4}, 2)

	// The stalled viewer: a raw WebSocket handshake, then nothing read.
	raw, err := net.Dial("tcp", strings.TrimPrefix(l.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(raw, "GET /api/runs/%s/stream HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", big.ID, strings.TrimPrefix(l.url, "http://"))
	status, err := bufio.NewReader(raw).ReadString('\n')
	if err != nil || !strings.Contains(status, "101") {
		t.Fatalf("handshake: %q %v", status, err)
	}

	start := time.Now()
	got, end, resumes := l.watchResume(big.ID)
	all, _ := l.store.Points(big.ID, 0, 0)
	if end.State != notebook.Done || int64(len(got)) != end.Points || end.Points != 220000 || !reflect.DeepEqual(got, all) {
		t.Fatalf("good viewer: %d points, end %s %d", len(got), end.State, end.Points)
	}
	t.Logf("good viewer got %d points in %v (%d resumes) while a viewer stalled", len(got), time.Since(start), resumes)
	deadline := time.Now().Add(5 * time.Second)
	for l.srv.viewers.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := l.srv.viewers.Load(); n != 0 {
		t.Errorf("%d viewers still connected: the stalled one was not dropped", n)
	}
}

// fanoutParams is the streamed run of the load test and the benchmark:
// 10,001 points (9,091 plus 910 "h200 demo") emitted as fast as the run
// can, after a pause that lets every viewer connect first.
var fanoutParams = map[string]any{"n": 9091, "series": 4, "pause": 300}

// fanoutWant computes the points of the fanout run directly.
func fanoutWant(tb testing.TB) []sim.Point {
	exp, _ := sim.Lookup("lab-demo")
	values, err := sim.ValuesFromMap(exp.Params(), fanoutParams)
	if err != nil {
		tb.Fatal(err)
	}
	var rec sim.Recorder
	if _, err := sim.Execute(context.Background(), exp, values, 7, &rec); err != nil {
		tb.Fatal(err)
	}
	return rec.Points()
}

// fanout starts the fanout run with viewers connected before its first
// point. Each viewer checks every point as it arrives, byte for byte
// against the API's encoding of the points of a direct run (cheap enough
// that the figures are the server's, and exact: the encoding is the
// shortest round-trip of every number), keeping nothing, so that the heap
// measures the server. It returns each viewer's count of points, end record
// and time from its first point to the end.
func fanout(tb testing.TB, l *testLab, viewers int, want []sim.Point) (run notebook.Run, counts []int, ends []notebook.Run, took []time.Duration) {
	enc := make([][]byte, len(want))
	for i, p := range want {
		b := sim.AppendPointsJSON(nil, []sim.Point{p})
		enc[i] = b[1 : len(b)-1]
	}
	run = l.start("lab-demo", fanoutParams, 7)
	counts, ends, took = make([]int, viewers), make([]notebook.Run, viewers), make([]time.Duration, viewers)
	var wg sync.WaitGroup
	for i := range viewers {
		c, _, err := l.dial(run.ID, "", nil)
		if err != nil {
			tb.Fatal(err)
		}
		wg.Go(func() {
			defer c.Close()
			var first time.Time
			for {
				c.SetReadDeadline(time.Now().Add(30 * time.Second))
				_, msg, err := c.ReadMessage()
				if err != nil {
					tb.Errorf("viewer %d: %v after %d points", i, err, counts[i])
					return
				}
				switch {
				case bytes.HasPrefix(msg, []byte(`{"type":"points"`)):
					if first.IsZero() {
						first = time.Now()
					}
					head := fmt.Appendf(nil, `{"type":"points","from":%d,"points":[`, counts[i])
					if !bytes.HasPrefix(msg, head) || !bytes.HasSuffix(msg, []byte("]}")) {
						tb.Errorf("viewer %d: after %d points, message %.80s", i, counts[i], msg)
						return
					}
					body := msg[len(head) : len(msg)-2]
					for len(body) > 0 {
						j := counts[i]
						if j >= len(enc) || !bytes.HasPrefix(body, enc[j]) {
							tb.Errorf("viewer %d: point %d is %.120s", i, j, body)
							return
						}
						body = bytes.TrimPrefix(body[len(enc[j]):], []byte(","))
						counts[i]++
					}
				case bytes.HasPrefix(msg, []byte(`{"type":"end"`)):
					var m streamMsg
					json.Unmarshal(msg, &m)
					ends[i], took[i] = m.Run, time.Since(first)
					return
				}
			}
		})
	}
	wg.Wait()
	return run, counts, ends, took
}

// TestLoad is the load test of the lab: 50 WebSocket viewers on one run
// streaming 10,001 points as fast as it can while 7 more runs execute (8 in
// all). Every viewer must get every point in order, at least 5,000
// points/s each, and the heap must stay bounded.
func TestLoad(t *testing.T) {
	const viewers = 50
	l := newTestLab(t, Options{Workers: 8})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak uint64 // heap in use, sampled every 10 ms
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}()
	var others []notebook.Run
	for i := range 7 {
		others = append(others, l.start("lab-demo", map[string]any{"n": 8000, "series": 2, "delay": 20}, uint64(100+i)))
	}
	want := fanoutWant(t)
	start := time.Now()
	run, counts, ends, took := fanout(t, l, viewers, want)
	if len(want) != 10001 || !reflect.DeepEqual(l.points(run.ID), want) {
		t.Fatalf("the streamed run has %d points", len(want))
	}
	var slowest time.Duration
	for i := range viewers {
		if ends[i].State != notebook.Done || counts[i] != len(want) {
			t.Fatalf("viewer %d: %d points (want %d), end %s", i, counts[i], len(want), ends[i].State)
		}
		slowest = max(slowest, took[i])
	}
	streamed := time.Since(start)
	running := 0
	for _, o := range others {
		if r := l.get(o.ID); r.State == notebook.Running {
			running++
		}
	}
	for _, o := range others {
		if r := l.wait(o.ID, 60*time.Second, ended); r.State != notebook.Done || r.Points != 8800 {
			t.Errorf("run %s: %s with %d points", o.ID, r.State, r.Points)
		}
	}
	close(stop)
	<-sampled
	// A run's state reads "done" once its end is decided, a little before
	// the lab has committed it and forgotten its in-memory log; a viewer's
	// handler ends a little after its client closes. On a loaded machine
	// both are still happening here. The bound is on what the lab keeps
	// once every run and every stream has ended, so wait for that first.
	openAtEnd, liveAtEnd := l.srv.viewers.Load(), l.srv.liveCount()
	deadline := time.Now().Add(10 * time.Second)
	for (l.srv.viewers.Load() > 0 || l.srv.liveCount() > 0) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n, m := l.srv.viewers.Load(), l.srv.liveCount(); n != 0 || m != 0 {
		t.Errorf("10 s after the last run ended: %d streams still open, %d runs still live", n, m)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	rate := float64(len(want)) / slowest.Seconds()
	t.Logf("load: %d viewers × %d points, none lost, while %d other runs were still running; slowest viewer took %v from its first point to the end: %.0f points/s; live heap %d MiB before, %d MiB at the peak (the test's 50 clients included), %d MiB after the lab had ended the %d streams and forgotten the %d runs it still held when all read done; streamed in %v",
		viewers, len(want), running, slowest.Round(time.Millisecond), rate, before.HeapAlloc>>20, peak>>20, after.HeapAlloc>>20, openAtEnd, liveAtEnd, streamed.Round(time.Millisecond))
	if rate < 5000 && !raceEnabled {
		t.Errorf("%.0f points/s per viewer, want at least 5000", rate)
	}
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 16<<20 || peak > 512<<20 {
		t.Errorf("heap grew by %d MiB, peak %d MiB", growth>>20, peak>>20)
	}
}

// BenchmarkFanout: a run of 10,001 points to 50 viewers; reports the
// slowest viewer's points per second from its first point to the end.
func BenchmarkFanout(b *testing.B) {
	const viewers = 50
	l := newTestLab(b, Options{})
	want := fanoutWant(b)
	var rate float64
	for b.Loop() {
		_, counts, _, took := fanout(b, l, viewers, want)
		for i, n := range counts {
			if n != len(want) {
				b.Fatalf("viewer %d got %d points", i, n)
			}
		}
		rate = float64(len(want)) / slices.Max(took).Seconds()
	}
	b.ReportMetric(rate, "points/s/viewer")
}
