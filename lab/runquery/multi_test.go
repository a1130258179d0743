package runquery

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMultiMatcherEqualsContains: the one-pass search finds exactly the
// patterns strings.Contains finds, on random texts and patterns over a
// small alphabet (many overlaps, prefixes of each other, repeats, empty).
func TestMultiMatcherEqualsContains(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rng.IntN(3)]
		}
		return string(b)
	}
	for trial := range 2000 {
		pats := make([]string, 1+rng.IntN(12))
		for i := range pats {
			pats[i] = word(rng.IntN(6))
		}
		text := word(rng.IntN(40))
		got := newMultiMatcher(pats).find(text)
		for i, p := range pats {
			if got[i] != strings.Contains(text, p) {
				t.Fatalf("trial %d: pattern %q in %q: found %v, strings.Contains %v (patterns %q)", trial, p, text, got[i], !got[i], pats)
			}
		}
	}
}
