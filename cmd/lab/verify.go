package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/accum/golden"
)

// errVerify is returned when some record differs; the details are printed.
var errVerify = errors.New("verify: some outputs differ from the GPU captures")

// cmdVerify is `lab verify [-exhaustive] [-show N] DIR|FILE...`: it runs every
// record of each capture file through the model the file names and prints,
// per file, the model, the record kind and N/N bit-exact; the first
// differing records are printed with inputs, expected and computed bits. A
// folder is every capture file in it, or Khattak & Mikaitis' published sets
// (see verifyPath), one report per set.
func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	exhaustive := fs.Bool("exhaustive", false, "check all 2^32 float32 inputs of each conversion (about a minute on 2 cores) instead of every range boundary ±2 ulps")
	show := fs.Int("show", 5, "how many differing records to print per check")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: lab verify [-exhaustive] [-show N] DIR|FILE...\n\nChecks fp8lab's arithmetic bit for bit against GPU capture files (../shared/golden/h200/*), Khattak & Mikaitis' GPU outputs (../shared/golden/khattak) and peer-record files (../shared/golden/mmasim/*.tsv.gz: records differing for a documented reason are counted apart).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("verify: no capture files given")
	}
	var t verifyTally
	opt := golden.Options{Exhaustive: *exhaustive, MaxMismatches: *show}
	for _, path := range fs.Args() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if handled, err := verifyPath(ctx, path, opt, stdout, &t); handled || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		f, err := golden.ReadFile(path)
		if err != nil {
			return err
		}
		if err := t.verifyFile(ctx, f, opt, stdout); err != nil {
			return err
		}
	}
	failed, total, deviated := t.failed, t.n, t.deviated
	if failed > 0 {
		fmt.Fprintf(stdout, "FAIL: %d of %d files have outputs that differ\n", failed, total)
		return errVerify
	}
	if deviated > 0 {
		fmt.Fprintf(stdout, "ok: all %d files bit-exact, apart from %d peer records that differ for a documented reason\n", total, deviated)
		return nil
	}
	fmt.Fprintf(stdout, "ok: all %d files bit-exact\n", total)
	return nil
}

func printReport(w io.Writer, r *golden.Report, took time.Duration) {
	fmt.Fprintf(w, "%s\n  model %s; %s\n", r.Path, r.Model, r.Kind)
	for _, c := range r.Checks {
		verdict := "bit-exact"
		if !c.OK() {
			verdict = "bit-exact — MISMATCH"
		}
		if c.Deviated > 0 {
			verdict += fmt.Sprintf(", %d documented peer deviations", c.Deviated)
		}
		fmt.Fprintf(w, "  %s: %d/%d %s\n", c.Name, c.Equal, c.Total, verdict)
		for _, d := range c.Deviations {
			fmt.Fprintf(w, "    deviation (%d records, e.g. lines %v): %s\n", d.Count, d.Lines, d.Reason)
		}
		for _, m := range c.Mismatches {
			loc := ""
			if m.Line > 0 {
				loc = fmt.Sprintf("line %d: ", m.Line)
			}
			switch m.Digits {
			case 16:
				fmt.Fprintf(w, "    %s%s\n      expected %016x (%g)\n      got      %016x (%g)\n", loc, m.Inputs,
					m.Expected64, math.Float64frombits(m.Expected64), m.Got64, math.Float64frombits(m.Got64))
			case 4:
				fmt.Fprintf(w, "    %s%s\n      expected %04x\n      got      %04x\n", loc, m.Inputs, m.Expected64, m.Got64)
			default:
				fmt.Fprintf(w, "    %s%s\n      expected %08x (%g)\n      got      %08x (%g)\n", loc, m.Inputs,
					m.Expected, math.Float32frombits(m.Expected), m.Got, math.Float32frombits(m.Got))
			}
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
	fmt.Fprintf(w, "  (%.2fs)\n", took.Seconds())
}

// cmdListModels prints every accumulation model with its parameters and the
// source of each.
func cmdListModels(w io.Writer) error {
	for _, m := range accum.Models() {
		i := m.Info()
		fmt.Fprintf(w, "%s\n  %s\n  %s\n  source: %s\n", i.Name, i.Doc, i.String(), i.Source)
	}
	for _, m := range accum.Instructions() {
		i := m.Info()
		fmt.Fprintf(w, "%s\n  %s\n  %s\n  source: %s\n", i.Name, i.Doc, i.String(), i.Source)
	}
	return nil
}
