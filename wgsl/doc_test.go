package wgsl

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The package doc's dependencies are the whole list: the GPU runtime
// imports fp8, accum, attention, internal/cpufeat, internal/wgpuinst and
// internal/hugemem of the module and
// nothing else of it (no accum/golden: the checks against captures are
// package wgslcheck's).
func TestModuleImports(t *testing.T) {
	allowed := map[string]bool{"fp8": true, "accum": true, "attention": true, "internal/cpufeat": true, "internal/wgpuinst": true, "internal/hugemem": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/fp8lab/fp8lab/"
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range ast.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rest, ok := strings.CutPrefix(p, mod); ok && !allowed[rest] {
				t.Errorf("%s imports %s: package wgsl depends only on fp8, accum, attention, internal/cpufeat, internal/wgpuinst and internal/hugemem", f, p)
			}
		}
	}
}
