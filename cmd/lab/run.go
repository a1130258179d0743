package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"text/tabwriter"

	"github.com/fp8lab/fp8lab/sim"
)

const runUsage = "usage: lab run NAME [-param value ...] [-seed N] [-json] [-quiet] [-lab URL] [-cpuprofile F] [-trace F]"

// runOptions are the flags of `lab run` that are not experiment parameters.
var runOptions = []string{"seed", "json", "quiet", "lab", "sweep", "cpuprofile", "trace", "h", "help"}

// paramFlag collects the text given for one experiment parameter; the text
// is validated against the schema after parsing, so that errors read
// `parameter "trials": 0 is below the minimum 1`.
type paramFlag struct {
	p   sim.Param
	set map[string]string
}

func (f *paramFlag) String() string {
	if f == nil || f.set == nil {
		return ""
	}
	return f.set[f.p.Name]
}

func (f *paramFlag) Set(s string) error {
	f.set[f.p.Name] = s
	return nil
}

// IsBoolFlag lets a bool parameter be given as -name (or -name=false).
func (f *paramFlag) IsBoolFlag() bool { return f.p.Kind == sim.KindBool }

// cmdRun runs `lab run NAME [-param value ...] [-seed N] [-json] [-quiet]`:
// it looks the experiment up, builds its flags from the parameter schema,
// runs it until it ends or ctx is cancelled, and writes a table (default) or
// JSON lines (-json) on stdout and a progress bar on stderr (unless -quiet).
// `-h` prints the experiment's parameters on stdout. Errors (unknown
// experiment, bad parameter, failed run) are returned, never printed.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		if len(args) == 0 {
			return fmt.Errorf("%s\n(lab list experiments shows the experiments)", runUsage)
		}
		fmt.Fprintln(stdout, runUsage)
		fmt.Fprintln(stdout)
		return cmdListExperiments(stdout)
	}
	name := args[0]
	if strings.HasPrefix(name, "-") {
		return fmt.Errorf("%s: the experiment name comes first, got %q", runUsage, name)
	}
	exp, err := sim.Lookup(name)
	if err != nil {
		return err
	}

	fs := flag.NewFlagSet("lab run "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	given := map[string]string{}
	params := exp.Params()
	for _, p := range params {
		for _, o := range runOptions {
			if p.Name == o {
				return fmt.Errorf("experiment %q: parameter %q clashes with the option -%s", name, p.Name, o)
			}
		}
		fs.Var(&paramFlag{p: p, set: given}, p.Name, p.Doc)
		for _, a := range p.Aliases { // former names keep old reproduce lines runnable
			old := p
			old.Name = a
			fs.Var(&paramFlag{p: old, set: given}, a, p.Doc)
		}
	}
	withFiles := fileFlags(fs, exp)
	seed := fs.Uint64("seed", 1, "seed of the run")
	jsonOut := fs.Bool("json", false, "write JSON lines on stdout instead of a table")
	quiet := fs.Bool("quiet", false, "no progress bar on stderr")
	labURL := fs.String("lab", "", "also stream the run into the lab at this URL")
	sweepRef := fs.String("sweep", "", "with -lab: record the run as run N of sweep ID (ID/N/KEY, as the lab writes it into a sweep's Slurm tasks)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run (runtime/pprof, for go tool pprof) to this file")
	traceOut := fs.String("trace", "", "write an execution trace of the run (runtime/trace, for go tool trace: goroutines, and the experiments' regions) to this file")

	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return printRunHelp(stdout, exp)
		}
		return fmt.Errorf("lab run %s: %v (lab run %s -h lists the parameters)", name, err, name)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("lab run %s: unexpected argument %q (flags are -name value)", name, fs.Arg(0))
	}
	values, err := sim.ParseValues(params, given)
	if err != nil {
		return err
	}
	exp, _, err = withFiles()
	if err != nil {
		return err
	}

	// The run's estimate, less what it holds outside Go's heap, is its
	// process's soft memory limit while it runs (goMemoryLimit).
	if c, ok := sim.Estimate(exp, values); ok {
		_, restore := goMemoryLimit(c.Memory - c.Outside)
		defer restore()
	}

	var out sim.Sink
	if *jsonOut {
		out = sim.NewJSONSink(stdout)
	} else {
		fmt.Fprintf(stdout, "%s\n\n", wrapCommand(sim.Reproduce(exp, values, *seed), termWidth))
		out = sim.NewTableSink(stdout)
	}
	sink := out
	if !*quiet {
		// The bar first, so that it ends its line before the table is written.
		sink = sim.Tee(sim.NewProgressBar(stderr), out)
	}
	if *sweepRef != "" && *labURL == "" {
		return fmt.Errorf("lab run %s: -sweep needs -lab URL", name)
	}
	sink, runCtx, finish, err := withLab(ctx, *labURL, *sweepRef, exp, values, *seed, sink, stderr, *quiet)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return finish(err)
	}
	stopTrace, err := startTrace(*traceOut)
	if err != nil {
		return finish(errors.Join(err, stopProfile()))
	}
	_, err = sim.Execute(runCtx, exp, values, *seed, sink)
	return finish(errors.Join(err, stopTrace(), stopProfile()))
}

// startTrace starts an execution trace into path ("" traces nothing) and
// returns what stops it and closes the file; like the CPU profile it covers
// the run only. The experiments mark their phases as trace regions (the
// needle's: drawing, quantizing, references, the GPU's packing, upload and
// kernels), which go tool trace lists with their times.
func startTrace(path string) (stop func() error, err error) {
	return startRecording("-trace", path, trace.Start, trace.Stop)
}

// startCPUProfile starts a CPU profile into path ("" profiles nothing) and
// returns what stops it and closes the file. The profile covers the run
// only (not the flag parsing, not the lab's set-up); time spent in C (a
// WebGPU driver's threads, such as lavapipe's) appears as cgo frames.
func startCPUProfile(path string) (stop func() error, err error) {
	return startRecording("-cpuprofile", path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startRecording creates path and starts a recorder writing to it (start,
// then stop when the returned function is called, which closes the file);
// "" records nothing. Errors name the flag.
func startRecording(flag, path string, start func(io.Writer) error, stop func()) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() error {
		stop()
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		return nil
	}, nil
}

// printRunHelp writes the help of `lab run NAME`: usage, the experiment's
// documentation, its parameters and the run options.
func printRunHelp(w io.Writer, exp sim.Experiment) error {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: lab run %s [-param value ...] [-seed N] [-json] [-quiet] [-lab URL]\n\n", exp.Name())
	if doc := strings.TrimSpace(exp.Doc()); doc != "" {
		for _, line := range strings.Split(doc, "\n") {
			if len([]rune(line)) > termWidth {
				wrapText(&b, line, "", termWidth)
			} else {
				b.WriteString(line + "\n")
			}
		}
		b.WriteString("\n")
	}
	if params := exp.Params(); len(params) > 0 {
		b.WriteString("parameters:\n")
		writeParams(&b, params)
		b.WriteString("\n")
	}
	b.WriteString(fileFlagsHelp(exp))
	b.WriteString("options:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  -seed N\tseed of the run (default 1); the same seed and parameters give the same numbers")
	fmt.Fprintln(tw, "  -json\twrite JSON lines on stdout instead of a table")
	fmt.Fprintln(tw, "  -quiet\tno progress bar on stderr")
	fmt.Fprintln(tw, "  -lab URL\talso stream the run into the lab at URL (http://127.0.0.1:8080), into its notebook")
	fmt.Fprintln(tw, "  -sweep REF\twith -lab: run N of sweep ID (REF = ID/N/KEY, as a sweep's Slurm task has it)")
	fmt.Fprintln(tw, "  -cpuprofile F\twrite a CPU profile of the run to file F (go tool pprof)")
	tw.Flush()
	b.WriteString("\nA bool parameter is given as -name or -name=false; a list as -name 1,2,3.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// cmdListExperiments writes `lab list experiments`: every registered
// experiment by name with its one-line doc, then its parameters with their
// defaults and limits.
func cmdListExperiments(w io.Writer) error {
	var b strings.Builder
	exps := sim.Experiments()
	if len(exps) == 0 {
		b.WriteString("no experiments registered\n")
	}
	for i, e := range exps {
		if i > 0 {
			b.WriteString("\n")
		}
		wrapText(&b, e.Name()+" — "+sim.Summary(e), "", termWidth)
		writeParams(&b, e.Params())
	}
	_, err := io.WriteString(w, b.String())
	return err
}
