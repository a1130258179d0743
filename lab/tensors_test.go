package lab

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/tensorfile"
)

// npyBytes returns a .npy file of the given shape filled by fill.
func npyBytes(t *testing.T, shape []int, fill func(i int) float32) []byte {
	n := 1
	for _, d := range shape {
		n *= d
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = fill(i)
	}
	p := filepath.Join(t.TempDir(), "x.npy")
	if err := tensorfile.WriteNPY(p, shape, x); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// upload sends b in chunks of at most chunk bytes and returns the last status and body.
func (l *testLab) upload(name string, b []byte, chunk int) (int, []byte) {
	var status int
	var body []byte
	for off := 0; ; off += chunk {
		end := min(off+chunk, len(b))
		status, body = l.do("POST", "/api/tensors/upload", map[string]any{"name": name, "offset": off,
			"data": base64.StdEncoding.EncodeToString(b[off:end]), "done": end == len(b)})
		if end == len(b) || status >= 300 {
			return status, body
		}
	}
}

// Upload in chunks, list, run attention-file on the uploaded files, and
// the refusals: names leaving the folder, links, chunks out of order, bad
// files (deleted, with the reader's error), cross-origin requests.
func TestTensors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tensors")
	l := newTestLab(t, Options{TensorsDir: dir})
	wave := func(i int) float32 { return float32(i%7)/3 - 1 }
	q := npyBytes(t, []int{1, 2, 64}, wave)
	k := npyBytes(t, []int{300, 1, 64}, func(i int) float32 { return float32(i%11)/5 - 1 })
	v := npyBytes(t, []int{300, 1, 64}, wave)
	for name, b := range map[string][]byte{"q.npy": q, "k.npy": k, "v.npy": v} {
		if status, body := l.upload(name, b, 100); status != http.StatusCreated {
			t.Fatalf("upload %s: %d %s", name, status, body)
		}
	}
	status, body := l.do("GET", "/api/tensors", nil)
	var list struct {
		Files []tensorEntry `json:"files"`
	}
	if err := json.Unmarshal(body, &list); status != 200 || err != nil || len(list.Files) != 3 || list.Files[1].Name != "q.npy" || list.Files[1].Size != int64(len(q)) {
		t.Fatalf("list: %d %s", status, body)
	}
	status, body = l.do("POST", "/api/tensors/run", map[string]any{"files": map[string]string{"q": "q.npy", "k": "k.npy", "v": "v.npy"},
		"params": map[string]any{"format": "mxfp8", "path": "dequant-bf16"}})
	if status != http.StatusCreated {
		t.Fatalf("run: %d %s", status, body)
	}
	var run notebook.Run
	json.Unmarshal(body, &run)
	run = l.wait(run.ID, 30*time.Second, ended)
	if run.State != notebook.Done {
		t.Fatalf("run ended %s: %s", run.State, run.Error)
	}
	if pts := l.points(run.ID); len(pts) != 4 || !strings.Contains(run.Note, "q=q.npy") {
		t.Fatalf("%d points, note %q", len(pts), run.Note)
	}

	os.Symlink("/etc/passwd", filepath.Join(dir, "link.npy"))
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		msg          string
	}{
		{"POST", "/api/tensors/upload", map[string]any{"name": "../x.npy", "offset": 0, "data": ""}, 400, "tensor file name"},
		{"POST", "/api/tensors/upload", map[string]any{"name": "x.txt", "offset": 0, "data": ""}, 400, "tensor file name"},
		{"POST", "/api/tensors/upload", map[string]any{"name": "x.npy", "offset": 5, "data": "AAAA"}, 409, "holds 0 bytes"},
		{"POST", "/api/tensors/upload", map[string]any{"name": "x.npy", "offset": 0, "data": "!!"}, 400, "not base64"},
		{"POST", "/api/tensors/run", map[string]any{"files": map[string]string{"q": "../q.npy", "k": "k.npy", "v": "v.npy"}}, 400, "tensor file name"},
		{"POST", "/api/tensors/run", map[string]any{"files": map[string]string{"q": "/etc/passwd", "k": "k.npy", "v": "v.npy"}}, 400, "tensor file name"},
		{"POST", "/api/tensors/run", map[string]any{"files": map[string]string{"q": "link.npy", "k": "k.npy", "v": "v.npy"}}, 400, "no tensor file"},
		{"POST", "/api/tensors/run", map[string]any{"files": map[string]string{"q": "nope.npy", "k": "k.npy", "v": "v.npy"}}, 400, "no tensor file"},
		{"DELETE", "/api/tensors/..%2Fx.npy", nil, 400, "tensor file name"},
	} {
		status, body := l.do(tc.method, tc.path, tc.body)
		if status != tc.status || !strings.Contains(string(body), tc.msg) {
			t.Errorf("%s %s %v: %d %s, want %d %q", tc.method, tc.path, tc.body, status, body, tc.status, tc.msg)
		}
	}
	// A truncated file is refused with the reader's message and removed.
	if status, body := l.upload("bad.npy", k[:len(k)-8], 1000); status != 400 || !strings.Contains(string(body), "bad.npy: truncated") {
		t.Errorf("bad upload: %d %s", status, body)
	}
	if _, err := os.Stat(filepath.Join(dir, uploadPrefix+"bad.npy")); err == nil {
		t.Error("the refused upload is still there")
	}
	// Cross-origin writes are refused by the lab's guard.
	req, _ := http.NewRequest("POST", l.url+"/api/tensors/upload", strings.NewReader(`{"name":"e.npy","offset":0,"data":""}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin upload: %v %v", resp.StatusCode, err)
	}
	if status, _ := l.do("DELETE", "/api/tensors/q.npy", nil); status != http.StatusNoContent {
		t.Errorf("delete: %d", status)
	}
	if status, _ := l.do("DELETE", "/api/tensors/q.npy", nil); status != http.StatusNotFound {
		t.Errorf("delete twice: %d", status)
	}
	// A lab without a tensors folder answers 404.
	l2 := newTestLab(t, Options{})
	if status, _ := l2.do("GET", "/api/tensors", nil); status != http.StatusNotFound {
		t.Errorf("no folder: %d", status)
	}
}
