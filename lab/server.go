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
	// TensorsDir is the folder of the user's tensor files for attention-file
	// (tensors.go); empty disables the /api/tensors endpoints.
	TensorsDir string
	// Log receives the server's log (default slog.Default()).
	Log *slog.Logger
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

	mu      sync.Mutex
	lives   map[string]*live
	queue   []*live
	running int
	closing bool
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
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	s := &Server{
		opts: opts, store: opts.Store, log: opts.Log, build: sim.Build(),
		lives: map[string]*live{}, done: make(chan struct{}),
	}
	s.hosts = allowedHosts(opts.Addr)
	s.runCtx, s.stopRun = context.WithCancel(context.Background())
	s.routes()
	s.wg.Add(1)
	go s.janitor()
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
// client runs are recorded as interrupted with every point they emitted,
// viewers get the end and are disconnected. It waits for the runs to be
// recorded until ctx ends. The HTTP server in front should be shut down
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

	for _, l := range queued {
		l.finish(notebook.Interrupted, "the lab was shut down before the run started")
	}
	for _, l := range lives {
		if l.external {
			l.finish(notebook.Interrupted, "the lab was shut down while the client was streaming")
		}
	}
	s.stopRun() // executions return promptly and record themselves as interrupted
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
func (s *Server) submit(exp sim.Experiment, values sim.Values, seed uint64, title, note, rerunOf string) (notebook.Run, error) {
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		return notebook.Run{}, errClosing
	case len(s.queue) >= s.opts.MaxQueue:
		s.mu.Unlock()
		return notebook.Run{}, errBusy
	}
	s.mu.Unlock()
	meta := notebook.Run{
		Experiment: exp.Name(), Params: paramsMap(values), Flags: values.Flags(), Seed: seed,
		Origin: notebook.OriginServer, Registered: true,
		Version: s.build.Version, Revision: s.build.Revision, GoVersion: s.build.GoVersion, Platform: s.build.Platform,
		State: notebook.Queued, Title: title, Note: note, RerunOf: rerunOf,
	}
	if err := s.store.Create(&meta); err != nil {
		return notebook.Run{}, err
	}
	l := newLive(s, meta)
	l.exp, l.values = exp, values
	s.mu.Lock()
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

// scheduleLocked starts queued runs while workers are free; s.mu is held.
func (s *Server) scheduleLocked() {
	for s.running < s.opts.Workers && len(s.queue) > 0 && !s.closing {
		l := s.queue[0]
		s.queue = slices.Delete(s.queue, 0, 1)
		s.running++
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
		s.scheduleLocked()
		s.mu.Unlock()
	}()
	defer cancel()
	l.setState(notebook.Running)
	s.log.Info("run started", "run", l.id, "experiment", l.exp.Name(), "seed", l.meta.Seed)
	_, err := sim.Execute(ctx, l.exp, l.values, l.meta.Seed, l)
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

// janitor ends client runs whose client went silent.
func (s *Server) janitor() {
	defer s.wg.Done()
	t := time.NewTicker(max(s.opts.ClientTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		var stale []*live
		for _, l := range s.lives {
			l.mu.Lock()
			if l.external && time.Since(l.lastSeen) > s.opts.ClientTimeout {
				stale = append(stale, l)
			}
			l.mu.Unlock()
		}
		s.mu.Unlock()
		for _, l := range stale {
			l.finish(notebook.Interrupted, fmt.Sprintf("the client sent nothing for %v", s.opts.ClientTimeout))
		}
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
}

func (s *Server) info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := fs.Stat(s.opts.WASM, "lab.wasm")
	return Info{Build: s.build, Workers: s.opts.Workers, Running: s.running, Queued: len(s.queue), Viewers: s.viewers.Load(), WASM: err == nil}
}

// hostAllowed reports whether the request's Host may reach the server.
func (s *Server) hostAllowed(host string) bool {
	return s.hosts == nil || slices.ContainsFunc(s.hosts, func(h string) bool { return strings.EqualFold(h, host) })
}
