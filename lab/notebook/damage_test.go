package notebook

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fp8lab/fp8lab/sim"
)

// fixture writes a notebook of four runs (1 and 3 with 3000 points, 2 with
// 10, 4 deleted so that the file has free pages) and returns its folder.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{3000, 10, 3000, 3000} {
		r := Run{Experiment: "e", State: Done, Params: map[string]any{"i": i}}
		if err := s.Create(&r); err != nil {
			t.Fatal(err)
		}
		pts := make([]sim.Point, n)
		for j := range pts {
			pts[j] = sim.Point{Series: "s", X: float64(j), Y: float64(i)}
		}
		if err := s.Append(r.ID, 0, pts, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete("4"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rawInfo reads, with bbolt directly, the page size, the root page of run
// n's points and the freelist page of a closed notebook.
func rawInfo(t *testing.T, dir string, n uint64) (pageSize int, root uint64, freelist uint64, size int64) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pageSize = db.Info().PageSize
	db.View(func(tx *bolt.Tx) error {
		root = uint64(tx.Bucket(bucketPoints).Bucket(key(n)).RootPage())
		return nil
	})
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	var best metaPage
	for _, off := range []int{0, pageSize} {
		if m, err := readMeta(b[off:]); err == nil && m.txid >= best.txid {
			best = m
		}
	}
	return pageSize, root, best.freelist, int64(len(b))
}

func patch(t *testing.T, dir string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func garbage(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + 7)
	}
	return b
}

// TestOpenDamaged: every kind of file damage the attack of issue 9 found
// makes Open return an error wrapping ErrDamaged that names the file and
// what to do, instead of a SIGBUS, a panic, or a silently empty notebook.
func TestOpenDamaged(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"truncated to 0 bytes", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, FileName), 0)
		}, "empty (0 bytes)"},
		{"truncated to half", func(t *testing.T, dir string) {
			_, _, _, size := rawInfo(t, dir, 1)
			os.Truncate(filepath.Join(dir, FileName), size/2)
		}, "truncated"},
		{"truncated inside the header", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, FileName), 100)
		}, "truncated"},
		{"truncated inside meta page 0", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, FileName), 40)
		}, "no valid header"},
		{"both meta pages garbage", func(t *testing.T, dir string) {
			ps, _, _, _ := rawInfo(t, dir, 1)
			patch(t, dir, 0, garbage(2*ps))
		}, "no valid header"},
		{"damaged branch page", func(t *testing.T, dir string) {
			ps, root, _, _ := rawInfo(t, dir, 1)
			patch(t, dir, int64(root)*int64(ps)+16, garbage(ps-16))
		}, "damaged"},
		{"damaged page header", func(t *testing.T, dir string) {
			ps, root, _, _ := rawInfo(t, dir, 3)
			patch(t, dir, int64(root)*int64(ps), garbage(16))
		}, "damaged"},
		{"garbage in the freelist", func(t *testing.T, dir string) {
			ps, root, fl, _ := rawInfo(t, dir, 1)
			// Keep the page header, list pages in use as free.
			ids := make([]byte, 0, 8*4)
			for _, id := range []uint64{root, root + 1, root + 2, 2} {
				ids = binary.NativeEndian.AppendUint64(ids, id)
			}
			patch(t, dir, int64(fl)*int64(ps)+16, ids)
		}, "free and in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := fixture(t)
			tt.damage(t, dir)
			s, err := Open(dir)
			if err == nil {
				s.Close()
				t.Fatal("Open accepted the damaged notebook")
			}
			msg := err.Error()
			t.Logf("%s", msg)
			if !errors.Is(err, ErrDamaged) || !strings.Contains(msg, filepath.Join(dir, FileName)) ||
				!strings.Contains(msg, "lab notebook recover") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q: want ErrDamaged, the file, the advice and %q", msg, tt.want)
			}
			// Open never replaced the file: the damage is still there to recover from.
			if st, err := os.Stat(filepath.Join(dir, FileName)); err != nil || (tt.name == "truncated to 0 bytes") != (st.Size() == 0) {
				t.Errorf("the file was changed: %v %v", st, err)
			}
		})
	}
}

// TestDamagedRunRecord: one run record that does not decode leaves the
// notebook usable: the run is listed as Damaged with the reason, its
// points still read, it can be deleted, and the other runs work.
func TestDamagedRunRecord(t *testing.T) {
	dir := fixture(t)
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketRuns).Put(key(2), []byte(`{"id":"2","exper`)) })
	db.Close()

	s := open(t, dir)
	if got := fmt.Sprint(s.Damaged()); got != "[2]" {
		t.Errorf("Damaged() = %s", got)
	}
	list, err := s.List(Query{})
	if err != nil || len(list) != 3 {
		t.Fatalf("list: %d runs, %v", len(list), err)
	}
	if list[1].ID != "2" || list[1].State != Damaged || !strings.Contains(list[1].Error, "does not read") {
		t.Errorf("damaged run listed as %+v", list[1])
	}
	if r, err := s.Get("2"); err != nil || r.State != Damaged {
		t.Errorf("Get(2) = %+v, %v", r, err)
	}
	if pts, err := s.Points("2", 0, 0); err != nil || len(pts) != 10 {
		t.Errorf("points of the damaged run: %d, %v", len(pts), err)
	}
	if err := s.Update("2", func(r *Run) error { r.Note = "x"; return nil }); !errors.Is(err, ErrDamaged) {
		t.Errorf("Update of the damaged run: %v", err)
	}
	if err := s.Append("2", 0, []sim.Point{{}}, nil); !errors.Is(err, ErrDamaged) {
		t.Errorf("Append to the damaged run: %v", err)
	}
	if r, err := s.Get("3"); err != nil || r.Points != 3000 {
		t.Errorf("run 3: %+v %v", r, err)
	}
	r := Run{Experiment: "new", State: Running}
	if err := s.Create(&r); err != nil || r.ID != "5" {
		t.Errorf("a new run: %q %v", r.ID, err)
	}
	if err := s.Delete("2"); err != nil {
		t.Errorf("Delete of the damaged run: %v", err)
	}
	if _, err := s.Get("2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}

// TestDamageWhileOpen: a page damaged under an open notebook (the file
// changed by something else) makes the calls that read it return
// ErrDamaged instead of panicking, and the store then refuses writes; the
// process goes on.
func TestDamageWhileOpen(t *testing.T) {
	dir := fixture(t)
	ps, root, _, _ := rawInfo(t, dir, 1)
	s := open(t, dir)
	patch(t, dir, int64(root)*int64(ps), garbage(ps))
	if _, err := s.Points("1", 0, 0); !errors.Is(err, ErrDamaged) {
		t.Fatalf("points through a damaged page: %v", err)
	}
	if s.Broken() == nil {
		t.Error("the store still accepts writes")
	}
	if err := s.Append("3", 3000, []sim.Point{{}}, nil); !errors.Is(err, ErrDamaged) {
		t.Errorf("write after the damage: %v", err)
	}
	if r, err := s.Get("3"); err != nil || r.Points != 3000 {
		t.Errorf("reads go on: %+v %v", r, err)
	}
}

// TestOpenReadOnlyTruncated: reading a truncated notebook read-only faults
// (SIGBUS) past the end of the file; the fault is an error of that call.
func TestOpenReadOnlyTruncated(t *testing.T) {
	dir := fixture(t)
	_, _, _, size := rawInfo(t, dir, 1)
	os.Truncate(filepath.Join(dir, FileName), size/2)
	s, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var errs []error
	for _, id := range []string{"1", "2", "3"} {
		if _, err := s.Points(id, 0, 0); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		t.Fatal("no run of the truncated notebook failed to read")
	}
	for _, err := range errs {
		if !errors.Is(err, ErrDamaged) {
			t.Errorf("%v: want ErrDamaged", err)
		}
	}
	if err := s.Create(&Run{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Create on a read-only store: %v", err)
	}
}

// TestCheckAndRecover: Check reports the damaged file and which runs are
// intact; Recover copies every run whose record reads, under its own id,
// with the points that read, into a new notebook that Open accepts.
func TestCheckAndRecover(t *testing.T) {
	tests := []struct {
		name       string
		damage     func(t *testing.T, dir string)
		intact     []string // runs Check finds intact
		copied     []string // runs Recover copies
		fileIssues bool
	}{
		{"damaged page of run 1", func(t *testing.T, dir string) {
			ps, root, _, _ := rawInfo(t, dir, 1)
			patch(t, dir, int64(root)*int64(ps), garbage(ps))
		}, []string{"2", "3"}, []string{"1", "2", "3"}, true},
		{"damaged record of run 2", func(t *testing.T, dir string) {
			db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketRuns).Put(key(2), []byte("\x00garbage")) })
			db.Close()
		}, []string{"1", "3"}, []string{"1", "3"}, false},
		{"intact", func(t *testing.T, dir string) {}, []string{"1", "2", "3"}, []string{"1", "2", "3"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := fixture(t)
			tt.damage(t, dir)
			rep, err := Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep)
			var intact []string
			for _, r := range rep.Runs {
				if r.Intact() {
					intact = append(intact, r.ID)
				}
			}
			if fmt.Sprint(intact) != fmt.Sprint(tt.intact) || (len(rep.File) > 0) != tt.fileIssues || rep.OK() != (tt.name == "intact") {
				t.Errorf("Check: intact %v, file problems %q, OK %v", intact, rep.File, rep.OK())
			}
			newDir := filepath.Join(t.TempDir(), "new")
			rep, err = Recover(dir, newDir)
			if err != nil {
				t.Fatal(err)
			}
			var copied []string
			for _, r := range rep.Runs {
				if r.Copied {
					copied = append(copied, r.ID)
				}
			}
			if fmt.Sprint(copied) != fmt.Sprint(tt.copied) {
				t.Errorf("Recover copied %v, want %v", copied, tt.copied)
			}
			s := open(t, newDir) // the new notebook passes every check of Open
			list, err := s.List(Query{})
			if err != nil || len(list) != len(tt.copied) {
				t.Fatalf("new notebook: %d runs, %v", len(list), err)
			}
			for _, r := range rep.Runs {
				if !r.Copied {
					continue
				}
				got, err := s.Get(r.ID)
				pts, perr := s.Points(r.ID, 0, 0)
				if err != nil || perr != nil || got.Points != r.Read || int64(len(pts)) != r.Read || got.Experiment != "e" {
					t.Errorf("run %s in the new notebook: %+v (%d points, %v %v), want %d points", r.ID, got, len(pts), err, perr, r.Read)
				}
				if r.Read < r.Points && !strings.Contains(strings.Join(got.Notes, " "), fmt.Sprintf("%d of %d points", r.Read, r.Points)) {
					t.Errorf("run %s lost points without a note: %q", r.ID, got.Notes)
				}
				for i, p := range pts {
					if p.X != float64(i) {
						t.Fatalf("run %s point %d: %+v", r.ID, i, p)
					}
				}
			}
			r := Run{Experiment: "after"}
			if err := s.Create(&r); err != nil || r.ID != "5" {
				t.Errorf("a new run in the recovered notebook: id %q (ids are never reused), %v", r.ID, err)
			}
			if _, err := Recover(dir, newDir); err == nil {
				t.Error("Recover over an existing notebook succeeded")
			}
		})
	}
}

// TestCallbackPanic: a panic in the caller's update function is the
// caller's bug: the call fails, nothing is written, and the store stays
// writable (it is not taken for a damaged file).
func TestCallbackPanic(t *testing.T) {
	s := open(t, t.TempDir())
	r := Run{Experiment: "e", State: Running}
	if err := s.Create(&r); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(r.ID, func(*Run) error { panic("bug") }); err == nil || errors.Is(err, ErrDamaged) {
		t.Errorf("Update with a panicking fn: %v", err)
	}
	if err := s.Append(r.ID, 0, []sim.Point{{}}, func(*Run) { panic("bug") }); err == nil || errors.Is(err, ErrDamaged) {
		t.Errorf("Append with a panicking fn: %v", err)
	}
	if s.Broken() != nil {
		t.Fatalf("the store stopped writes: %v", s.Broken())
	}
	if err := s.Append(r.ID, 0, []sim.Point{{}}, nil); err != nil {
		t.Errorf("a write after the panics: %v", err)
	}
}

// FuzzOpen writes arbitrary bytes as a notebook file: Open either refuses
// it with an error or opens it, and then listing and reading every run
// returns (errors allowed); nothing panics or faults.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 3 {
		r := Run{Experiment: "e", State: Running}
		s.Create(&r)
		pts := make([]sim.Point, 200*i)
		s.Append(r.ID, 0, pts, nil)
	}
	s.Close()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/2])
	f.Add(b[:8192])
	for _, off := range []int{16, 4096 + 40, 2 * 4096, 3*4096 + 20} {
		c := slices.Clone(b)
		c[off] ^= 0x5a
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			return
		}
		defer s.Close()
		list, _ := s.List(Query{})
		for _, r := range list {
			s.Points(r.ID, 0, 0)
		}
		r := Run{Experiment: "x"}
		if err := s.Create(&r); err == nil {
			s.Append(r.ID, 0, []sim.Point{{Series: "s"}}, nil)
		}
	})
}

// TestCheckHugeHighWater: a header with a valid checksum whose high-water
// mark is 2^50 pages (far past the file) is reported by check and recover
// at once, and the runs still read (issue 18, red team: bbolt's Tx.Check
// walked the claimed pages at 95 % CPU for more than 120 s; serve refused
// the file correctly).
func TestCheckHugeHighWater(t *testing.T) {
	dir := fixture(t)
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := int(binary.NativeEndian.Uint32(b[pageHeaderSize+8:]))
	for _, off := range []int{0, ps} { // both meta pages
		m := b[off+pageHeaderSize : off+pageHeaderSize+metaSize]
		binary.NativeEndian.PutUint64(m[40:], 1<<50)
		h := fnv.New64a()
		h.Write(m[:56])
		binary.NativeEndian.PutUint64(m[56:], h.Sum64())
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !errors.Is(err, ErrDamaged) {
		t.Fatalf("Open: %v, want it refused", err)
	}
	start := time.Now()
	rep, err := Check(dir)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("check took %v", took)
	}
	if err != nil || len(rep.File) == 0 || !strings.Contains(strings.Join(rep.File, "; "), "truncated") {
		t.Errorf("check: %v %+v", err, rep)
	}
	start = time.Now()
	rep, err = Recover(dir, t.TempDir())
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("recover took %v", took)
	}
	t.Logf("recover: %v; %d runs reported, problems %q", err, len(rep.Runs), rep.File)
}
