//go:build !js

// The lab client is not part of the WebAssembly build: the browser streams
// its runs through the page, and net/http would add its TLS stack to lab.wasm.

package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LabClient streams runs into a running lab (`lab serve`), where they are
// kept in the notebook and drawn live like the lab's own runs. Any Go
// program can use it, for example to run a user's own experiment:
//
//	c := &sim.LabClient{URL: "http://127.0.0.1:8080"}
//	res, err := c.Execute(ctx, myExperiment{}, values, seed, sim.NewTableSink(os.Stdout))
//
// The zero value of every field but URL is ready to use.
type LabClient struct {
	// URL is the lab's address, e.g. "http://127.0.0.1:8080".
	URL string
	// HTTPClient sends the requests; nil means a client with a 30 s timeout.
	HTTPClient *http.Client
	// Origin is recorded with the run: "client" (the default) or
	// "terminal" (`lab run NAME -lab URL`).
	Origin string
	// FlushEvery is the longest time points wait before they are sent
	// (default 100 ms); up to 4096 points go in one request.
	FlushEvery time.Duration
	// Sweep, when set ("SWEEP/RUN"), registers the run as that run of a
	// sweep of the lab (`lab run … -sweep`, as Slurm tasks do); the lab
	// refuses it unless its parameters and seed are that run's.
	Sweep string
}

// ErrCancelledInLab is the cause of a [LabRun]'s context when a user
// cancelled the run in the lab.
var ErrCancelledInLab = errors.New("the run was cancelled in the lab")

// Execute runs exp like [Execute] and streams it into the lab at the same
// time: it registers the run ([LabClient.Start]), sends its output to both
// sink (nil discards) and the lab, and ends the lab's record with the run's
// outcome ([LabRun.Finish]). The run stops with an error when the lab cannot
// be reached for 30 s, and is cancelled when a user cancels it in the lab.
func (c *LabClient) Execute(ctx context.Context, exp Experiment, values Values, seed uint64, sink Sink) (Result, error) {
	lr, err := c.Start(ctx, exp, values, seed)
	if err != nil {
		if sink != nil {
			sink.Close()
		}
		return Result{Experiment: exp.Name(), Seed: seed}, err
	}
	if sink == nil {
		sink = Discard
	}
	res, err := Execute(lr.Context(), exp, values, seed, Tee(sink, lr))
	if ferr := lr.Finish(err); ferr != nil && err == nil {
		err = ferr
	}
	return res, err
}

// Start registers a run of exp with values and seed in the lab and returns
// the [LabRun] that streams it. Run the experiment with lr.Context() and lr
// as (part of) its sink, then call lr.Finish with the run's error. The lab
// validates the values when it knows the experiment, so a bad value is
// refused here with the lab's reason.
func (c *LabClient) Start(ctx context.Context, exp Experiment, values Values, seed uint64) (*LabRun, error) {
	base, err := c.base()
	if err != nil {
		return nil, err
	}
	if values.m == nil {
		if values, err = Defaults(exp.Params()); err != nil {
			return nil, err
		}
	}
	origin := c.Origin
	if origin == "" {
		origin = "client"
	}
	b := Build()
	req := map[string]any{
		"experiment": exp.Name(), "params": values, "seed": seed, "origin": origin,
		"version": b.Version, "revision": b.Revision, "go_version": b.GoVersion, "platform": clientPlatform(b),
		"bindings": b.Bindings, "device": b.Device,
	}
	if c.Sweep != "" {
		req["sweep"] = c.Sweep
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var created struct {
		ID string `json:"id"`
	}
	if _, err := c.post(ctx, base+"/api/runs", body, &created); err != nil {
		return nil, err
	}
	if created.ID == "" {
		return nil, fmt.Errorf("lab %s: no run id in the answer", base)
	}
	flush := c.FlushEvery
	if flush <= 0 {
		flush = 100 * time.Millisecond
	}
	rctx, cancel := context.WithCancelCause(ctx)
	r := &LabRun{
		c: c, base: base, id: created.ID, flushEvery: flush,
		ctx: rctx, cancel: cancel,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), loopDone: make(chan struct{}),
	}
	r.cond = sync.NewCond(&r.mu)
	go r.loop()
	return r, nil
}

func (c *LabClient) base() (string, error) {
	u, err := url.Parse(strings.TrimRight(c.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("lab URL %q: want http://host:port", c.URL)
	}
	return u.String(), nil
}

func (c *LabClient) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return defaultLabHTTP
}

var defaultLabHTTP = &http.Client{Timeout: 30 * time.Second}

// labError is an answer of the lab other than 2xx.
type labError struct {
	status int
	msg    string
	cancel bool // the run was cancelled in the lab
}

func (e *labError) Error() string { return fmt.Sprintf("lab: %s (HTTP %d)", e.msg, e.status) }

// post sends body as JSON and decodes a 2xx answer into out; other answers
// are a *labError with the lab's message.
func (c *LabClient) post(ctx context.Context, u string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("lab: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return 0, fmt.Errorf("lab: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("lab: reading the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error  string `json:"error"`
			Cancel bool   `json:"cancel"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		return resp.StatusCode, &labError{status: resp.StatusCode, msg: e.Error, cancel: e.Cancel}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("lab: bad answer: %w", err)
		}
	}
	return resp.StatusCode, nil
}

// LabRun streams one run into the lab; it is a [Sink]. Points, progress and
// notes are buffered and sent in batches at most [LabClient.FlushEvery]
// apart by a goroutine of their own, so the run never waits on the network
// unless 65536 points are pending. Create it with [LabClient.Start].
type LabRun struct {
	c          *LabClient
	base, id   string
	flushEvery time.Duration
	ctx        context.Context
	cancel     context.CancelCauseFunc

	wake, quit, loopDone chan struct{}

	mu        sync.Mutex
	cond      *sync.Cond // signalled when pending shrinks or err is set
	pending   []Point
	notes     []string
	done, tot int64
	progress  bool // progress changed since last sent
	summary   map[string]float64
	sent      int64 // points the lab holds
	notesSent int64 // notes the lab holds
	err       error // permanent failure
	lastSent  time.Time
	finished  bool
}

// maxPending is the number of unsent points at which Point waits for the
// sender; maxBatch is the most points per request.
const (
	maxPending = 1 << 16
	maxBatch   = 4096
)

// ID returns the run's id in the lab.
func (r *LabRun) ID() string { return r.id }

// URL returns the address of the run's page in the lab.
func (r *LabRun) URL() string { return r.base + "/#run/" + r.id }

// Context returns the run's context: done when the context given to Start
// is, or when a user cancels the run in the lab (cause [ErrCancelledInLab]),
// or when the lab cannot be reached.
func (r *LabRun) Context() context.Context { return r.ctx }

func (r *LabRun) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Point queues p for the lab. It returns the error that stopped streaming,
// if any.
func (r *LabRun) Point(p Point) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.pending) >= maxPending && r.err == nil && !r.finished {
		r.poke()
		r.cond.Wait()
	}
	if r.err != nil {
		return r.err
	}
	if p.Extra != nil {
		p.Extra = maps.Clone(p.Extra)
	}
	r.pending = append(r.pending, p)
	if len(r.pending) >= maxBatch {
		r.poke()
	}
	return nil
}

// Progress records the progress; the lab gets the latest with the next batch.
func (r *LabRun) Progress(done, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done, r.tot, r.progress = done, total, true
}

// Note queues text for the lab.
func (r *LabRun) Note(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, text)
}

// Summary keeps values; the lab gets them with [LabRun.Finish].
func (r *LabRun) Summary(values map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.summary = maps.Clone(values)
}

// Close asks for what is pending to be sent now; the lab's record stays
// running until [LabRun.Finish].
func (r *LabRun) Close() error {
	r.poke()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *LabRun) loop() {
	defer close(r.loopDone)
	t := time.NewTicker(r.flushEvery)
	defer t.Stop()
	for {
		select {
		case <-r.quit:
			return
		case <-t.C:
		case <-r.wake:
		}
		r.mu.Lock()
		idle := len(r.pending) == 0 && len(r.notes) == 0 && !r.progress && time.Since(r.lastSent) < 10*time.Second
		failed := r.err != nil
		r.mu.Unlock()
		if idle || failed {
			continue // nothing new; the lab hears from us at least every 10 s
		}
		if err := r.flush(nil); err != nil {
			r.fail(err)
		}
	}
}

func (r *LabRun) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.cond.Broadcast()
	r.mu.Unlock()
	if errors.Is(err, ErrCancelledInLab) {
		r.cancel(ErrCancelledInLab)
	} else {
		r.cancel(err)
	}
}

// endEvent is the last event of a run.
type endEvent struct {
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// flush sends one batch: up to maxBatch pending points, the notes, the
// progress, and with end the summary and the end state (only once no point
// is left). It retries transient failures for up to 30 s.
func (r *LabRun) flush(end *endEvent) error {
	r.mu.Lock()
	n := min(len(r.pending), maxBatch)
	pts := r.pending[:n:n]
	notes := slices.Clone(r.notes)
	from, notesFrom := r.sent, r.notesSent
	var b []byte
	b = append(b, `{"from":`...)
	b = strconv.AppendInt(b, from, 10)
	b = append(b, `,"points":`...)
	b = AppendPointsJSON(b, pts)
	if len(notes) > 0 {
		nb, _ := json.Marshal(notes)
		b = append(b, `,"notes":`...)
		b = append(b, nb...)
		b = fmt.Appendf(b, `,"notes_from":%d`, notesFrom) // a retry's notes are not kept twice
	}
	if r.progress {
		b = fmt.Appendf(b, `,"progress":{"done":%d,"total":%d}`, r.done, r.tot)
	}
	last := end != nil && n == len(r.pending)
	if last {
		b = append(b, `,"summary":`...)
		b = appendFloatsJSON(b, r.summary)
		eb, _ := json.Marshal(end)
		b = append(b, `,"end":`...)
		b = append(b, eb...)
	}
	b = append(b, '}')
	r.progress = false
	r.mu.Unlock()

	var ans struct {
		Points int64 `json:"points"`
		Cancel bool  `json:"cancel"`
	}
	u := r.base + "/api/runs/" + r.id + "/events"
	deadline := time.Now().Add(30 * time.Second)
	wait := 100 * time.Millisecond
	for {
		// Not r.ctx: the last events must go out after a cancellation.
		_, err := r.c.post(context.Background(), u, b, &ans)
		var le *labError
		switch {
		case err == nil:
		case errors.As(err, &le) && le.cancel:
			return ErrCancelledInLab
		case errors.As(err, &le) && le.status/100 == 4:
			return err
		default:
			if time.Now().Add(wait).After(deadline) {
				return fmt.Errorf("%w (gave up after 30 s)", err)
			}
			time.Sleep(wait)
			wait = min(2*wait, 5*time.Second)
			continue
		}
		break
	}
	r.mu.Lock()
	took := min(max(ans.Points-from, 0), int64(n)) // the lab skips what a retry repeats
	r.pending = r.pending[took:]
	if len(r.pending) == 0 {
		r.pending = nil // let the backing array go
	}
	r.sent = from + took
	r.notes = r.notes[len(notes):]
	r.notesSent = notesFrom + int64(len(notes))
	r.lastSent = time.Now()
	r.cond.Broadcast()
	r.mu.Unlock()
	if ans.Cancel {
		return ErrCancelledInLab
	}
	if end != nil && !last {
		return r.flush(end)
	}
	return nil
}

// Finish sends what is pending and ends the lab's record of the run: done
// when runErr is nil, cancelled when it is a cancellation, failed (with the
// error's text) otherwise. It returns an error when the lab could not be
// told. Call it once, after the run.
func (r *LabRun) Finish(runErr error) error {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return errors.New("lab: Finish called twice")
	}
	r.finished = true
	r.cond.Broadcast()
	streamErr := r.err
	r.mu.Unlock()
	close(r.quit)
	<-r.loopDone
	defer r.cancel(context.Canceled)

	if errors.Is(streamErr, ErrCancelledInLab) {
		return nil // the lab has ended the record itself
	}
	end := &endEvent{State: "done"}
	switch {
	case runErr == nil:
	case errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded):
		end.State = "cancelled"
		if errors.Is(context.Cause(r.ctx), ErrCancelledInLab) {
			return nil
		}
		if !errors.Is(runErr, context.Canceled) {
			end.Error = runErr.Error()
		}
	default:
		end.State = "failed"
		end.Error = runErr.Error()
	}
	if streamErr != nil {
		end.State = "failed"
		end.Error = "streaming to the lab failed: " + streamErr.Error()
	}
	if err := r.flush(end); err != nil {
		if errors.Is(err, ErrCancelledInLab) {
			return nil
		}
		return err
	}
	return nil
}
