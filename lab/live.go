package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

// live is a run that has not ended: it is the run's sink, the log its
// viewers read, and the writer of its points to the notebook.
type live struct {
	s        *Server
	id       string
	exp      sim.Experiment // nil for a run streamed in by a client
	values   sim.Values
	cost     sim.Cost // the estimate of a server run
	external bool

	flushMu  sync.Mutex // one flush at a time
	eventsMu sync.Mutex // one events request of a client's run at a time
	ended    chan struct{}

	mu       sync.Mutex
	meta     notebook.Run // the record as it stands (Points = count)
	base     int64        // index of points[0]
	points   []sim.Point  // points base … count-1 (older ones are in the notebook)
	encoded  [][]byte     // the same points in the API's JSON, encoded once for every viewer
	arena    []byte       // where encoded points are appended
	count    int64        // points emitted
	flushed  int64        // points committed to the notebook
	dirty    bool         // meta changed since the last flush
	ver      uint64       // bumped on every change of meta
	changed  chan struct{}
	cancel   context.CancelFunc // cancels the execution, once started
	stopAs   notebook.State     // state to end in when cancelled: Cancelled or Interrupted
	lastSeen time.Time          // external runs: time of the last event
	final    bool               // the end state is set; no more changes
	recorded bool               // a flush committed the end state
	closed   bool               // final and recorded (or given up): forgotten, ended closed

	liveBytes  int             // bytes of encoded points in the log
	notesTaken int64           // notes received, kept or dropped (the key of notes_from)
	notesBytes int             // bytes of the kept notes
	extraNames map[string]bool // names of extra values seen
}

func newLive(s *Server, meta notebook.Run) *live {
	return &live{s: s, id: meta.ID, meta: meta, changed: make(chan struct{}), ended: make(chan struct{}), lastSeen: time.Now()}
}

// signal wakes the viewers; l.mu must be held.
func (l *live) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// touch marks the meta changed; l.mu must be held.
func (l *live) touch() {
	l.dirty = true
	l.ver++
	l.meta.Updated = time.Now().UTC()
	l.signal()
}

// Point appends p to the log.
func (l *live) Point(p sim.Point) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return context.Canceled
	}
	enc := l.encode(p)
	l.points = append(l.points, p)
	l.encoded = append(l.encoded, enc)
	l.liveBytes += len(enc)
	for k := range p.Extra {
		if !l.extraNames[k] {
			if l.extraNames == nil {
				l.extraNames = map[string]bool{}
			}
			l.extraNames[k] = true
		}
	}
	l.count++
	l.meta.Points = l.count
	if !slices.Contains(l.meta.Series, p.Series) {
		l.meta.Series = append(l.meta.Series, p.Series)
		l.ver++
	}
	l.signal()
	return nil
}

// encode returns p in the API's JSON ({"series":…}), appended to the
// arena; l.mu is held. Slices handed out stay valid: a full arena is
// replaced, never overwritten.
func (l *live) encode(p sim.Point) []byte {
	if cap(l.arena)-len(l.arena) < 256 {
		l.arena = make([]byte, 0, 64<<10)
	}
	start := len(l.arena)
	l.arena = sim.AppendPointsJSON(l.arena, []sim.Point{p}) // "[{…}]"
	return l.arena[start+1 : len(l.arena)-1 : len(l.arena)-1]
}

// Progress records the progress.
func (l *live) Progress(done, total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return
	}
	l.meta.Done, l.meta.Total = done, total
	l.touch()
}

// maxNotes and maxNoteLen bound what a run may write as notes.
const (
	maxNotes   = 1000
	maxNoteLen = 4096
)

// notesDropped ends the notes of a run that wrote more than it may keep.
var notesDropped = fmt.Sprintf("(further notes dropped: a run keeps at most %d notes, %d bytes in all)", maxNotes, maxNotesBytes)

// Note appends text to the run's notes (cut to maxNoteLen bytes); past
// maxNotes notes or maxNotesBytes bytes the rest are dropped, and the last
// note kept says so.
func (l *live) Note(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return
	}
	l.notesTaken++
	if n := len(l.meta.Notes); n > 0 && l.meta.Notes[n-1] == notesDropped {
		return
	}
	if len(text) > maxNoteLen {
		text = text[:maxNoteLen] + "…"
	}
	if len(l.meta.Notes) >= maxNotes-1 || l.notesBytes+len(text) > maxNotesBytes-len(notesDropped) {
		text = notesDropped
	}
	l.meta.Notes = append(l.meta.Notes, text)
	l.notesBytes += len(text)
	l.touch()
}

// Summary records the run's summary.
func (l *live) Summary(values map[string]float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return
	}
	l.meta.Summary = notebook.Floats(maps.Clone(values))
	l.touch()
}

// Close does nothing: the run ends with finish.
func (l *live) Close() error { return nil }

// snapshot returns the current record.
func (l *live) snapshot() notebook.Run {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.meta.Clone()
}

// setState changes the state (and the times that go with it).
func (l *live) setState(st notebook.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return
	}
	l.meta.State = st
	if st == notebook.Running {
		now := time.Now().UTC()
		l.meta.Started = &now
		l.meta.QueuePos = 0
	}
	l.touch()
}

// setQueuePos shows the run's place in the queue.
func (l *live) setQueuePos(pos int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final || l.meta.QueuePos == pos {
		return
	}
	l.meta.QueuePos = pos
	l.ver++
	l.signal() // the queue position is not written to the notebook
}

// annotate sets the user's title and note in the live record (the notebook
// is updated by the caller).
func (l *live) annotate(title, note *string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if title != nil {
		l.meta.Title = *title
	}
	if note != nil {
		l.meta.Note = *note
	}
	l.ver++
	l.signal()
}

// maxLivePoints is how many points a live run keeps in memory once they are
// in the notebook; viewers further behind read the notebook.
const maxLivePoints = 1 << 17

// flush commits the points and the record changed since the last flush in
// one transaction. The user's title and note are the notebook's: a flush
// never overwrites them. On an error (a full disk, a damaged notebook, even
// a panic of the store) nothing is lost: the points and the record stay in
// memory and the next flush writes them; the server shows the error until a
// write succeeds.
func (l *live) flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	from := l.flushed
	pts := l.points[from-l.base : l.count-l.base]
	if len(pts) == 0 && !l.dirty {
		l.mu.Unlock()
		return nil
	}
	meta := l.meta.Clone()
	final := l.final // then meta holds the end state and pts the last points
	l.dirty = false
	l.mu.Unlock()

	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("the notebook failed: %v", r)
			}
		}()
		return l.s.store.Append(l.id, from, pts, func(r *notebook.Run) {
			r.State, r.Error = meta.State, meta.Error
			r.Started, r.Ended = meta.Started, meta.Ended
			r.Done, r.Total = meta.Done, meta.Total
			r.Summary, r.Notes = meta.Summary, meta.Notes
			r.QueuePos = 0
		})
	}()
	l.s.noteWrite(err)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.dirty = true // try again next time
		return err
	}
	l.flushed = from + int64(len(pts))
	l.recorded = l.recorded || final
	if n := l.flushed - l.base; (len(l.points) > maxLivePoints || l.liveBytes > maxLiveBytes) && n > 0 {
		for _, e := range l.encoded[:n] {
			l.liveBytes -= len(e)
		}
		l.points = slices.Clone(l.points[n:])
		l.encoded = slices.Clone(l.encoded[n:])
		l.base = l.flushed
		if len(l.encoded) == 0 {
			l.arena = nil // let the encoded points go
		}
	}
	return nil
}

// committed returns how many points are in the notebook.
func (l *live) committed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushed
}

// flusher commits the run every interval until it has ended and its end is
// recorded. When the end could not be recorded at once (finish), the
// flusher keeps trying and completes the end when a write succeeds. At
// shutdown it tries once more and then gives up (the next start marks the
// run interrupted, with the points that were committed).
func (l *live) flusher(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-l.ended:
			return
		case <-l.s.done:
			err := l.flush()
			if l.isFinal() {
				if err != nil {
					l.s.log.Error("notebook: the end of a run could not be recorded before shutdown; it will read interrupted", "run", l.id, "err", err)
				}
				l.complete()
			}
			return
		case <-t.C:
			err := l.flush()
			switch {
			case err != nil && !failing:
				l.s.log.Warn("notebook write failed; the run is kept in memory and written when the notebook accepts it", "run", l.id, "err", err)
			case err == nil && failing:
				l.s.log.Info("notebook write succeeded again", "run", l.id)
			}
			failing = err != nil
			if err == nil && l.endRecorded() {
				l.complete()
				return
			}
		}
	}
}

func (l *live) isFinal() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.final
}

// endRecorded reports whether the notebook holds the run's end state.
func (l *live) endRecorded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recorded
}

// finish ends the run in state st (with msg as its error), commits
// everything with the end state, wakes the viewers and forgets the run.
// Only the first call counts. When the notebook cannot record the end now
// (a full disk), finish returns the error and the run stays live, in its
// end state, until its flusher records it.
func (l *live) finish(st notebook.State, msg string) error {
	l.mu.Lock()
	if l.final {
		l.mu.Unlock()
		return nil
	}
	now := time.Now().UTC()
	l.meta.State, l.meta.Error, l.meta.Ended = st, msg, &now
	l.meta.QueuePos = 0
	l.final = true
	l.touch()
	l.mu.Unlock()
	var err error
	for try := 0; try < 3; try++ {
		if err = l.flush(); err == nil && l.endRecorded() {
			break
		}
		if err == nil {
			err = errors.New("the end state was not committed") // cannot happen: final was set before this flush
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		select {
		case <-l.s.done: // no flusher left to retry
			l.s.log.Error("notebook: could not record the end of a run", "run", l.id, "state", st, "err", err)
			l.complete()
		default:
			l.s.log.Error("notebook: could not record the end of a run yet; kept in memory, retried", "run", l.id, "state", st, "err", err)
		}
		return err
	}
	l.complete()
	return nil
}

// complete forgets an ended run and closes ended (once).
func (l *live) complete() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	st, msg, count := l.meta.State, l.meta.Error, l.count
	l.mu.Unlock()
	l.s.forget(l)
	close(l.ended)
	l.mu.Lock()
	l.signal()
	l.mu.Unlock()
	l.s.log.Info("run ended", "run", l.id, "experiment", l.meta.Experiment, "state", st, "points", count, slog.String("error", msg))
}

// view is what a viewer needs to send next.
type view struct {
	points  []sim.Point // from the cursor on (at most the batch limit)
	encoded [][]byte    // the same, encoded
	behind  bool        // the cursor is before the log: read the notebook
	count   int64       // points emitted so far
	ver     uint64
	state   notebook.State
	final   bool
	changed <-chan struct{}
}

// look returns up to max points from cursor on, and the state of the log.
func (l *live) look(cursor int64, max int) view {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := view{count: l.count, ver: l.ver, state: l.meta.State, final: l.final, changed: l.changed}
	switch {
	case cursor < l.base:
		v.behind = true
	case cursor < l.count:
		end := min(l.count, cursor+int64(max))
		v.points = l.points[cursor-l.base : end-l.base : end-l.base]
		v.encoded = l.encoded[cursor-l.base : end-l.base : end-l.base]
	}
	return v
}
