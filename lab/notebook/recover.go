package notebook

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/fp8lab/fp8lab/sim"
)

// Report is what [Check] found in a notebook, and what [Recover] copied.
type Report struct {
	Path string
	Size int64
	// File lists problems of the file as a whole: its header and size, the
	// pages bbolt could not read, bbolt's Tx.Check (tree and freelist).
	File []string
	// Runs has one line per run id that was ever given out and not deleted,
	// in id order.
	Runs []RunReport
	// NoRuns is set when not even the list of runs could be read.
	NoRuns bool
}

// RunReport is one run of a [Report].
type RunReport struct {
	ID         string
	Experiment string
	State      State
	Points     int64  // the count in the run's record
	Read       int64  // points that could be read, from the first on
	Problem    string // empty when the record and every point read
	Copied     bool   // Recover: the run is in the new notebook
}

// Intact reports whether the run's record and all its points read.
func (r RunReport) Intact() bool { return r.Problem == "" }

// OK reports whether nothing is damaged.
func (r *Report) OK() bool {
	if len(r.File) > 0 {
		return false
	}
	for _, x := range r.Runs {
		if !x.Intact() {
			return false
		}
	}
	return true
}

// String formats the report, one finding per line.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "notebook %s (%d bytes)\n", r.Path, r.Size)
	if len(r.File) == 0 {
		b.WriteString("file: no problem found (header, size, every page readable, bbolt's tree and freelist check)\n")
	} else {
		fmt.Fprintf(&b, "file: %d problem(s):\n", len(r.File))
		for _, p := range r.File {
			fmt.Fprintf(&b, "  %s\n", p)
		}
	}
	intact := 0
	for _, x := range r.Runs {
		if x.Intact() {
			intact++
		}
	}
	if r.NoRuns {
		b.WriteString("runs: the list of runs does not read\n")
		return strings.TrimRight(b.String(), "\n")
	}
	fmt.Fprintf(&b, "runs: %d, %d intact, %d damaged\n", len(r.Runs), intact, len(r.Runs)-intact)
	for _, x := range r.Runs {
		if x.Intact() {
			continue
		}
		count := strconv.FormatInt(x.Points, 10)
		if x.Points < 0 {
			count = "an unknown number of"
		}
		fmt.Fprintf(&b, "  run %s (%s, %s): %d of %s points read: %s\n", x.ID, x.Experiment, x.State, x.Read, count, x.Problem)
	}
	return strings.TrimRight(b.String(), "\n")
}

// cleanProblem drops the advice from a damage error: the report gives it.
func cleanProblem(err error) string {
	s := err.Error()
	if i := strings.Index(s, "; the file is left as it is"); i >= 0 {
		s = s[:i]
	}
	return s
}

// Check reads the notebook in dir without changing it and reports what is
// damaged: the file (see [Open]) and each run (its record, and how many of
// its points read). It never crashes on a damaged file. The error is for a
// notebook that cannot be read at all (missing, in use by a lab).
func Check(dir string) (*Report, error) {
	rep, s, err := checkOpen(dir)
	if s != nil {
		defer s.Close()
	}
	return rep, err
}

// checkOpen is Check, leaving the store open for Recover.
func checkOpen(dir string) (*Report, *Bolt, error) {
	path := filepath.Join(dir, FileName)
	rep := &Report{Path: path}
	st, err := os.Stat(path)
	if err != nil {
		return rep, nil, fmt.Errorf("notebook: %w", err)
	}
	rep.Size = st.Size()
	if err := preflight(path); err != nil {
		rep.File = append(rep.File, cleanProblem(err))
	}
	if rep.Size == 0 {
		rep.NoRuns = true
		return rep, nil, nil
	}
	s, err := OpenReadOnly(dir)
	if err != nil {
		if strings.Contains(err.Error(), "in use") {
			return rep, nil, err
		}
		rep.File = append(rep.File, cleanProblem(err))
		rep.NoRuns = true
		return rep, nil, nil
	}
	if headerFits(path) {
		rep.File = append(rep.File, s.verify(20)...)
	} else {
		rep.File = append(rep.File, "bbolt's tree and freelist check skipped: the header claims more pages than the file holds")
	}
	seq, err := s.sequence()
	if err != nil {
		rep.File = append(rep.File, "reading the list of runs: "+cleanProblem(err))
		rep.NoRuns = true
		return rep, s, nil
	}
	for n := uint64(1); n <= seq; n++ {
		id := strconv.FormatUint(n, 10)
		r, err := s.Get(id)
		if errors.Is(err, ErrNotFound) {
			continue // deleted
		}
		x := RunReport{ID: id, Experiment: r.Experiment, State: r.State, Points: r.Points}
		switch {
		case err != nil:
			x.State, x.Problem = Damaged, cleanProblem(err)
		case r.State == Damaged:
			x.Problem = r.Error
			x.Points = -1
		}
		pts, err := s.readPoints(id)
		x.Read = int64(len(pts))
		if err != nil && x.Problem == "" {
			x.Problem = cleanProblem(err)
		}
		if x.Problem == "" && x.Read != x.Points {
			x.Problem = fmt.Sprintf("the record counts %d points, the notebook holds %d", x.Points, x.Read)
		}
		rep.Runs = append(rep.Runs, x)
	}
	return rep, s, nil
}

// sequence returns the last run id given out.
func (s *Bolt) sequence() (uint64, error) {
	var seq uint64
	err := s.view(func(tx *bolt.Tx) error {
		seq = tx.Bucket(bucketRuns).Sequence()
		return nil
	})
	return seq, err
}

// readPoints returns the points of a run that read, from the first on, in
// chunks so that damage late in a run keeps the points before it, and the
// error that stopped it.
func (s *Bolt) readPoints(id string) ([]sim.Point, error) {
	const chunk = 4096
	var out []sim.Point
	for {
		pts, err := s.Points(id, int64(len(out)), chunk)
		if err != nil {
			// Salvage the chunk point by point.
			for {
				p, err1 := s.Points(id, int64(len(out)), 1)
				if err1 != nil || len(p) == 0 {
					break
				}
				out = append(out, p...)
			}
			return out, err
		}
		out = append(out, pts...)
		if len(pts) < chunk {
			return out, nil
		}
	}
}

// Recover copies what reads of the notebook in dir into a new notebook in
// newDir (which must not hold one): every run whose record reads, under its
// own id, with the points that read from the first on. A run that lost
// points gets a note saying how many it kept; a run that was queued or
// running becomes Interrupted, as [Open] does. Runs whose record does not
// read are not copied. The damaged notebook is not changed. The report says
// what was found and, per run, whether it was copied.
func Recover(dir, newDir string) (*Report, error) {
	if _, err := os.Stat(filepath.Join(newDir, FileName)); err == nil {
		return nil, fmt.Errorf("%s already holds a notebook: recover writes a new one", newDir)
	}
	if abs1, _ := filepath.Abs(dir); func() bool { abs2, _ := filepath.Abs(newDir); return abs1 == abs2 }() {
		return nil, errors.New("recover writes a new notebook: give another folder")
	}
	rep, src, err := checkOpen(dir)
	if src != nil {
		defer src.Close()
	}
	if err != nil {
		return rep, err
	}
	if rep.NoRuns {
		return rep, fmt.Errorf("notebook %s: not even its list of runs reads; nothing was written to %s", rep.Path, newDir)
	}
	dst, err := Open(newDir)
	if err != nil {
		return rep, err
	}
	defer dst.Close()
	seq, _ := src.sequence()
	for i := range rep.Runs {
		x := &rep.Runs[i]
		if x.State == Damaged {
			continue
		}
		r, err := src.Get(x.ID)
		if err != nil {
			continue
		}
		pts, _ := src.readPoints(x.ID)
		if int64(len(pts)) < r.Points {
			r.Notes = append(r.Notes, fmt.Sprintf("recovered from the damaged notebook %s: %d of %d points could be read", rep.Path, len(pts), r.Points))
		}
		if !r.State.Final() {
			r.State = Interrupted
			r.QueuePos = 0
			if r.Error == "" {
				r.Error = "the run was not finished in the damaged notebook it was recovered from"
			}
		}
		if err := dst.restore(r, pts, seq); err != nil {
			return rep, fmt.Errorf("writing run %s into %s: %w", x.ID, dst.Path(), err)
		}
		x.Copied = true
	}
	return rep, nil
}

// restore stores r under its own id with pts as its points, in
// transactions of at most 50000 points, and raises the id sequence to at
// least seq; the record is kept as it is (times included).
func (s *Bolt) restore(r Run, pts []sim.Point, seq uint64) error {
	n, err := ParseID(r.ID)
	if err != nil {
		return err
	}
	total := int64(len(pts))
	put := func(tx *bolt.Tx, count int64) error {
		r.Points = count
		b, err := json.Marshal(&r)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketRuns).Put(key(n), b)
	}
	err = s.update(func(tx *bolt.Tx) error {
		runs := tx.Bucket(bucketRuns)
		if runs.Get(key(n)) != nil {
			return fmt.Errorf("run %s exists", r.ID)
		}
		if m := max(seq, n); m > runs.Sequence() {
			if err := runs.SetSequence(m); err != nil {
				return err
			}
		}
		if _, err := tx.Bucket(bucketPoints).CreateBucket(key(n)); err != nil {
			return err
		}
		return put(tx, 0)
	})
	for from := int64(0); err == nil && from < total; from += 50000 {
		to := min(total, from+50000)
		err = s.update(func(tx *bolt.Tx) error {
			pb := tx.Bucket(bucketPoints).Bucket(key(n))
			pb.FillPercent = 1
			for i := from; i < to; i++ {
				if err := pb.Put(key(uint64(i)), encodePoint(nil, pts[i])); err != nil {
					return err
				}
			}
			return put(tx, to)
		})
	}
	return err
}
