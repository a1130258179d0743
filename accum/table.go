package accum

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// Row is one matrix instruction of the table: every GPU instruction accum
// models, NVIDIA and AMD, is one Row (tableRows), and everything the
// package looks up by name (Lookup, Models, LookupInstruction,
// Instructions) is built from the rows. A new instruction is a new row;
// Kind picks which of the step implementations runs it:
//
//   - KindTFDPA: K/L chained T-FDPA steps (Params.Step) of a and b in one
//     format (A == B), or of mixed FP8/FP6/FP4 operands.
//   - KindScaled: the block-scaled T-FDPA step (ST-FDPA, or GST-FDPA with
//     Group = 16 for FP4 k = 64), Scale and Block set.
//   - KindEmulation: FP8 mma.sync emulated by ptxas on the FP16 tensor core
//     (L = 16, F, Rho and EZero are the FP16 HMMA step's; C is added with
//     one FP32 or FP16 add outside the tensor core).
//   - KindFMAChain, KindPairwise, KindAMDFDPA: AMD CDNA v_mfma. Their
//     arithmetic (MMA-Sim's simulator/amd.py) is not a T-FDPA step with
//     other parameters: an FMA chain rounds every element, a pairwise tree
//     rounds every node, and CDNA3's fused dot rounds down and renormalises
//     (see amdInstr), so only K, Group and the formats are parameters and
//     the step is amdInstr's.
type Row struct {
	// Name is the PTX- or AMD-ISA-style name, for example
	// "sm90.wgmma.e4m3.f32"; Arch is its first part ("sm90", "cdna3").
	Name string
	Arch string
	Kind Kind
	// A, B, C name the formats of a, b and c/d as the peer-record files
	// do (e4m3, e5m2, e2m1, e2m3, e3m2, e4m3fnuz, e5m2fnuz, f16, bf16,
	// tf32, f32, f64).
	A, B, C string
	// K is the number of elements of one instruction; L, F, Rho and EZero
	// the T-FDPA step's parameters (zero for the AMD kinds).
	K, L, F, EZero int
	Rho            Rounding
	// Scale is the scale format (ue8m0, ue4m3; "" unscaled) and Block the
	// elements per scale; Group the products summed exactly before
	// alignment (16 for FP4 k = 64; AMD: the group of one fused dot or
	// pairwise tree).
	Scale        string
	Block, Group int
	// Doc is one line on what the instruction computes; Source says where
	// the parameters come from and what verified them; Evidence is more
	// verification, appended to Source after "; " (empty: none).
	Doc, Source, Evidence string
	// Lists says how the row is looked up: as a Model (16-bit codes of one
	// format; Lookup, Models) under Short if set, else Name; as an
	// Instruction (codes of any width, scales; LookupInstruction, and
	// Instructions unless a Model has the same name).
	Lists Lists
	Short string
}

// Lists says under which interfaces a Row is found.
type Lists uint8

// The ways of finding a row.
const (
	AsModel       Lists = 1 << iota // Lookup and Models
	AsInstruction                   // LookupInstruction and Instructions
)

// source is the row's Source with its Evidence.
func (r Row) source() string {
	if r.Evidence == "" {
		return r.Source
	}
	return r.Source + "; " + r.Evidence
}

// modelName is the name of the row's Model.
func (r Row) modelName() string {
	if r.Short != "" {
		return r.Short
	}
	return r.Name
}

// params returns the T-FDPA step parameters of a single-format row.
func (r Row) params() (Params, fp8.Format, error) {
	in, err := fp8.ParseFormat(r.A)
	if err != nil {
		return Params{}, 0, err
	}
	if r.B != r.A {
		return Params{}, 0, fmt.Errorf("a Model reads one format, not %s × %s", r.A, r.B)
	}
	return Params{L: r.L, F: r.F, Rho: r.Rho, EZero: r.EZero, In: in}, in, nil
}

// instrInfo is the row as an InstrInfo.
func (r Row) instrInfo() InstrInfo {
	return InstrInfo{Name: r.Name, Kind: r.Kind, A: r.A, B: r.B, C: r.C, K: r.K, Scale: r.Scale, Block: r.Block,
		F: r.F, L: r.L, EZero: r.EZero, Rho: r.Rho, Group: r.Group, Doc: r.Doc, Source: r.source()}
}

// Check reports whether the row is well formed: its Arch is its name's
// first part, it is found somehow, and it builds (the parameters are in the
// ranges the step computes exactly).
func (r Row) Check() error {
	_, err := buildRow(r)
	return err
}

// built is a row's Model and Instruction (nil where the row has none).
type built struct {
	model Model
	instr Instruction
}

func buildRow(r Row) (built, error) {
	var b built
	fail := func(err error) (built, error) { return built{}, fmt.Errorf("accum: row %s: %w", r.Name, err) }
	if a, _, ok := strings.Cut(r.Name, "."); !ok || a != r.Arch {
		return fail(fmt.Errorf("arch %q is not the name's first part", r.Arch))
	}
	if r.Lists&(AsModel|AsInstruction) == 0 {
		return fail(fmt.Errorf("listed neither as a Model nor as an Instruction"))
	}
	if r.Doc == "" || r.Source == "" {
		return fail(fmt.Errorf("no doc or source"))
	}
	if r.Lists&AsModel != 0 {
		p, in, err := r.params()
		if err != nil {
			return fail(err)
		}
		if out := p.OutFormat().String(); r.C != out {
			return fail(fmt.Errorf("c/d is %s but rho %s gives %s", r.C, r.Rho, out))
		}
		switch r.Kind {
		case KindTFDPA:
			b.model, err = newTFDPA(r.modelName(), in, r.K, p, r.Doc, r.source())
		case KindEmulation:
			b.model, err = newMMASyncEmu(r.modelName(), in, p, r.Doc, r.source())
		default:
			err = fmt.Errorf("a Model of kind %q is not modelled", r.Kind)
		}
		if err != nil {
			return fail(err)
		}
	}
	if r.Lists&AsInstruction != 0 {
		var err error
		switch r.Kind {
		case KindTFDPA, KindScaled:
			b.instr, err = newNV(r.instrInfo())
		case KindFMAChain, KindPairwise, KindAMDFDPA:
			b.instr, err = newAMD(r.instrInfo(), r.Arch)
		default:
			err = fmt.Errorf("an Instruction of kind %q is not modelled", r.Kind)
		}
		if err != nil {
			return fail(err)
		}
	}
	return b, nil
}

// catalog is what the package looks names up in: the Models and
// Instructions of a table of rows, and the IEEE baselines.
type catalog struct {
	rows       []Row
	models     map[string]Model
	instrs     map[string]Instruction
	modelNames []string // sorted
	instrNames []string // sorted, without those of Models
}

// newCatalog builds the catalog of rows, or says which row is wrong (a
// bad parameter, or a name used twice).
func newCatalog(rows []Row) (*catalog, error) {
	c := &catalog{rows: rows, models: map[string]Model{}, instrs: map[string]Instruction{}}
	for _, k := range []baselineKind{baseFP32, baseFMA, baseFP64, baseKahan, basePairwise, baseExact} {
		m := newBaseline(k, fp8.FormatE4M3)
		c.models[m.Name()] = m
	}
	for _, r := range rows {
		b, err := buildRow(r)
		if err != nil {
			return nil, err
		}
		if b.model != nil {
			if _, dup := c.models[b.model.Name()]; dup {
				return nil, fmt.Errorf("accum: model %s is in the table twice", b.model.Name())
			}
			c.models[b.model.Name()] = b.model
		}
		if b.instr != nil {
			if _, dup := c.instrs[r.Name]; dup {
				return nil, fmt.Errorf("accum: instruction %s is in the table twice", r.Name)
			}
			c.instrs[r.Name] = b.instr
		}
	}
	for n := range c.models {
		c.modelNames = append(c.modelNames, n)
	}
	for n := range c.instrs {
		if _, isModel := c.models[n]; !isModel {
			c.instrNames = append(c.instrNames, n)
		}
	}
	sort.Strings(c.modelNames)
	sort.Strings(c.instrNames)
	return c, nil
}

// current is the catalog of tableRows (with a test's rows while TestRows
// holds them), built once when the package is initialised.
var current = func() *atomic.Pointer[catalog] {
	c, err := newCatalog(tableRows())
	if err != nil {
		panic(err) // the table is the program's data: TestTable fails first
	}
	var p atomic.Pointer[catalog]
	p.Store(c)
	return &p
}()

// cat returns the current catalog.
func cat() *catalog { return current.Load() }

// Rows returns the instructions of the table, in table order (a copy).
func Rows() []Row { return append([]Row(nil), cat().rows...) }

// LookupRow returns the row of the named instruction: the row of that
// Name, or of that Short (Model) name.
func LookupRow(name string) (Row, error) {
	for _, r := range cat().rows {
		if r.Name == name || r.Short == name {
			return r, nil
		}
	}
	return Row{}, fmt.Errorf("no instruction %q in the table", name)
}

// TestRows is a test hook: for the rest of test t the package's table is
// tableRows plus rows, so that Lookup, Models, LookupInstruction,
// Instructions, Rows and everything built on them (attention's
// architectures, the experiments, `lab verify`) see the new instructions;
// t.Cleanup restores the table. It returns an error, and changes nothing,
// if a row is malformed or reuses a name. Only a test can call it (testing.TB
// has no other implementations); tests that call it must not run in
// parallel with others that read the table.
func TestRows(t testing.TB, rows ...Row) error {
	t.Helper()
	old := cat()
	c, err := newCatalog(append(append([]Row(nil), old.rows...), rows...))
	if err != nil {
		return err
	}
	current.Store(c)
	t.Cleanup(func() { current.Store(old) })
	return nil
}
