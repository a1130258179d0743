package attention

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The package doc's claims the code can compute: the head dims it names
// are HeadDims, and the cache formats it names are KVFormatTable's rows.
func TestDocClaims(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.ReplaceAll(string(b), "\n//", "")
	m := regexp.MustCompile(`head_dim ([0-9/]+)`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("doc.go names no head dims (head_dim A/B/…)")
	}
	var dims []int
	for _, s := range strings.Split(m[1], "/") {
		d, _ := strconv.Atoi(s)
		dims = append(dims, d)
	}
	if !slices.Equal(dims, HeadDims) {
		t.Errorf("doc.go: head_dim %v, HeadDims %v", dims, HeadDims)
	}
	f := regexp.MustCompile(`\[KVFormatTable\] \(([^;]*);`).FindStringSubmatch(doc)
	if f == nil {
		t.Fatal("doc.go names no formats after [KVFormatTable]")
	}
	names := strings.Split(strings.Join(strings.Fields(f[1]), ""), ",")
	if !slices.Equal(names, KVFormatNames()) {
		t.Errorf("doc.go: formats %q, KVFormatTable %q", names, KVFormatNames())
	}
}
