//go:build js && wasm

// Command wasm is fp8lab's registry of experiments built for the browser
// (GOOS=js GOARCH=wasm). The lab's page loads it in a Web Worker
// (web/worker.js), so that a run computes off the page's thread, and talks
// to it through the object it installs as self.fp8lab:
//
//	fp8lab.experiments()                       JSON list of the experiments (schema as GET /api/experiments)
//	fp8lab.build()                             JSON sim.BuildInfo of this module
//	fp8lab.run(name, paramsJSON, seed, onEvent) starts a run; onEvent(json) gets its events
//	fp8lab.bench(model, K, millis)             JSON {"products_per_s":…}: the accum chain's speed here
//
// The events of a run are JSON strings: {"type":"points","from":N,"points":[…]}
// (the lab API's point format), {"type":"progress","done":D,"total":T},
// {"type":"note","text":…}, and last {"type":"end","state":"done"|"failed",
// "error":…, "summary":{…}, "elapsed_ms":…}. A run is cancelled by
// terminating the worker (a computing Go program does not yield to the
// worker's event loop, so a message could not reach it).
//
// The experiments are those of package experiments that build for js
// (pure Go, no cgo), so the same seed gives the same numbers as the server.
// Built with -tags labtest it also holds the lab's test experiment.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"sync"
	"syscall/js"
	"time"

	_ "github.com/fp8lab/fp8lab/experiments" // the registry's experiments
	"github.com/fp8lab/fp8lab/internal/wasmk"
	"github.com/fp8lab/fp8lab/sim"
)

// browserCannot returns why an experiment cannot run in a browser, or "":
// one that reads input files (attention-file) has nothing to read there.
func browserCannot(e sim.Experiment) string {
	if _, files := e.(sim.FileExperiment); files {
		return "it reads input files, which a browser run cannot open: run it on the server (the tensors panel)"
	}
	return ""
}

func main() {
	api := js.Global().Get("Object").New()
	api.Set("experiments", js.FuncOf(func(js.Value, []js.Value) any { return experimentsJSON() }))
	api.Set("serverOnly", js.FuncOf(func(js.Value, []js.Value) any {
		out := map[string]string{}
		for _, e := range sim.Experiments() {
			if why := browserCannot(e); why != "" {
				out[e.Name()] = why
			}
		}
		b, _ := json.Marshal(out)
		return string(b)
	}))
	api.Set("build", js.FuncOf(func(js.Value, []js.Value) any {
		b, _ := json.Marshal(sim.Build())
		return string(b)
	}))
	api.Set("run", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) != 4 {
			return "run(name, paramsJSON, seed, onEvent): 4 arguments"
		}
		name, params, seed, cb := args[0].String(), args[1].String(), args[2].String(), args[3]
		go run(name, params, seed, cb) // never block inside a js.FuncOf callback
		return nil
	}))
	api.Set("bench", js.FuncOf(func(_ js.Value, args []js.Value) any {
		if len(args) != 4 {
			return `{"error":"bench(model, K, millis, onResult): 4 arguments"}`
		}
		model, k, ms, cb := args[0].String(), args[1].Int(), args[2].Int(), args[3]
		go func() {
			res := benchChain(model, k, time.Duration(ms)*time.Millisecond)
			b, _ := json.Marshal(res)
			cb.Invoke(string(b))
		}()
		return nil
	}))
	js.Global().Set("fp8lab", api)
	if ready := js.Global().Get("fp8labReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

// experimentsJSON is the list of the registry's experiment schemas, in the
// JSON form of the lab's GET /api/experiments (both come from sim.Schemas).
func experimentsJSON() string {
	list := []sim.Schema{}
	for _, e := range sim.Experiments() {
		if browserCannot(e) == "" {
			list = append(list, sim.SchemaOf(e))
		}
	}
	b, err := json.Marshal(list)
	if err != nil {
		return "[]"
	}
	return string(b)
}

// run executes one experiment and reports its events through cb.
func run(name, paramsJSON, seedText string, cb js.Value) {
	start := time.Now()
	send := func(v any) {
		b, _ := json.Marshal(v)
		cb.Invoke(string(b))
	}
	fail := func(err error) {
		send(map[string]any{"type": "end", "state": "failed", "error": err.Error(), "elapsed_ms": time.Since(start).Milliseconds()})
	}
	exp, err := sim.Lookup(name)
	if err != nil {
		fail(err)
		return
	}
	if why := browserCannot(exp); why != "" {
		fail(fmt.Errorf("%s cannot run in this browser: %s", name, why))
		return
	}
	values, err := sim.ValuesFromJSON(exp.Params(), []byte(paramsJSON))
	if err != nil {
		fail(err)
		return
	}
	seed, err := strconv.ParseUint(seedText, 10, 64)
	if err != nil {
		fail(errors.New("seed: want a whole number"))
		return
	}
	sink := &workerSink{cb: cb, last: time.Now()}
	// Which code computes the run's hot loops here: the hand-written
	// WebAssembly kernels, or (where they cannot load) the Go loops; the
	// same bits either way.
	if err := wasmk.Check(); err != nil {
		send(map[string]any{"type": "note", "text": "WebAssembly SIMD kernels not loaded (" + err.Error() + "): the Go loops computed this run, the same bits, slower"})
	} else {
		send(map[string]any{"type": "note", "text": "WebAssembly SIMD kernels loaded: the hot loops ran as hand-written WebAssembly (internal/wasmk), the same bits as the Go code"})
	}
	res, err := sim.Execute(context.Background(), exp, values, seed, sink)
	end := map[string]any{"type": "end", "state": "done", "elapsed_ms": time.Since(start).Milliseconds(), "points": res.Points}
	if err != nil {
		end["state"], end["error"] = "failed", err.Error()
	}
	summary := map[string]any{}
	for k, v := range res.Summary {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			summary[k] = nil
		} else {
			summary[k] = v
		}
	}
	end["summary"] = summary
	send(end)
}

// workerSink batches a run's points and sends them to the page at most
// every 50 ms (or every 2000 points), with the latest progress and the
// notes.
type workerSink struct {
	cb js.Value

	mu      sync.Mutex
	pending []sim.Point
	from    int64
	last    time.Time
}

func (s *workerSink) flushLocked() {
	if len(s.pending) == 0 {
		return
	}
	b := []byte(`{"type":"points","from":`)
	b = strconv.AppendInt(b, s.from, 10)
	b = append(b, `,"points":`...)
	b = sim.AppendPointsJSON(b, s.pending)
	b = append(b, '}')
	s.from += int64(len(s.pending))
	s.pending = s.pending[:0]
	s.last = time.Now()
	s.cb.Invoke(string(b))
}

func (s *workerSink) Point(p sim.Point) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Extra != nil {
		p.Extra = maps.Clone(p.Extra)
	}
	s.pending = append(s.pending, p)
	if len(s.pending) >= 2000 || time.Since(s.last) > 50*time.Millisecond {
		s.flushLocked()
	}
	return nil
}

func (s *workerSink) Progress(done, total int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	s.cb.Invoke(`{"type":"progress","done":` + strconv.FormatInt(done, 10) + `,"total":` + strconv.FormatInt(total, 10) + `}`)
}

func (s *workerSink) Note(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	b, _ := json.Marshal(map[string]string{"type": "note", "text": text})
	s.cb.Invoke(string(b))
}

func (s *workerSink) Summary(map[string]float64) {}

func (s *workerSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	return nil
}
