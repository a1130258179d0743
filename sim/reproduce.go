package sim

import (
	"strconv"
	"strings"
)

// ReproduceFlagger is implemented by an experiment whose inputs are named
// outside its parameters (attention-file's tensor files): the `lab run`
// flags that name them, one argument per element ("-q", "path", …), which
// [Reproduce] puts in the command line.
type ReproduceFlagger interface {
	ReproduceFlags() []string
}

// Reproduce returns the command that computes the run again, as a POSIX
// shell reads it: "lab run NAME -p v … [input flags] -seed S", every
// parameter in its `lab run` form (bools as -name=v), an argument quoted
// only where the shell would split or expand it. `lab run` given these
// arguments computes the same numbers.
func Reproduce(e Experiment, v Values, seed uint64) string {
	args := []string{"lab", "run", e.Name()}
	for _, p := range v.params {
		if p.Kind == KindBool {
			args = append(args, "-"+p.Name+"="+p.FormatValue(v.m[p.Name]))
			continue
		}
		args = append(args, "-"+p.Name, p.FormatValue(v.m[p.Name]))
	}
	if f, ok := e.(ReproduceFlagger); ok {
		args = append(args, f.ReproduceFlags()...)
	}
	args = append(args, "-seed", strconv.FormatUint(seed, 10))
	for i, a := range args {
		args[i] = ShellQuote(a)
	}
	return strings.Join(args, " ")
}

// ShellQuote returns s as one word of a POSIX shell: as it is when it
// holds only characters the shell leaves alone, else in single quotes
// (with ' written '\”).
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._,:/=+-@%^") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
