package lab

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
)

// The attacks of issue 9 as tests on loopback, each bounded in time.

// clientRun registers a client's run and returns its id.
func (l *testLab) clientRun(body map[string]any) string {
	l.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if body["experiment"] == nil {
		body["experiment"] = "own-thing"
	}
	if body["origin"] == nil {
		body["origin"] = "client"
	}
	status, b := l.do("POST", "/api/runs", body)
	if status != 201 {
		l.t.Fatalf("client run: %d %s", status, b)
	}
	var run notebook.Run
	json.Unmarshal(b, &run)
	return run.ID
}

// doHeader sends a GET with the given headers and returns the status and
// body.
func (l *testLab) doHeader(path string, header map[string]string) (int, string) {
	l.t.Helper()
	req, _ := http.NewRequest("GET", l.url+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCrossSiteGET: another site's page (fetch, <img>, <script>) gets no
// answer from the API, GET included (issue 9, item 4: a report of 20 runs
// was served to a foreign Origin); the lab's own page and programs outside
// a browser do.
func TestCrossSiteGET(t *testing.T) {
	l := newTestLab(t, Options{})
	run := l.wait(l.start("lab-demo", map[string]any{"n": 5}, 1).ID, 5*time.Second, ended)
	report := "/api/report?runs=" + strings.Repeat(run.ID+",", 19) + run.ID
	for _, tt := range []struct {
		header map[string]string
		status int
	}{
		{map[string]string{"Origin": "http://evil.example"}, 403},
		{map[string]string{"Origin": "null"}, 403},
		{map[string]string{"Sec-Fetch-Site": "cross-site"}, 403}, // <img src=…> sends no Origin
		{map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}, 403},
		{map[string]string{"Origin": l.url, "Sec-Fetch-Site": "same-origin"}, 200},
		{map[string]string{"Sec-Fetch-Site": "none"}, 200}, // typed or bookmarked
		{nil, 200}, // curl, lab run -lab
	} {
		for _, path := range []string{report, "/api/runs", "/api/runs/" + run.ID + "/export?format=csv", "/api/info"} {
			status, body := l.doHeader(path, tt.header)
			if status != tt.status {
				t.Errorf("GET %s with %v: %d, want %d (%.100s)", path, tt.header, status, tt.status, body)
			}
		}
	}
	// The page itself may be linked from anywhere.
	if status, _ := l.doHeader("/", map[string]string{"Sec-Fetch-Site": "cross-site"}); status != 200 {
		t.Errorf("page from a link: %d", status)
	}
}

// TestExportsBounded: a report past maxReportPoints is refused with the
// reason, not built in memory; JSON and CSV exports of the same run stream
// every point (issue 9, item 4).
func TestExportsBounded(t *testing.T) {
	defer func(n int64) { maxReportPoints = n }(maxReportPoints)
	maxReportPoints = 20000
	l := newTestLab(t, Options{})
	id := l.clientRun(nil)
	n := int(maxReportPoints/2 + 1)
	for from := 0; from < n; from += 5000 {
		pts := make([]map[string]any, min(5000, n-from))
		for i := range pts {
			pts[i] = map[string]any{"series": "s", "x": from + i, "y": 1}
		}
		if status, b := l.do("POST", "/api/runs/"+id+"/events", map[string]any{"from": from, "points": pts}); status != 200 {
			t.Fatalf("events: %d %s", status, b)
		}
	}
	l.do("POST", "/api/runs/"+id+"/events", map[string]any{"from": n, "end": map[string]any{"state": "done"}})
	status, body := l.doHeader("/api/report?runs="+id+","+id, nil)
	if status != 200 {
		t.Errorf("report of %d points (a run named twice counts once): %d %.200s", n, status, body)
	}
	second := l.clientRun(nil)
	l.do("POST", "/api/runs/"+second+"/events", map[string]any{"from": 0, "points": []map[string]any{{"series": "s", "x": 1, "y": 1}}})
	l.do("POST", "/api/runs/"+second+"/events", map[string]any{"from": 1, "points": make([]map[string]any, 0), "end": map[string]any{"state": "done"}})
	status, body = l.doHeader("/api/report?runs="+id+","+second+","+id, nil)
	if status != 200 {
		t.Errorf("report: %d %.200s", status, body)
	}
	third := l.clientRun(nil)
	for from := 0; from < n; from += 5000 {
		pts := make([]map[string]any, min(5000, n-from))
		for i := range pts {
			pts[i] = map[string]any{"series": "t", "x": from + i, "y": 2}
		}
		l.do("POST", "/api/runs/"+third+"/events", map[string]any{"from": from, "points": pts})
	}
	status, body = l.doHeader("/api/report?runs="+id+","+third, nil)
	if status != 413 || !strings.Contains(body, fmt.Sprintf("at most %d", maxReportPoints)) {
		t.Errorf("report of %d points: %d %.200s, want 413 with the limit", 2*n, status, body)
	}
	status, body = l.doHeader("/api/runs/"+id+"/export?format=csv", nil)
	body = csvData(body)
	if status != 200 || strings.Count(body, "\n") != n+1 {
		t.Errorf("csv export: %d, %d lines, want %d", status, strings.Count(body, "\n"), n+1)
	}
	status, body = l.doHeader("/api/runs/"+id+"/export?format=json", nil)
	var exp struct {
		Run    notebook.Run `json:"run"`
		Points []apiPoint   `json:"points"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &exp) != nil || len(exp.Points) != n || exp.Run.Points != int64(n) {
		t.Errorf("json export: %d, %d points, want %d", status, len(exp.Points), n)
	}
}

// TestCSVFormulaEscaped: series and extra names that a spreadsheet would run
// as formulas are escaped with a leading apostrophe; numbers are not
// (issue 9, item 10).
func TestCSVFormulaEscaped(t *testing.T) {
	l := newTestLab(t, Options{})
	id := l.clientRun(nil)
	pts := []map[string]any{}
	for _, name := range []string{"=cmd|' /C calc'!A0", "+1", "-2", "@SUM(A1)", "\tx", "ok"} {
		pts = append(pts, map[string]any{"series": name, "x": -1.5, "y": nil, "extra": map[string]any{"=HYPERLINK(1)": -3}})
	}
	if status, b := l.do("POST", "/api/runs/"+id+"/events", map[string]any{"from": 0, "points": pts, "end": map[string]any{"state": "done"}}); status != 200 {
		t.Fatalf("events: %d %s", status, b)
	}
	status, body := l.doHeader("/api/runs/"+id+"/export?format=csv", nil)
	body = csvData(body)
	want := "series,x,y,'=HYPERLINK(1)\n'=cmd|' /C calc'!A0,-1.5,NaN,-3\n'+1,-1.5,NaN,-3\n'-2,-1.5,NaN,-3\n'@SUM(A1),-1.5,NaN,-3\n'\tx,-1.5,NaN,-3\nok,-1.5,NaN,-3\n"
	if status != 200 || body != want {
		t.Errorf("csv export: %d\n%q\nwant\n%q", status, body, want)
	}
}

// TestReportHeaders: an HTML report carries a CSP that runs only its own
// scripts (by hash) and forbids framing.
func TestReportHeaders(t *testing.T) {
	l := newTestLab(t, Options{})
	run := l.wait(l.start("lab-demo", map[string]any{"n": 5}, 1).ID, 5*time.Second, ended)
	for _, q := range []string{"/api/runs/" + run.ID + "/export?format=html", "/api/report?runs=" + run.ID, "/api/runs/" + run.ID + "/export?format=html&inline=0"} {
		resp, err := http.Get(l.url + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self' 'sha256-") || strings.Contains(csp, "unsafe-inline'; img") && strings.Contains(csp, "script-src 'unsafe-inline'") {
			t.Errorf("%s: X-Frame-Options %q, CSP %q", q, resp.Header.Get("X-Frame-Options"), csp)
		}
		if n := strings.Count(string(b), "<script"); strings.Count(csp, "'sha256-") != n-strings.Count(string(b), "<script src=") {
			t.Errorf("%s: %d scripts, CSP %q", q, n, csp)
		}
	}
}

// TestQueueLimitParallel: parallel POSTs cannot queue more runs than
// MaxQueue (60 POSTs queued 310 of 256: the count was read before the
// notebook recorded the run and appended after).
func TestQueueLimitParallel(t *testing.T) {
	l := newTestLab(t, Options{Workers: 1, MaxQueue: 4})
	slow := map[string]any{"experiment": "lab-demo", "params": map[string]any{"n": 100000, "delay": 1000}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for range 60 {
		wg.Go(func() {
			b, _ := json.Marshal(slow)
			req, _ := http.NewRequest("POST", l.url+"/api/runs", strings.NewReader(string(b)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode == 201 {
				mu.Lock()
				created++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	l.srv.mu.Lock()
	queued := len(l.srv.queue)
	l.srv.mu.Unlock()
	if queued > 4 || created > 5 {
		t.Errorf("%d runs created, %d queued; at most 1 running and 4 queued", created, queued)
	}
}

// TestStalledBody: a request whose body stops coming is cut off after
// BodyTimeout (200 stalled uploads held their connections for 150 s).
func TestStalledBody(t *testing.T) {
	l := newTestLab(t, Options{BodyTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(l.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /api/runs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", strings.TrimPrefix(l.url, "http://"))
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the stalled upload still held its connection after %v", time.Since(start))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the stalled upload was cut after %v, want about 200 ms", d)
	}
}

// TestIdleCheckOnTime: a silent client is marked at ClientTimeout, not up to
// a polling period (a quarter of it) later: 60 s, not 71 s.
func TestIdleCheckOnTime(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 2 s")
	}
	const timeout = 2 * time.Second
	l := newTestLab(t, Options{ClientTimeout: timeout})
	id := l.clientRun(nil)
	run := l.wait(id, 10*time.Second, ended)
	if run.State != notebook.Interrupted || run.Started == nil || run.Ended == nil {
		t.Fatalf("silent client: %s %v %v", run.State, run.Started, run.Ended)
	}
	if d := run.Ended.Sub(*run.Started); d < timeout || d > timeout+timeout/8 {
		t.Errorf("the silent client was marked after %v, want %v (within %v)", d, timeout, timeout/8)
	}
}

// TestSweepParamsLimit: a sweep's runs keep their parameters within the
// 16 KiB that POST /api/runs allows (issue 18, red team: fixed params of
// 0.99 MB were stored on every run of a sweep, then GET /api/runs decoded
// 200 × 0.9 MB); a swept value beyond it is refused too, the limit named.
func TestSweepParamsLimit(t *testing.T) {
	l := newTestLab(t, Options{Workers: 1})
	big := make([]int, 6000) // 18 KB as JSON, a cheap run
	for i := range big {
		big[i] = 64
	}
	for _, body := range []map[string]any{
		{"experiment": "contraction", "params": map[string]any{"K": big, "trials": 1}, "axes": []map[string]any{{"name": "cols", "values": []any{1, 2}}}, "seeds": "1"},
		{"experiment": "contraction", "params": map[string]any{"trials": 1}, "axes": []map[string]any{{"name": "K", "values": []any{[]int{64}, big}}}, "seeds": "1"},
	} {
		status, b := l.do("POST", "/api/sweeps", body)
		if status != http.StatusBadRequest || !strings.Contains(string(b), "at most 16384") {
			t.Errorf("a sweep whose runs hold %d-byte parameters: %d %.200s", 3*len(big), status, b)
		}
	}
	if status, b := l.do("GET", "/api/sweeps", nil); status != 200 || strings.Contains(string(b), `"experiment":"contraction"`) {
		t.Errorf("a refused sweep was recorded: %d %.200s", status, b)
	}
}

// TestSweepListBounded: GET /api/sweeps answers at most limit sweeps
// (default 50, at most 1000), newest first, with "more" when there are
// others, and brief=1 leaves out what the list does not need (fixed
// parameters, axis values), so that the page's poll every 3 s costs a few
// KB (issue 18, red team: no limit, 80 sweeps gave 70.5 MB in 2.2-2.7 s).
func TestSweepListBounded(t *testing.T) {
	l := newTestLab(t, Options{Workers: 1})
	vals := make([]any, 1000)
	for i := range vals {
		vals[i] = 100000 + float64(i)/1024 // 1000 distinct values, about 16 KB of axis
	}
	for range 6 {
		st := l.startSweep(map[string]any{"experiment": "lab-demo", "params": map[string]any{"pause": 60000},
			"axes": []map[string]any{{"name": "delay", "values": vals}}, "seeds": "1"})
		if status, b := l.do("POST", "/api/sweeps/"+st.ID+"/cancel", nil); status != 200 {
			t.Fatalf("cancel: %d %s", status, b)
		}
	}
	list := func(q string) (int, []map[string]any, bool) {
		status, b := l.do("GET", "/api/sweeps"+q, nil)
		var ans struct {
			Sweeps []map[string]any `json:"sweeps"`
			More   bool             `json:"more"`
		}
		if err := json.Unmarshal(b, &ans); err != nil || status != 200 {
			t.Fatalf("list%s: %d %v %.200s", q, status, err, b)
		}
		return len(b), ans.Sweeps, ans.More
	}
	if _, got, more := list("?limit=2"); len(got) != 2 || !more || got[0]["id"] != "6" || got[1]["id"] != "5" {
		t.Errorf("limit 2: %d sweeps, more %v, ids %v %v", len(got), more, got[0]["id"], got[1]["id"])
	}
	full, got, more := list("")
	if len(got) != 6 || more {
		t.Errorf("default: %d sweeps, more %v", len(got), more)
	}
	brief, got, _ := list("?brief=1")
	t.Logf("6 sweeps with 1000 axis values each: %d bytes in full, %d brief", full, brief)
	if len(got) != 6 || got[0]["params"] != nil || brief > full/20 {
		t.Errorf("brief: %d bytes (full %d), first %v", brief, full, got[0])
	}
	if axes, _ := got[0]["axes"].([]any); len(axes) != 1 || axes[0].(map[string]any)["values"] != nil || axes[0].(map[string]any)["count"] != float64(1000) {
		t.Errorf("brief axes: %v", got[0]["axes"])
	}
	for _, bad := range []string{"?limit=0", "?limit=1001", "?limit=x", "?brief=2"} {
		if status, _ := l.do("GET", "/api/sweeps"+bad, nil); status != http.StatusBadRequest {
			t.Errorf("list%s: %d", bad, status)
		}
	}
}

// TestSweepsLeaveQueueRoom: however many pool sweeps run, their runs hold
// at most half the queue, so that other users' runs are still taken
// (issue 18, red team: 100 pool sweeps answered everyone's POST /api/runs
// with 503 until they were cancelled).
func TestSweepsLeaveQueueRoom(t *testing.T) {
	l := newTestLab(t, Options{Workers: 1, MaxQueue: 8})
	var ids []string
	for range 10 {
		st := l.startSweep(map[string]any{"experiment": "lab-demo", "params": map[string]any{"pause": 60000},
			"axes": []map[string]any{{"name": "n", "values": []any{1, 2, 3, 4}}}, "seeds": "1..4", "executor": "pool"})
		ids = append(ids, st.ID)
	}
	t.Cleanup(func() {
		for _, id := range ids {
			l.do("POST", "/api/sweeps/"+id+"/cancel", nil)
		}
	})
	time.Sleep(300 * time.Millisecond) // the sweeps queue what they may
	for i := range 3 {
		status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "lab-demo", "params": map[string]any{"n": 1}})
		if status != http.StatusCreated {
			t.Fatalf("a user's run %d beside 10 sweeps: %d %s", i, status, b)
		}
	}
}
