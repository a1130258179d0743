package notebook

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/fp8lab/fp8lab/sim"
)

// State is where a run stands.
type State string

// The states of a run. Queued and Running are live; the others are final.
const (
	Queued      State = "queued"      // waiting for a free slot of the run pool
	Running     State = "running"     // computing (on the server, or streamed in by a client)
	Done        State = "done"        // ended without error
	Failed      State = "failed"      // the experiment returned an error or panicked
	Cancelled   State = "cancelled"   // cancelled by a user
	Interrupted State = "interrupted" // cut short by a crash, a kill, a shutdown or a lost client
	// Damaged is shown for a run whose stored record cannot be read (a
	// damaged notebook file); it is never stored. Such a run can be listed,
	// its points read and the run deleted; nothing else.
	Damaged State = "damaged"
)

// Final reports whether s is an end state: Done, Failed, Cancelled,
// Interrupted (or Damaged).
func (s State) Final() bool {
	switch s {
	case Done, Failed, Cancelled, Interrupted, Damaged:
		return true
	}
	return false
}

// Valid reports whether s is one of the states above.
func (s State) Valid() bool { return s == Queued || s == Running || s.Final() }

// Origin says where a run was computed.
type Origin string

// The origins of a run.
const (
	OriginServer   Origin = "server"   // the lab's run pool
	OriginBrowser  Origin = "browser"  // the page, as WebAssembly in a Web Worker
	OriginTerminal Origin = "terminal" // `lab run NAME -lab URL`
	OriginClient   Origin = "client"   // any Go program through sim.LabRun
)

// Valid reports whether o is one of the origins above.
func (o Origin) Valid() bool {
	switch o {
	case OriginServer, OriginBrowser, OriginTerminal, OriginClient:
		return true
	}
	return false
}

// Run is the record of one run. Points are kept apart (see [Store.Points]);
// Points here counts them.
type Run struct {
	ID         string         `json:"id"`
	Experiment string         `json:"experiment"`
	Params     map[string]any `json:"params"`          // parameter values as JSON decodes them
	Flags      string         `json:"flags,omitempty"` // the same values as `lab run` flags
	// Reproduce is the command that computes the run again, as a shell
	// reads it (sim.Reproduce): set for runs of an experiment the lab
	// knows.
	Reproduce string `json:"reproduce,omitempty"`
	Seed      uint64 `json:"seed"`
	Origin    Origin `json:"origin"`
	// Registered is false for a run streamed in by a client whose experiment
	// the lab does not know (a user's own program); its parameters were then
	// not validated and it cannot be re-run by the lab.
	Registered bool `json:"registered"`

	// Build of the program that computed the run.
	Version   string `json:"version"`            // fp8lab module version, "(devel)" for a source build
	Revision  string `json:"revision,omitempty"` // VCS revision, "+dirty" when modified
	GoVersion string `json:"go_version,omitempty"`
	Platform  string `json:"platform,omitempty"` // GOOS/GOARCH, and the browser for wasm runs
	Bindings  string `json:"bindings,omitempty"` // native bindings and their versions (the WebGPU binding)
	Device    string `json:"device,omitempty"`   // the machine that computed: CPU model and logical CPUs, or the browser's

	State    State      `json:"state"`
	Error    string     `json:"error,omitempty"`
	Created  time.Time  `json:"created"`
	Started  *time.Time `json:"started,omitempty"`
	Ended    *time.Time `json:"ended,omitempty"`
	Updated  time.Time  `json:"updated"`
	Points   int64      `json:"points"`
	Done     int64      `json:"done"`  // progress: units of work done
	Total    int64      `json:"total"` // progress: units of work planned
	Series   []string   `json:"series,omitempty"`
	Summary  Floats     `json:"summary,omitempty"`
	Notes    []string   `json:"notes,omitempty"` // written by the experiment
	Title    string     `json:"title,omitempty"` // the user's title
	Note     string     `json:"note,omitempty"`  // the user's annotation
	RerunOf  string     `json:"rerun_of,omitempty"`
	Tags     []string   `json:"tags,omitempty"`           // the user's tags
	Sweep    string     `json:"sweep,omitempty"`          // the sweep the run belongs to
	SweepRun int        `json:"sweep_run,omitempty"`      // its number in the sweep (with Sweep)
	QueuePos int        `json:"queue_position,omitempty"` // 1 = next to start; only while queued
}

// Floats is a map of named numbers whose JSON form writes NaN and ±Inf,
// which JSON cannot hold, as null, and reads null back as NaN.
type Floats map[string]float64

// MarshalJSON writes the map with non-finite values as null.
func (f Floats) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	m := make(map[string]*float64, len(f))
	for k, v := range f {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			m[k] = nil
			continue
		}
		m[k] = &v
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the map, null as NaN.
func (f *Floats) UnmarshalJSON(b []byte) error {
	var m map[string]*float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil {
		*f = nil
		return nil
	}
	*f = make(Floats, len(m))
	for k, v := range m {
		if v == nil {
			(*f)[k] = math.NaN()
		} else {
			(*f)[k] = *v
		}
	}
	return nil
}

// Clone returns a deep copy of r.
func (r Run) Clone() Run {
	c := r
	if r.Params != nil {
		b, _ := json.Marshal(r.Params)
		c.Params = nil
		_ = json.Unmarshal(b, &c.Params)
	}
	c.Series = append([]string(nil), r.Series...)
	c.Notes = append([]string(nil), r.Notes...)
	c.Tags = append([]string(nil), r.Tags...)
	if r.Summary != nil {
		c.Summary = make(Floats, len(r.Summary))
		for k, v := range r.Summary {
			c.Summary[k] = v
		}
	}
	if r.Started != nil {
		t := *r.Started
		c.Started = &t
	}
	if r.Ended != nil {
		t := *r.Ended
		c.Ended = &t
	}
	return c
}

// Query selects runs for [Store.List]. The zero Query lists every run.
type Query struct {
	Experiment string // only runs of this experiment, when not empty
	State      State  // only runs in this state, when not empty
	Limit      int    // at most this many (newest first), when > 0
}

// Errors of the store.
var (
	ErrNotFound = errors.New("no such run")
	// ErrGap is returned by [Store.Append] when the points do not start
	// right after those already stored.
	ErrGap = errors.New("points do not follow the stored ones")
	// ErrClosed is returned after [Store.Close].
	ErrClosed = errors.New("notebook is closed")
)

// Store keeps runs and their points. Implementations are safe for
// concurrent use; every method either commits all it was asked to or nothing.
type Store interface {
	// Create stores a new run and sets r.ID, r.Created and r.Updated.
	Create(r *Run) error
	// Get returns the run with the given id, or ErrNotFound.
	Get(id string) (Run, error)
	// List returns the runs selected by q, newest first.
	List(q Query) ([]Run, error)
	// Update applies fn to the stored run and stores the result, unless fn
	// returns an error, which Update then returns. fn must not change the ID.
	Update(id string, fn func(*Run) error) error
	// Append stores points after the run's first `from` points and applies
	// fn (which may be nil) to the run, in one transaction. It returns
	// ErrGap unless from equals the number of points stored; Run.Points is
	// kept equal to that number.
	Append(id string, from int64, points []sim.Point, fn func(*Run)) error
	// Points returns up to limit points (all when limit <= 0) of the run
	// from index from on.
	Points(id string, from int64, limit int) ([]sim.Point, error)
	// Delete removes the run and its points.
	Delete(id string) error
	// Close releases the store.
	Close() error
}

// ParseID checks a run id (a positive decimal number) and returns it as a
// number.
func ParseID(id string) (uint64, error) {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != id {
		return 0, ErrNotFound
	}
	return n, nil
}
