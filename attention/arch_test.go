package attention

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// Every architecture row names instructions accum knows, reading the data
// type they are listed under, block-scaled ones reading their format's
// element and scales; SM counts are positive with a source.
func TestArchRows(t *testing.T) {
	for _, a := range Arches() {
		if err := a.Check(); err != nil {
			t.Error(err)
		}
		// Each instruction is a row of accum's table of the architecture
		// the row names among its aliases.
		names := slices.Collect(maps.Values(a.Models))
		names = append(names, slices.Collect(maps.Values(a.Block))...)
		for _, n := range names {
			r, err := accum.LookupRow(n)
			if err != nil || !slices.Contains(a.Aliases, r.Arch) {
				t.Errorf("%s: %s is a row of %q (%v), not of %v", a.Name, n, r.Arch, err, a.Aliases)
			}
		}
		if a.SMs < 1 || a.SMsFrom == "" || a.GPUs == "" || a.MMA == "" {
			t.Errorf("%s: SMs %d, source %q, GPUs %q, MMA %q", a.Name, a.SMs, a.SMsFrom, a.GPUs, a.MMA)
		}
		for f, name := range a.Models {
			m, err := accum.Lookup(name)
			if err != nil {
				t.Errorf("%s %s: %v", a.Name, f, err)
				continue
			}
			if in := m.Info().In; in != f {
				t.Errorf("%s: %s is listed for %s but reads %s", a.Name, name, f, in)
			}
		}
		for f, name := range a.Block {
			spec := KVSpec{Format: f, Path: PathBlockScaled}
			if _, err := (Config{HeadDim: 128, QKModel: name, PVModel: name}).ResolveSpec(1, 1024, spec); err != nil {
				t.Errorf("%s %s: %s does not resolve: %v", a.Name, f, name, err)
			}
		}
	}
	if _, err := LookupArch("sm90"); err != nil {
		t.Error(err)
	}
	if _, err := LookupArch("volta"); err == nil || !strings.Contains(err.Error(), "want hopper or blackwell") {
		t.Errorf("unknown arch: %v", err)
	}
}

// A new architecture is a row: added to the table (TestArches) (here a fictitious Ada
// data-centre part with sm89's mma.sync instructions), ModelFor, the specs'
// Models, ArchNames (the experiments' arch choices) and AutoSplits' SM
// count all see it without another change.
func TestArchIsARow(t *testing.T) {
	if err := TestArches(t, Arch{Name: "ada-test", GPUs: "a fictitious L40S-like part", SMs: 142, SMsFrom: "this test", MMA: "mma.sync",
		Models: map[fp8.Format]string{fp8.FormatE4M3: "sm89.mma.sync.e4m3.f32"}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ArchNames(), "ada-test") {
		t.Fatalf("ArchNames %v", ArchNames())
	}
	name, err := ModelFor("ada-test", fp8.FormatE4M3)
	if err != nil || name != "sm89.mma.sync.e4m3.f32" {
		t.Fatalf("ModelFor: %q, %v", name, err)
	}
	qk, pv, err := KVSpec{Format: KVE4M3, Path: PathDirect}.Models("ada-test")
	if err != nil || qk != name || pv != name {
		t.Fatalf("Models: %q %q %v", qk, pv, err)
	}
	if _, _, err := (KVSpec{Format: KVMXFP8, Path: PathBlockScaled}).Models("ada-test"); err == nil || !strings.Contains(err.Error(), "mma.sync has no block-scaled kind") {
		t.Errorf("block-scaled on a row without block instructions: %v", err)
	}
	p := newProblem(9, 1, 2000, 1, 1, 128, 0.5)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	cfg := Config{HeadDim: 128, QKModel: name, PVModel: name}
	if _, err := Run(t.Context(), cfg, p.q, nil, kv); err != nil {
		t.Fatal(err)
	}
	a, _ := LookupArch("ada-test")
	plan, err := cfg.Plan(1, nil, kv)
	if err != nil {
		t.Fatal(err)
	}
	if s := plan.AutoSplits(a.SMs, 8); s < 2 {
		t.Errorf("AutoSplits on the new row's %d SMs: %d", a.SMs, s)
	}
}

// TestArches refuses malformed rows and taken names and leaves the table
// as it was; Arches cannot change the table.
func TestArchesHook(t *testing.T) {
	n := len(ArchNames())
	ok := Arch{Name: "x-test", GPUs: "g", SMs: 1, SMsFrom: "s", MMA: "m", Models: map[fp8.Format]string{fp8.FormatE4M3: "sm90.wgmma.e4m3.f32"}}
	for _, tc := range []struct {
		edit func(*Arch)
		want string
	}{
		{func(a *Arch) { a.SMs = 0 }, "positive SM count"},
		{func(a *Arch) { a.Models = map[fp8.Format]string{fp8.FormatE4M3: "sm99.nope"} }, "unknown accumulation model"},
		{func(a *Arch) { a.Models = map[fp8.Format]string{fp8.FormatE5M2: "sm90.wgmma.e4m3.f32"} }, "reads e4m3"},
		{func(a *Arch) { a.Block = map[KVFormat]string{KVMXFP8: "sm99.nope"} }, "unknown instruction"},
		{func(a *Arch) { a.Aliases = []string{"sm90"} }, "taken"},
	} {
		a := ok
		tc.edit(&a)
		if err := TestArches(t, a); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", a, err, tc.want)
		}
	}
	if len(ArchNames()) != n {
		t.Fatal("a refused row changed the table")
	}
	a := Arches()
	a[0].Models[fp8.FormatE4M3] = "changed"
	if DefaultModel(fp8.FormatE4M3) != "sm90.wgmma.e4m3.f32" {
		t.Error("Arches returned the table itself")
	}
}
