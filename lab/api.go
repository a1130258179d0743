package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /api/info", s.handleInfo)
	m.HandleFunc("GET /api/experiments", s.handleExperiments)
	m.HandleFunc("GET /api/experiments/{name}", s.handleExperiment)
	m.HandleFunc("GET /api/runs", s.handleListRuns)
	m.HandleFunc("POST /api/runs", s.handleStartRun)
	m.HandleFunc("GET /api/runs/{id}", s.handleGetRun)
	m.HandleFunc("PATCH /api/runs/{id}", s.handleAnnotate)
	m.HandleFunc("DELETE /api/runs/{id}", s.handleDelete)
	m.HandleFunc("POST /api/runs/{id}/cancel", s.handleCancel)
	m.HandleFunc("POST /api/runs/{id}/rerun", s.handleRerun)
	m.HandleFunc("GET /api/runs/{id}/points", s.handlePoints)
	m.HandleFunc("POST /api/runs/{id}/events", s.handleEvents)
	m.HandleFunc("GET /api/runs/{id}/stream", s.handleStream)
	m.HandleFunc("GET /api/runs/{id}/export", s.handleExport)
	m.HandleFunc("GET /api/report", s.handleReport)
	s.sweepRoutes(m)
	s.tensorRoutes(m) // tensors.go
	m.HandleFunc("/api/", s.handleNoRoute)
	m.Handle("GET /wasm/", http.StripPrefix("/wasm/", http.FileServerFS(s.opts.WASM)))
	page := http.FileServerFS(s.opts.Page)
	// Browsers ask for /favicon.ico whatever the page links (reports, the
	// API's JSON pages): the page's SVG icon, never a 404.
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(s.opts.Page, "favicon.svg")
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "max-age=86400")
		w.Write(b)
	})
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		page.ServeHTTP(w, r)
	})
	s.mux = m
}

// apiError is the body of every error answer of the API:
// {"error": "…", "param": "K"} (param when a parameter was refused).
type apiError struct {
	Error  string `json:"error"`
	Param  string `json:"param,omitempty"`
	Points *int64 `json:"points,omitempty"` // events: the points the lab holds
	Cancel bool   `json:"cancel,omitempty"` // events: the run was cancelled in the lab
}

var paramInError = regexp.MustCompile(`^(?:parameters?: )?(?:parameter|unknown parameter) "([^"]+)"`)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	writeRawJSON(w, status, b)
}

func writeRawJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte{'\n'})
}

func writeError(w http.ResponseWriter, status int, err error) {
	e := apiError{Error: err.Error()}
	if m := paramInError.FindStringSubmatch(e.Error); m != nil {
		e.Param = m[1]
	}
	writeJSON(w, status, e)
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// handleNoRoute answers API paths that match no route: 405 with the allowed
// methods when the path exists with another method, else 404.
func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pat := s.mux.Handler(probe); pat != "" && pat != "/api/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, errorf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, errorf("no such API endpoint: %s %s", r.Method, r.URL.Path))
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.info())
}

// ParamSchema and ExperimentSchema are the API's experiment schema, built
// by package sim for the API and the browser's registry alike.
type (
	ParamSchema      = sim.ParamSchema
	ExperimentSchema = sim.Schema
)

func (s *Server) handleExperiments(w http.ResponseWriter, r *http.Request) {
	b, err := sim.SchemasJSON()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeRawJSON(w, http.StatusOK, b)
}

func (s *Server) handleExperiment(w http.ResponseWriter, r *http.Request) {
	e, err := sim.Lookup(r.PathValue("name"))
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	writeJSON(w, http.StatusOK, sim.SchemaOf(e))
}

// decodeBody decodes the request's JSON body into v, refusing unknown
// fields and trailing data. An empty body leaves v as it is.
func decodeBody(r *http.Request, v any) (status int, err error) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, errorf("request body larger than %d bytes", tooBig.Limit)
		}
		return http.StatusBadRequest, errorf("reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return 0, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return http.StatusBadRequest, errorf("request body: %v", err)
	}
	if dec.More() {
		return http.StatusBadRequest, errorf("request body: trailing data after the JSON object")
	}
	return 0, nil
}

// parseSeed reads a seed given as a JSON number or a decimal string; absent
// means 1, the seed of `lab run`.
func parseSeed(raw json.RawMessage) (uint64, error) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return 1, nil
	}
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		t = t[1 : len(t)-1]
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return 0, errorf("seed %s: want a whole number from 0 to %d", string(raw), uint64(math.MaxUint64))
	}
	return n, nil
}

// startRequest is the body of POST /api/runs.
type startRequest struct {
	Experiment string          `json:"experiment"`
	Params     json.RawMessage `json:"params"`
	Seed       json.RawMessage `json:"seed"`
	Origin     string          `json:"origin"` // "server" (default), or a client's: "browser", "terminal", "client"
	Title      string          `json:"title"`
	Note       string          `json:"note"`
	Sweep      string          `json:"sweep"` // a client's run of a sweep: "SWEEP/RUN" (sweep.go)
	// The build that computes a client's run (ignored for server runs).
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	Bindings  string `json:"bindings"`
	Device    string `json:"device"`
}

// Limits on what a request may hold.
const (
	maxTitle     = 200
	maxNote      = 64 << 10
	maxBuildText = 200
	maxBody      = 1 << 20
	maxEventBody = 8 << 20
)

func checkAnnotation(title, note string) error {
	switch {
	case len(title) > maxTitle:
		return errorf("title longer than %d bytes", maxTitle)
	case len(note) > maxNote:
		return errorf("note longer than %d bytes", maxNote)
	}
	return nil
}

func (s *Server) handleStartRun(w http.ResponseWriter, r *http.Request) {
	var req startRequest
	if status, err := decodeBody(r, &req); err != nil {
		writeError(w, status, err)
		return
	}
	if req.Experiment == "" {
		writeError(w, http.StatusBadRequest, errorf("experiment: missing (GET /api/experiments lists them)"))
		return
	}
	seed, err := parseSeed(req.Seed)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := checkAnnotation(req.Title, req.Note); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	origin := notebook.Origin(req.Origin)
	if origin == "" {
		origin = notebook.OriginServer
	}
	if !origin.Valid() {
		writeError(w, http.StatusBadRequest, errorf("origin %q: want server, browser, terminal or client", req.Origin))
		return
	}
	exp, lookupErr := sim.Lookup(req.Experiment)
	if origin == notebook.OriginServer {
		if lookupErr != nil {
			writeError(w, http.StatusBadRequest, lookupErr)
			return
		}
		values, err := sim.ValuesFromJSON(exp.Params(), req.Params)
		if err == nil {
			err = checkParams(paramsMap(values))
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		run, err := s.submit(exp, values, seed, req.Title, req.Note, "")
		s.answerCreated(w, run, err)
		return
	}
	run, status, err := s.registerClientRun(req, exp, seed)
	if err != nil {
		writeError(w, status, err)
		return
	}
	s.answerCreated(w, run, nil)
}

func (s *Server) answerCreated(w http.ResponseWriter, run notebook.Run, err error) {
	switch {
	case errors.As(err, new(*budgetError)):
		writeError(w, http.StatusBadRequest, err)
	case errors.Is(err, errBusy) || errors.Is(err, errClosing):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, err)
	case err != nil:
		s.log.Error("creating a run", "err", err)
		writeError(w, writeStatus(err), errorf("the notebook could not record the run: %v", err))
	default:
		w.Header().Set("Location", "/api/runs/"+run.ID)
		writeJSON(w, http.StatusCreated, run)
	}
}

// registerClientRun records a run that a client computes and streams in.
// An experiment the lab knows has its values validated like a server run's;
// an unknown one (a user's own program) is kept with its values as given.
func (s *Server) registerClientRun(req startRequest, exp sim.Experiment, seed uint64) (notebook.Run, int, error) {
	for name, v := range map[string]string{"version": req.Version, "revision": req.Revision, "go_version": req.GoVersion, "platform": req.Platform,
		"bindings": req.Bindings, "device": req.Device} {
		if len(v) > maxBuildText {
			return notebook.Run{}, http.StatusBadRequest, errorf("%s longer than %d bytes", name, maxBuildText)
		}
	}
	meta := notebook.Run{
		Experiment: req.Experiment, Seed: seed, Origin: notebook.Origin(req.Origin), State: notebook.Running,
		Version: req.Version, Revision: req.Revision, GoVersion: req.GoVersion, Platform: req.Platform,
		Bindings: req.Bindings, Device: req.Device,
		Title: req.Title, Note: req.Note,
	}
	if exp != nil {
		values, err := sim.ValuesFromJSON(exp.Params(), req.Params)
		if err != nil {
			return meta, http.StatusBadRequest, err
		}
		meta.Params, meta.Flags, meta.Registered = paramsMap(values), values.Flags(), true
		if _, files := exp.(interface{ FileRoles() []sim.FileRole }); !files {
			meta.Reproduce = sim.Reproduce(exp, values, seed) // a client's files are not the lab's to name
		}
	} else {
		if req.Sweep != "" {
			return meta, http.StatusBadRequest, errorf("sweep: the lab does not know experiment %q", req.Experiment)
		}
		if !validName(req.Experiment) {
			return meta, http.StatusBadRequest, errorf("experiment %q: a name is letters, digits, '-', '_' and '.' (at most 100)", req.Experiment)
		}
		var params map[string]any
		if len(req.Params) > 0 {
			if err := json.Unmarshal(req.Params, &params); err != nil {
				return meta, http.StatusBadRequest, errorf("params: want a JSON object: %v", err)
			}
			if len(params) > 100 {
				return meta, http.StatusBadRequest, errorf("params: more than 100 parameters")
			}
		}
		meta.Params = params
	}
	if err := checkParams(meta.Params); err != nil {
		return meta, http.StatusBadRequest, err
	}
	if req.Sweep != "" {
		if status, err := s.sw.checkSweepRun(req.Sweep, &meta); err != nil {
			return meta, status, err
		}
	}
	s.mu.Lock()
	closing := s.closing
	clients := 0
	for _, l := range s.lives {
		if l.external {
			clients++
		}
	}
	s.mu.Unlock()
	if closing {
		return meta, http.StatusServiceUnavailable, errClosing
	}
	if clients >= maxClientRuns {
		return meta, http.StatusServiceUnavailable, errorf("%d client runs are streaming; the lab takes at most %d at once", clients, maxClientRuns)
	}
	now := time.Now().UTC()
	meta.Started = &now
	if err := s.store.Create(&meta); err != nil {
		s.noteWrite(err)
		return meta, writeStatus(err), errorf("the notebook could not record the run: %v", err)
	}
	s.sw.registered(meta)
	l := newLive(s, meta)
	l.external = true
	s.mu.Lock()
	s.lives[l.id] = l
	s.wg.Add(1)
	go func() { defer s.wg.Done(); l.flusher(s.opts.FlushInterval) }()
	s.mu.Unlock()
	select { // the janitor plans its next check with this run
	case s.wake <- struct{}{}:
	default:
	}
	s.log.Info("client run registered", "run", l.id, "experiment", meta.Experiment, "origin", meta.Origin)
	return l.snapshot(), 0, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// getRun returns the run as it stands: the live record for a live run, the
// notebook's otherwise.
func (s *Server) getRun(id string) (notebook.Run, error) {
	if l := s.liveRun(id); l != nil {
		return l.snapshot(), nil
	}
	return s.store.Get(id)
}

func (s *Server) writeRunError(w http.ResponseWriter, id string, err error) {
	if errors.Is(err, notebook.ErrNotFound) {
		writeError(w, http.StatusNotFound, errorf("no run %q", id))
		return
	}
	s.log.Error("notebook", "run", id, "err", err)
	writeError(w, writeStatus(err), errorf("notebook: %v", err))
}

func (s *Server) handleListRuns(w http.ResponseWriter, r *http.Request) {
	q := notebook.Query{Experiment: r.URL.Query().Get("experiment"), State: notebook.State(r.URL.Query().Get("state")), Limit: 200}
	if q.State != "" && !q.State.Valid() {
		writeError(w, http.StatusBadRequest, errorf("state %q: want queued, running, done, failed, cancelled or interrupted", q.State))
		return
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeError(w, http.StatusBadRequest, errorf("limit %q: want a whole number from 1 to 10000", v))
			return
		}
		q.Limit = n
	}
	filter, err := runFilter(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	// Filter the state after the live records replace the notebook's,
	// which lag them by up to a flush.
	state, limit := q.State, q.Limit
	if state != "" || filter != nil {
		q.State, q.Limit = "", 0
	}
	runs, err := s.store.List(q)
	if err != nil {
		s.writeRunError(w, "", err)
		return
	}
	out := make([]notebook.Run, 0, len(runs))
	for _, run := range runs {
		if l := s.liveRun(run.ID); l != nil {
			run = l.snapshot()
		}
		if state != "" && run.State != state || filter != nil && !filter.Match(&run) {
			continue
		}
		if out = append(out, run); len(out) == limit {
			break
		}
	}
	// The answer holds at most maxListBytes of records: past it the list
	// stops, with "truncated": true (ask for a smaller limit or filter).
	b, truncated := appendJSONList([]byte(`{"runs":[`), out, func(run notebook.Run) any { return run })
	b = append(b, ']')
	if truncated {
		b = append(b, `,"truncated":true`...)
	}
	writeRawJSON(w, http.StatusOK, append(b, '}'))
}

func (s *Server) handleGetRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	run, err := s.getRun(id)
	if err != nil {
		s.writeRunError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

// annotateRequest is the body of PATCH /api/runs/{id}.
type annotateRequest struct {
	Title *string `json:"title"`
	Note  *string `json:"note"`
}

func (s *Server) handleAnnotate(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req annotateRequest
	if status, err := decodeBody(r, &req); err != nil {
		writeError(w, status, err)
		return
	}
	if req.Title == nil && req.Note == nil {
		writeError(w, http.StatusBadRequest, errorf("nothing to change: give title and/or note"))
		return
	}
	if err := checkAnnotation(deref(req.Title), deref(req.Note)); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	err := s.store.Update(id, func(run *notebook.Run) error {
		if req.Title != nil {
			run.Title = *req.Title
		}
		if req.Note != nil {
			run.Note = *req.Note
		}
		return nil
	})
	if err != nil {
		s.writeRunError(w, id, err)
		return
	}
	if l := s.liveRun(id); l != nil {
		l.annotate(req.Title, req.Note)
	}
	s.handleGetRun(w, r)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if l := s.liveRun(id); l != nil {
		s.cancelRun(id)
		select {
		case <-l.ended:
		case <-time.After(cancelGrace):
			l.finish(notebook.Cancelled, "cancelled by a user") // as a cancel: the record ends now
		}
	}
	if err := s.store.Delete(id); err != nil {
		s.writeRunError(w, id, err)
		return
	}
	s.log.Info("run deleted", "run", id)
	w.WriteHeader(http.StatusNoContent)
}

// cancelGrace is how long a cancel waits for a running experiment to stop
// before recording it cancelled anyway.
const cancelGrace = 900 * time.Millisecond

func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.cancelRun(id) {
		run, err := s.store.Get(id)
		if err != nil {
			s.writeRunError(w, id, err)
			return
		}
		writeError(w, http.StatusConflict, errorf("run %s has already ended (%s)", id, run.State))
		return
	}
	if l := s.liveRun(id); l != nil {
		select { // experiments look at their context at least every few tens of milliseconds
		case <-l.ended:
		case <-time.After(cancelGrace):
			// The record is ended now whatever the experiment does: the
			// cancel takes effect within cancelGrace, and the execution,
			// whose points are refused from here on, returns when it looks.
			s.log.Warn("a cancelled run has not stopped; it is recorded cancelled", "run", id, "grace", cancelGrace)
			l.finish(notebook.Cancelled, "cancelled by a user")
		}
	}
	s.handleGetRun(w, r)
}

// rerunRequest is the body of POST /api/runs/{id}/rerun (optional).
type rerunRequest struct {
	Seed json.RawMessage `json:"seed"` // default: the run's seed
}

func (s *Server) handleRerun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req rerunRequest
	if status, err := decodeBody(r, &req); err != nil {
		writeError(w, status, err)
		return
	}
	old, err := s.getRun(id)
	if err != nil {
		s.writeRunError(w, id, err)
		return
	}
	exp, err := sim.Lookup(old.Experiment)
	if err != nil {
		writeError(w, http.StatusConflict, errorf("run %s cannot be re-run here: %v", id, err))
		return
	}
	values, err := sim.ValuesFromMap(exp.Params(), old.Params)
	if err != nil {
		writeError(w, http.StatusConflict, errorf("run %s cannot be re-run with today's %s: %v", id, old.Experiment, err))
		return
	}
	seed := old.Seed
	if len(req.Seed) > 0 {
		if seed, err = parseSeed(req.Seed); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
	}
	run, err := s.submit(exp, values, seed, old.Title, "", id)
	s.answerCreated(w, run, err)
}

// queryInt reads a non-negative integer query parameter.
func queryInt(r *http.Request, name string, def, maxV int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > maxV {
		return 0, errorf("%s %q: want a whole number from 0 to %d", name, v, maxV)
	}
	return n, nil
}

// points returns up to limit points of the run from index from on, from
// the live log or the notebook.
func (s *Server) points(id string, from int64, limit int) ([]sim.Point, error) {
	if l := s.liveRun(id); l != nil {
		v := l.look(from, limit)
		if !v.behind {
			return v.points, nil
		}
	}
	return s.store.Points(id, from, limit)
}

func (s *Server) handlePoints(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	from, err := queryInt(r, "from", 0, math.MaxInt64)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	limit, err := queryInt(r, "limit", 10000, 100000)
	if err != nil || limit == 0 {
		writeError(w, http.StatusBadRequest, errorf("limit: want a whole number from 1 to 100000"))
		return
	}
	run, err := s.getRun(id)
	if err != nil {
		s.writeRunError(w, id, err)
		return
	}
	pts, err := s.points(id, from, int(limit))
	if err != nil {
		s.writeRunError(w, id, err)
		return
	}
	b := fmt.Appendf(nil, `{"from":%d,"count":%d,"total":%d,"state":%q,"points":`, from, len(pts), max(run.Points, from+int64(len(pts))), run.State)
	b = sim.AppendPointsJSON(b, pts)
	b = append(b, '}')
	writeRawJSON(w, http.StatusOK, b)
}

// jsonPoint is a point in the API; null numbers are NaN.
type jsonPoint struct {
	Series string              `json:"series"`
	X      *float64            `json:"x"`
	Y      *float64            `json:"y"`
	Extra  map[string]*float64 `json:"extra"`
}

func nanIfNull(f *float64) float64 {
	if f == nil {
		return math.NaN()
	}
	return *f
}

// eventsRequest is the body of POST /api/runs/{id}/events: the next part of
// a client's run.
type eventsRequest struct {
	From     int64       `json:"from"` // index of Points[0] in the run
	Points   []jsonPoint `json:"points"`
	Progress *struct {
		Done  int64 `json:"done"`
		Total int64 `json:"total"`
	} `json:"progress"`
	Notes []string `json:"notes"`
	// NotesFrom, when given, is the index of Notes[0] among the notes the
	// run has sent: notes the lab already took are skipped, so that a
	// retry does not repeat them (as From does for points).
	NotesFrom *int64              `json:"notes_from"`
	Summary   map[string]*float64 `json:"summary"`
	End       *struct {
		State string `json:"state"` // done, failed or cancelled
		Error string `json:"error"`
	} `json:"end"`
}

// Limits of one events request.
const (
	maxEventPoints = 100000
	maxSeriesName  = 200
	maxExtras      = 32
)

var reservedExtra = []string{"type", "series", "x", "y"}

func (req *eventsRequest) check() error {
	if req.From < 0 {
		return errorf("from %d: negative", req.From)
	}
	if len(req.Points) > maxEventPoints {
		return errorf("%d points in one request; at most %d", len(req.Points), maxEventPoints)
	}
	for i, p := range req.Points {
		if len(p.Series) > maxSeriesName {
			return errorf("point %d: series name longer than %d bytes", i, maxSeriesName)
		}
		if len(p.Extra) > maxExtras {
			return errorf("point %d: more than %d extra values", i, maxExtras)
		}
		for k := range p.Extra {
			if slices.Contains(reservedExtra, k) {
				return errorf("point %d: extra name %q is reserved", i, k)
			}
			if len(k) > maxExtraName {
				return errorf("point %d: extra name %.20q… longer than %d bytes", i, k, maxExtraName)
			}
		}
	}
	if req.NotesFrom != nil && *req.NotesFrom < 0 {
		return errorf("notes_from %d: negative", *req.NotesFrom)
	}
	if req.Progress != nil && (req.Progress.Done < 0 || req.Progress.Total < 0) {
		return errorf("progress: negative")
	}
	if len(req.Notes) > maxNotes {
		return errorf("more than %d notes", maxNotes)
	}
	if len(req.Summary) > maxSummaryKeys {
		return errorf("summary: more than %d values", maxSummaryKeys)
	}
	for k := range req.Summary {
		if len(k) > maxSummaryKey {
			return errorf("summary: key %.20q… longer than %d bytes", k, maxSummaryKey)
		}
	}
	if e := req.End; e != nil {
		switch notebook.State(e.State) {
		case notebook.Done, notebook.Failed, notebook.Cancelled:
		default:
			return errorf("end state %q: want done, failed or cancelled", e.State)
		}
		if len(e.Error) > maxNoteLen {
			return errorf("end error longer than %d bytes", maxNoteLen)
		}
	}
	return nil
}

// sameEnd reports whether req repeats the end a run already has (a client
// retrying an end whose answer it did not get, e.g. a 507): nothing new in
// it, and the same end state.
func sameEnd(req *eventsRequest, st notebook.State, count int64) bool {
	return req.End != nil && notebook.State(req.End.State) == st && req.From+int64(len(req.Points)) <= count
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req eventsRequest
	if status, err := decodeBody(r, &req); err != nil {
		writeError(w, status, err)
		return
	}
	if err := req.check(); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	l := s.liveRun(id)
	if l == nil || !l.external {
		run, err := s.store.Get(id)
		switch {
		case err != nil:
			s.writeRunError(w, id, err)
		case l != nil:
			writeError(w, http.StatusConflict, errorf("run %s is computed by the lab; it takes no events", id))
		case run.Origin != notebook.OriginServer && sameEnd(&req, run.State, run.Points):
			writeJSON(w, http.StatusOK, map[string]any{"points": run.Points, "cancel": false}) // recorded since
		default:
			writeJSON(w, http.StatusConflict, apiError{Error: fmt.Sprintf("run %s has ended (%s)", id, run.State), Cancel: run.State == notebook.Cancelled})
		}
		return
	}
	// One request of a run at a time: the count read, the points skipped
	// as a retry's and the points appended are one step, so concurrent
	// retries with the same from append once.
	l.eventsMu.Lock()
	defer l.eventsMu.Unlock()
	l.mu.Lock()
	count, final, st, notesTaken := l.count, l.final, l.meta.State, l.notesTaken
	l.lastSeen = time.Now()
	var limitErr error
	if !final {
		limitErr = l.checkLimitsLocked(&req)
	}
	l.mu.Unlock()
	committed := l.committed()
	if final && sameEnd(&req, st, count) {
		// The end is not recorded yet (the notebook refused it): try now.
		if err := l.flush(); err != nil {
			w.Header().Set("Retry-After", "1")
			writeError(w, writeStatus(err), errorf("the notebook could not record the end of the run: %v; the lab keeps it in memory and records it when it can: send the same request again", err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"points": count, "cancel": false})
		return
	}
	if final {
		writeJSON(w, http.StatusConflict, apiError{Error: fmt.Sprintf("run %s has ended", id), Cancel: true, Points: &committed})
		return
	}
	if req.From > count {
		writeJSON(w, http.StatusConflict, apiError{Error: fmt.Sprintf("points must follow the %d the lab holds (from %d)", count, req.From), Points: &count})
		return
	}
	if req.NotesFrom != nil && *req.NotesFrom > notesTaken {
		writeJSON(w, http.StatusConflict, apiError{Error: fmt.Sprintf("notes must follow the %d the lab holds (notes_from %d)", notesTaken, *req.NotesFrom)})
		return
	}
	if limitErr != nil {
		writeError(w, http.StatusBadRequest, limitErr)
		return
	}
	skip := min(count-req.From, int64(len(req.Points))) // a retry repeats what the lab took
	stopped := false
	for _, p := range req.Points[skip:] {
		pt := sim.Point{Series: p.Series, X: nanIfNull(p.X), Y: nanIfNull(p.Y)}
		if len(p.Extra) > 0 {
			pt.Extra = make(map[string]float64, len(p.Extra))
			for k, v := range p.Extra {
				pt.Extra[k] = nanIfNull(v)
			}
		}
		if l.Point(pt) != nil {
			stopped = true // the run ended meanwhile (cancelled): what it took is committed by its end
			break
		}
	}
	notes := req.Notes
	if req.NotesFrom != nil {
		notes = notes[min(notesTaken-*req.NotesFrom, int64(len(notes))):]
	}
	for _, n := range notes {
		l.Note(n)
	}
	if req.Progress != nil {
		l.Progress(req.Progress.Done, req.Progress.Total)
	}
	if req.Summary != nil {
		m := make(map[string]float64, len(req.Summary))
		for k, v := range req.Summary {
			m[k] = nanIfNull(v)
		}
		l.Summary(m)
	}
	// Answer 200 only for what the notebook holds: on a write error the
	// events stay in memory, the answer is 507 (disk full) or 500 with the
	// count the notebook holds, and the client's retry of the same request
	// is answered when they are written.
	switch {
	case stopped:
		<-l.ended
	case req.End != nil:
		err := l.finish(notebook.State(req.End.State), req.End.Error)
		l.mu.Lock()
		unrecorded := l.dirty || l.flushed < l.count
		committed = l.flushed
		l.mu.Unlock()
		if err != nil || unrecorded { // never acknowledge an end the notebook does not hold
			status := http.StatusServiceUnavailable
			if err != nil {
				status = writeStatus(err)
			}
			w.Header().Set("Retry-After", "1")
			writeJSON(w, status, apiError{Error: fmt.Sprintf("the notebook could not record the end of the run (%v); the lab keeps it in memory and records it when it can: send the same request again", err), Points: &committed})
			return
		}
	default:
		if err := l.flush(); err != nil {
			committed = l.committed()
			s.log.Warn("notebook write failed; the client is told to retry", "run", id, "err", err)
			w.Header().Set("Retry-After", "1")
			writeJSON(w, writeStatus(err), apiError{Error: fmt.Sprintf("the notebook could not record the points: %v; the lab keeps them in memory and records them when it can: send the same request again", err), Points: &committed})
			return
		}
	}
	l.mu.Lock()
	count, final = l.flushed, l.final && l.meta.State == notebook.Cancelled
	ended := l.final
	l.mu.Unlock()
	if stopped || (ended && req.End == nil) {
		writeJSON(w, http.StatusConflict, apiError{Error: fmt.Sprintf("run %s has ended; %d points were kept", id, count), Cancel: final, Points: &count})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"points": count, "cancel": false})
}

// appendJSONList appends to b the JSON of each item (as conv gives it),
// comma-separated, while the answer stays within maxListBytes; truncated
// says that it stopped there. An item that does not marshal is left out.
func appendJSONList[T any](b []byte, items []T, conv func(T) any) (out []byte, truncated bool) {
	for i, it := range items {
		rb, err := json.Marshal(conv(it))
		if err != nil {
			continue
		}
		if len(b)+len(rb) > maxListBytes {
			return b, true
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, rb...)
	}
	return b, false
}
