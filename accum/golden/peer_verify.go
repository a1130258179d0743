package golden

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/fp8lab/fp8lab/accum"
)

// Deviation counts the records of a check that differ from the named model
// for a named, documented reason (see docs/evidence.md): they equal the
// instruction computed with the peer's rule (accum.PeerVariant), which the
// model does not follow because hardware or the newer peer says otherwise.
type Deviation struct {
	Reason string
	Count  int64
	Lines  []int // the first few lines, for the curious
}

// PeerModel returns the name of the accum instruction model that the
// peer-record file f holds records of, worked out from its headers
// (# arch:, # instruction:, the formats).
func PeerModel(f *PeerFile) (string, error) {
	ins := f.Instruction
	bad := func() (string, error) {
		return "", fmt.Errorf("%s: no model for instruction %q on %s", f.Path, ins, f.Arch)
	}
	switch f.Arch {
	case "sm_100a", "sm_120a":
		prefix := "sm100.tcgen05"
		if f.Arch == "sm_120a" {
			prefix = "sm120.mma.sync"
		}
		switch {
		case strings.Contains(ins, "kind::mxf8f6f4"):
			return fmt.Sprintf("%s.mxf8f6f4.%s.%s.%s", prefix, f.AFormat, f.BFormat, f.DFormat), nil
		case strings.Contains(ins, "kind::mxf4nvf4"):
			return fmt.Sprintf("%s.mxf4nvf4.%s.%s", prefix, f.ScaleFormat, f.DFormat), nil
		case strings.Contains(ins, "kind::mxf4"):
			return fmt.Sprintf("%s.mxf4.%s", prefix, f.DFormat), nil
		case strings.Contains(ins, "kind::f8f6f4") && f.Arch == "sm_100a":
			return fmt.Sprintf("%s.f8f6f4.%s.%s.%s", prefix, f.AFormat, f.BFormat, f.DFormat), nil
		case strings.Contains(ins, "kind::tf32") && f.Arch == "sm_100a":
			return "sm100.tcgen05.tf32." + f.DFormat, nil
		}
		return bad()
	case "sm_90":
		if strings.HasPrefix(ins, "wgmma.") && f.AFormat == "tf32" {
			return "sm90.wgmma.tf32." + f.DFormat, nil
		}
		return bad()
	case "sm_80":
		if strings.HasPrefix(ins, "mma.sync.") && f.AFormat == "tf32" {
			return "sm80.mma.sync.tf32." + f.DFormat, nil
		}
		return bad()
	case "CDNA1", "CDNA2", "CDNA3":
		arch := strings.ToLower(f.Arch)
		if !strings.HasPrefix(ins, "v_mfma_") {
			return bad()
		}
		var class string
		switch {
		case strings.HasSuffix(ins, "xf32"):
			class = "xf32"
		case strings.HasSuffix(ins, "bf16_1k"):
			class = "bf16_1k"
		case strings.HasSuffix(ins, "_fp8_fp8"), strings.HasSuffix(ins, "_fp8_bf8"), strings.HasSuffix(ins, "_bf8_fp8"), strings.HasSuffix(ins, "_bf8_bf8"):
			class = strings.ReplaceAll(ins[len(ins)-7:], "_", ".")
		case strings.HasSuffix(ins, "f64"):
			class = "f64"
		case strings.HasSuffix(ins, "f32"):
			class = "f32"
		case strings.HasSuffix(ins, "bf16"):
			class = "bf16"
		case strings.HasSuffix(ins, "f16"):
			class = "f16"
		default:
			return bad()
		}
		return fmt.Sprintf("%s.mfma.%s.%s", arch, class, f.DFormat), nil
	}
	return bad()
}

// sameOut compares outputs of format f bit for bit, every NaN equal to every
// NaN.
func sameOut(f string, want, got uint64) bool {
	if want == got {
		return true
	}
	switch f {
	case "f64":
		return math.IsNaN(math.Float64frombits(want)) && math.IsNaN(math.Float64frombits(got))
	case "f16":
		return want&0x7c00 == 0x7c00 && want&0x3ff != 0 && got&0x7c00 == 0x7c00 && got&0x3ff != 0
	}
	return math.IsNaN(float64(math.Float32frombits(uint32(want)))) && math.IsNaN(float64(math.Float32frombits(uint32(got))))
}

func verifyPeer(ctx context.Context, f *PeerFile, opt Options) (*Report, error) {
	name, err := PeerModel(f)
	if err != nil {
		return nil, err
	}
	m, err := accum.LookupInstruction(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	in := m.Info()
	if in.A != f.AFormat || in.B != f.BFormat || in.C != f.CFormat || in.Scale != f.ScaleFormat || in.Block != f.ScaleBlock {
		return nil, fmt.Errorf("%s: model %s reads %s x %s -> %s (scales %q per %d), the file holds %s x %s -> %s (scales %q per %d)",
			f.Path, name, in.A, in.B, in.C, in.Scale, in.Block, f.AFormat, f.BFormat, f.CFormat, f.ScaleFormat, f.ScaleBlock)
	}
	if f.K > in.K {
		return nil, fmt.Errorf("%s: records of %d elements for an instruction of K = %d", f.Path, f.K, in.K)
	}
	var variants []accum.PeerVariant
	if pv, ok := m.(accum.PeerVarianter); ok {
		variants = pv.PeerVariants()
	}
	sensitive := map[int]bool{}
	for _, r := range f.EminSensitive {
		sensitive[r] = true
	}
	rep := &Report{Path: f.Path, Model: name, Kind: fmt.Sprintf("peer records (%s, not hardware): %s", f.Arch, f.Instruction)}
	chk := Check{Name: "records"}
	devs := map[string]*Deviation{}
	digits := PeerCodeDigits(f.DFormat)
	for i, r := range f.Records {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		got := m.Step(r.A, r.B, r.SA, r.SB, r.C)
		if sameOut(f.DFormat, r.D, got) {
			chk.add(true, Mismatch{}, 0)
			continue
		}
		reason := ""
		for _, v := range variants {
			if sameOut(f.DFormat, r.D, v.Step(r.A, r.B, r.SA, r.SB, r.C)) {
				reason = v.Reason
				break
			}
		}
		// An FP4-exponent deviation must be one the file lists as
		// e2m1-emin-sensitive; anything else is a plain mismatch.
		if strings.Contains(reason, accum.ReasonFP4Emin) && !sensitive[i+1] {
			reason = ""
		}
		if reason == "" {
			chk.add(false, Mismatch{Line: r.Line, Inputs: peerInputs(f, r), Expected: uint32(r.D), Got: uint32(got),
				Digits: wideDigits(digits), Expected64: r.D, Got64: got}, opt.maxMismatches())
			continue
		}
		chk.Total++
		chk.Deviated++
		d := devs[reason]
		if d == nil {
			d = &Deviation{Reason: reason}
			devs[reason] = d
		}
		d.Count++
		if len(d.Lines) < 5 {
			d.Lines = append(d.Lines, r.Line)
		}
	}
	for _, d := range devs {
		chk.Deviations = append(chk.Deviations, *d)
	}
	sort.Slice(chk.Deviations, func(i, j int) bool { return chk.Deviations[i].Reason < chk.Deviations[j].Reason })
	rep.Checks = append(rep.Checks, chk)
	rep.Notes = append(rep.Notes, "model: "+in.String())
	return rep, nil
}

func peerInputs(f *PeerFile, r PeerRecord) string {
	var b strings.Builder
	codes := func(name string, cs []uint64, format string) {
		fmt.Fprintf(&b, "%s=", name)
		d := PeerCodeDigits(format)
		for _, c := range cs {
			fmt.Fprintf(&b, "%0*x", d, c)
		}
		b.WriteByte(' ')
	}
	codes("a", r.A, f.AFormat)
	codes("b", r.B, f.BFormat)
	if f.Scaled() {
		fmt.Fprintf(&b, "sa=%x sb=%x ", r.SA, r.SB)
	}
	fmt.Fprintf(&b, "c=%0*x", PeerCodeDigits(f.CFormat), r.C)
	return b.String()
}

// wideDigits is Mismatch.Digits for outputs of d digits: 0 for f32.
func wideDigits(d int) int {
	if d == 8 {
		return 0
	}
	return d
}
