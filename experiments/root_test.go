package experiments

import (
	"os"
	"path/filepath"
	"testing"
)

// TestModuleRootAnyWorkingDir checks that the repository's files are found
// from a working directory outside the module (the contraction experiment
// silently dropped the H200 captures there).
func TestModuleRootAnyWorkingDir(t *testing.T) {
	want, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	got, err := moduleRoot()
	if err != nil {
		t.Fatalf("from %s: %v", must(os.Getwd()), err)
	}
	if got != want {
		t.Errorf("from outside the module: %s, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(got, "go.mod")); err != nil {
		t.Error(err)
	}
}

func must(s string, err error) string {
	if err != nil {
		return err.Error()
	}
	return s
}
