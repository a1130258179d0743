package main

import (
	"context"
	"os"
	"path/filepath"
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
