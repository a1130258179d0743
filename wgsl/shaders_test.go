package wgsl

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shaders.go's doc lists every embedded WGSL file, each as a kernel (it has
// an entry point) or a library (it has none: it is included in other
// modules), and nothing else.
func TestShadersListed(t *testing.T) {
	src, err := os.ReadFile("shaders.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^//   - ([a-z0-9_]+): (kernel|library): `)
	var listed []string
	for _, m := range row.FindAllStringSubmatch(string(src), -1) {
		name, kind := m[1], m[2]
		listed = append(listed, name)
		text, err := Shader(name)
		if err != nil {
			t.Errorf("shaders.go lists %s: %v", name, err)
			continue
		}
		if has := strings.Contains(text, "@compute"); has != (kind == "kernel") {
			t.Errorf("shaders.go lists %s as a %s, but it has entry points: %v", name, kind, has)
		}
	}
	if got := Shaders(); !slices.Equal(listed, got) {
		t.Errorf("shaders.go lists %v, the embedded files are %v", listed, got)
	}
}

// Every module is assembled the one way: constants, includes, the kernel
// file, common.wgsl, each part's text whole and in that order.
func TestModuleAssembly(t *testing.T) {
	k := &kernelSpec{file: "tfdpa", include: []string{"tfdpa_step"}, entry: "chain", consts: []constDecl{cU32("WG", 64), {"SK", "u32", "WG"}}}
	src, err := k.source()
	if err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, part := range []string{"const WG: u32 = 64u;\nconst SK: u32 = WG;\n", mustShader(t, "tfdpa_step"), mustShader(t, "tfdpa"), mustShader(t, "common")} {
		i := strings.Index(src[at:], part)
		if i < 0 {
			t.Fatalf("the module lacks, after byte %d, the part beginning %.60q", at, part)
		}
		at += i + len(part)
	}
	if at != len(src) {
		t.Errorf("%d bytes after common.wgsl", len(src)-at)
	}
	if _, err := (&kernelSpec{file: "tfdpa", include: []string{"no_such_file"}}).source(); err == nil {
		t.Error("a missing include gave no error")
	}
	other := *k
	other.include = nil
	if other.key() == k.key() {
		t.Error("the cache key does not depend on the includes")
	}
}

func mustShader(t *testing.T, name string) string {
	t.Helper()
	s, err := Shader(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
