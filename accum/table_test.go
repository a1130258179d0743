package accum

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

func mustFormat(name string) fp8.Format {
	f, err := fp8.ParseFormat(name)
	if err != nil {
		panic(err)
	}
	return f
}

func mustTFDPA(t testing.TB, in fp8.Format, k int, p Params) *tfdpa {
	t.Helper()
	m, err := newTFDPA("test", in, k, p, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The table: every row checks, names are unique, each family has the size
// its generator gives it, and what the package lists is the table's (plus
// the six IEEE baselines): 37 Models and 125 Instructions, the sets before
// the table (issue 16's count: 162 names).
func TestTable(t *testing.T) {
	rows := Rows()
	seen := map[string]bool{}
	var models, instrs int
	for _, r := range rows {
		if err := r.Check(); err != nil {
			t.Error(err)
		}
		if seen[r.Name] {
			t.Errorf("%s twice", r.Name)
		}
		seen[r.Name] = true
		if r.Lists&AsModel != 0 {
			models++
		}
		if r.Lists&AsInstruction != 0 && (r.Lists&AsModel == 0 || r.Short != "") {
			instrs++
		}
	}
	if got := len(f8f6f4Rows()); got != 5*5*4 {
		t.Errorf("%d f8f6f4 rows, want 100", got)
	}
	if n := len(Names()); n != models+6 || n != 37 {
		t.Errorf("%d models, %d rows listed as Models (+ 6 baselines), want 37", n, models)
	}
	if n := len(InstructionNames()); n != instrs || n != 125 {
		t.Errorf("%d instructions, %d rows, want 125", n, instrs)
	}
	for _, m := range Models() {
		if _, err := Lookup(m.Name()); err != nil {
			t.Error(err)
		}
	}
	for _, m := range Instructions() {
		if got, err := LookupInstruction(m.Name()); err != nil || got != m {
			t.Errorf("%s: %v", m.Name(), err)
		}
	}
	if r, err := LookupRow("sm100.tcgen05.f8f6f4.f32"); err != nil || r.Name != "sm100.tcgen05.f8f6f4.e4m3.e4m3.f32" {
		t.Errorf("LookupRow of a short name: %+v, %v", r, err)
	}
	if _, err := LookupRow("fp32"); err == nil {
		t.Error("a baseline is not a row")
	}
	// The short-named Model and the long-named Instruction of one row
	// compute the same bits.
	short, long := MustLookup("sm100.tcgen05.f8f6f4.f32").(Stepper), mustInstr(t, "sm100.tcgen05.f8f6f4.e4m3.e4m3.f32")
	a, b := make([]uint16, 32), make([]uint16, 32)
	wa, wb := make([]uint64, 32), make([]uint64, 32)
	for i := range a {
		a[i], b[i] = uint16(i*37%0x7f), uint16((i*91+5)%0xff)
		wa[i], wb[i] = uint64(a[i]), uint64(b[i])
	}
	if s, l := math.Float32bits(short.Step(a, b, 1.5)), uint32(long.Step(wa, wb, nil, nil, uint64(math.Float32bits(1.5)))); s != l {
		t.Errorf("short %08x, long %08x", s, l)
	}
}

func mustInstr(t testing.TB, name string) Instruction {
	t.Helper()
	m, err := LookupInstruction(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A malformed row is an error naming the row, never a panic, and TestRows
// then leaves the table as it was.
func TestRowErrors(t *testing.T) {
	good := Row{Name: "test.x.e4m3.f32", Arch: "test", Kind: KindTFDPA, A: "e4m3", B: "e4m3", C: "f32", K: 32, L: 32, F: 13, Rho: RZE8M13, EZero: -133,
		Doc: "d", Source: "s", Lists: AsModel}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*Row)
		want string
	}{
		{func(r *Row) { r.Arch = "sm90" }, "first part"},
		{func(r *Row) { r.Lists = 0 }, "neither"},
		{func(r *Row) { r.Source = "" }, "no doc or source"},
		{func(r *Row) { r.A = "e9m9" }, "unknown format"},
		{func(r *Row) { r.B = "e5m2" }, "one format"},
		{func(r *Row) { r.C = "f16" }, "rho"},
		{func(r *Row) { r.L = 65 }, "L = 65"},
		{func(r *Row) { r.K = 48 }, "multiple of L"},
		{func(r *Row) { r.F = 0 }, "F = 0"},
		{func(r *Row) { r.Kind = KindPairwise }, "kind"},
		{func(r *Row) { r.Lists = AsInstruction; r.Scale = "ue8m0" }, "scale"},
		{func(r *Row) { r.Lists = AsInstruction; r.Group = 16 }, "groups of 16"},
		{func(r *Row) { r.Lists = AsInstruction; r.Kind = KindAMDFDPA }, "AMD architecture"},
		{func(r *Row) { r.Kind = KindEmulation }, "L = 16"},
	} {
		r := good
		tc.edit(&r)
		if err := r.Check(); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), r.Name) {
			t.Errorf("%+v: %v, want an error about %q", r, err, tc.want)
		}
	}
	n := len(Names())
	dup := good
	dup.Name, dup.Arch = "sm90.wgmma.e4m3.f32", "sm90"
	if err := TestRows(t, good, dup); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a duplicate name: %v", err)
	}
	if len(Names()) != n || slices.Contains(Names(), good.Name) {
		t.Error("a failed TestRows changed the table")
	}
}

// TestRows adds rows for one test only.
func TestRowsHook(t *testing.T) {
	row := Row{Name: "test.hook.e4m3.f32", Arch: "test", Kind: KindTFDPA, A: "e4m3", B: "e4m3", C: "f32", K: 32, L: 32, F: 13, Rho: RZE8M13, EZero: -133,
		Doc: "d", Source: "s", Lists: AsModel}
	t.Run("in", func(t *testing.T) {
		if err := TestRows(t, row); err != nil {
			t.Fatal(err)
		}
		m, err := Lookup(row.Name)
		if err != nil {
			t.Fatal(err)
		}
		// Same parameters as sm90.wgmma.e4m3.f32: the same bits.
		a, b := pvInputs(256, 3)
		if x, y := Chain(m, a, b, 0, 0), Chain(MustLookup("sm90.wgmma.e4m3.f32"), a, b, 0, 0); math.Float32bits(x) != math.Float32bits(y) {
			t.Errorf("%g != %g", x, y)
		}
	})
	if _, err := Lookup(row.Name); err == nil {
		t.Error("the row outlived its test")
	}
}
