package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fp8lab/fp8lab/experiments"
	labserver "github.com/fp8lab/fp8lab/lab"
	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

const serveUsage = "usage: lab [serve] [-addr 127.0.0.1:8080] [-data DIR] [-workers N] [-max-memory SIZE] [-max-work 3.6e12] [-gpu-idle 30s] [-wasm DIR]"

// cmdServe runs `lab serve`: it opens the notebook in the data folder
// (marking runs a crash left unfinished as interrupted), serves the lab on
// addr until ctx is cancelled (SIGINT, SIGTERM), then shuts down gracefully:
// running runs are recorded as interrupted with every point they emitted.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on; keep it on 127.0.0.1 unless the network is trusted")
	data := fs.String("data", "data", "data folder holding the notebook ("+notebook.FileName+")")
	workers := fs.Int("workers", 0, "server runs executing at once (default: the number of CPUs, at least 2)")
	maxMemory := byteSize(labserver.DefaultMaxMemoryFor(machineMemory()))
	fs.Var(&maxMemory, "max-memory", "most memory the runs executing at once may hold together, by the experiments' estimates (e.g. 4GiB, 512MiB); a run estimated above it is refused; by default a quarter of the machine's memory (or of its cgroup's limit), at least 4GiB")
	maxWork := fs.Float64("max-work", labserver.DefaultMaxWork, "most work one run may be estimated to need, in operations of about a nanosecond (3.6e12: an hour of CPU time on one core)")
	gpuIdle := fs.Duration("gpu-idle", experiments.DefaultGPUIdle, "how long the GPU the runs with device gpu share stays open after the last of them (0: each such run opens and closes its own device, as in a terminal); up to 1 hour")
	wasmDir := fs.String("wasm", "", "serve lab.wasm and wasm_exec.js from this folder instead of the build embedded in the binary")
	slurmOpts := slurmFlags(fs) // sweep.go
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, serveUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return fmt.Errorf("lab serve: %v\n%s", err, serveUsage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("lab serve: unexpected argument %q\n%s", fs.Arg(0), serveUsage)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("lab serve: %w", err)
	}
	store, err := notebook.Open(*data)
	if err != nil {
		ln.Close()
		return err
	}
	defer store.Close()
	if rec := store.Recovered(); len(rec) > 0 {
		log.Warn("runs left unfinished by a crash are marked interrupted", "runs", strings.Join(rec, ","))
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
		log.Warn("the lab listens beyond this machine: anyone who reaches it can run experiments and read the notebook", "addr", ln.Addr().String())
	}
	if *maxWork < 1 || *maxWork > 9e18 {
		ln.Close()
		return fmt.Errorf("lab serve: -max-work %g: want 1 to 9e18 operations\n%s", *maxWork, serveUsage)
	}
	if *gpuIdle < 0 || *gpuIdle > time.Hour {
		ln.Close()
		return fmt.Errorf("lab serve: -gpu-idle %v: want 0 to 1h\n%s", *gpuIdle, serveUsage)
	}
	opts := labserver.Options{Store: store, Workers: *workers, Addr: ln.Addr().String(), Log: log,
		MaxMemory: int64(maxMemory), MaxWork: int64(*maxWork), FilesDir: filepath.Join(*data, "files"), Slurm: slurmOpts(),
		TensorsDir: filepath.Join(*data, "tensors")}
	if *gpuIdle > 0 {
		// One device for the runs with device gpu: a run takes it opened,
		// with its pipelines compiled (experiments.SharedGPU).
		gpu := experiments.NewSharedGPU(*gpuIdle)
		gpu.Log = log
		defer gpu.Close() // after the runs have ended (Shutdown below)
		opts.RunContext = gpu.Bind
	}
	if *wasmDir != "" {
		if _, err := os.Stat(*wasmDir + "/lab.wasm"); err != nil {
			ln.Close()
			return fmt.Errorf("lab serve: -wasm %s: %w", *wasmDir, err)
		}
		opts.WASM = os.DirFS(*wasmDir)
	}
	srv, err := labserver.New(opts)
	if err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	goLimit, restoreLimit := goMemoryLimit(opts.MaxMemory)
	defer restoreLimit()
	log.Info("the lab's budget", "max-memory", sim.Bytes(opts.MaxMemory), "max-work", fmt.Sprintf("%.2g", float64(opts.MaxWork)), "machine-memory", sim.Bytes(machineMemory()), "go-memory-limit", goLimitText(goLimit))
	b := sim.Build()
	fmt.Fprintf(stdout, "fp8lab lab on http://%s/  (notebook %s; fp8lab %s %s)\n", ln.Addr(), store.Path(), b.Version, b.Revision)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	select {
	case err = <-served:
	case <-ctx.Done():
	}
	log.Info("shutting down: runs in progress are recorded as interrupted")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The runs are recorded at once, while the HTTP server closes: a slow
	// request (a large export) cannot use up the deadline of the runs.
	httpDone := make(chan struct{})
	go func() { hs.Shutdown(sctx); close(httpDone) }()
	if serr := srv.Shutdown(sctx); serr != nil {
		log.Error("shutdown", "err", serr)
	}
	<-httpDone
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if cerr := store.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// withLab makes `lab run NAME -lab URL` stream the run into the lab at
// labURL as well: it returns the sink to use (sink and the lab), the
// context to run in (cancelled when a user cancels the run in the lab) and
// the function that ends the lab's record with the run's error and returns
// the error of the command. With an empty labURL it changes nothing.
func withLab(ctx context.Context, labURL, sweepRef string, exp sim.Experiment, values sim.Values, seed uint64, sink sim.Sink, stderr io.Writer, quiet bool) (sim.Sink, context.Context, func(error) error, error) {
	if labURL == "" {
		return sink, ctx, func(err error) error { return err }, nil
	}
	c := &sim.LabClient{URL: labURL, Origin: string(notebook.OriginTerminal), Sweep: sweepRef}
	lr, err := c.Start(ctx, exp, values, seed)
	if err != nil {
		return nil, nil, nil, err
	}
	if !quiet {
		fmt.Fprintf(stderr, "streaming into the lab: %s\n", lr.URL())
	}
	finish := func(runErr error) error {
		if ferr := lr.Finish(runErr); ferr != nil && runErr == nil {
			return ferr
		}
		if runErr != nil && errors.Is(context.Cause(lr.Context()), sim.ErrCancelledInLab) {
			return sim.ErrCancelledInLab
		}
		return runErr
	}
	return sim.Tee(sink, lr), lr.Context(), finish, nil
}

// byteSize is a flag holding a number of bytes, written with an optional
// unit: 4GiB, 512MiB, 1.5G, 1000000.
type byteSize int64

func (b *byteSize) String() string { return sim.Bytes(int64(*b)) }

func (b *byteSize) Set(v string) error {
	t := strings.TrimSpace(v)
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f*mult >= 1<<20) || f*mult > 1<<50 {
		return fmt.Errorf("%q: want a size from 1MiB to 1PiB, e.g. 4GiB", v)
	}
	*b = byteSize(f * mult)
	return nil
}
