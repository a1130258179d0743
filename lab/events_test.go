package lab

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
)

// eventsAnswer is the body of an answer to POST …/events.
type eventsAnswer struct {
	Points int64  `json:"points"`
	Cancel bool   `json:"cancel"`
	Error  string `json:"error"`
}

func (l *testLab) events(id string, body any) (int, eventsAnswer) {
	l.t.Helper()
	status, b := l.do("POST", "/api/runs/"+id+"/events", body)
	var ans eventsAnswer
	json.Unmarshal(b, &ans)
	return status, ans
}

func batch(from, n int, series string) []map[string]any {
	pts := make([]map[string]any, n)
	for i := range pts {
		pts[i] = map[string]any{"series": series, "x": from + i, "y": 1}
	}
	return pts
}

// TestEventsIdempotentUnderConcurrency: concurrent retries of the same
// batch (same from, same notes_from) are taken once (issue 9, item 7:
// 100,000 points became 216,580–307,135; notes were repeated).
func TestEventsIdempotentUnderConcurrency(t *testing.T) {
	l := newTestLab(t, Options{})
	id := l.clientRun(nil)
	const batches, size, copies = 3, 4000, 6
	for k := range 2 * batches {
		var wg sync.WaitGroup
		for range copies {
			wg.Go(func() {
				body := map[string]any{"from": k * size, "points": batch(k*size, size, "s")}
				if k >= batches { // points first, then points and notes
					body["notes"], body["notes_from"] = []string{fmt.Sprintf("note %d", k)}, k-batches
				}
				if status, ans := l.events(id, body); status != 200 {
					t.Errorf("batch %d: %d %s", k, status, ans.Error)
				}
			})
		}
		wg.Wait()
	}
	l.events(id, map[string]any{"from": 2 * batches * size, "end": map[string]any{"state": "done"}})
	run := l.get(id)
	if run.Points != 2*batches*size || len(run.Notes) != batches {
		t.Errorf("%d copies of %d batches of %d points: the lab holds %d points and %d notes, want %d and %d",
			copies, 2*batches, size, run.Points, len(run.Notes), 2*batches*size, batches)
	}
	pts := l.points(id)
	for i, p := range pts {
		if p.X != float64(i) {
			t.Fatalf("point %d has x %v: a batch was appended twice", i, p.X)
		}
	}
}

// TestEventsAcknowledgeCommitted: the points an answer counts are in the
// notebook when the answer comes (issue 9, item 7: kill -9 lost thousands of
// acknowledged points, answered before the flush).
func TestEventsAcknowledgeCommitted(t *testing.T) {
	l := newTestLab(t, Options{FlushInterval: time.Hour}) // the flusher never helps
	id := l.clientRun(nil)
	for k := range 5 {
		status, ans := l.events(id, map[string]any{"from": k * 100, "points": batch(k*100, 100, "s")})
		stored, err := l.store.Get(id)
		if status != 200 || err != nil || stored.Points < ans.Points || ans.Points != int64(k+1)*100 {
			t.Fatalf("batch %d: answered %d with %d points; the notebook holds %d (%v)", k, status, ans.Points, stored.Points, err)
		}
	}
}

// TestEventsNeverDropAcknowledged: a run cancelled while its client streams
// keeps every point an answer counted.
func TestEventsNeverDropAcknowledged(t *testing.T) {
	l := newTestLab(t, Options{})
	for range 3 {
		id := l.clientRun(nil)
		var acked int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for from := 0; ; {
				status, ans := l.events(id, map[string]any{"from": from, "points": batch(from, 200, "s")})
				if status == 200 || ans.Points > 0 {
					acked = max(acked, ans.Points)
				}
				if status != 200 {
					return
				}
				if ans.Points != int64(from+200) {
					t.Errorf("200 for points %d…%d, but the lab holds %d", from, from+199, ans.Points)
				}
				from = int(ans.Points)
			}
		}()
		time.Sleep(30 * time.Millisecond)
		l.do("POST", "/api/runs/"+id+"/cancel", nil)
		<-done
		run := l.wait(id, 5*time.Second, ended)
		stored, _ := l.store.Get(id)
		if run.State != notebook.Cancelled || stored.Points < acked {
			t.Errorf("run %s: %s, %d points stored, %d acknowledged", id, run.State, stored.Points, acked)
		}
	}
}

// TestEventsBoundedInBytes: every way of growing a run's record or log
// without bound is refused with its limit named, and nothing of a refused
// request is kept (issue 9, item 7: 32 extras of 182-byte names took the lab
// to 7.8 GiB; 100,000 series names; params of 900 KB).
func TestEventsBoundedInBytes(t *testing.T) {
	l := newTestLab(t, Options{})
	id := l.clientRun(nil)
	long := strings.Repeat("x", 182)
	many := func(n int, name func(int) string) []map[string]any {
		pts := make([]map[string]any, n)
		for i := range pts {
			pts[i] = map[string]any{"series": name(i), "x": i, "y": 1}
		}
		return pts
	}
	extras := map[string]any{}
	for i := range 32 {
		extras[fmt.Sprintf("%s%02d", long, i)] = 1
	}
	manyExtras := make([]map[string]any, 0, 300)
	for i := range 300 {
		manyExtras = append(manyExtras, map[string]any{"series": "s", "x": i, "y": 1, "extra": map[string]any{fmt.Sprintf("e%d", i): 1}})
	}
	summary := map[string]any{}
	for i := range 300 {
		summary[fmt.Sprint(i)] = i
	}
	for _, tt := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"long extra names", map[string]any{"from": 0, "points": []map[string]any{{"series": "s", "x": 1, "y": 1, "extra": extras}}}, "longer than 64 bytes"},
		{"too many series", map[string]any{"from": 0, "points": many(maxSeries+1, func(i int) string { return fmt.Sprint("s", i) })}, "more than 256 series"},
		{"too many extra names", map[string]any{"from": 0, "points": manyExtras}, "more than 256 names of extra values"},
		{"too many summary keys", map[string]any{"from": 0, "summary": summary}, "more than 256 values"},
		{"long summary key", map[string]any{"from": 0, "summary": map[string]any{long + long: 1}}, "longer than 200 bytes"},
	} {
		status, ans := l.events(id, tt.body)
		if status != 400 || !strings.Contains(ans.Error, tt.want) {
			t.Errorf("%s: %d %q, want 400 with %q", tt.name, status, ans.Error, tt.want)
		}
	}
	if run := l.get(id); run.Points != 0 || len(run.Series) != 0 || len(run.Summary) != 0 {
		t.Errorf("refused requests left %d points, %d series, %d summary values", run.Points, len(run.Series), len(run.Summary))
	}
	// Series up to the limit are taken, over several requests too.
	if status, ans := l.events(id, map[string]any{"from": 0, "points": many(maxSeries, func(i int) string { return fmt.Sprint("s", i) })}); status != 200 {
		t.Errorf("%d series: %d %s", maxSeries, status, ans.Error)
	}
	if status, ans := l.events(id, map[string]any{"from": maxSeries, "points": many(1, func(int) string { return "one more" })}); status != 400 {
		t.Errorf("series %d: %d %s", maxSeries+1, status, ans.Error)
	}
	// Notes are kept up to their byte budget, the last one saying so.
	note := strings.Repeat("n", 4000)
	for k := range 40 {
		l.events(id, map[string]any{"from": maxSeries, "notes": []string{note}, "notes_from": k})
	}
	run := l.get(id)
	size := 0
	for _, n := range run.Notes {
		size += len(n)
	}
	if size > maxNotesBytes || !strings.Contains(run.Notes[len(run.Notes)-1], "further notes dropped") {
		t.Errorf("notes: %d bytes in %d notes, last %.60q", size, len(run.Notes), run.Notes[len(run.Notes)-1])
	}

	// Parameters: size and depth.
	deep := strings.Repeat("[", 20) + strings.Repeat("]", 20)
	for _, tt := range []struct {
		params string
		want   string
	}{
		{`{"a":"` + strings.Repeat("p", 900<<10) + `"}`, "at most 16384"},
		{`{"a":` + deep + `}`, "nested 20 deep"},
	} {
		status, b := l.do("POST", "/api/runs", []byte(`{"experiment":"own-thing","origin":"client","params":`+tt.params+`}`))
		if status != 400 || !strings.Contains(string(b), tt.want) {
			t.Errorf("params %.30s…: %d %.200s, want 400 with %q", tt.params, status, b, tt.want)
		}
	}
	status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "lab-demo", "params": map[string]any{"n": 5}, "origin": "client"})
	if status != 201 {
		t.Errorf("a registered experiment's client run: %d %s", status, b)
	}
}

// TestClientRunsBounded: at most maxClientRuns client runs stream at once.
func TestClientRunsBounded(t *testing.T) {
	l := newTestLab(t, Options{})
	for range maxClientRuns - 1 { // one is registered by l.clientRun below
		status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "own-thing", "origin": "client"})
		if status != 201 {
			t.Fatalf("%d %s", status, b)
		}
	}
	l.clientRun(nil)
	status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "own-thing", "origin": "client"})
	if status != http.StatusServiceUnavailable || !strings.Contains(string(b), "at most 64") {
		t.Errorf("client run %d: %d %s", maxClientRuns+1, status, b)
	}
}
