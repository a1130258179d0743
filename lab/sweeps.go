package lab

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/lab/runquery"
	"github.com/fp8lab/fp8lab/lab/sweep"
	"github.com/fp8lab/fp8lab/sim"
)

// Sweeps: this file (sweeps.go) is the lab's side of them, the HTTP API and
// the sweeper that runs them; package lab/sweep holds the grid and the
// statistics.
//
//	POST /api/sweeps                   start one: {"experiment", "params", "axes": [{"name", "values"}],
//	                                   "seeds": [1, 2] or "1..20", "executor": "auto"|"pool"|"slurm", "title", "tags"}
//	GET  /api/sweeps                   the sweeps, newest first
//	GET  /api/sweeps/{id}              one, with the states of its runs (and of its Slurm tasks)
//	POST /api/sweeps/{id}/cancel       cancel: queued runs end, running ones stop, Slurm jobs get scancel
//	POST /api/sweeps/{id}/resume       run again what did not end done in an ended sweep (failed, cancelled)
//	GET  /api/sweeps/{id}/aggregate    ?group=a,b (default: every swept parameter) &field=y|EXTRA &format=json|csv
//	PUT  /api/runs/{id}/tags           {"tags": [...]}
//	GET  /api/runs?q=QUERY             the runs list filtered (package runquery)
//
// A sweep's runs are ordinary runs of the notebook with Run.Sweep set. The
// sweep record stays "running" until every run has ended, across restarts:
// New resumes every running sweep, and runs that did not end done (a
// crash, a shutdown) are run again; runs that ended done are kept.

// Limits of the sweep endpoints.
const (
	maxTags        = 32
	maxTagLen      = 64
	maxAggPoints   = 20_000_000 // points read for one aggregate
	sweepPollEvery = 500 * time.Millisecond
)

var tagRE = regexp.MustCompile(`^[A-Za-z0-9._:+-]{1,64}$`)

// sweeper runs and serves the sweeps of a Server.
type sweeper struct {
	s     *Server
	store notebook.SweepStore // nil: the Store keeps no sweeps

	mu     sync.Mutex
	active map[string]*runner // running sweeps
	cache  map[string]aggCacheEntry
	tasks  map[string]map[string]string // sweep → Slurm task → state, as last seen
	// shared bounds the runs of all pool sweeps queued or running at once
	// to half the queue, so that other users' runs always find room.
	shared chan struct{}
}

// runner is the goroutine that executes a sweep.
type runner struct {
	stop context.CancelFunc
	done chan struct{}
}

type aggCacheEntry struct {
	updated time.Time
	res     sweep.Result
}

func newSweeper(s *Server) *sweeper {
	sw := &sweeper{s: s, active: map[string]*runner{}, cache: map[string]aggCacheEntry{}, tasks: map[string]map[string]string{},
		shared: make(chan struct{}, max(s.opts.MaxQueue/2, 1))}
	sw.store, _ = s.store.(notebook.SweepStore)
	return sw
}

func (s *Server) sweepRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /api/sweeps", s.handleStartSweep)
	m.HandleFunc("GET /api/sweeps", s.handleListSweeps)
	m.HandleFunc("GET /api/sweeps/{id}", s.handleGetSweep)
	m.HandleFunc("POST /api/sweeps/{id}/cancel", s.handleCancelSweep)
	m.HandleFunc("POST /api/sweeps/{id}/resume", s.handleResumeSweep)
	m.HandleFunc("GET /api/sweeps/{id}/aggregate", s.handleAggregate)
	m.HandleFunc("PUT /api/runs/{id}/tags", s.handleTags)
}

// resume starts the runner of every sweep left running (by a restart).
func (sw *sweeper) resume() {
	if sw.store == nil {
		return
	}
	list, err := sw.store.ListSweeps()
	if err != nil {
		sw.s.log.Error("sweeps: cannot list them to resume", "err", err)
		return
	}
	for _, rec := range list {
		if rec.State == notebook.Running {
			sw.s.log.Info("resuming sweep", "sweep", rec.ID, "experiment", rec.Experiment, "executor", rec.Executor)
			sw.launch(rec)
		}
	}
}

// gridOf rebuilds the grid of a stored sweep.
func gridOf(rec notebook.Sweep) (*sweep.Grid, error) {
	exp, err := sim.Lookup(rec.Experiment)
	if err != nil {
		return nil, err
	}
	spec := sweep.Spec{Experiment: rec.Experiment, Params: rec.Params, Seeds: rec.Seeds}
	for _, a := range rec.Axes {
		spec.Axes = append(spec.Axes, sweep.Axis{Name: a.Name, Values: a.Values})
	}
	return sweep.NewGrid(exp, spec)
}

// launch starts the runner of rec in the background.
func (sw *sweeper) launch(rec notebook.Sweep) {
	g, err := gridOf(rec)
	if err != nil {
		sw.end(rec.ID, notebook.Failed, "cannot resume: "+err.Error())
		return
	}
	ctx, cancel := context.WithCancel(sw.s.runCtx)
	rn := &runner{stop: cancel, done: make(chan struct{})}
	sw.mu.Lock()
	sw.active[rec.ID] = rn
	sw.mu.Unlock()
	sw.s.wg.Add(1)
	go func() {
		defer sw.s.wg.Done()
		defer func() {
			sw.mu.Lock()
			delete(sw.active, rec.ID)
			sw.mu.Unlock()
			cancel()
			close(rn.done)
		}()
		if rec.Executor == "slurm" {
			sw.runSlurm(ctx, rec, g)
		} else {
			sw.runPool(ctx, rec, g)
		}
	}()
}

// end records the sweep's end state, unless it has ended already.
func (sw *sweeper) end(id string, st notebook.State, msg string) {
	err := sw.store.UpdateSweep(id, func(rec *notebook.Sweep) error {
		if rec.State != notebook.Running {
			return nil
		}
		now := time.Now().UTC()
		rec.State, rec.Error, rec.Ended = st, msg, &now
		return nil
	})
	if err != nil {
		sw.s.log.Error("sweep: recording its end", "sweep", id, "err", err)
		return
	}
	sw.s.log.Info("sweep ended", "sweep", id, "state", st, "error", msg)
}

// doneRuns returns which run numbers of the sweep have a run that ended
// done (in the notebook: a live run has not).
func (sw *sweeper) doneRuns(id string) (map[int]bool, error) {
	done := map[int]bool{}
	err := sw.store.ReadSweep(id, nil, func(smp notebook.SweepSample) error {
		if smp.State == notebook.Done {
			done[smp.N] = true
		}
		return nil
	})
	return done, err
}

// finish ends a sweep whose runs have all ended: done when every run is.
func (sw *sweeper) finish(id string, total int) {
	done, err := sw.doneRuns(id)
	if err != nil {
		sw.end(id, notebook.Failed, err.Error())
		return
	}
	if len(done) == total {
		sw.end(id, notebook.Done, "")
		return
	}
	sw.end(id, notebook.Failed, fmt.Sprintf("%d of %d runs did not end done", total-len(done), total))
}

// runPool executes the sweep's missing runs in the lab's pool, keeping at
// most twice the pool's workers of them queued or running, and all pool
// sweeps together at most half the queue (sweeper.shared), so that neither
// a large sweep nor many sweeps fill the queue or starve other users' runs.
func (sw *sweeper) runPool(ctx context.Context, rec notebook.Sweep, g *sweep.Grid) {
	done, err := sw.doneRuns(rec.ID)
	if err != nil {
		sw.end(rec.ID, notebook.Failed, err.Error())
		return
	}
	window := min(2*sw.s.opts.Workers, max(sw.s.opts.MaxQueue/2, 1))
	slots := make(chan struct{}, window)
	exp := g.Experiment()
	stopped := false
	for i := 0; i < g.Len() && !stopped; i++ {
		if done[i] {
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			stopped = true
			continue
		}
		select {
		case sw.shared <- struct{}{}:
		case <-ctx.Done():
			<-slots
			stopped = true
			continue
		}
		release := func() { <-sw.shared; <-slots }
		values, seed, err := g.Run(i)
		if err != nil {
			release()
			sw.end(rec.ID, notebook.Failed, err.Error())
			return
		}
		var run notebook.Run
		for {
			run, err = sw.s.submit(exp, values, seed, rec.Title, "", "", func(r *notebook.Run) {
				r.Sweep, r.SweepRun, r.Tags = rec.ID, i, slices.Clone(rec.Tags)
			})
			wait := 100 * time.Millisecond // other users filled the queue: wait for room
			switch {
			case errors.Is(err, errBusy):
			case errors.Is(err, notebook.ErrDiskFull):
				wait = time.Second // the run cannot be recorded yet: wait for space
			default:
				wait = 0
			}
			if wait == 0 {
				break
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		if err != nil {
			release()
			stopped = true
			if !errors.Is(err, errClosing) && ctx.Err() == nil {
				sw.end(rec.ID, notebook.Failed, err.Error())
				return
			}
			continue
		}
		for { // the run's number must be recorded, or the sweep loses the run
			err := sw.store.SetSweepRun(rec.ID, i, run.ID)
			if err == nil || !errors.Is(err, notebook.ErrDiskFull) || ctx.Err() != nil {
				if err != nil {
					sw.s.log.Error("sweep: recording a run", "sweep", rec.ID, "run", run.ID, "err", err)
				}
				break
			}
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}
		l := sw.s.liveRun(run.ID)
		go func() {
			if l != nil {
				<-l.ended
			}
			release()
		}()
	}
	for range window { // wait for the last runs
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil || stopped {
		return // cancelled (recorded by the canceller) or shutting down (resumed on restart)
	}
	sw.finish(rec.ID, g.Len())
}

// ---- HTTP

// sweepRequest is the body of POST /api/sweeps.
type sweepRequest struct {
	Experiment string            `json:"experiment"`
	Params     map[string]any    `json:"params"`
	Axes       []json.RawMessage `json:"axes"`
	Seeds      json.RawMessage   `json:"seeds"`
	Executor   string            `json:"executor"`
	Title      string            `json:"title"`
	Tags       []string          `json:"tags"`
}

func parseSweepSeeds(raw json.RawMessage) ([]uint64, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return []uint64{1}, nil
	}
	if t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return nil, errorf("seeds: %v", err)
		}
		return sweep.ParseSeeds(s)
	}
	var list []uint64
	if err := json.Unmarshal(t, &list); err != nil {
		return nil, errorf(`seeds: want a list of whole numbers or a text such as "1..20"`)
	}
	return list, nil
}

func checkTags(tags []string) error {
	if len(tags) > maxTags {
		return errorf("%d tags; at most %d", len(tags), maxTags)
	}
	for _, t := range tags {
		if !tagRE.MatchString(t) {
			return errorf("tag %q: a tag is 1 to %d letters, digits and . _ : + -", t, maxTagLen)
		}
	}
	return nil
}

func (s *Server) handleStartSweep(w http.ResponseWriter, r *http.Request) {
	if s.sw.store == nil {
		writeError(w, http.StatusNotImplemented, errorf("this lab's notebook keeps no sweeps"))
		return
	}
	var req sweepRequest
	if status, err := decodeBody(r, &req); err != nil {
		writeError(w, status, err)
		return
	}
	exp, err := sim.Lookup(req.Experiment)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	seeds, err := parseSweepSeeds(req.Seeds)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := checkAnnotation(req.Title, ""); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := checkTags(req.Tags); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	spec := sweep.Spec{Experiment: req.Experiment, Params: req.Params, Seeds: seeds}
	for i, raw := range req.Axes {
		var a struct {
			Name   string            `json:"name"`
			Values []json.RawMessage `json:"values"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			writeError(w, http.StatusBadRequest, errorf("axes[%d]: want {\"name\": …, \"values\": […]}: %v", i, err))
			return
		}
		ax := sweep.Axis{Name: a.Name}
		for _, v := range a.Values {
			var x any
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.UseNumber()
			if err := dec.Decode(&x); err != nil {
				writeError(w, http.StatusBadRequest, errorf("axes[%d]: %v", i, err))
				return
			}
			ax.Values = append(ax.Values, x)
		}
		spec.Axes = append(spec.Axes, ax)
	}
	g, err := sweep.NewGrid(exp, spec)
	if err == nil {
		// Every run keeps its parameters within the limit of POST
		// /api/runs: checked on the run that holds the most.
		var largest sim.Values
		if largest, err = g.LargestRun(); err == nil {
			if err = checkParams(paramsMap(largest)); err != nil {
				err = fmt.Errorf("a run of this sweep: %w", err)
			}
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	executor, err := s.chooseExecutor(req.Executor, g.Len())
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if executor == "pool" { // every grid point within the lab's budget (the seed does not change a cost)
		for p := range g.Points() {
			values, _, err := g.Run(p * len(g.Spec.Seeds))
			if err == nil {
				_, err = s.estimate(exp, values)
			}
			if err != nil {
				writeError(w, http.StatusBadRequest, errorf("grid point %s: %v", values.Flags(), err))
				return
			}
		}
	}
	if s.refuseClosing(w) {
		return
	}
	rec := notebook.Sweep{
		Experiment: exp.Name(), Params: paramsJSON(g.Spec.Params), Seeds: g.Spec.Seeds, Runs: g.Len(),
		Executor: executor, State: notebook.Running, Title: req.Title, Tags: req.Tags,
	}
	for _, a := range g.Spec.Axes {
		rec.Axes = append(rec.Axes, notebook.SweepAxis{Name: a.Name, Values: a.Values})
	}
	if err := s.sw.store.CreateSweep(&rec); err != nil {
		writeError(w, http.StatusInternalServerError, errorf("the notebook could not record the sweep: %v", err))
		return
	}
	s.log.Info("sweep started", "sweep", rec.ID, "experiment", rec.Experiment, "runs", rec.Runs, "executor", executor)
	s.sw.launch(rec)
	w.Header().Set("Location", "/api/sweeps/"+rec.ID)
	writeJSON(w, http.StatusCreated, rec)
}

// paramsJSON returns fixed values as JSON would decode them (json.Number
// as float64), so that stored sweeps compare with their runs.
func paramsJSON(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// chooseExecutor resolves "auto" (or empty): Slurm when the lab has Slurm
// and the sweep has more runs than Slurm.MinRuns, the pool otherwise.
func (s *Server) chooseExecutor(want string, runs int) (string, error) {
	switch want {
	case "", "auto":
		if s.opts.Slurm != nil && runs > s.opts.Slurm.minRuns(s.opts.Workers) {
			return "slurm", nil
		}
		return "pool", nil
	case "pool":
		return "pool", nil
	case "slurm":
		if s.opts.Slurm == nil {
			return "", errorf("executor slurm: this lab was started without Slurm (lab serve -slurm)")
		}
		return "slurm", nil
	}
	return "", errorf("executor %q: want auto, pool or slurm", want)
}

// SweepStatus is the answer of GET /api/sweeps/{id}: the record and where
// its runs stand.
type SweepStatus struct {
	notebook.Sweep
	// States counts the sweep's runs by state; "missing" counts run numbers
	// that have no run yet.
	States map[string]int `json:"states"`
	// RunIDs lists the run of each number ("" when none yet).
	RunIDs []string `json:"run_ids"`
	// SlurmTasks counts the Slurm array tasks by Slurm state, as squeue or
	// sacct last showed them.
	SlurmTasks map[string]int `json:"slurm_tasks,omitempty"`
}

func (s *Server) sweepStatus(id string) (SweepStatus, error) {
	rec, err := s.sw.store.GetSweep(id)
	if err != nil {
		return SweepStatus{}, err
	}
	st := SweepStatus{Sweep: rec, States: map[string]int{}, RunIDs: make([]string, rec.Runs)}
	found := 0
	// One read of the notebook; live runs' states are the live records'
	// (the notebook lags them by up to a flush).
	err = s.sw.store.ReadSweep(id, nil, func(smp notebook.SweepSample) error {
		if smp.N < 0 || smp.N >= rec.Runs {
			return nil
		}
		found++
		st.RunIDs[smp.N] = smp.ID
		state := smp.State
		if l := s.liveRun(smp.ID); l != nil {
			l.mu.Lock()
			state = l.meta.State
			l.mu.Unlock()
		}
		if state == "" {
			state = "deleted"
		}
		st.States[string(state)]++
		return nil
	})
	if err != nil {
		return SweepStatus{}, err
	}
	if missing := rec.Runs - found; missing > 0 {
		st.States["missing"] = missing
	}
	s.sw.mu.Lock()
	if tasks := s.sw.tasks[id]; len(tasks) > 0 {
		st.SlurmTasks = map[string]int{}
		for _, state := range tasks {
			st.SlurmTasks[state]++
		}
	}
	s.sw.mu.Unlock()
	return st, nil
}

func (s *Server) writeSweepError(w http.ResponseWriter, id string, err error) {
	if errors.Is(err, notebook.ErrNotFound) {
		writeError(w, http.StatusNotFound, errorf("no sweep %q", id))
		return
	}
	s.log.Error("notebook", "sweep", id, "err", err)
	writeError(w, http.StatusInternalServerError, errorf("notebook: %v", err))
}

// handleListSweeps answers GET /api/sweeps?limit=N&brief=1: the newest N
// sweeps (default 50, at most maxSweepList), "more" when there are older
// ones, at most maxListBytes of records ("truncated" past it); brief=1
// leaves out the fixed parameters and the axes' values (keeping each
// axis's name and count), all a list needs. Only N records are read.
func (s *Server) handleListSweeps(w http.ResponseWriter, r *http.Request) {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSweepList {
			writeError(w, http.StatusBadRequest, errorf("limit %q: want a whole number from 1 to %d", v, maxSweepList))
			return
		}
		limit = n
	}
	brief := false
	switch v := r.URL.Query().Get("brief"); v {
	case "":
	case "1", "true":
		brief = true
	case "0", "false":
	default:
		writeError(w, http.StatusBadRequest, errorf("brief %q: want 1 or 0", v))
		return
	}
	if s.sw.store == nil {
		writeJSON(w, http.StatusOK, map[string]any{"sweeps": []notebook.Sweep{}, "more": false})
		return
	}
	list, more, err := s.sw.store.ListSweepsN(limit)
	if err != nil {
		s.writeSweepError(w, "", err)
		return
	}
	b, truncated := appendJSONList([]byte(`{"sweeps":[`), list, func(rec notebook.Sweep) any {
		if brief {
			return briefSweep(rec)
		}
		return rec
	})
	b = append(b, `],"more":`...)
	b = strconv.AppendBool(b, more || truncated)
	if truncated {
		b = append(b, `,"truncated":true`...)
	}
	writeRawJSON(w, http.StatusOK, append(b, '}'))
}

// maxSweepList is the most sweeps one GET /api/sweeps answers.
const maxSweepList = 1000

// briefSweep is a sweep as a list shows it: no fixed parameters, no seeds,
// the axes by name and number of values.
func briefSweep(rec notebook.Sweep) any {
	type axis struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	axes := make([]axis, len(rec.Axes))
	for i, a := range rec.Axes {
		axes[i] = axis{a.Name, len(a.Values)}
	}
	return struct {
		ID         string         `json:"id"`
		Experiment string         `json:"experiment"`
		Axes       []axis         `json:"axes"`
		Seeds      int            `json:"seeds"`
		Runs       int            `json:"runs"`
		Executor   string         `json:"executor"`
		State      notebook.State `json:"state"`
		Error      string         `json:"error,omitempty"`
		Title      string         `json:"title,omitempty"`
		Tags       []string       `json:"tags,omitempty"`
		Created    time.Time      `json:"created"`
		Updated    time.Time      `json:"updated"`
		Ended      *time.Time     `json:"ended,omitempty"`
	}{rec.ID, rec.Experiment, axes, len(rec.Seeds), rec.Runs, rec.Executor, rec.State, rec.Error, rec.Title, rec.Tags, rec.Created, rec.Updated, rec.Ended}
}

// refuseClosing answers 503 with Retry-After and returns true while the
// lab shuts down (no sweep starts or resumes then).
func (s *Server) refuseClosing(w http.ResponseWriter) bool {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, errClosing)
	}
	return closing
}

// sweepID returns the sweep id of the request's path, or answers 404 and
// false when the lab keeps no sweeps (no data folder).
func (s *Server) sweepID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if s.sw.store == nil {
		writeError(w, http.StatusNotFound, errorf("no sweep %q", id))
		return "", false
	}
	return id, true
}

// writeSweepStatus answers with the sweep's status (sweepStatus), or its
// error.
func (s *Server) writeSweepStatus(w http.ResponseWriter, id string) {
	st, err := s.sweepStatus(id)
	if err != nil {
		s.writeSweepError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleGetSweep(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sweepID(w, r)
	if !ok {
		return
	}
	s.writeSweepStatus(w, id)
}

func (s *Server) handleCancelSweep(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sweepID(w, r)
	if !ok {
		return
	}
	rec, err := s.sw.store.GetSweep(id)
	if err != nil {
		s.writeSweepError(w, id, err)
		return
	}
	if rec.State != notebook.Running {
		writeError(w, http.StatusConflict, errorf("sweep %s has already ended (%s)", id, rec.State))
		return
	}
	s.sw.cancel(rec)
	s.writeSweepStatus(w, id)
}

func (s *Server) handleResumeSweep(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sweepID(w, r)
	if !ok {
		return
	}
	if s.refuseClosing(w) {
		return
	}
	var rec notebook.Sweep
	err := s.sw.store.UpdateSweep(id, func(sw *notebook.Sweep) error {
		if sw.State == notebook.Running || sw.State == notebook.Done {
			return errorf("sweep %s is %s: nothing to resume", id, sw.State)
		}
		if sw.Executor == "slurm" && s.opts.Slurm == nil {
			return errorf("sweep %s runs on Slurm, and this lab was started without it", id)
		}
		sw.State, sw.Error, sw.Ended = notebook.Running, "", nil
		sw.SlurmJobs = slices.DeleteFunc(sw.SlurmJobs, func(string) bool { return true }) // a fresh allowance of submissions
		rec = *sw
		return nil
	})
	if err != nil {
		if errors.Is(err, notebook.ErrNotFound) {
			s.writeSweepError(w, id, err)
			return
		}
		writeError(w, http.StatusConflict, err)
		return
	}
	s.log.Info("sweep resumed", "sweep", id)
	s.sw.launch(rec)
	s.writeSweepStatus(w, id)
}

// cancel stops the sweep's runner, its Slurm jobs and its live runs, and
// records it cancelled. The end is recorded first (a runner that stops
// records nothing else, and no new task registers a run); the Slurm jobs
// get scancel at once after it, so that no pending task starts in between
// to find the sweep ended and fail, then again, for an array the runner
// submitted while it was stopping, once the runner has stopped.
func (sw *sweeper) cancel(rec notebook.Sweep) {
	sw.end(rec.ID, notebook.Cancelled, "cancelled by a user")
	cancelled := sw.scancel(rec.ID, nil)
	sw.mu.Lock()
	rn := sw.active[rec.ID]
	sw.mu.Unlock()
	if rn != nil { // stop the runner, so that it starts nothing more
		rn.stop()
		select {
		case <-rn.done:
		case <-time.After(10 * time.Second):
			sw.s.log.Error("sweep: the runner did not stop within 10 s", "sweep", rec.ID)
		}
	}
	sw.scancel(rec.ID, cancelled)
	runs, _ := sw.store.SweepRuns(rec.ID)
	for _, rid := range runs {
		sw.s.cancelRun(rid)
	}
}

// scancel cancels the Slurm jobs of sweep id that are not in done, as the
// notebook holds them now, and returns them with done.
func (sw *sweeper) scancel(id string, done []string) []string {
	rec, err := sw.store.GetSweep(id)
	if err != nil || sw.s.opts.Slurm == nil {
		return done
	}
	var jobs []string
	for _, j := range rec.SlurmJobs {
		if j != "|" && !slices.Contains(done, j) {
			jobs = append(jobs, j)
		}
	}
	if err := sw.s.opts.Slurm.scancel(context.Background(), jobs); err != nil {
		sw.s.log.Error("sweep: scancel", "sweep", id, "err", err)
	}
	return append(done, jobs...)
}

func (s *Server) handleTags(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req struct {
		Tags []string `json:"tags"`
	}
	if status, err := decodeBody(r, &req); err != nil {
		writeError(w, status, err)
		return
	}
	if req.Tags == nil {
		writeError(w, http.StatusBadRequest, errorf(`tags: missing (give {"tags": [...]}, [] removes them all)`))
		return
	}
	if err := checkTags(req.Tags); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	slices.Sort(req.Tags)
	tags := slices.Compact(req.Tags)
	err := s.store.Update(id, func(run *notebook.Run) error {
		run.Tags = tags
		return nil
	})
	if err != nil {
		s.writeRunError(w, id, err)
		return
	}
	if l := s.liveRun(id); l != nil {
		l.mu.Lock()
		l.meta.Tags = slices.Clone(tags)
		l.ver++
		l.signal()
		l.mu.Unlock()
	}
	s.handleGetRun(w, r)
}

// runFilter returns the filter of the runs list's ?q=, nil when none.
func runFilter(r *http.Request) (*runquery.Query, error) {
	text := r.URL.Query().Get("q")
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	q, err := runquery.Parse(text)
	if err != nil {
		return nil, err
	}
	return &q, nil
}

// ---- aggregation

func (s *Server) handleAggregate(w http.ResponseWriter, r *http.Request) {
	id, ok := s.sweepID(w, r)
	if !ok {
		return
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "csv" {
		writeError(w, http.StatusBadRequest, errorf("format %q: want json or csv", format))
		return
	}
	rec, err := s.sw.store.GetSweep(id)
	if err != nil {
		s.writeSweepError(w, id, err)
		return
	}
	var groupBy []string
	if v, ok := r.URL.Query()["group"]; ok {
		for _, n := range strings.Split(strings.Join(v, ","), ",") {
			if n = strings.TrimSpace(n); n == "" {
				continue
			}
			if !slices.ContainsFunc(rec.Axes, func(a notebook.SweepAxis) bool { return a.Name == n }) {
				writeError(w, http.StatusBadRequest, errorf("group %q: not a swept parameter of sweep %s (%s)", n, id, axisNames(rec)))
				return
			}
			if !slices.Contains(groupBy, n) {
				groupBy = append(groupBy, n)
			}
		}
	} else {
		groupBy = axisNames(rec)
	}
	field := r.URL.Query().Get("field")
	if field == "" {
		field = "y"
	}
	opt, err := aggregateOptions(rec.Experiment, field)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	res, err := s.sw.aggregate(rec, groupBy, opt)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err)
		return
	}
	if format == "csv" {
		var b bytes.Buffer
		if err := res.WriteCSV(&b); err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="sweep-%s-aggregate.csv"`, id))
		h.Set("Cache-Control", "no-store")
		w.Write(b.Bytes())
		return
	}
	b, err := json.Marshal(struct {
		Sweep     notebook.Sweep `json:"sweep"`
		Aggregate sweep.Result   `json:"aggregate"`
	}{rec, res})
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if r.URL.Query().Get("download") != "" {
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="sweep-%s-aggregate.json"`, id))
	}
	writeRawJSON(w, http.StatusOK, b)
}

func axisNames(rec notebook.Sweep) []string {
	out := make([]string, len(rec.Axes))
	for i, a := range rec.Axes {
		out[i] = a.Name
	}
	return out
}

// aggregateOptions returns what the aggregate of a sweep of experiment
// describes: field (the point quantity: "y" or a point extra the
// experiment's chart declares), with the units the chart declares, and
// percentile-bootstrap intervals for the quantities it draws on a log axis
// (positive ones: an error, a time), whose t interval can go below zero.
func aggregateOptions(experiment, field string) (sweep.Options, error) {
	opt := sweep.Options{Field: field}
	var ch sim.Chart
	if e, err := sim.Lookup(experiment); err == nil {
		if c, ok := e.(sim.Charter); ok {
			ch = c.Chart()
		}
	}
	f, declared := ch.FieldOf(field)
	if !declared {
		return opt, errorf("field %q: not a point quantity %s declares (y, x or one of its fields)", field, experiment)
	}
	if field == "x" {
		return opt, errorf("field x: the aggregate's points are per x already; pick y or a field")
	}
	axisOf := func(kind, name string) (sim.Axis, bool) {
		if kind == "summary" {
			return ch.SummaryAxis(name)
		}
		if field == "y" && ch.Y2 != nil {
			if st, _ := ch.StyleOf(name); st.Axis == 2 {
				return *ch.Y2, true
			}
		}
		return f.Axis, true
	}
	opt.Positive = func(kind, name string) bool {
		a, ok := axisOf(kind, name)
		return ok && a.Log
	}
	opt.Unit = func(kind, name string) string {
		a, _ := axisOf(kind, name)
		return a.Unit
	}
	return opt, nil
}

// aggregate reads the sweep's runs that ended done and aggregates them;
// runs that did not (yet) end done are listed in Excluded. The result of
// an ended sweep is cached.
func (sw *sweeper) aggregate(rec notebook.Sweep, groupBy []string, opt sweep.Options) (sweep.Result, error) {
	ckey := rec.ID + "\x00" + strings.Join(groupBy, ",") + "\x00" + opt.Field
	final := rec.State != notebook.Running
	if final {
		sw.mu.Lock()
		e, ok := sw.cache[ckey]
		sw.mu.Unlock()
		if ok && e.updated.Equal(rec.Updated) {
			return e.res, nil
		}
	}
	samples := make([]sweep.Sample, 0, rec.Runs)
	var excluded []string
	var total int64
	seen := make([]bool, rec.Runs)
	errTooMany := errorf("sweep %s: more than %d points to aggregate; export its runs instead", rec.ID, maxAggPoints)
	err := sw.store.ReadSweepField(rec.ID, func(st notebook.State) bool { return st == notebook.Done }, opt.Field, func(smp notebook.SweepSample) error {
		if smp.N >= 0 && smp.N < len(seen) {
			seen[smp.N] = true
		}
		switch {
		case smp.State == "":
			excluded = append(excluded, fmt.Sprintf("run %s: deleted", smp.ID))
		case smp.State != notebook.Done:
			excluded = append(excluded, fmt.Sprintf("run %s: %s", smp.ID, smp.State))
		default:
			if total += int64(len(smp.Points)); total > maxAggPoints {
				return errTooMany
			}
			samples = append(samples, sweep.Sample{ID: smp.ID, Params: smp.Params, Summary: smp.Summary, Points: smp.Points})
		}
		return nil
	})
	if err != nil {
		return sweep.Result{}, err
	}
	for n, ok := range seen {
		if !ok {
			excluded = append(excluded, fmt.Sprintf("run number %d: not started", n))
		}
	}
	// The points' y holds the field already (ReadSweepField).
	field := opt.Field
	opt.Field = ""
	res := sweep.AggregateWith(groupBy, samples, opt)
	res.Field = field
	res.Excluded = excluded
	if final {
		sw.mu.Lock()
		sw.cache[ckey] = aggCacheEntry{updated: rec.Updated, res: res}
		if len(sw.cache) > 64 {
			for k := range sw.cache {
				delete(sw.cache, k)
				break
			}
		}
		sw.mu.Unlock()
	}
	return res, nil
}

// ---- runs of a sweep streamed in by clients (Slurm tasks)

// parseSweepRef reads "ID/N/KEY", the -sweep of `lab run` that the lab
// writes into a sweep's Slurm tasks: the sweep, the run's number and the
// run's credential (sweepRunKey).
func parseSweepRef(ref string) (string, int, string, error) {
	parts := strings.Split(ref, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return "", 0, "", errorf("sweep %q: want SWEEP/RUN/KEY as the lab writes it into a sweep's Slurm tasks", ref)
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 0 {
		return "", 0, "", errorf("sweep %q: want SWEEP/RUN/KEY, RUN a run number", ref)
	}
	if _, err := notebook.ParseID(parts[0]); err != nil {
		return "", 0, "", errorf("sweep %q: no sweep %q", ref, parts[0])
	}
	key := ""
	if len(parts) == 3 {
		key = parts[2]
	}
	return parts[0], n, key, nil
}

// sweepRunKey returns the credential of run n of sweep id: an HMAC-SHA256
// of "id/n" under the notebook's secret, in hex (128 bits). Only the lab
// makes them, for the Slurm tasks it submits; a client without it cannot
// stand in for a run of a sweep.
func (sw *sweeper) sweepRunKey(id string, n int) (string, error) {
	key, err := sw.store.SweepKey()
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s/%d", id, n)
	return hex.EncodeToString(m.Sum(nil)[:16]), nil
}

// checkSweepRun verifies that a client's run is run n of the sweep: the
// sweep is running and n's parameters and seed are the run's.
func (sw *sweeper) checkSweepRun(ref string, meta *notebook.Run) (int, error) {
	if sw.store == nil {
		return http.StatusBadRequest, errorf("this lab's notebook keeps no sweeps")
	}
	id, n, key, err := parseSweepRef(ref)
	if err != nil {
		return http.StatusBadRequest, err
	}
	rec, err := sw.store.GetSweep(id)
	if err != nil {
		return http.StatusNotFound, errorf("no sweep %q", id)
	}
	if rec.State != notebook.Running {
		return http.StatusConflict, errorf("sweep %s has ended (%s)", id, rec.State)
	}
	if rec.Executor != "slurm" {
		return http.StatusForbidden, errorf("sweep %s runs in the lab's pool: its runs are the lab's own, not a client's", id)
	}
	want, err := sw.sweepRunKey(id, n)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	if !hmac.Equal([]byte(key), []byte(want)) {
		return http.StatusForbidden, errorf("sweep %s run %d: the key is not the one the lab gave its Slurm task", id, n)
	}
	// A run number held by a run that is live or ended done is not
	// replaced (the lab submits again only what did not end done).
	if held, err := sw.store.SweepRuns(id); err == nil {
		if rid := held[n]; rid != "" {
			if l := sw.s.liveRun(rid); l != nil {
				return http.StatusConflict, errorf("run %d of sweep %s is run %s, still running", n, id, rid)
			}
			if r, err := sw.s.store.Get(rid); err == nil && r.State == notebook.Done {
				return http.StatusConflict, errorf("run %d of sweep %s is run %s, which ended done", n, id, rid)
			}
		}
	}
	g, err := gridOf(rec)
	if err != nil {
		return http.StatusConflict, err
	}
	values, seed, err := g.Run(n)
	if err != nil {
		return http.StatusBadRequest, err
	}
	names := make([]string, 0, len(meta.Params))
	for _, p := range values.Params() {
		names = append(names, p.Name)
	}
	if rec.Experiment != meta.Experiment || seed != meta.Seed || sweep.Key(names, paramsMap(values)) != sweep.Key(names, meta.Params) {
		return http.StatusConflict, errorf("run %d of sweep %s is %s %s -seed %d, not this run", n, id, rec.Experiment, values.Flags(), seed)
	}
	meta.Sweep, meta.SweepRun, meta.Tags = id, n, slices.Clone(rec.Tags)
	return 0, nil
}

// registered records a client's sweep run under its number.
func (sw *sweeper) registered(meta notebook.Run) {
	if meta.Sweep == "" || sw.store == nil {
		return
	}
	if err := sw.store.SetSweepRun(meta.Sweep, meta.SweepRun, meta.ID); err != nil {
		sw.s.log.Error("sweep: recording a client's run", "sweep", meta.Sweep, "run", meta.ID, "err", err)
	}
}
