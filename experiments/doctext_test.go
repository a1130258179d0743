package experiments

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// The package doc's list of experiments names every registered experiment
// (the lab's own test experiments and demo aside), and no other.
func TestDocClaims(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, m := range regexp.MustCompile(`(?m)^//   - ([a-z0-9, -]+):`).FindAllStringSubmatch(strings.ReplaceAll(string(b), "\n//     ", " "), -1) {
		for _, n := range strings.Split(m[1], ",") {
			named = append(named, strings.TrimSpace(n))
		}
	}
	var registered []string
	for _, e := range sim.Experiments() {
		if n := e.Name(); !strings.HasPrefix(n, "lab-") && n != "demo" {
			registered = append(registered, n)
		}
	}
	slices.Sort(named)
	slices.Sort(registered)
	if !slices.Equal(named, registered) {
		t.Errorf("doc.go names %q, the registry holds %q", named, registered)
	}
}
