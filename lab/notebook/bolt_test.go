package notebook

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

func open(t *testing.T, dir string) *Bolt {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func samePoint(a, b sim.Point) bool {
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	if a.Series != b.Series || !same(a.X, b.X) || !same(a.Y, b.Y) || len(a.Extra) != len(b.Extra) {
		return false
	}
	for k, v := range a.Extra {
		w, ok := b.Extra[k]
		if !ok || !same(v, w) {
			return false
		}
	}
	return true
}

func TestPointCodec(t *testing.T) {
	negZero := math.Copysign(0, -1) // the literal -0.0 is +0 in Go
	tests := []sim.Point{
		{},
		{Series: "sm90.wgmma.e4m3.f32 never", X: 131072, Y: 1.5e-3},
		{Series: "h200 every128", X: math.Inf(1), Y: math.NaN(), Extra: map[string]float64{"p99": math.Inf(-1), "max_abs": 0.25, "": negZero}},
		{Series: "ünïcode ✓", X: negZero, Y: math.SmallestNonzeroFloat64},
	}
	// The signed-zero cases test something only if they hold -0 and a lost
	// sign makes the comparison fail.
	if !math.Signbit(tests[3].X) || !math.Signbit(tests[2].Extra[""]) {
		t.Fatal("the signed-zero cases hold +0")
	}
	if plus := (sim.Point{Series: tests[3].Series, X: 0, Y: tests[3].Y}); samePoint(plus, tests[3]) {
		t.Fatal("samePoint does not tell -0 from +0")
	}
	for _, p := range tests {
		got, err := decodePoint(encodePoint(nil, p))
		if err != nil || !samePoint(got, p) {
			t.Errorf("round trip of %+v: %+v, %v", p, got, err)
		}
	}
	b := encodePoint(nil, tests[2])
	for i := range len(b) {
		if _, err := decodePoint(b[:i]); err == nil {
			t.Errorf("truncated to %d bytes: no error", i)
		}
	}
}

func FuzzDecodePoint(f *testing.F) {
	f.Add(encodePoint(nil, sim.Point{Series: "a", X: 1, Y: 2, Extra: map[string]float64{"k": 3}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePoint(b)
		if err != nil {
			return
		}
		q, err := decodePoint(encodePoint(nil, p))
		if err != nil || !samePoint(p, q) {
			t.Fatalf("re-encode of %+v: %+v, %v", p, q, err)
		}
	})
}

func TestRunLifecycle(t *testing.T) {
	s := open(t, t.TempDir())
	r := Run{Experiment: "contraction", Params: map[string]any{"K": 4096, "models": []int{1, 2}}, Seed: 7, Origin: OriginServer, State: Queued}
	if err := s.Create(&r); err != nil {
		t.Fatal(err)
	}
	if r.ID != "1" || r.Created.IsZero() {
		t.Fatalf("created %+v", r)
	}
	r2 := Run{Experiment: "needle", State: Done}
	if err := s.Create(&r2); err != nil || r2.ID != "2" {
		t.Fatalf("second run: %v %q", err, r2.ID)
	}
	pts := []sim.Point{{Series: "a", X: 1, Y: 0.5}, {Series: "b", X: 1, Y: math.NaN(), Extra: map[string]float64{"p99": 2}}}
	if err := s.Append("1", 0, pts, func(r *Run) { r.State = Running; r.Done, r.Total = 1, 4 }); err != nil {
		t.Fatal(err)
	}
	if err := s.Append("1", 1, pts, nil); !errors.Is(err, ErrGap) {
		t.Errorf("append with a gap: %v", err)
	}
	if err := s.Append("1", 2, pts[:1], func(r *Run) {
		r.State = Done
		r.Summary = Floats{"inf": math.Inf(1), "x": 1.5}
		r.Notes = append(r.Notes, "a note")
	}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Points != 3 || got.State != Done || !reflect.DeepEqual(got.Series, []string{"a", "b"}) || got.Done != 1 ||
		!math.IsNaN(got.Summary["inf"]) || got.Summary["x"] != 1.5 || got.Notes[0] != "a note" || got.Params["K"] != 4096.0 {
		t.Errorf("stored run %+v", got)
	}
	all, err := s.Points("1", 0, 0)
	if err != nil || len(all) != 3 || !samePoint(all[1], pts[1]) || !samePoint(all[2], pts[0]) {
		t.Errorf("points %+v, %v", all, err)
	}
	tail, err := s.Points("1", 1, 1)
	if err != nil || len(tail) != 1 || !samePoint(tail[0], pts[1]) {
		t.Errorf("points from 1, limit 1: %+v, %v", tail, err)
	}
	if none, err := s.Points("1", 9, 0); err != nil || len(none) != 0 {
		t.Errorf("points past the end: %+v, %v", none, err)
	}

	list, err := s.List(Query{})
	if err != nil || len(list) != 2 || list[0].ID != "2" || list[1].ID != "1" {
		t.Errorf("list %+v, %v", list, err)
	}
	for _, q := range []Query{{Experiment: "needle"}, {State: Done, Limit: 1}} {
		if list, err := s.List(q); err != nil || len(list) != 1 || list[0].ID != "2" {
			t.Errorf("list %+v: %+v, %v", q, list, err)
		}
	}
	if err := s.Update("1", func(r *Run) error { r.Note = "kept"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Update("1", func(r *Run) error { return errors.New("no") }); err == nil || err.Error() != "no" {
		t.Errorf("update error: %v", err)
	}
	if got, _ := s.Get("1"); got.Note != "kept" {
		t.Errorf("note %q", got.Note)
	}
	if err := s.Delete("1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1", "0", "01", "x", "-1", "99"} {
		if _, err := s.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q): %v", id, err)
		}
	}
	if _, err := s.Points("1", 0, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("points of a deleted run: %v", err)
	}
	// Ids are never reused.
	r3 := Run{Experiment: "x"}
	if err := s.Create(&r3); err != nil || r3.ID != "3" {
		t.Errorf("third run: %v %q", err, r3.ID)
	}
}

func TestRecovery(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[State]string{}
	for _, st := range []State{Queued, Running, Done, Failed} {
		r := Run{Experiment: "e", State: st}
		if err := s.Create(&r); err != nil {
			t.Fatal(err)
		}
		ids[st] = r.ID
	}
	if err := s.Append(ids[Running], 0, []sim.Point{{Series: "s", X: 1, Y: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil {
		t.Error("a second Open of the same folder succeeded")
	}
	s.Close() // what a kill leaves: committed transactions only
	if err := s.Create(&Run{}); !errors.Is(err, ErrClosed) {
		t.Errorf("create after close: %v", err)
	}

	s = open(t, dir)
	if got := fmt.Sprint(s.Recovered()); got != fmt.Sprint([]string{ids[Queued], ids[Running]}) {
		t.Errorf("recovered %s", got)
	}
	for st, want := range map[State]State{Queued: Interrupted, Running: Interrupted, Done: Done, Failed: Failed} {
		r, err := s.Get(ids[st])
		if err != nil || r.State != want {
			t.Errorf("run that was %s: %s, %v", st, r.State, err)
		}
		if want == Interrupted && (r.Ended == nil || r.Error == "") {
			t.Errorf("interrupted run %+v", r)
		}
	}
	if pts, err := s.Points(ids[Running], 0, 0); err != nil || len(pts) != 1 {
		t.Errorf("points of the interrupted run: %v, %v", pts, err)
	}
}

func TestConcurrentAppend(t *testing.T) {
	s := open(t, t.TempDir())
	const runs, batches, per = 4, 20, 50
	ids := make([]string, runs)
	for i := range ids {
		r := Run{Experiment: "e", State: Running}
		if err := s.Create(&r); err != nil {
			t.Fatal(err)
		}
		ids[i] = r.ID
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for b := range batches {
				pts := make([]sim.Point, per)
				for i := range pts {
					pts[i] = sim.Point{Series: id, X: float64(b*per + i)}
				}
				if err := s.Append(id, int64(b*per), pts, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
		wg.Go(func() {
			for range batches {
				if _, err := s.List(Query{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		pts, err := s.Points(id, 0, 0)
		if err != nil || len(pts) != batches*per {
			t.Fatalf("run %s: %d points, %v", id, len(pts), err)
		}
		for i, p := range pts {
			if p.X != float64(i) || p.Series != id {
				t.Fatalf("run %s point %d: %+v", id, i, p)
			}
		}
	}
}

func TestFloatsJSON(t *testing.T) {
	b, err := json.Marshal(Floats{"a": 1, "n": math.NaN(), "i": math.Inf(-1)})
	if err != nil || string(b) != `{"a":1,"i":null,"n":null}` {
		t.Fatalf("%s %v", b, err)
	}
	var f Floats
	if err := json.Unmarshal(b, &f); err != nil || f["a"] != 1 || !math.IsNaN(f["i"]) {
		t.Errorf("%v %v", f, err)
	}
}
