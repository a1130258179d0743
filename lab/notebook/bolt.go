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
	recovered []string

	mu     sync.RWMutex
	closed bool
}

var _ Store = (*Bolt)(nil)

// Open opens (creating if needed) the notebook in the data folder dir and
// recovers from a crash: every run left queued or running is marked
// Interrupted (see [Bolt.Recovered]). Only one process may have a notebook
// open; Open fails after a second when another holds it.
func Open(dir string) (*Bolt, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: time.Second})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("notebook %s is in use by another lab", path)
		}
		return nil, fmt.Errorf("notebook %s: %w", path, err)
	}
	s := &Bolt{db: db}
	if err := s.init(); err != nil {
		db.Close()
		return nil, fmt.Errorf("notebook %s: %w", path, err)
	}
	return s, nil
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
			var r Run
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("run %d: %w", binary.BigEndian.Uint64(k), err)
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

// Path returns the file of the notebook.
func (s *Bolt) Path() string { return s.db.Path() }

func key(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// view and update run fn in a transaction unless the store is closed.
func (s *Bolt) view(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.db.View(fn)
}

func (s *Bolt) update(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.db.Update(fn)
}

func getRun(tx *bolt.Tx, id string) (uint64, Run, error) {
	n, err := ParseID(id)
	if err != nil {
		return 0, Run{}, err
	}
	v := tx.Bucket(bucketRuns).Get(key(n))
	if v == nil {
		return 0, Run{}, ErrNotFound
	}
	var r Run
	if err := json.Unmarshal(v, &r); err != nil {
		return 0, Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	return n, r, nil
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
			var r Run
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("run %d: %w", binary.BigEndian.Uint64(k), err)
			}
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
		if err := fn(&r); err != nil {
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
			fn(&r)
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
		if err != nil {
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
		out = make([]sim.Point, 0, want)
		c := tx.Bucket(bucketPoints).Bucket(key(n)).Cursor()
		for k, v := c.Seek(key(uint64(from))); k != nil && int64(len(out)) < want; k, v = c.Next() {
			p, err := decodePoint(v)
			if err != nil {
				return fmt.Errorf("run %s point %d: %w", id, binary.BigEndian.Uint64(k), err)
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
		n, _, err := getRun(tx, id)
		if err != nil {
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
