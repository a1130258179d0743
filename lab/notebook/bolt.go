package notebook

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/fp8lab/fp8lab/sim"
)

// Bucket layout (keys are 8-byte big-endian numbers, so key order is
// numeric order):
//
//	runs    id → Run as JSON
//	points  id → bucket: index → point (binary, see encodePoint)
//	meta    "schema" → "1"
var (
	bucketRuns   = []byte("runs")
	bucketPoints = []byte("points")
	bucketMeta   = []byte("meta")
)

const schemaVersion = "1"

// FileName is the name of the notebook file inside a data folder.
const FileName = "notebook.db"

// Bolt is the [Store] on a bbolt file.
type Bolt struct {
	db        *bolt.DB
	path      string
	readOnly  bool
	recovered []string
	damaged   []string

	mu     sync.RWMutex
	closed bool

	bmu    sync.Mutex
	broken error // set when bbolt failed on the file: no more writes
}

var _ Store = (*Bolt)(nil)

// Open opens (creating if needed) the notebook in the data folder dir and
// recovers from a crash: every run left queued or running is marked
// Interrupted (see [Bolt.Recovered]). Only one process may have a notebook
// open; Open fails after a second when another holds it.
//
// Open refuses a damaged file with an error wrapping [ErrDamaged] that
// names the file and what to do, and never crashes on one: an existing file
// that is empty or shorter than its header says, a header that does not
// validate, a page bbolt cannot read (every page is read once, on this
// goroutine with faults turned into errors, then bbolt's Tx.Check verifies
// the tree and the freelist). A run whose record alone is damaged does not
// stop Open: it is listed in state [Damaged] (see [Bolt.Damaged]).
func Open(dir string) (*Bolt, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	path := filepath.Join(dir, FileName)
	if err := preflight(path); err != nil {
		return nil, err
	}
	var db *bolt.DB
	err := guard(func() (err error) {
		db, err = bolt.Open(path, 0o644, &bolt.Options{Timeout: time.Second})
		return err
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("notebook %s is in use by another lab", path)
		}
		if errors.Is(err, errPanic) || errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrChecksum) ||
			errors.Is(err, bolterrors.ErrVersionMismatch) || errors.Is(err, bolterrors.ErrInvalidMapping) {
			return nil, damagedFile(path, err)
		}
		return nil, fmt.Errorf("notebook %s: %w", path, writeError(path, err))
	}
	s := &Bolt{db: db, path: path}
	if problems := s.verify(10); len(problems) > 0 {
		db.Close()
		return nil, damagedFile(path, errors.New(strings.Join(problems, "; ")))
	}
	if err := guard(s.init); err != nil {
		db.Close()
		switch err = writeError(path, err); {
		case errors.Is(err, errPanic):
			return nil, damagedFile(path, err)
		case errors.Is(err, ErrDiskFull):
			return nil, fmt.Errorf("%w; free space on its disk and start again", err)
		}
		return nil, fmt.Errorf("notebook %s: %w", path, err)
	}
	return s, nil
}

// OpenReadOnly opens the notebook in dir for reading only, without crash
// recovery and without the checks that make [Open] refuse a damaged file:
// every method reads what it can, and a damaged page gives an error wrapping
// [ErrDamaged] for that call only. The writing methods return [ErrReadOnly].
// Other processes may read the file at the same time, but not a lab.
func OpenReadOnly(dir string) (*Bolt, error) {
	path := filepath.Join(dir, FileName)
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	if st.Size() == 0 {
		return nil, damagedFile(path, errors.New("the file is empty (0 bytes): there is nothing to read"))
	}
	var db *bolt.DB
	err = guard(func() (err error) {
		db, err = bolt.Open(path, 0o444, &bolt.Options{Timeout: time.Second, ReadOnly: true})
		return err
	})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("notebook %s is in use by a lab; stop it first", path)
		}
		return nil, damagedFile(path, err)
	}
	return &Bolt{db: db, path: path, readOnly: true}, nil
}

// verify reads every page of the file once on this goroutine, where a
// fault is an error, then (when that went through) runs bbolt's Tx.Check,
// which reads the same pages on a goroutine of its own. It returns up to
// max problems, and how many more there were.
func (s *Bolt) verify(max int) []string {
	var problems []string
	more := 0
	report := func(p string) {
		if len(problems) < max {
			problems = append(problems, p)
		} else {
			more++
		}
	}
	err := guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			var touched int
			var walk func(b *bolt.Bucket)
			walk = func(b *bolt.Bucket) {
				c := b.Cursor()
				for k, v := c.First(); k != nil; k, v = c.Next() {
					if v == nil {
						if nb := b.Bucket(k); nb != nil {
							walk(nb)
						}
						continue
					}
					if len(v) > 0 {
						touched += int(v[len(v)-1]) & 1 // read the value's last page
					}
				}
			}
			c := tx.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if b := tx.Bucket(k); b != nil {
					walk(b)
				}
			}
			_ = touched
			return nil
		})
	})
	if err != nil {
		report(fmt.Sprintf("reading the pages: %v", err))
		return problems
	}
	_ = s.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			report(err.Error())
		}
		return nil
	})
	if more > 0 {
		problems = append(problems, fmt.Sprintf("and %d more", more))
	}
	return problems
}

func (s *Bolt) init() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketRuns, bucketPoints, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get([]byte("schema")); {
		case v == nil:
			if err := meta.Put([]byte("schema"), []byte(schemaVersion)); err != nil {
				return err
			}
		case string(v) != schemaVersion:
			return fmt.Errorf("schema version %q, this lab reads %q", v, schemaVersion)
		}
		// Crash recovery: nobody can be running a run of a store that was
		// not open.
		runs := tx.Bucket(bucketRuns)
		now := time.Now().UTC()
		return runs.ForEach(func(k, v []byte) error {
			r, err := decodeRun(k, v)
			if err != nil {
				s.damaged = append(s.damaged, r.ID)
				return nil
			}
			if r.State.Final() {
				return nil
			}
			was := r.State
			r.State = Interrupted
			r.QueuePos = 0
			if r.Error == "" {
				r.Error = fmt.Sprintf("the lab stopped while the run was %s (crash or kill); %d points were kept", was, r.Points)
			}
			end := r.Updated
			if end.IsZero() {
				end = now
			}
			r.Ended = &end
			s.recovered = append(s.recovered, r.ID)
			b, err := json.Marshal(&r)
			if err != nil {
				return err
			}
			return runs.Put(k, b)
		})
	})
}

// Recovered returns the ids of the runs that [Open] found queued or running
// and marked Interrupted.
func (s *Bolt) Recovered() []string { return slices.Clone(s.recovered) }

// Damaged returns the ids of the runs whose records [Open] could not read:
// they are listed in state Damaged, can be deleted, and keep their points.
func (s *Bolt) Damaged() []string { return slices.Clone(s.damaged) }

// Path returns the file of the notebook.
func (s *Bolt) Path() string { return s.path }

func key(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// view and update run fn in a transaction unless the store is closed. A
// fault or a panic of bbolt on a damaged page becomes an error wrapping
// ErrDamaged, and the store then refuses writes (writing over a damaged
// tree or freelist would spread the damage); reads go on. A write that
// fails for want of space wraps ErrDiskFull.
func (s *Bolt) view(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.failed(guard(func() error { return s.db.View(fn) }))
}

func (s *Bolt) update(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.readOnly {
		return ErrReadOnly
	}
	s.bmu.Lock()
	broken := s.broken
	s.bmu.Unlock()
	if broken != nil {
		return broken
	}
	return writeError(s.path, s.failed(guard(func() error { return s.db.Update(fn) })))
}

// failed turns a recovered panic into a damage error and marks the store
// broken for writes.
func (s *Bolt) failed(err error) error {
	if !errors.Is(err, errPanic) {
		return err
	}
	err = damagedFile(s.path, err)
	if !s.readOnly {
		s.bmu.Lock()
		if s.broken == nil {
			s.broken = fmt.Errorf("no more writes: %w", err)
		}
		s.bmu.Unlock()
	}
	return err
}

// Broken returns the error that stopped writes to the notebook (a page
// bbolt could not read or write), or nil.
func (s *Bolt) Broken() error {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	return s.broken
}

// callback runs a caller's function inside a transaction: its panic is the
// caller's bug, not damage of the file, so it becomes a plain error (the
// transaction rolls back) and the store stays writable.
func callback(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("notebook: the caller's update panicked: %v", r)
		}
	}()
	return f()
}

// decodeRun reads a run record. A record that does not decode gives a
// placeholder in state Damaged, with the reason as its Error, and an error
// wrapping ErrDamaged.
func decodeRun(k, v []byte) (Run, error) {
	var r Run
	err := json.Unmarshal(v, &r)
	if err == nil && r.ID == strconv.FormatUint(binary.BigEndian.Uint64(k), 10) && r.State.Valid() {
		return r, nil
	}
	id := "?"
	if len(k) == 8 {
		id = strconv.FormatUint(binary.BigEndian.Uint64(k), 10)
	}
	if err == nil {
		err = fmt.Errorf("the record holds id %q, state %q", r.ID, r.State)
	}
	err = fmt.Errorf("run %s: %w: its record (%d bytes) does not read: %v", id, ErrDamaged, len(v), err)
	return Run{ID: id, State: Damaged, Error: err.Error() + "; its points may still be exported; delete the run to clear it"}, err
}

func getRun(tx *bolt.Tx, id string) (uint64, Run, error) {
	n, err := ParseID(id)
	if err != nil {
		return 0, Run{}, err
	}
	k := key(n)
	v := tx.Bucket(bucketRuns).Get(k)
	if v == nil {
		return 0, Run{}, ErrNotFound
	}
	r, err := decodeRun(k, v)
	return n, r, err
}

func putRun(tx *bolt.Tx, n uint64, r *Run) error {
	r.Updated = time.Now().UTC()
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	return tx.Bucket(bucketRuns).Put(key(n), b)
}

// Create stores a new run; its id is the next number of the notebook.
func (s *Bolt) Create(r *Run) error {
	return s.update(func(tx *bolt.Tx) error {
		runs := tx.Bucket(bucketRuns)
		n, err := runs.NextSequence()
		if err != nil {
			return err
		}
		c := r.Clone()
		c.ID = strconv.FormatUint(n, 10)
		c.Created = time.Now().UTC()
		c.Points = 0
		if _, err := tx.Bucket(bucketPoints).CreateBucket(key(n)); err != nil {
			return err
		}
		if err := putRun(tx, n, &c); err != nil {
			return err
		}
		r.ID, r.Created, r.Updated = c.ID, c.Created, c.Updated
		return nil
	})
}

// Get returns the run with the given id.
func (s *Bolt) Get(id string) (Run, error) {
	var r Run
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		_, r, err = getRun(tx, id)
		if r.State == Damaged {
			return nil // shown as damaged
		}
		return err
	})
	return r, err
}

// List returns the runs selected by q, newest first.
func (s *Bolt) List(q Query) ([]Run, error) {
	var out []Run
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRuns).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			r, _ := decodeRun(k, v) // a damaged record is listed as Damaged
			if q.Experiment != "" && r.Experiment != q.Experiment || q.State != "" && r.State != q.State {
				continue
			}
			out = append(out, r)
			if q.Limit > 0 && len(out) >= q.Limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// Update applies fn to the stored run.
func (s *Bolt) Update(id string, fn func(*Run) error) error {
	return s.update(func(tx *bolt.Tx) error {
		n, r, err := getRun(tx, id)
		if err != nil {
			return err
		}
		if err := callback(func() error { return fn(&r) }); err != nil {
			return err
		}
		r.ID = id
		return putRun(tx, n, &r)
	})
}

// Append stores points after the first from points of the run and applies
// fn, in one transaction. The run's Series list gains the new series names.
func (s *Bolt) Append(id string, from int64, points []sim.Point, fn func(*Run)) error {
	return s.update(func(tx *bolt.Tx) error {
		n, r, err := getRun(tx, id)
		if err != nil {
			return err
		}
		if from != r.Points {
			return fmt.Errorf("run %s: %w (from %d, stored %d)", id, ErrGap, from, r.Points)
		}
		pb := tx.Bucket(bucketPoints).Bucket(key(n))
		if pb == nil {
			return fmt.Errorf("run %s: points bucket missing", id)
		}
		pb.FillPercent = 1 // append-only: pack pages full
		// bbolt keeps keys and values until the commit: one arena, no reuse.
		arena := make([]byte, 0, len(points)*48)
		for i, p := range points {
			start := len(arena)
			arena = encodePoint(arena, p)
			if err := pb.Put(key(uint64(from)+uint64(i)), arena[start:len(arena):len(arena)]); err != nil {
				return err
			}
			if !slices.Contains(r.Series, p.Series) {
				r.Series = append(r.Series, p.Series)
			}
		}
		r.Points = from + int64(len(points))
		if fn != nil {
			if err := callback(func() error { fn(&r); return nil }); err != nil {
				return err
			}
			r.Points = from + int64(len(points))
		}
		r.ID = id
		return putRun(tx, n, &r)
	})
}

// Points returns up to limit points of the run from index from on.
func (s *Bolt) Points(id string, from int64, limit int) ([]sim.Point, error) {
	var out []sim.Point
	err := s.view(func(tx *bolt.Tx) error {
		n, r, err := getRun(tx, id)
		if r.State == Damaged {
			r.Points = math.MaxInt64 // the count was in the record: read what there is
		} else if err != nil {
			return err
		}
		if from < 0 {
			from = 0
		}
		want := r.Points - from
		if limit > 0 {
			want = min(want, int64(limit))
		}
		if want <= 0 {
			return nil
		}
		pb := tx.Bucket(bucketPoints).Bucket(key(n))
		if pb == nil {
			return fmt.Errorf("run %s: %w: its points bucket is missing", id, ErrDamaged)
		}
		out = make([]sim.Point, 0, min(want, 1<<16))
		c := pb.Cursor()
		for k, v := c.Seek(key(uint64(from))); k != nil && int64(len(out)) < want; k, v = c.Next() {
			p, err := decodePoint(v)
			if err != nil {
				return fmt.Errorf("run %s point %d: %w: %w", id, binary.BigEndian.Uint64(k), ErrDamaged, err)
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Delete removes the run and its points.
func (s *Bolt) Delete(id string) error {
	return s.update(func(tx *bolt.Tx) error {
		n, r, err := getRun(tx, id)
		if err != nil && r.State != Damaged {
			return err
		}
		if err := tx.Bucket(bucketPoints).DeleteBucket(key(n)); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return err
		}
		return tx.Bucket(bucketRuns).Delete(key(n))
	})
}

// Close closes the file; later calls return ErrClosed.
func (s *Bolt) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

// encodePoint appends p in binary: uvarint length and bytes of the series,
// x and y as IEEE-754 bits (exact, NaN and ±Inf included), uvarint count of
// extras, then each extra sorted by name as (uvarint length, name, bits).
func encodePoint(b []byte, p sim.Point) []byte {
	b = binary.AppendUvarint(b, uint64(len(p.Series)))
	b = append(b, p.Series...)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.X))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.Y))
	b = binary.AppendUvarint(b, uint64(len(p.Extra)))
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.Extra[k]))
	}
	return b
}

var errCorrupt = errors.New("corrupt point record")

func decodePoint(b []byte) (sim.Point, error) {
	var p sim.Point
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	f64 := func() (float64, bool) {
		if len(b) < 8 {
			return 0, false
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(b))
		b = b[8:]
		return f, true
	}
	var ok bool
	if p.Series, ok = str(); !ok {
		return p, errCorrupt
	}
	if p.X, ok = f64(); !ok {
		return p, errCorrupt
	}
	if p.Y, ok = f64(); !ok {
		return p, errCorrupt
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return p, errCorrupt
	}
	b = b[k:]
	if n > 0 {
		p.Extra = make(map[string]float64, n)
	}
	for range n {
		name, ok := str()
		if !ok {
			return p, errCorrupt
		}
		if p.Extra[name], ok = f64(); !ok {
			return p, errCorrupt
		}
	}
	if len(b) != 0 {
		return p, errCorrupt
	}
	return p, nil
}
