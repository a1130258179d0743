package notebook

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/fp8lab/fp8lab/sim"
)

// SweepAxis is one swept parameter of a [Sweep] and its values.
type SweepAxis struct {
	Name   string `json:"name"`
	Values []any  `json:"values"`
}

// Sweep is the record of a sweep: one experiment over a grid of parameter
// values times a list of seeds. Its runs are ordinary runs (with
// Run.Sweep and Run.SweepRun set); [SweepStore.SweepRuns] says which run
// holds which number. A sweep is live while its State is Running, also
// across a restart of the lab, which resumes it.
type Sweep struct {
	ID         string         `json:"id"`
	Experiment string         `json:"experiment"`
	Params     map[string]any `json:"params,omitempty"` // fixed values
	Axes       []SweepAxis    `json:"axes"`
	Seeds      []uint64       `json:"seeds"`
	Runs       int            `json:"runs"` // grid points × seeds

	// Executor is where the runs execute: "pool" (the lab's) or "slurm".
	Executor string `json:"executor"`
	// Slurm holds the job ids of the arrays submitted for the sweep, the
	// last one last.
	SlurmJobs []string `json:"slurm_jobs,omitempty"`

	State   State      `json:"state"` // running, done, failed (some runs did not end done), cancelled, interrupted
	Error   string     `json:"error,omitempty"`
	Title   string     `json:"title,omitempty"`
	Tags    []string   `json:"tags,omitempty"`
	Created time.Time  `json:"created"`
	Updated time.Time  `json:"updated"`
	Ended   *time.Time `json:"ended,omitempty"`
}

// SweepStore keeps sweeps. [Bolt] implements it; the lab offers sweeps
// only over a Store that does.
type SweepStore interface {
	// CreateSweep stores a new sweep and sets its ID, Created and Updated.
	CreateSweep(sw *Sweep) error
	// GetSweep returns the sweep, or ErrNotFound.
	GetSweep(id string) (Sweep, error)
	// ListSweeps returns every sweep, newest first.
	ListSweeps() ([]Sweep, error)
	// ListSweepsN returns the newest limit sweeps, newest first, reading
	// no more, and whether there are older ones.
	ListSweepsN(limit int) ([]Sweep, bool, error)
	// UpdateSweep applies fn to the stored sweep and stores the result
	// unless fn returns an error.
	UpdateSweep(id string, fn func(*Sweep) error) error
	// SetSweepRun records that run runID holds number n of the sweep
	// (replacing an earlier run of that number, e.g. an interrupted one).
	SetSweepRun(id string, n int, runID string) error
	// SweepRuns returns the sweep's runs by number.
	SweepRuns(id string) (map[int]string, error)
	// ReadSweep calls fn with every run of the sweep, in number order, in
	// one read transaction; a sample's Points (series, x and y; no
	// extras) are read when withPoints says so for the run's state. An
	// error of fn ends the read and is returned.
	ReadSweep(id string, withPoints func(State) bool, fn func(SweepSample) error) error
	// SweepKey returns the notebook's secret for the credentials of
	// sweep runs that clients stream in (32 random bytes, made on first
	// use and kept in the notebook, never in a record).
	SweepKey() ([]byte, error)
	// ReadSweepField is ReadSweep with each point's y replaced by its
	// extra value field (points without it are left out); "" or "y" is
	// ReadSweep.
	ReadSweepField(id string, withPoints func(State) bool, field string, fn func(SweepSample) error) error
}

// SweepSample is what [SweepStore.ReadSweep] reads of one run.
type SweepSample struct {
	N       int // the run's number in the sweep
	ID      string
	State   State
	Params  map[string]any
	Summary Floats
	Points  []sim.Point // without their extras
}

var _ SweepStore = (*Bolt)(nil)

// Buckets of sweeps, created on first use:
//
//	sweeps     id → Sweep as JSON
//	sweepruns  id → bucket: run number → run id
var (
	bucketSweeps    = []byte("sweeps")
	bucketSweepRuns = []byte("sweepruns")
)

func sweepKey(id string) ([]byte, error) {
	n, err := ParseID(id)
	if err != nil {
		return nil, ErrNotFound
	}
	return key(n), nil
}

func putSweep(tx *bolt.Tx, k []byte, sw *Sweep) error {
	sw.Updated = time.Now().UTC()
	b, err := json.Marshal(sw)
	if err != nil {
		return fmt.Errorf("sweep %s: %w", sw.ID, err)
	}
	bk, err := tx.CreateBucketIfNotExists(bucketSweeps)
	if err != nil {
		return err
	}
	return bk.Put(k, b)
}

// CreateSweep stores a new sweep; its id is the next number of the sweeps.
func (s *Bolt) CreateSweep(sw *Sweep) error {
	return s.update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketSweeps)
		if err != nil {
			return err
		}
		n, err := bk.NextSequence()
		if err != nil {
			return err
		}
		sw.ID = strconv.FormatUint(n, 10)
		sw.Created = time.Now().UTC()
		return putSweep(tx, key(n), sw)
	})
}

func getSweep(tx *bolt.Tx, id string) ([]byte, Sweep, error) {
	k, err := sweepKey(id)
	if err != nil {
		return nil, Sweep{}, err
	}
	bk := tx.Bucket(bucketSweeps)
	if bk == nil {
		return nil, Sweep{}, ErrNotFound
	}
	v := bk.Get(k)
	if v == nil {
		return nil, Sweep{}, ErrNotFound
	}
	var sw Sweep
	if err := json.Unmarshal(v, &sw); err != nil {
		return nil, Sweep{}, fmt.Errorf("sweep %s: %w", id, err)
	}
	return k, sw, nil
}

// GetSweep returns the sweep with the given id.
func (s *Bolt) GetSweep(id string) (Sweep, error) {
	var sw Sweep
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		_, sw, err = getSweep(tx, id)
		return err
	})
	return sw, err
}

// ListSweeps returns every sweep, newest first.
func (s *Bolt) ListSweeps() ([]Sweep, error) {
	out, _, err := s.ListSweepsN(0)
	return out, err
}

// ListSweepsN returns the newest limit sweeps (every sweep when limit is
// 0), newest first, and whether there are older ones.
func (s *Bolt) ListSweepsN(limit int) ([]Sweep, bool, error) {
	var out []Sweep
	more := false
	err := s.view(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketSweeps)
		if bk == nil {
			return nil
		}
		c := bk.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if limit > 0 && len(out) == limit {
				more = true
				return nil
			}
			var sw Sweep
			if err := json.Unmarshal(v, &sw); err != nil {
				return fmt.Errorf("sweep %d: %w", binary.BigEndian.Uint64(k), err)
			}
			out = append(out, sw)
		}
		return nil
	})
	return out, more, err
}

// UpdateSweep applies fn to the stored sweep.
func (s *Bolt) UpdateSweep(id string, fn func(*Sweep) error) error {
	return s.update(func(tx *bolt.Tx) error {
		k, sw, err := getSweep(tx, id)
		if err != nil {
			return err
		}
		if err := fn(&sw); err != nil {
			return err
		}
		sw.ID = id
		return putSweep(tx, k, &sw)
	})
}

// SetSweepRun records run runID as number n of the sweep.
func (s *Bolt) SetSweepRun(id string, n int, runID string) error {
	if n < 0 {
		return fmt.Errorf("sweep %s: run number %d", id, n)
	}
	return s.update(func(tx *bolt.Tx) error {
		k, _, err := getSweep(tx, id)
		if err != nil {
			return err
		}
		root, err := tx.CreateBucketIfNotExists(bucketSweepRuns)
		if err != nil {
			return err
		}
		bk, err := root.CreateBucketIfNotExists(k)
		if err != nil {
			return err
		}
		return bk.Put(key(uint64(n)), []byte(runID))
	})
}

// SweepRuns returns the sweep's runs by number.
func (s *Bolt) SweepRuns(id string) (map[int]string, error) {
	out := map[int]string{}
	err := s.view(func(tx *bolt.Tx) error {
		k, _, err := getSweep(tx, id)
		if err != nil {
			return err
		}
		root := tx.Bucket(bucketSweepRuns)
		if root == nil {
			return nil
		}
		bk := root.Bucket(k)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(k, v []byte) error {
			out[int(binary.BigEndian.Uint64(k))] = string(v)
			return nil
		})
	})
	return out, err
}

// ReadSweep reads the sweep's runs for the aggregation.
func (s *Bolt) ReadSweep(id string, withPoints func(State) bool, fn func(SweepSample) error) error {
	return s.ReadSweepField(id, withPoints, "", fn)
}

// ReadSweepField reads the sweep's runs for the aggregation of the point
// quantity field.
func (s *Bolt) ReadSweepField(id string, withPoints func(State) bool, field string, fn func(SweepSample) error) error {
	if field == "y" {
		field = ""
	}
	return s.view(func(tx *bolt.Tx) error {
		k, _, err := getSweep(tx, id)
		if err != nil {
			return err
		}
		root := tx.Bucket(bucketSweepRuns)
		if root == nil || root.Bucket(k) == nil {
			return nil
		}
		runs, points := tx.Bucket(bucketRuns), tx.Bucket(bucketPoints)
		names := map[string]string{} // one string per series name
		return root.Bucket(k).ForEach(func(nk, rid []byte) error {
			n, err := ParseID(string(rid))
			if err != nil {
				return nil // a run id that is not one: skip (cannot happen)
			}
			v := runs.Get(key(n))
			if v == nil {
				return fn(SweepSample{N: int(binary.BigEndian.Uint64(nk)), ID: string(rid)}) // deleted: no state
			}
			var r struct {
				State   State          `json:"state"`
				Params  map[string]any `json:"params"`
				Summary Floats         `json:"summary"`
				Points  int64          `json:"points"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("run %s: %w", rid, err)
			}
			smp := SweepSample{N: int(binary.BigEndian.Uint64(nk)), ID: string(rid), State: r.State, Params: r.Params, Summary: r.Summary}
			if withPoints != nil && withPoints(r.State) && r.Points > 0 {
				pb := points.Bucket(key(n))
				if pb == nil {
					return fmt.Errorf("run %s: points bucket missing", rid)
				}
				smp.Points = make([]sim.Point, 0, r.Points)
				err := pb.ForEach(func(pk, pv []byte) error {
					if field != "" {
						p, err := decodePoint(pv)
						if err != nil {
							return fmt.Errorf("run %s point %d: %w", rid, binary.BigEndian.Uint64(pk), err)
						}
						v, ok := p.Extra[field]
						if !ok {
							return nil
						}
						name, ok := names[p.Series]
						if !ok {
							name = p.Series
							names[name] = name
						}
						smp.Points = append(smp.Points, sim.Point{Series: name, X: p.X, Y: v})
						return nil
					}
					p, err := decodeXY(pv, names)
					if err != nil {
						return fmt.Errorf("run %s point %d: %w", rid, binary.BigEndian.Uint64(pk), err)
					}
					smp.Points = append(smp.Points, p)
					return nil
				})
				if err != nil {
					return err
				}
			}
			return fn(smp)
		})
	})
}

// decodeXY decodes the series, x and y of a point (see encodePoint),
// interning series names in names.
func decodeXY(b []byte, names map[string]string) (sim.Point, error) {
	var p sim.Point
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n || len(b)-k-int(n) < 16 {
		return p, errCorrupt
	}
	raw := b[k : k+int(n)]
	name, ok := names[string(raw)] // no allocation for the lookup
	if !ok {
		name = string(raw)
		names[name] = name
	}
	p.Series = name
	b = b[k+int(n):]
	p.X = math.Float64frombits(binary.BigEndian.Uint64(b))
	p.Y = math.Float64frombits(binary.BigEndian.Uint64(b[8:]))
	return p, nil
}

// SweepKey returns the notebook's secret for sweep-run credentials, making
// it on first use.
func (s *Bolt) SweepKey() ([]byte, error) {
	var key []byte
	err := s.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get([]byte("sweep-key")); len(v) == 32 {
			key = slices.Clone(v)
		}
		return nil
	})
	if err != nil || key != nil {
		return key, err
	}
	err = s.update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get([]byte("sweep-key")); len(v) == 32 { // made meanwhile
			key = slices.Clone(v)
			return nil
		}
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		return meta.Put([]byte("sweep-key"), key)
	})
	return key, err
}
