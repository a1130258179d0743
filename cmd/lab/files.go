package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/fp8lab/fp8lab/experiments"
	"github.com/fp8lab/fp8lab/sim"
)

// fileFlags adds a -ROLE flag per input file of an experiment that reads
// files (attention-file: -q, -k, -v, -positions, -mask) and -o DIR for its
// outputs. apply returns the experiment with the files given.
func fileFlags(fs *flag.FlagSet, exp sim.Experiment) (apply func() (sim.Experiment, error)) {
	fe, ok := exp.(experiments.FileExperiment)
	if !ok {
		return func() (sim.Experiment, error) { return exp, nil }
	}
	paths := map[string]*string{}
	for _, r := range fe.FileRoles() {
		paths[r.Name] = fs.String(r.Name, "", r.Doc+" (.npy, .safetensors, or file.safetensors:tensor)")
	}
	out := fs.String("o", "", "folder for the outputs (.npy)")
	return func() (sim.Experiment, error) {
		files := map[string]string{}
		for role, p := range paths {
			if *p != "" {
				files[role] = *p
			}
		}
		e, err := fe.WithFiles(files)
		if err != nil {
			return nil, err
		}
		if *out != "" {
			e = e.(experiments.FileExperiment).WithOutDir(*out)
		}
		return e, nil
	}
}

// fileFlagsHelp returns the help lines of the file flags of exp ("" when it
// reads no files).
func fileFlagsHelp(exp sim.Experiment) string {
	fe, ok := exp.(experiments.FileExperiment)
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString("files:\n")
	for _, r := range fe.FileRoles() {
		fmt.Fprintf(&b, "  -%s PATH\t%s\n", r.Name, r.Doc)
	}
	b.WriteString("  -o DIR\tfolder for the outputs (.npy)\n\n")
	return b.String()
}
