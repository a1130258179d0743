package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

func TestAPIErrors(t *testing.T) {
	l := newTestLab(t, Options{})
	done := l.start("lab-demo", map[string]any{"n": 3}, 1)
	l.wait(done.ID, 5*time.Second, ended)
	big := bytes.Repeat([]byte(" "), maxBody+10)
	tests := []struct {
		name        string
		method      string
		path        string
		body        string
		contentType string
		header      map[string]string
		status      int
		want        string // in the "error" of the answer
		param       string
	}{
		{name: "bad JSON", method: "POST", path: "/api/runs", body: `{"experiment":`, status: 400, want: "request body"},
		{name: "unknown field", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","parms":{}}`, status: 400, want: `unknown field "parms"`},
		{name: "trailing data", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo"} {}`, status: 400, want: "trailing data"},
		{name: "no experiment", method: "POST", path: "/api/runs", body: `{}`, status: 400, want: "experiment: missing"},
		{name: "unknown experiment", method: "POST", path: "/api/runs", body: `{"experiment":"nope"}`, status: 400, want: `unknown experiment "nope"`},
		{name: "below the minimum", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","params":{"n":0}}`, status: 400, want: `parameter "n": 0 is below the minimum 1`, param: "n"},
		{name: "above the maximum", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","params":{"series":9}}`, status: 400, want: `parameter "series": 9 is above the maximum 8`, param: "series"},
		{name: "not an integer", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","params":{"n":1.5}}`, status: 400, want: `parameter "n": 1.5 is not an integer`, param: "n"},
		{name: "text for an int", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","params":{"n":"many"}}`, status: 400, want: `parameter "n": "many" is not an integer`, param: "n"},
		{name: "huge int", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","params":{"n":1e300}}`, status: 400, param: "n"},
		{name: "not a choice", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","params":{"end":"maybe"}}`, status: 400, want: `"maybe" is not one of ok, error, panic`, param: "end"},
		{name: "null value", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","params":{"delay":null}}`, status: 400, param: "delay"},
		{name: "unknown parameter", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","params":{"zz":1}}`, status: 400, want: `unknown parameter "zz"`, param: "zz"},
		{name: "params not an object", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","params":[1]}`, status: 400, want: "parameters"},
		{name: "negative seed", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","seed":-1}`, status: 400, want: "seed -1"},
		{name: "fractional seed", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","seed":1.5}`, status: 400, want: "seed 1.5"},
		{name: "seed too big", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","seed":18446744073709551616}`, status: 400, want: "seed"},
		{name: "bad origin field", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","origin":"mars"}`, status: 400, want: `origin "mars"`},
		{name: "title too long", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","title":"` + strings.Repeat("t", maxTitle+1) + `"}`, status: 400, want: "title longer"},
		{name: "client run of unknown experiment with bad name", method: "POST", path: "/api/runs", body: `{"experiment":"a b","origin":"client"}`, status: 400, want: `experiment "a b"`},
		{name: "client run with a bad parameter", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo","origin":"browser","params":{"n":-5}}`, status: 400, param: "n"},
		{name: "text/plain", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo"}`, contentType: "text/plain", status: 415, want: "application/json"},
		{name: "form", method: "POST", path: "/api/runs", body: `experiment=lab-demo`, contentType: "application/x-www-form-urlencoded", status: 415},
		{name: "cross-origin POST", method: "POST", path: "/api/runs", body: `{"experiment":"lab-demo"}`, header: map[string]string{"Origin": "http://evil.example"}, status: 403, want: "cross-origin"},
		{name: "body too large", method: "POST", path: "/api/runs", body: string(big), status: 413, want: "limit"},
		{name: "foreign Host", method: "GET", path: "/api/info", header: map[string]string{"Host": "evil.example:80"}, status: 403, want: "not allowed"},
		{name: "bad state filter", method: "GET", path: "/api/runs?state=happy", status: 400, want: `state "happy"`},
		{name: "bad limit", method: "GET", path: "/api/runs?limit=0", status: 400, want: "limit"},
		{name: "no such run", method: "GET", path: "/api/runs/999", status: 404, want: `no run "999"`},
		{name: "not a run id", method: "GET", path: "/api/runs/abc", status: 404},
		{name: "no such experiment", method: "GET", path: "/api/experiments/nope", status: 404, want: "unknown experiment"},
		{name: "annotate nothing", method: "PATCH", path: "/api/runs/" + done.ID, body: `{}`, status: 400, want: "nothing to change"},
		{name: "annotate a missing run", method: "PATCH", path: "/api/runs/999", body: `{"note":"x"}`, status: 404},
		{name: "annotate with a number", method: "PATCH", path: "/api/runs/" + done.ID, body: `{"note":5}`, status: 400},
		{name: "cancel a missing run", method: "POST", path: "/api/runs/999/cancel", status: 404},
		{name: "cancel an ended run", method: "POST", path: "/api/runs/" + done.ID + "/cancel", status: 409, want: "already ended (done)"},
		{name: "delete a missing run", method: "DELETE", path: "/api/runs/999", status: 404},
		{name: "rerun a missing run", method: "POST", path: "/api/runs/999/rerun", status: 404},
		{name: "rerun with a bad seed", method: "POST", path: "/api/runs/" + done.ID + "/rerun", body: `{"seed":"x"}`, status: 400, want: "seed"},
		{name: "method not allowed", method: "PUT", path: "/api/runs", body: `{}`, status: 405, want: "allowed: GET, POST"},
		{name: "no endpoint", method: "GET", path: "/api/nothing", status: 404, want: "no such API endpoint"},
		{name: "bad export format", method: "GET", path: "/api/runs/" + done.ID + "/export?format=xml", status: 400, want: `format "xml"`},
		{name: "bad inline", method: "GET", path: "/api/runs/" + done.ID + "/export?format=html&inline=2", status: 400},
		{name: "negative from", method: "GET", path: "/api/runs/" + done.ID + "/points?from=-1", status: 400, want: "from"},
		{name: "limit too big", method: "GET", path: "/api/runs/" + done.ID + "/points?limit=1000001", status: 400, want: "limit"},
		{name: "report of nothing", method: "GET", path: "/api/report", status: 400, want: "runs"},
		{name: "report of a missing run", method: "GET", path: "/api/report?runs=" + done.ID + ",999", status: 404},
		{name: "stream without upgrade", method: "GET", path: "/api/runs/" + done.ID + "/stream", status: 400, want: "WebSocket"},
		{name: "stream of a missing run", method: "GET", path: "/api/runs/999/stream", status: 404},
		{name: "events for a server run", method: "POST", path: "/api/runs/" + done.ID + "/events", body: `{"from":0}`, status: 409, want: "has ended"},
		{name: "page POST", method: "POST", path: "/index.html", body: `{}`, status: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body *bytes.Reader
			if tt.body != "" {
				body = bytes.NewReader([]byte(tt.body))
			} else {
				body = bytes.NewReader(nil)
			}
			req, err := http.NewRequest(tt.method, l.url+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.body != "" {
				ct := tt.contentType
				if ct == "" {
					ct = "application/json"
				}
				req.Header.Set("Content-Type", ct)
			}
			for k, v := range tt.header {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e apiError
			derr := json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d (%+v)", resp.StatusCode, tt.status, e)
			}
			if tt.method == "POST" && tt.path == "/index.html" {
				return // the page's 405 is plain text
			}
			if derr != nil || e.Error == "" {
				t.Errorf("answer is not a JSON error: %v %+v (Content-Type %s)", derr, e, resp.Header.Get("Content-Type"))
			}
			if !strings.Contains(e.Error, tt.want) {
				t.Errorf("error %q lacks %q", e.Error, tt.want)
			}
			if e.Param != tt.param {
				t.Errorf("param %q, want %q (error %q)", e.Param, tt.param, e.Error)
			}
		})
	}
	// None of these created a run.
	if list, _ := l.store.List(notebook.Query{}); len(list) != 1 {
		t.Errorf("%d runs in the notebook, want 1", len(list))
	}
}

// TestAPINever500 throws random bodies at the endpoints that take one: the
// answer is always a 2xx or a 4xx, never a 5xx.
func TestAPINever500(t *testing.T) {
	l := newTestLab(t, Options{Workers: 1})
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{`{`, `}`, `[`, `]`, `"experiment"`, `"lab-demo"`, `"params"`, `"n"`, `"seed"`, `:`, `,`, `1`, `-1`, `1e999`, `null`, `true`, `"x"`, `0.5`, `"origin"`, `"client"`, `"end"`, `"from"`, `"points"`, `{"series":"s","x":1,"y":null}`}
	client := l.start("lab-demo", nil, 1) // a server run, for events and annotations
	status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "lab-demo", "origin": "client"})
	if status != 201 {
		t.Fatalf("client run: %d %s", status, b)
	}
	var cr notebook.Run
	json.Unmarshal(b, &cr)
	paths := []struct{ method, path string }{
		{"POST", "/api/runs"}, {"PATCH", "/api/runs/" + client.ID}, {"POST", "/api/runs/" + cr.ID + "/events"}, {"POST", "/api/runs/" + client.ID + "/rerun"},
	}
	for i := range 400 {
		var sb strings.Builder
		for range 1 + r.IntN(12) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		p := paths[i%len(paths)]
		status, b := l.do(p.method, p.path, []byte(sb.String()))
		if status >= 500 {
			t.Fatalf("%s %s %s: %d %s", p.method, p.path, sb.String(), status, b)
		}
	}
}

func TestRunLifecycle(t *testing.T) {
	l := newTestLab(t, Options{})
	run := l.start("lab-demo", map[string]any{"n": 40, "series": 3}, 42)
	if run.ID == "" || run.Origin != notebook.OriginServer || run.Flags != "-n 40 -series 3 -delay 0 -pause 0 -end ok" || run.Version == "" {
		t.Errorf("created %+v", run)
	}
	run = l.wait(run.ID, 5*time.Second, ended)
	if run.State != notebook.Done || run.Points != 44 || run.Summary["n"] != 40 || run.Started == nil || run.Ended == nil ||
		!reflect.DeepEqual(run.Series, []string{"s0", "h200 demo", "s1", "s2"}) || len(run.Notes) != 1 || run.Done != 40 || run.Total != 40 {
		t.Errorf("ended %+v", run)
	}
	pts := l.points(run.ID)
	var want sim.Recorder
	values, _ := sim.ValuesFromMap(labDemo(t).Params(), map[string]any{"n": 40, "series": 3})
	if _, err := sim.Execute(context.Background(), labDemo(t), values, 42, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pts, want.Points()) {
		t.Errorf("points differ from a direct run:\n%v\n%v", pts, want.Points())
	}

	// Annotate, list, re-run, delete.
	status, b := l.do("PATCH", "/api/runs/"+run.ID, map[string]any{"title": "first", "note": "looks right"})
	if status != 200 || !strings.Contains(string(b), `"note":"looks right"`) {
		t.Errorf("annotate: %d %s", status, b)
	}
	status, b = l.do("POST", "/api/runs/"+run.ID+"/rerun", nil)
	if status != 201 {
		t.Fatalf("rerun: %d %s", status, b)
	}
	var again notebook.Run
	json.Unmarshal(b, &again)
	again = l.wait(again.ID, 5*time.Second, ended)
	if again.RerunOf != run.ID || again.Seed != 42 || again.Title != "first" || !reflect.DeepEqual(l.points(again.ID), pts) {
		t.Errorf("rerun %+v", again)
	}
	status, b = l.do("GET", "/api/runs?experiment=lab-demo&state=done&limit=5", nil)
	var list struct{ Runs []notebook.Run }
	json.Unmarshal(b, &list)
	if status != 200 || len(list.Runs) != 2 || list.Runs[0].ID != again.ID || list.Runs[1].Note != "looks right" {
		t.Errorf("list: %d %s", status, b)
	}
	if status, b := l.do("DELETE", "/api/runs/"+again.ID, nil); status != 204 {
		t.Errorf("delete: %d %s", status, b)
	}
	if status, _ := l.do("GET", "/api/runs/"+again.ID, nil); status != 404 {
		t.Errorf("deleted run: %d", status)
	}
}

func labDemo(t *testing.T) sim.Experiment {
	e, err := sim.Lookup("lab-demo")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestExports(t *testing.T) {
	l := newTestLab(t, Options{})
	run := l.wait(l.start("lab-demo", map[string]any{"n": 20}, 3).ID, 5*time.Second, ended)
	l.do("PATCH", "/api/runs/"+run.ID, map[string]any{"note": "<script>alert(1)</script>"})
	status, b := l.do("GET", "/api/runs/"+run.ID+"/export?format=json", nil)
	var exp struct {
		Run    notebook.Run `json:"run"`
		Points []apiPoint   `json:"points"`
	}
	if status != 200 || json.Unmarshal(b, &exp) != nil || exp.Run.ID != run.ID || len(exp.Points) != 22 {
		t.Errorf("json export: %d %.300s", status, b)
	}
	status, b = l.do("GET", "/api/runs/"+run.ID+"/export?format=csv", nil)
	lines := strings.Split(strings.TrimSpace(csvData(string(b))), "\n")
	if status != 200 || len(lines) != 23 || lines[0] != "series,x,y,i" || !strings.HasPrefix(lines[1], "s0,0,") || !strings.HasPrefix(lines[2], "h200 demo,0,") || !strings.HasSuffix(lines[2], ",") {
		t.Errorf("csv export: %d\n%s", status, b)
	}
	for _, q := range []string{"/api/runs/" + run.ID + "/export?format=html", "/api/report?runs=" + run.ID + "," + run.ID, "/api/runs/" + run.ID + "/export?format=html&inline=0"} {
		status, b = l.do("GET", q, nil)
		html := string(b)
		if status != 200 || !strings.Contains(html, `id="report-data"`) || !strings.Contains(html, "window.fp8chart") {
			t.Errorf("%s: %d", q, status)
		}
		if strings.Contains(html, "<script>alert(1)") || !strings.Contains(html, "&lt;script&gt;alert(1)") {
			t.Errorf("%s: the user's note is not escaped", q)
		}
		if strings.Contains(html, `src="http`) || strings.Contains(html, "go-echarts.github.io") {
			t.Errorf("%s: loads from another host", q)
		}
		inline := !strings.Contains(q, "inline=0")
		if inline != strings.Contains(html, "Apache Software Foundation") || inline == strings.Contains(html, `src="/vendor/echarts/echarts.min.js"`) {
			t.Errorf("%s: ECharts inlined %v?", q, inline)
		}
		if !strings.Contains(html, `["h200 demo",[[`) || !strings.Contains(html, "lab run lab-demo -n 20") {
			t.Errorf("%s: no capture series or no reproduction line", q)
		}
	}
}

// TestReportInjection: a client's run may name its series anything; the
// report, which carries the points as JSON inside a script element, must
// not let a name end the script.
func TestReportInjection(t *testing.T) {
	l := newTestLab(t, Options{})
	status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "own-thing", "origin": "client", "title": "</script><script>alert(2)</script>"})
	if status != 201 {
		t.Fatalf("%d %s", status, b)
	}
	var run notebook.Run
	json.Unmarshal(b, &run)
	evil := `</script><script>alert(1)</script>`
	l.do("POST", "/api/runs/"+run.ID+"/events", map[string]any{"from": 0, "points": []map[string]any{{"series": evil, "x": 1, "y": 2}}, "end": map[string]any{"state": "done"}})
	for _, q := range []string{"/api/runs/" + run.ID + "/export?format=html&inline=0", "/api/report?runs=" + run.ID} {
		status, b := l.do("GET", q, nil)
		if status != 200 || strings.Contains(string(b), "<script>alert(") {
			t.Errorf("%s: %d, script injected", q, status)
		}
	}
}

func TestCancelFailPanic(t *testing.T) {
	l := newTestLab(t, Options{})
	slow := l.start("lab-demo", map[string]any{"n": 100000, "delay": 1000}, 1)
	l.wait(slow.ID, 5*time.Second, func(r notebook.Run) bool { return r.Points > 2 })
	start := time.Now()
	status, b := l.do("POST", "/api/runs/"+slow.ID+"/cancel", nil)
	if status != 200 {
		t.Fatalf("cancel: %d %s", status, b)
	}
	run := l.wait(slow.ID, 5*time.Second, ended)
	if run.State != notebook.Cancelled || time.Since(start) > 2*time.Second {
		t.Errorf("cancelled run %s after %v", run.State, time.Since(start))
	}
	if stored, _ := l.store.Get(slow.ID); stored.State != notebook.Cancelled || stored.Points != run.Points {
		t.Errorf("stored %s with %d points, live said %d", stored.State, stored.Points, run.Points)
	}
	for end, want := range map[string]string{"error": "the demo failed as asked", "panic": "panic: the demo panicked as asked"} {
		run := l.wait(l.start("lab-demo", map[string]any{"n": 5, "end": end}, 1).ID, 5*time.Second, ended)
		if run.State != notebook.Failed || !strings.Contains(run.Error, want) || run.Points != 6 {
			t.Errorf("end=%s: %s %q %d points", end, run.State, run.Error, run.Points)
		}
	}
}

func TestQueue(t *testing.T) {
	l := newTestLab(t, Options{Workers: 1})
	slow := map[string]any{"n": 100000, "delay": 1000}
	a, b, c := l.start("lab-demo", slow, 1), l.start("lab-demo", slow, 2), l.start("lab-demo", map[string]any{"n": 3}, 3)
	l.wait(a.ID, 5*time.Second, func(r notebook.Run) bool { return r.State == notebook.Running })
	if rb, rc := l.get(b.ID), l.get(c.ID); rb.State != notebook.Queued || rb.QueuePos != 1 || rc.QueuePos != 2 {
		t.Errorf("queue: b %s %d, c %s %d", rb.State, rb.QueuePos, rc.State, rc.QueuePos)
	}
	var info Info
	_, ib := l.do("GET", "/api/info", nil)
	json.Unmarshal(ib, &info)
	if info.Running != 1 || info.Queued != 2 || info.Workers != 1 {
		t.Errorf("info %+v", info)
	}
	if status, body := l.do("POST", "/api/runs/"+b.ID+"/cancel", nil); status != 200 {
		t.Errorf("cancel queued: %d %s", status, body)
	}
	if rb := l.get(b.ID); rb.State != notebook.Cancelled || rb.Started != nil {
		t.Errorf("cancelled queued run %+v", rb)
	}
	if rc := l.get(c.ID); rc.QueuePos != 1 {
		t.Errorf("c moved up to %d", rc.QueuePos)
	}
	l.do("POST", "/api/runs/"+a.ID+"/cancel", nil)
	if rc := l.wait(c.ID, 5*time.Second, ended); rc.State != notebook.Done {
		t.Errorf("c %s", rc.State)
	}
}

func TestQueueFull(t *testing.T) {
	l := newTestLab(t, Options{Workers: 1, MaxQueue: 1})
	slow := map[string]any{"n": 100000, "delay": 1000}
	a := l.start("lab-demo", slow, 1)
	l.wait(a.ID, 5*time.Second, func(r notebook.Run) bool { return r.State == notebook.Running })
	l.start("lab-demo", slow, 2)
	status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "lab-demo"})
	if status != 503 || !strings.Contains(string(b), "queue is full") {
		t.Errorf("third run: %d %s", status, b)
	}
}

func TestShutdownInterrupts(t *testing.T) {
	l := newTestLab(t, Options{Workers: 1})
	a := l.start("lab-demo", map[string]any{"n": 100000, "delay": 1000}, 1)
	b := l.start("lab-demo", nil, 2)
	l.wait(a.ID, 5*time.Second, func(r notebook.Run) bool { return r.Points > 3 })
	conn, _, err := l.dial(a.ID, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan notebook.Run, 1)
	go func() { _, run := watch(t, conn); got <- run }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ra, _ := l.store.Get(a.ID)
	rb, _ := l.store.Get(b.ID)
	pts, _ := l.store.Points(a.ID, 0, 0)
	if ra.State != notebook.Interrupted || rb.State != notebook.Interrupted || int64(len(pts)) != ra.Points || ra.Points < 3 {
		t.Errorf("after shutdown: a %s (%d points, %d stored), b %s", ra.State, ra.Points, len(pts), rb.State)
	}
	select {
	case run := <-got:
		if run.State != notebook.Interrupted {
			t.Errorf("viewer saw the run end %s", run.State)
		}
	case <-time.After(5 * time.Second):
		t.Error("the viewer did not get the end")
	}
	if status, _ := l.do("POST", "/api/runs", map[string]any{"experiment": "lab-demo"}); status != 503 {
		t.Errorf("start after shutdown: %d", status)
	}
}

func TestClientRun(t *testing.T) {
	l := newTestLab(t, Options{})
	exp := labDemo(t)
	values, _ := sim.ValuesFromMap(exp.Params(), map[string]any{"n": 300, "series": 2})
	c := &sim.LabClient{URL: l.url, FlushEvery: 5 * time.Millisecond}
	var rec sim.Recorder
	res, err := c.Execute(context.Background(), exp, values, 9, &rec)
	if err != nil || res.Points != 330 {
		t.Fatalf("client run: %v %+v", err, res)
	}
	list, _ := l.store.List(notebook.Query{})
	run := l.wait(list[0].ID, 5*time.Second, ended)
	if run.Origin != notebook.OriginClient || run.State != notebook.Done || run.Points != 330 || run.Summary["n"] != 300 || !run.Registered || run.Version == "" || len(run.Notes) != 1 {
		t.Errorf("client run record %+v", run)
	}
	server := l.wait(l.start("lab-demo", map[string]any{"n": 300, "series": 2}, 9).ID, 5*time.Second, ended)
	if !reflect.DeepEqual(l.points(run.ID), l.points(server.ID)) || !reflect.DeepEqual(l.points(run.ID), rec.Points()) {
		t.Error("the client's points differ from the server's for the same seed")
	}

	// A bad value is refused with the lab's reason.
	bad, _ := sim.ValuesFromMap(exp.Params(), nil)
	if _, err := (&sim.LabClient{URL: l.url}).Start(context.Background(), renamed{exp, "lab demo"}, bad, 1); err == nil || !strings.Contains(err.Error(), `experiment "lab demo"`) {
		t.Errorf("bad name: %v", err)
	}
	if _, err := (&sim.LabClient{URL: "ftp://x"}).Start(context.Background(), exp, bad, 1); err == nil {
		t.Error("ftp URL accepted")
	}

	// A user's own experiment, unknown to the lab, is kept unvalidated.
	res, err = c.Execute(context.Background(), renamed{exp, "my-own"}, values, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, _ = l.store.List(notebook.Query{Experiment: "my-own"})
	if len(list) != 1 || list[0].Registered || list[0].Points != 330 {
		t.Errorf("own experiment %+v", list)
	}
	if status, b := l.do("POST", "/api/runs/"+list[0].ID+"/rerun", nil); status != 409 {
		t.Errorf("rerun of an own experiment: %d %s", status, b)
	}
}

type renamed struct {
	sim.Experiment
	name string
}

func (r renamed) Name() string { return r.name }

func TestClientCancelledInLab(t *testing.T) {
	l := newTestLab(t, Options{})
	exp := labDemo(t)
	values, _ := sim.ValuesFromMap(exp.Params(), map[string]any{"n": 100000, "delay": 1000})
	c := &sim.LabClient{URL: l.url, FlushEvery: 10 * time.Millisecond}
	lr, err := c.Start(context.Background(), exp, values, 1)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := sim.Execute(lr.Context(), exp, values, 1, lr)
		errc <- lr.Finish(err)
		errc <- err
	}()
	l.wait(lr.ID(), 5*time.Second, func(r notebook.Run) bool { return r.Points > 5 })
	if status, b := l.do("POST", "/api/runs/"+lr.ID()+"/cancel", nil); status != 200 {
		t.Fatalf("cancel: %d %s", status, b)
	}
	select {
	case ferr := <-errc:
		runErr := <-errc
		if ferr != nil || !errors.Is(runErr, context.Canceled) || !errors.Is(context.Cause(lr.Context()), sim.ErrCancelledInLab) {
			t.Errorf("finish %v, run %v, cause %v", ferr, runErr, context.Cause(lr.Context()))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client did not stop")
	}
	if run := l.get(lr.ID()); run.State != notebook.Cancelled {
		t.Errorf("state %s", run.State)
	}
}

func TestClientGoesSilent(t *testing.T) {
	l := newTestLab(t, Options{ClientTimeout: 200 * time.Millisecond})
	status, b := l.do("POST", "/api/runs", map[string]any{"experiment": "lab-demo", "origin": "browser"})
	if status != 201 {
		t.Fatalf("%d %s", status, b)
	}
	var run notebook.Run
	json.Unmarshal(b, &run)
	status, b = l.do("POST", "/api/runs/"+run.ID+"/events", map[string]any{"from": 0, "points": []map[string]any{{"series": "a", "x": 1, "y": nil}}})
	if status != 200 || !strings.Contains(string(b), `"points":1`) {
		t.Fatalf("events: %d %s", status, b)
	}
	for _, tt := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{"from": 5}, 409},
		{map[string]any{"from": 0, "points": []map[string]any{{"series": "a", "x": 1, "y": 2, "extra": map[string]any{"x": 1}}}}, 400},
		{map[string]any{"from": 0, "end": map[string]any{"state": "running"}}, 400},
		{map[string]any{"from": -1}, 400},
		{map[string]any{"from": 0, "progress": map[string]any{"done": -1, "total": 3}}, 400},
	} {
		if status, b := l.do("POST", "/api/runs/"+run.ID+"/events", tt.body); status != tt.status {
			t.Errorf("events %v: %d %s, want %d", tt.body, status, b, tt.status)
		}
	}
	// A retry of the first batch is taken once.
	l.do("POST", "/api/runs/"+run.ID+"/events", map[string]any{"from": 0, "points": []map[string]any{{"series": "a", "x": 1, "y": nil}, {"series": "a", "x": 2, "y": 3}}})
	pts := l.points(run.ID)
	if len(pts) != 2 || pts[1].X != 2 || pts[0].Y == pts[0].Y {
		t.Errorf("points %v", pts)
	}
	got := l.wait(run.ID, 5*time.Second, ended)
	if got.State != notebook.Interrupted || !strings.Contains(got.Error, "sent nothing") {
		t.Errorf("silent client's run: %s %q", got.State, got.Error)
	}
}

func TestPage(t *testing.T) {
	l := newTestLab(t, Options{})
	for path, want := range map[string]string{"/": "<!doctype html>", "/vendor/echarts/echarts.min.js": "Apache", "/vendor/echarts/LICENSE": "Apache License"} {
		resp, err := http.Get(l.url + path)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(strings.ToLower(buf.String()[:min(buf.Len(), 4000)]), strings.ToLower(want)) {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
	}
}

// TestRunContext: Options.RunContext is asked for every server run's
// context, and its function gets the run's error once the experiment has
// returned (nil for a run that ends done), before the run reads ended.
func TestRunContext(t *testing.T) {
	var mu sync.Mutex
	var errs []error // what the function got, one run after another
	calls := 0
	l := newTestLab(t, Options{RunContext: func(ctx context.Context) (context.Context, func(error)) {
		mu.Lock()
		calls++
		mu.Unlock()
		return ctx, func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}})
	for i, end := range []string{"ok", "error", "panic"} {
		r := l.wait(l.start("lab-demo", map[string]any{"n": 3, "end": end}, 1).ID, 10*time.Second, ended)
		mu.Lock()
		n := len(errs)
		var err error
		if n == i+1 {
			err = errs[i]
		}
		mu.Unlock()
		switch {
		case n != i+1:
			t.Errorf("%s: RunContext's function called %d times by the end of run %d (%s)", end, n, i+1, r.State)
		case end == "ok" && err != nil, end != "ok" && err == nil:
			t.Errorf("%s: RunContext's function got %v, run %s", end, err, r.State)
		}
	}
	if calls != 3 {
		t.Errorf("RunContext asked %d times for 3 runs", calls)
	}
}
