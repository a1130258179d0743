package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fp8lab/fp8lab/sim"
)

// fileFlags adds a -ROLE flag per input file of an experiment that reads
// files (attention-file: -q, -k, -v, -positions, -mask, -dump) and -o DIR
// for its outputs. apply returns the experiment with the files given, and
// the file flags for the reproduce line: each given file as -ROLE PATH,
// PATH absolute and quoted for a POSIX shell when it needs it, in the
// roles' order (-o is left out: it names where outputs went, not what
// they were computed from).
func fileFlags(fs *flag.FlagSet, exp sim.Experiment) (apply func() (sim.Experiment, string, error)) {
	fe, ok := exp.(sim.FileExperiment)
	if !ok {
		return func() (sim.Experiment, string, error) { return exp, "", nil }
	}
	paths := map[string]*string{}
	for _, r := range fe.FileRoles() {
		what := " (.npy, .safetensors, or file.safetensors:tensor)"
		if r.Dir {
			what = " (a folder or a .safetensors file)"
		}
		paths[r.Name] = fs.String(r.Name, "", r.Doc+what)
	}
	out := fs.String("o", "", "folder for the outputs (.npy), created when missing")
	return func() (sim.Experiment, string, error) {
		files := map[string]string{}
		var flags []string
		for _, r := range fe.FileRoles() {
			p := *paths[r.Name]
			if p == "" {
				continue
			}
			files[r.Name] = p
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, "", fmt.Errorf("-%s %s: %w", r.Name, p, err)
			}
			flags = append(flags, "-"+r.Name+" "+shellQuote(abs))
		}
		e, err := fe.WithFiles(files)
		if err != nil {
			return nil, "", err
		}
		if *out != "" {
			e = e.(sim.FileExperiment).WithOutDir(*out)
		}
		return e, strings.Join(flags, " "), nil
	}
}

// shellQuote returns s as one word of a POSIX shell: unchanged when it
// holds only characters no shell treats specially, else in single quotes
// (a single quote inside written '\”).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fileFlagsHelp returns the help lines of the file flags of exp ("" when it
// reads no files).
func fileFlagsHelp(exp sim.Experiment) string {
	fe, ok := exp.(sim.FileExperiment)
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString("files:\n")
	for _, r := range fe.FileRoles() {
		fmt.Fprintf(&b, "  -%s PATH\t%s\n", r.Name, r.Doc)
	}
	b.WriteString("  -o DIR\tfolder for the outputs (.npy), created when missing\n\n")
	return b.String()
}
