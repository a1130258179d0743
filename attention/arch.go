package attention

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// Arch is one GPU architecture as the simulator runs it: the tensor-core
// instruction of both GEMMs per data type, the block-scaled instruction per
// block format (none: the architecture has no block-scaled MMA), and the
// SM count of its data-centre GPU, which split-KV's auto (Plan.AutoSplits)
// needs. A new GPU is a row of archTable plus its instructions' rows in
// accum's table: ModelFor, DefaultModel, BlockScaledModel, KVSpec.Models,
// ArchNames (every experiment's arch choice) and LookupArch read this
// table and nothing else.
type Arch struct {
	Name    string   // "hopper", "blackwell": the experiments' arch parameter
	Aliases []string // other names accepted ("sm90")
	GPUs    string   // the GPUs the row stands for
	SMs     int      // streaming multiprocessors
	SMsFrom string   // where SMs comes from
	MMA     string   // the matrix instruction's family ("wgmma")
	Doc     string   // the arithmetic, in a line
	// Models is the instruction of both GEMMs per Q/K/V/P data type.
	Models map[fp8.Format]string
	// Block is the block-scaled instruction per block KV format.
	Block map[KVFormat]string
}

// archTable is the table of architectures, the one place their
// instructions and SM counts are kept; the first is the default (FA3's
// Hopper).
func archTable() []Arch {
	return []Arch{
		{
			Name: "hopper", Aliases: []string{"sm90"}, GPUs: "H100 SXM5, H200 SXM", SMs: 132,
			SMsFrom: "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 132 SMs on H100 SXM5; the H200 is the same GH100 configuration (torch.cuda.get_device_properties on the H200 here: 132)",
			MMA:     "wgmma", Doc: "wgmma, FA3's order; FP8 accumulates in the tensor core at 14 significant bits",
			Models: map[fp8.Format]string{
				fp8.FormatE4M3: "sm90.wgmma.e4m3.f32", fp8.FormatE5M2: "sm90.wgmma.e5m2.f32",
				fp8.FormatBF16: "sm90.wgmma.bf16.f32", fp8.FormatFP16: "sm90.wgmma.f16.f32",
			},
		},
		{
			Name: "blackwell", Aliases: []string{"sm100"}, GPUs: "B200", SMs: 148,
			SMsFrom: "Chips and Cheese, \"Nvidia's B200: Keeping the CUDA Juggernaut Rolling\" (2025): 74 of each die's 80 SMs enabled, 148 in all",
			MMA:     "tcgen05", Doc: "tcgen05, the accumulator in tensor memory in FP32",
			Models: map[fp8.Format]string{
				fp8.FormatE4M3: "sm100.tcgen05.f8f6f4.f32", fp8.FormatFP16: "sm100.tcgen05.f16.f32",
				// bf16: tcgen05 kind::f16 reads it, but accum has no model of it
				// yet (no peer record or capture), so blackwell bf16 is refused.
			},
			Block: map[KVFormat]string{
				KVMXFP8: "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", KVMXFP4: "sm100.tcgen05.mxf4.f32", KVNVFP4: "sm100.tcgen05.mxf4nvf4.ue4m3.f32",
			},
		},
	}
}

// arches is archTable (with a test's rows while TestArches holds them).
var arches = func() *atomic.Pointer[[]Arch] {
	var p atomic.Pointer[[]Arch]
	t := archTable()
	p.Store(&t)
	return &p
}()

// Arches returns the architectures, in order (a deep copy: the table
// cannot be changed through it).
func Arches() []Arch {
	out := slices.Clone(*arches.Load())
	for i := range out {
		out[i].Aliases = slices.Clone(out[i].Aliases)
		out[i].Models = maps.Clone(out[i].Models)
		out[i].Block = maps.Clone(out[i].Block)
	}
	return out
}

// Check reports whether a is a well-formed row: a name, GPUs, a positive
// SM count with its source, and instructions accum knows that read the
// data type they are listed under (block-scaled ones: accum Instructions).
func (a Arch) Check() error {
	if a.Name == "" || a.GPUs == "" || a.MMA == "" || a.SMs < 1 || a.SMsFrom == "" {
		return fmt.Errorf("attention: architecture %q: name, GPUs, MMA and a positive SM count with its source are required", a.Name)
	}
	for f, name := range a.Models {
		m, err := accum.Lookup(name)
		if err != nil {
			return fmt.Errorf("attention: architecture %s, %s: %w", a.Name, f, err)
		}
		if in := m.Info().In; in != f {
			return fmt.Errorf("attention: architecture %s: %s is listed for %s but reads %s", a.Name, name, f, in)
		}
	}
	for f, name := range a.Block {
		if _, err := accum.LookupInstruction(name); err != nil {
			return fmt.Errorf("attention: architecture %s, %s: %w", a.Name, f, err)
		}
	}
	return nil
}

// TestArches is a test hook: for the rest of test t the architectures are
// archTable's plus rows (after them, so that the default stays Hopper's),
// as ArchNames, LookupArch, ModelFor, KVSpec.Models and the experiments'
// arch choices see them; t.Cleanup restores the table. Add the rows'
// instructions first (accum.TestRows). It returns an error, and changes
// nothing, when a row is malformed (Check) or reuses a name or alias. Only
// a test can call it; tests that call it must not run in parallel with
// others that read the table.
func TestArches(t testing.TB, rows ...Arch) error {
	t.Helper()
	old := arches.Load()
	next := slices.Clone(*old)
	seen := map[string]bool{}
	for _, a := range next {
		seen[a.Name] = true
		for _, x := range a.Aliases {
			seen[x] = true
		}
	}
	for _, a := range rows {
		if err := a.Check(); err != nil {
			return err
		}
		for _, n := range append([]string{a.Name}, a.Aliases...) {
			if seen[n] {
				return fmt.Errorf("attention: architecture name %q is taken", n)
			}
			seen[n] = true
		}
		next = append(next, a)
	}
	arches.Store(&next)
	t.Cleanup(func() { arches.Store(old) })
	return nil
}

// ArchNames returns the names of Arches, in order.
func ArchNames() []string {
	var out []string
	for _, a := range *arches.Load() {
		out = append(out, a.Name)
	}
	return out
}

// LookupArch returns the architecture named name (or one of its aliases).
func LookupArch(name string) (Arch, error) {
	for _, a := range *arches.Load() {
		if a.Name == name {
			return a, nil
		}
		for _, x := range a.Aliases {
			if x == name {
				return a, nil
			}
		}
	}
	return Arch{}, fmt.Errorf("unknown arithmetic %q (want %s)", name, strings.Join(ArchNames(), " or "))
}

// ModelFor returns the name of the instruction of arch reading format f
// (Arches), or an error naming what is missing.
func ModelFor(arch string, f fp8.Format) (string, error) {
	a, err := LookupArch(arch)
	if err != nil {
		return "", err
	}
	name := a.Models[f]
	if name == "" {
		return "", fmt.Errorf("no %s model reads %s", a.Name, f)
	}
	if _, err := accum.Lookup(name); err != nil {
		return "", fmt.Errorf("%s arithmetic on %s needs the model %s: %w", a.Name, f, name, err)
	}
	return name, nil
}

// DefaultModel returns the name of the Hopper wgmma model reading format f
// (the simulator's default arithmetic, FA3's), or "" when there is none.
func DefaultModel(f fp8.Format) string { return (*arches.Load())[0].Models[f] }

// BlockScaledModel returns the block-scaled instruction of the first
// architecture that has one for format f (Blackwell's tcgen05 kinds).
func BlockScaledModel(f KVFormat) (string, error) {
	for _, a := range *arches.Load() {
		if name := a.Block[f]; name != "" {
			return name, nil
		}
	}
	return "", fmt.Errorf("attention: a %s cache has no block scales: block-scaled MMA reads %s", f, strings.Join(blockFormatNames(), ", "))
}
