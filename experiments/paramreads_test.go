package experiments

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// TestParamReadsDeclared reads the experiments' sources and checks that
// every parameter read by name through sim.Values' typed getters
// (v.Int("trials"), run.Values.Ints("K"), …) names a parameter of that kind
// declared by a registered experiment: a misspelt name fails here instead
// of panicking in a run.
func TestParamReadsDeclared(t *testing.T) {
	kinds := map[string]sim.Kind{"Int": sim.KindInt, "Float": sim.KindFloat, "Bool": sim.KindBool, "String": sim.KindChoice, "Ints": sim.KindInts}
	declared := map[string]map[sim.Kind]bool{}
	for _, e := range sim.Experiments() {
		for _, p := range e.Params() {
			if declared[p.Name] == nil {
				declared[p.Name] = map[sim.Kind]bool{}
			}
			declared[p.Name][p.Kind] = true
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	reads := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			kind, ok := kinds[sel.Sel.Name]
			lit, isLit := call.Args[0].(*ast.BasicLit)
			if !ok || !isLit || lit.Kind != token.STRING || !valuesExpr(sel.X) {
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			reads++
			if !declared[name][kind] {
				t.Errorf("%s: %s(%q) reads no declared %v parameter", fset.Position(call.Pos()), sel.Sel.Name, name, kind)
			}
			return true
		})
	}
	if reads < 50 {
		t.Errorf("only %d parameter reads found: the check does not see the experiments' reads", reads)
	}
}

// valuesExpr reports whether x looks like a sim.Values: v, values,
// run.Values, r.Values.
func valuesExpr(x ast.Expr) bool {
	switch e := x.(type) {
	case *ast.Ident:
		return e.Name == "v" || e.Name == "values"
	case *ast.SelectorExpr:
		return e.Sel.Name == "Values"
	}
	return false
}
