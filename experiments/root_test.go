package experiments

import (
	"os"
	"path/filepath"
	"strings"
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

// TestContractionCapturesOnlyAskedK checks that the captures add no rows
// at K the user did not ask for, and that the others are named in a note.
func TestContractionCapturesOnlyAskedK(t *testing.T) {
	rec, err := contractionExec(t, Contraction{}, 1, map[string]string{"K": "2048", "trials": "1", "series": "headline", "cols": "1"})
	if err != nil {
		t.Fatal(err)
	}
	h200 := 0
	for _, p := range rec.Points() {
		if p.X != 2048 {
			t.Errorf("a point at K = %v, not asked for: %+v", p.X, p)
		}
		if p.Series == "h200 every32" {
			h200++
		}
	}
	if h200 != 1 {
		t.Errorf("%d h200 every32 points at K = 2048, want 1 (testdata/h200-fresh has that capture)", h200)
	}
	noted := false
	for _, n := range rec.Notes() {
		noted = noted || strings.Contains(n, "also exist at K =")
	}
	if !noted {
		t.Errorf("no note names the captures not used: %q", rec.Notes())
	}
}
