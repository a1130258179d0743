package wgsl

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The package doc's claims the code can compute: the models whose T-FDPA
// steps the shaders emulate (doc.go names them after "[Emulations] lists")
// are Emulations(), and the shader names Shader's doc quotes are embedded
// shaders. Both are computed from the code, so a new emulation or shader
// fails this test until the doc says so too.
func TestDocClaims(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\[Emulations\] lists\s*(?://\s*)?\(([^)]*)\)`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("doc.go: no list after \"[Emulations] lists\"")
	}
	var named []string
	list, _, _ := strings.Cut(string(m[1]), ";")
	for _, item := range strings.Split(strings.Join(strings.Fields(strings.ReplaceAll(list, "//", "")), ""), ",") {
		named = append(named, item)
	}
	slices.Sort(named)
	if emu := Emulations(); !slices.Equal(named, emu) {
		t.Errorf("doc.go names the emulations %q (%d), Emulations() is %q (%d)", named, len(named), emu, len(emu))
	}

	src, err := os.ReadFile("shaders.go")
	if err != nil {
		t.Fatal(err)
	}
	sd := regexp.MustCompile(`(?s)((?:// [^\n]*\n)+)func Shader\(`).FindSubmatch(src)
	if sd == nil {
		t.Fatal("shaders.go: no doc comment on Shader")
	}
	shaders := Shaders()
	for _, q := range regexp.MustCompile(`"([a-z0-9]+)"`).FindAllSubmatch(sd[1], -1) {
		if !slices.Contains(shaders, string(q[1])) {
			t.Errorf("Shader's doc names %q, not an embedded shader (%v)", q[1], shaders)
		}
	}
	if !strings.Contains(string(sd[1]), "[Shaders]") {
		t.Errorf("Shader's doc does not point to [Shaders], the list of every shader")
	}
}
