package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/tensorfile"
)

// lab run attention-file -q -k -v -o: the files are read, the table
// printed, O written; a missing file is an error naming it.
func TestRunAttentionFile(t *testing.T) {
	dir := t.TempDir()
	for name, shape := range map[string][]int{"q.npy": {2, 2, 64}, "k.npy": {100, 1, 64}, "v.npy": {100, 1, 64}} {
		x := make([]float32, shape[0]*shape[1]*shape[2])
		for i := range x {
			x[i] = float32(i%9)/4 - 1
		}
		if err := tensorfile.WriteNPY(filepath.Join(dir, name), shape, x); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	ctx := context.Background()
	stdout, _, err := lab(t, ctx, "run", "attention-file", "-quiet", "-causal", "-q", filepath.Join(dir, "q.npy"),
		"-k", filepath.Join(dir, "k.npy"), "-v", filepath.Join(dir, "v.npy"), "-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "relerr_p0") || !strings.Contains(stdout, "2 query tokens × 2 heads over 100 tokens") {
		t.Errorf("output:\n%s", stdout)
	}
	o, err := tensorfile.ReadFile(filepath.Join(out, "o_promotion1.npy"), "", tensorfile.Options{})
	if err != nil || len(o.Data) != 2*2*64 {
		t.Fatalf("O: %v", err)
	}
	_, _, err = lab(t, ctx, "run", "attention-file", "-quiet", "-q", filepath.Join(dir, "nope.npy"), "-k", filepath.Join(dir, "k.npy"), "-v", filepath.Join(dir, "v.npy"))
	if err == nil || !strings.Contains(err.Error(), "nope.npy") {
		t.Errorf("missing file: %v", err)
	}
}

// The reproduce line of attention-file names its input files (absolute,
// quoted where the shell needs it) and runs as printed: read back as a
// shell reads it and run from another folder, it prints the same table and
// notes, for single files and for a dump.
func TestReproduceLineWithFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my tensors 'v1'")
	dump := filepath.Join(dir, "dump")
	if err := os.MkdirAll(dump, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, shape := range map[string][]int{"q.npy": {1, 2, 64}, "k.npy": {300, 1, 64}, "v.npy": {300, 1, 64}} {
		x := make([]float32, shape[0]*shape[1]*shape[2])
		for i := range x {
			x[i] = float32(i%13)/5 - 1
		}
		for _, p := range []string{filepath.Join(dir, name), filepath.Join(dump, "layer0_"+name[:1]+".npy"), filepath.Join(dump, "layer2_"+name[:1]+".npy")} {
			if err := tensorfile.WriteNPY(p, shape, x); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx := context.Background()
	for _, args := range [][]string{
		{"-q", "q.npy", "-k", "k.npy", "-v", "v.npy", "-splits", "4"},
		{"-dump", "dump", "-splits", "auto", "-promotions", "0,4"},
	} {
		t.Chdir(dir) // relative names
		first, _, err := lab(t, ctx, append([]string{"run", "attention-file", "-quiet"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		line, rest, ok := strings.Cut(first, "\n\n")
		if !ok {
			t.Fatalf("no reproduce line in\n%s", first)
		}
		words := shellSplit(t, strings.ReplaceAll(line, " \\\n", " "))
		if len(words) < 3 || words[0] != "lab" || words[1] != "run" {
			t.Fatalf("reproduce line %q", line)
		}
		flag := args[0]
		i := slices.Index(words, flag)
		if i < 0 || words[i+1] != filepath.Join(dir, args[1]) {
			t.Fatalf("reproduce line %q: %s is not %s", line, flag, filepath.Join(dir, args[1]))
		}
		t.Chdir(t.TempDir()) // elsewhere
		again, _, err := lab(t, ctx, append(words[1:], "-quiet")...)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if line2, rest2, _ := strings.Cut(again, "\n\n"); line2 != line || rest2 != rest {
			t.Errorf("run as printed:\n%s\nfirst run:\n%s", again, first)
		}
		if !strings.Contains(rest, "input "+flag[1:]+" sha256:") {
			t.Errorf("no input note:\n%s", rest)
		}
	}
}

// shellSplit reads a command as a POSIX shell splits and unquotes it
// (single quotes, backslash escapes, blanks).
func shellSplit(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var w strings.Builder
	in, quoted, escaped := false, false, false
	for _, r := range s {
		switch {
		case escaped:
			escaped = false
			w.WriteRune(r)
		case quoted && r == '\'':
			quoted = false
		case quoted:
			w.WriteRune(r)
		case r == '\'':
			quoted, in = true, true
		case r == '\\':
			escaped, in = true, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quoted || escaped {
		t.Fatalf("unterminated quote in %q", s)
	}
	if in {
		out = append(out, w.String())
	}
	return out
}
