package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/web"
)

// Options configure a Server. Only Store is required.
type Options struct {
	// Store is the notebook; the Server does not close it.
	Store notebook.Store
	// Workers is the number of server runs executing at once (default
	// GOMAXPROCS, at least 2); further runs wait in the queue.
	Workers int
	// MaxQueue is the most runs waiting (default 256); beyond it starting a
	// run answers 503.
	MaxQueue int
	// Addr is the address the server listens on, e.g. "127.0.0.1:8080".
	// When its host is a loopback address, requests must name it (or
	// localhost) as their Host: a defence against DNS rebinding. Empty
	// disables the Host check (tests on httptest set it to the test
	// server's address).
	Addr string
	// Page is the page's files (default web.Files()).
	Page fs.FS
	// WASM holds lab.wasm and wasm_exec.js, served under /wasm/ (default
	// web.WASM(), what `make lab-wasm` built into the binary).
	WASM fs.FS
	// FlushInterval is the longest time a point of a live run waits to be
	// committed to the notebook (default 100 ms).
	FlushInterval time.Duration
	// WriteTimeout is the longest time a viewer's connection may take to
	// accept one message before the viewer is disconnected (default 10 s).
	WriteTimeout time.Duration
	// ClientTimeout ends a run streamed in by a client as interrupted when
	// the client has sent nothing for this long (default 60 s; clients send
	// at least every 10 s).
	ClientTimeout time.Duration
	// MaxMemory is the most memory, by the experiments' estimates
	// (sim.Coster), that the server runs executing at once may hold
	// together; a run estimated above it is refused, and a queued run
	// starts only when it fits beside the running ones (default
	// DefaultMaxMemory).
	MaxMemory int64
	// MaxWork is the most work one run may be estimated to need; a run
	// estimated above it is refused (default DefaultMaxWork).
	MaxWork int64
	// BodyTimeout is the longest time a request may take to send its body
	// (default 30 s); a stalled upload is then cut off.
	BodyTimeout time.Duration
	// FilesDir is the folder under which server runs may write files (one
	// folder per run, run-ID); empty: server runs may write no files.
	FilesDir string
	// TensorsDir is the folder of the user's tensor files for attention-file
	// (tensors.go); empty disables the /api/tensors endpoints.
	TensorsDir string
	// Log receives the server's log (default slog.Default()).
	Log *slog.Logger
	// RunContext, when not nil, is asked for the context of every server
	// run before it executes: it returns the context the experiment runs
	// under and a function called with the run's error once the experiment
	// has returned (cmd/lab: the GPU the server's runs share,
	// experiments.SharedGPU.Bind).
	RunContext func(context.Context) (context.Context, func(error))
	// Slurm, when not nil, lets sweeps run as Slurm job arrays (sweep.go).
	Slurm *SlurmOptions
}

// Server is the lab: an http.Handler over the API, the WebSocket streams
// and the page, and the pool that executes runs. Create it with New; end it
// with Shutdown.
type Server struct {
	opts  Options
	store notebook.Store
	log   *slog.Logger
	mux   *http.ServeMux
	build sim.BuildInfo
	hosts []string // allowed Host values; nil: any

	runCtx  context.Context // parent of every execution; cancelled by Shutdown
	stopRun context.CancelFunc
	done    chan struct{} // closed by Shutdown: viewers and the janitor stop
	wg      sync.WaitGroup

	viewers atomic.Int64 // open streams
	sw      *sweeper     // sweeps (sweep.go)

	mu       sync.Mutex
	lives    map[string]*live
	queue    []*live
	reserved int // queue places taken by runs being recorded (submit)
	running  int
	memory   int64 // estimated memory of the runs executing
	closing  bool
	wake     chan struct{} // wakes the janitor: a client run was registered

	nbMu    sync.Mutex
	nbErr   error     // the last notebook write failed with this; nil once one succeeds
	nbSince time.Time // since when writes fail
}

// noteWrite records the outcome of a notebook write, for /api/info and the
// page.
func (s *Server) noteWrite(err error) {
	s.nbMu.Lock()
	defer s.nbMu.Unlock()
	switch {
	case err == nil:
		s.nbErr = nil
	case s.nbErr == nil:
		s.nbErr, s.nbSince = err, time.Now().UTC()
	default:
		s.nbErr = err
	}
}

// writeStatus is the HTTP status of a failed notebook write: 507 when the
// disk is full, 500 otherwise.
func writeStatus(err error) int {
	if errors.Is(err, notebook.ErrDiskFull) {
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}

// New returns a Server over opts.Store.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("lab: Options.Store is nil")
	}
	if opts.Workers <= 0 {
		opts.Workers = max(runtime.GOMAXPROCS(0), 2)
	}
	if opts.MaxQueue <= 0 {
		opts.MaxQueue = 256
	}
	if opts.Page == nil {
		opts.Page = web.Files()
	}
	if opts.WASM == nil {
		opts.WASM = web.WASM()
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 100 * time.Millisecond
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.ClientTimeout <= 0 {
		opts.ClientTimeout = 60 * time.Second
	}
	if opts.MaxMemory <= 0 {
		opts.MaxMemory = DefaultMaxMemory
	}
	if opts.MaxWork <= 0 {
		opts.MaxWork = DefaultMaxWork
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 30 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	s := &Server{
		opts: opts, store: opts.Store, log: opts.Log, build: sim.Build(),
		lives: map[string]*live{}, done: make(chan struct{}), wake: make(chan struct{}, 1),
	}
	s.hosts = allowedHosts(opts.Addr)
	s.runCtx, s.stopRun = context.WithCancel(context.Background())
	s.sw = newSweeper(s)
	s.routes()
	s.wg.Add(1)
	go s.janitor()
	s.sw.resume()
	return s, nil
}

// allowedHosts returns the Host values accepted for a server listening on
// addr: for a loopback address its own host:port and localhost:port; nil
// (any) for other addresses.
func allowedHosts(addr string) []string {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil
	}
	var hosts []string
	for _, h := range []string{host, "localhost", "127.0.0.1", "::1"} {
		if hp := net.JoinHostPort(h, port); !slices.Contains(hosts, hp) {
			hosts = append(hosts, hp)
		}
	}
	if port == "80" { // browsers leave the default port out of Host
		hosts = append(hosts, "localhost", "127.0.0.1", "[::1]")
	}
	return hosts
}

// Shutdown ends the server's runs: queued and running server runs and
// client runs are recorded as interrupted (cancelled when a user had
// cancelled them) with every point they emitted, at once, without waiting
// for their experiments to return; viewers get the end and are
// disconnected. It then waits for the executions to return until ctx ends. The HTTP server in front should be shut down
// first, so that no new run starts.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	queued := s.queue
	s.queue = nil
	lives := make([]*live, 0, len(s.lives))
	for _, l := range s.lives {
		lives = append(lives, l)
	}
	s.mu.Unlock()

	s.stopRun() // executions return promptly
	// Every run's end is recorded now, with every point it emitted, whether
	// or not its execution has returned yet: the record never waits for an
	// experiment, so it is written within ctx's deadline. A run a user had
	// cancelled is recorded cancelled.
	var ends sync.WaitGroup
	for _, l := range queued {
		ends.Go(func() { l.finish(notebook.Interrupted, "the lab was shut down before the run started") })
	}
	for _, l := range lives {
		if slices.Contains(queued, l) {
			continue
		}
		ends.Go(func() {
			l.mu.Lock()
			stopAs := l.stopAs
			l.mu.Unlock()
			switch {
			case stopAs == notebook.Cancelled:
				l.finish(notebook.Cancelled, "cancelled by a user")
			case l.external:
				l.finish(notebook.Interrupted, "the lab was shut down while the client was streaming")
			default:
				l.finish(notebook.Interrupted, "the lab was shut down during the run")
			}
		})
	}
	recorded := make(chan struct{})
	go func() { ends.Wait(); close(recorded) }()
	select {
	case <-recorded:
	case <-ctx.Done():
		return fmt.Errorf("lab: shutdown: %w (runs still being recorded)", ctx.Err())
	}
	close(s.done)
	waited := make(chan struct{})
	go func() { s.wg.Wait(); close(waited) }()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("lab: shutdown: %w (runs still ending)", ctx.Err())
	}
}

// forget removes an ended run from the live runs.
func (s *Server) forget(l *live) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lives[l.id] == l {
		delete(s.lives, l.id)
	}
	if i := slices.Index(s.queue, l); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
		s.positionsLocked()
	}
}

func (s *Server) liveRun(id string) *live {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lives[id]
}

// errBusy and errClosing are answered 503.
var (
	errBusy    = errors.New("the run queue is full; try again when runs have ended")
	errClosing = errors.New("the lab is shutting down")
)

// paramsMap turns validated values into the JSON form kept in the notebook.
func paramsMap(v sim.Values) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// submit records a new server run of exp and queues it.
// Each of opts may complete the record before it is stored (a sweep's run).
func (s *Server) submit(exp sim.Experiment, values sim.Values, seed uint64, title, note, rerunOf string, opts ...func(*notebook.Run)) (notebook.Run, error) {
	cost, err := s.estimate(exp, values)
	if err != nil {
		return notebook.Run{}, err
	}
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		return notebook.Run{}, errClosing
	case len(s.queue)+s.reserved >= s.opts.MaxQueue:
		s.mu.Unlock()
		return notebook.Run{}, errBusy
	}
	s.reserved++ // the place is held while the notebook records the run
	s.mu.Unlock()
	unreserve := func() {
		s.mu.Lock()
		s.reserved--
		s.mu.Unlock()
	}
	meta := notebook.Run{
		Experiment: exp.Name(), Params: paramsMap(values), Flags: values.Flags(), Seed: seed,
		Reproduce: sim.Reproduce(exp, values, seed), Origin: notebook.OriginServer, Registered: true,
		Version: s.build.Version, Revision: s.build.Revision, GoVersion: s.build.GoVersion, Platform: s.build.Platform,
		Bindings: s.build.Bindings, Device: s.build.Device,
		State: notebook.Queued, Title: title, Note: note, RerunOf: rerunOf,
	}
	for _, o := range opts {
		o(&meta)
	}
	if err := s.store.Create(&meta); err != nil {
		s.noteWrite(err)
		unreserve()
		return notebook.Run{}, err
	}
	l := newLive(s, meta)
	l.exp, l.values, l.cost = exp, values, cost
	s.mu.Lock()
	s.reserved--
	if s.closing {
		s.mu.Unlock()
		l.finish(notebook.Interrupted, "the lab was shut down before the run started")
		return l.snapshot(), nil
	}
	s.lives[l.id] = l
	s.queue = append(s.queue, l)
	s.wg.Add(1)
	go func() { defer s.wg.Done(); l.flusher(s.opts.FlushInterval) }()
	s.scheduleLocked()
	s.mu.Unlock()
	return l.snapshot(), nil
}

// scheduleLocked starts queued runs, in order, while workers are free and
// the next run's estimated memory fits beside the running ones' within
// Options.MaxMemory (a run alone always starts: it was admitted under the
// limit); s.mu is held.
func (s *Server) scheduleLocked() {
	for s.running < s.opts.Workers && len(s.queue) > 0 && !s.closing {
		l := s.queue[0]
		if s.running > 0 && s.memory+l.cost.Memory > s.opts.MaxMemory {
			break // it waits for memory; later runs wait behind it, so it is not starved
		}
		s.queue = slices.Delete(s.queue, 0, 1)
		s.running++
		s.memory += l.cost.Memory
		ctx, cancel := context.WithCancel(s.runCtx)
		l.mu.Lock()
		l.cancel = cancel
		l.mu.Unlock()
		s.wg.Add(1)
		go s.execute(ctx, cancel, l)
	}
	s.positionsLocked()
}

// positionsLocked updates the queue positions; s.mu is held.
func (s *Server) positionsLocked() {
	for i, l := range s.queue {
		l.setQueuePos(i + 1)
	}
}

// execute runs l and records how it ended.
func (s *Server) execute(ctx context.Context, cancel context.CancelFunc, l *live) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		s.running--
		s.memory -= l.cost.Memory
		s.scheduleLocked()
		s.mu.Unlock()
	}()
	defer cancel()
	l.setState(notebook.Running)
	s.log.Info("run started", "run", l.id, "experiment", l.exp.Name(), "seed", l.meta.Seed)
	files := ""
	if s.opts.FilesDir != "" {
		files = filepath.Join(s.opts.FilesDir, "run-"+l.id)
	}
	runCtx, ran := sim.WithFilesDir(ctx, files), func(error) {}
	if s.opts.RunContext != nil {
		runCtx, ran = s.opts.RunContext(runCtx)
	}
	_, err := sim.Execute(runCtx, l.exp, l.values, l.meta.Seed, l)
	ran(err)
	st, msg := notebook.Done, ""
	if err != nil {
		l.mu.Lock()
		stopAs := l.stopAs
		l.mu.Unlock()
		var pe *sim.PanicError
		switch {
		case ctx.Err() != nil && stopAs == notebook.Cancelled:
			st, msg = notebook.Cancelled, "cancelled by a user"
		case ctx.Err() != nil:
			st, msg = notebook.Interrupted, "the lab was shut down during the run"
		case errors.As(err, &pe):
			st, msg = notebook.Failed, err.Error()
			s.log.Error("run panicked", "run", l.id, "err", err, "stack", string(pe.Stack))
		default:
			st, msg = notebook.Failed, err.Error()
		}
	}
	l.finish(st, msg)
}

// cancelRun cancels a live run: a queued one ends at once, a running one
// as soon as its experiment sees the cancellation, a client's run at once
// (the client learns it from the answer to its next events). It reports
// false when the run is not live.
func (s *Server) cancelRun(id string) bool {
	s.mu.Lock()
	l := s.lives[id]
	if l == nil {
		s.mu.Unlock()
		return false
	}
	queued := slices.Contains(s.queue, l)
	s.mu.Unlock()
	l.mu.Lock()
	if l.stopAs == "" {
		l.stopAs = notebook.Cancelled
	}
	cancel := l.cancel
	l.mu.Unlock()
	switch {
	case queued || l.external:
		l.finish(notebook.Cancelled, "cancelled by a user")
	case cancel != nil:
		cancel()
	}
	return true
}

// janitor ends client runs whose client went silent: it sleeps until the
// earliest moment a client run reaches Options.ClientTimeout without an
// event (or until a client run is registered), so a silent client is marked
// at the timeout, not up to a polling period later.
func (s *Server) janitor() {
	defer s.wg.Done()
	t := time.NewTimer(s.opts.ClientTimeout)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		case <-t.C:
		}
		now := time.Now()
		next := now.Add(s.opts.ClientTimeout)
		s.mu.Lock()
		var stale []*live
		for _, l := range s.lives {
			l.mu.Lock()
			if l.external && !l.final {
				if due := l.lastSeen.Add(s.opts.ClientTimeout); !due.After(now) {
					stale = append(stale, l)
				} else if due.Before(next) {
					next = due
				}
			}
			l.mu.Unlock()
		}
		s.mu.Unlock()
		for _, l := range stale {
			l.finish(notebook.Interrupted, fmt.Sprintf("the client sent nothing for %v", s.opts.ClientTimeout))
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(time.Until(next))
	}
}

// Info is the answer of GET /api/info.
type Info struct {
	Build   sim.BuildInfo `json:"build"`
	Workers int           `json:"workers"`
	Running int           `json:"running"`
	Queued  int           `json:"queued"`
	Viewers int64         `json:"viewers"` // open run streams
	WASM    bool          `json:"wasm"`    // the page can run experiments in the browser
	// MaxMemory and MaxWork are the lab's budget (Options): a run
	// estimated above either is refused.
	MaxMemory int64 `json:"max_memory"`
	MaxWork   int64 `json:"max_work"`
	// NotebookError is set while writes to the notebook fail (since
	// NotebookErrorSince): runs are kept in memory and written when a write
	// succeeds; DiskFull says the cause is a full disk.
	NotebookError      string     `json:"notebook_error,omitempty"`
	NotebookErrorSince *time.Time `json:"notebook_error_since,omitempty"`
	DiskFull           bool       `json:"disk_full,omitempty"`
}

func (s *Server) info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := fs.Stat(s.opts.WASM, "lab.wasm")
	in := Info{Build: s.build, Workers: s.opts.Workers, Running: s.running, Queued: len(s.queue), Viewers: s.viewers.Load(), WASM: err == nil,
		MaxMemory: s.opts.MaxMemory, MaxWork: s.opts.MaxWork}
	s.nbMu.Lock()
	if s.nbErr != nil {
		since := s.nbSince
		in.NotebookError, in.NotebookErrorSince, in.DiskFull = s.nbErr.Error(), &since, errors.Is(s.nbErr, notebook.ErrDiskFull)
	}
	s.nbMu.Unlock()
	return in
}

// hostAllowed reports whether the request's Host may reach the server.
func (s *Server) hostAllowed(host string) bool {
	return s.hosts == nil || slices.ContainsFunc(s.hosts, func(h string) bool { return strings.EqualFold(h, host) })
}
