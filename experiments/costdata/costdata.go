package costdata

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"
)

// Schema is the value of the file's "schema" field this package reads.
const Schema = "fp8lab-kernel-costs/1"

// FileName is the name of the embedded file in this directory.
const FileName = "h200-kernel-costs.json"

// The embedded directory: "*" rather than the file's name, so that a build
// without the file compiles and says it has no measured costs.
//
//go:embed *
var files embed.FS

// ErrNoMeasuredCosts is returned by [Embedded] when the build has no
// h200-kernel-costs.json.
var ErrNoMeasuredCosts = errors.New("no measured costs: experiments/costdata/" + FileName +
	" is not in this build (the capture tools/capture/kernel_costs.py writes it on an H200)")

// Embedded returns the embedded file, parsed, or [ErrNoMeasuredCosts] when
// the build has none, or Parse's error.
func Embedded() (*File, error) {
	b, err := fs.ReadFile(files, FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoMeasuredCosts
	}
	if err != nil {
		return nil, err
	}
	return Parse("experiments/costdata/"+FileName, b)
}

// Clocks are the GPU clocks during the capture.
type Clocks struct {
	SMMHzMax float64   `json:"sm_mhz_max"` // the SM clock's maximum
	SMMHz    []float64 `json:"sm_mhz"`     // min, median, max over the capture
	MemMHz   float64   `json:"mem_mhz"`
}

// Provenance says where and how the costs were measured.
type Provenance struct {
	GPU    string `json:"gpu"`
	Driver string `json:"driver"`
	CUDA   string `json:"cuda"`
	Torch  string `json:"torch"`
	Triton string `json:"triton"`
	Date   string `json:"date"`   // RFC 3339
	Commit string `json:"commit"` // fp8lab's commit of the capture script
	Script string `json:"script"`
	Method string `json:"method"` // timing method, free text
	Clocks Clocks `json:"clocks"`
}

// String is one line: GPU, driver, CUDA, clocks, date, commit.
func (p Provenance) String() string {
	clk := ""
	if len(p.SMClocks()) == 3 {
		clk = fmt.Sprintf(", SM %g/%g/%g MHz (min/median/max; max %g)", p.Clocks.SMMHz[0], p.Clocks.SMMHz[1], p.Clocks.SMMHz[2], p.Clocks.SMMHzMax)
	}
	return fmt.Sprintf("%s, driver %s, CUDA %s, torch %s, triton %s%s, %s, commit %s, %s",
		p.GPU, p.Driver, p.CUDA, p.Torch, p.Triton, clk, p.Date, shortSHA(p.Commit), p.Script)
}

// SMClocks returns the min, median and max SM clock, or nil.
func (p Provenance) SMClocks() []float64 {
	if len(p.Clocks.SMMHz) != 3 {
		return nil
	}
	return p.Clocks.SMMHz
}

func shortSHA(s string) string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// Row is one measurement: the median time of one kernel call (US, in
// microseconds) with its quartiles, for the op's shape fields. Fields an op
// does not use are zero; Registers and Spills are -1 when unknown or not
// given.
type Row struct {
	Op      string `json:"op"`
	Impl    string `json:"impl"`
	KV      string `json:"kv"`
	Backend string `json:"backend"`
	Name    string `json:"name"`
	Note    string `json:"note"`

	Batch   int `json:"batch"`   // sequences (decode) or tokens (kv_write, q_quant)
	Context int `json:"context"` // KV tokens per sequence (decode), query = KV tokens (prefill)
	QHeads  int `json:"q_heads"`
	KVHeads int `json:"kv_heads"`
	HeadDim int `json:"head_dim"`
	Splits  int `json:"splits"`
	// Window is a decode row's sliding window in tokens: the kernel of a
	// sliding layer at context tokens, of which it attends the last
	// Window (0: full attention). Optional: a file without such rows
	// prices a sliding layer as a full one at min(context, window).
	Window int `json:"window"`

	M int `json:"m"` // linear: [m × k] · [k × n]
	N int `json:"n"`
	K int `json:"k"`

	Bytes float64 `json:"bytes"` // stream: bytes copied

	Registers int `json:"registers"`
	Spills    int `json:"spills"`

	US   float64 `json:"us"`
	USQ1 float64 `json:"us_q1"`
	USQ3 float64 `json:"us_q3"`
	Reps int     `json:"reps"`
}

// File is a parsed cost file.
type File struct {
	Name       string // where it was read from, for messages
	Schema     string
	Provenance Provenance
	Rows       []Row
}

// KV formats of the rows.
const (
	KVBF16      = "bf16"
	KVFP8Tensor = "fp8-tensor" // one scale per tensor (vLLM's default)
	KVFP8Head   = "fp8-head"   // one scale per KV head
)

// opSpec is what one op requires: the positive integer fields, the kv
// formats and implementations it takes (nil: any, including none).
type opSpec struct {
	ints  []string
	kv    []string
	impls []string
}

var allKV = []string{KVBF16, KVFP8Tensor, KVFP8Head}

// ops are the row kinds of the schema, one entry each: a new kind is a
// new entry.
var ops = map[string]opSpec{
	"decode":   {ints: []string{"batch", "context", "q_heads", "kv_heads", "head_dim"}, kv: allKV, impls: []string{ImplSplitKV, ImplSplitKVDequant, "sdpa"}},
	"kv_write": {ints: []string{"batch", "kv_heads", "head_dim"}, kv: allKV},
	"q_quant":  {ints: []string{"batch", "q_heads", "head_dim"}, kv: []string{KVFP8Tensor, KVFP8Head}},
	"prefill":  {ints: []string{"context", "q_heads", "kv_heads", "head_dim"}, impls: []string{"triton-bf16", "triton-fp8-1level", "triton-fp8-2level", "sdpa"}},
	"linear":   {ints: []string{"m", "n", "k"}},
	"stream":   {},
	"launch":   {impls: []string{"graph", "eager"}},
}

// intField returns the integer field of r named as in JSON.
func (r Row) intField(name string) int {
	switch name {
	case "batch":
		return r.Batch
	case "context":
		return r.Context
	case "q_heads":
		return r.QHeads
	case "kv_heads":
		return r.KVHeads
	case "head_dim":
		return r.HeadDim
	case "m":
		return r.M
	case "n":
		return r.N
	case "k":
		return r.K
	}
	panic("costdata: unknown integer field " + name)
}

// rawFile is the JSON document before the rows are checked one by one.
type rawFile struct {
	Schema     string            `json:"schema"`
	Provenance Provenance        `json:"provenance"`
	Rows       []json.RawMessage `json:"rows"`
}

// Parse reads a cost file. name is used in error messages only. It checks
// the schema string, that there is at least one row, and each row: a known
// op, the op's shape fields positive, a known kv format and
// implementation where the op takes one, us finite and positive, the
// quartiles (when given) around it, reps not negative, a stream row's
// bytes positive. Unknown fields are ignored. Errors name the file, the
// row index and the field: "FILE: rows[3] (op "decode"): field "us": …".
func Parse(name string, data []byte) (*File, error) {
	var raw rawFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if raw.Schema != Schema {
		return nil, fmt.Errorf("%s: field \"schema\": %q, want %q", name, raw.Schema, Schema)
	}
	if len(raw.Rows) == 0 {
		return nil, fmt.Errorf("%s: field \"rows\": no rows", name)
	}
	f := &File{Name: name, Schema: raw.Schema, Provenance: raw.Provenance, Rows: make([]Row, 0, len(raw.Rows))}
	for i, m := range raw.Rows {
		r := Row{Registers: -1, Spills: -1}
		if err := json.Unmarshal(m, &r); err != nil {
			return nil, fmt.Errorf("%s: rows[%d]: %w", name, i, err)
		}
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("%s: rows[%d] (op %q): %w", name, i, r.Op, err)
		}
		f.Rows = append(f.Rows, r)
	}
	return f, nil
}

// check validates one row.
func (r Row) check() error {
	spec, ok := ops[r.Op]
	if !ok {
		known := make([]string, 0, len(ops))
		for k := range ops {
			known = append(known, k)
		}
		slices.Sort(known)
		return fmt.Errorf("field \"op\": unknown op (known: %s)", strings.Join(known, ", "))
	}
	for _, name := range spec.ints {
		if v := r.intField(name); v <= 0 {
			return fmt.Errorf("field %q: %d, want a positive integer", name, v)
		}
	}
	if spec.kv != nil && !slices.Contains(spec.kv, r.KV) {
		return fmt.Errorf("field \"kv\": %q (want one of %s)", r.KV, strings.Join(spec.kv, ", "))
	}
	if spec.impls != nil && !slices.Contains(spec.impls, r.Impl) {
		return fmt.Errorf("field \"impl\": %q (want one of %s)", r.Impl, strings.Join(spec.impls, ", "))
	}
	if r.Op == "stream" && !(r.Bytes > 0) || math.IsInf(r.Bytes, 0) {
		return fmt.Errorf("field \"bytes\": %g, want a positive byte count", r.Bytes)
	}
	if !(r.US > 0) || math.IsInf(r.US, 0) {
		return fmt.Errorf("field \"us\": %g, want a positive finite time", r.US)
	}
	if r.USQ1 != 0 && !(r.USQ1 > 0 && r.USQ1 <= r.US) {
		return fmt.Errorf("field \"us_q1\": %g, want in (0, us = %g]", r.USQ1, r.US)
	}
	if r.USQ3 != 0 && !(r.USQ3 >= r.US && !math.IsInf(r.USQ3, 0)) {
		return fmt.Errorf("field \"us_q3\": %g, want finite and at least us = %g", r.USQ3, r.US)
	}
	if r.Window < 0 {
		return fmt.Errorf("field \"window\": %d, want 0 (full attention) or a window in tokens", r.Window)
	}
	if r.Reps < 0 {
		return fmt.Errorf("field \"reps\": %d, want at least 0", r.Reps)
	}
	if r.Registers < -1 || r.Spills < -1 {
		return fmt.Errorf("fields \"registers\", \"spills\": %d, %d (-1: unknown)", r.Registers, r.Spills)
	}
	return nil
}
