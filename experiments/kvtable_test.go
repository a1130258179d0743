package experiments

import (
	"slices"
	"testing"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
)

// A new KV format is a row of attention.KVFormatTable, and nothing else:
// appended here (OCP MXFP6, e3m2 elements with ue8m0 scales per 32
// channels, which the project does not ship), it becomes a choice of
// kv-formats' set (bf16 and the format on the dequantizing paths, the two
// that read it, no native MMA having an instruction for it) and of
// attention-file's format, and a kv-formats run of it retrieves the needle.
func TestKVFormatRowSelectable(t *testing.T) {
	n := len(attention.KVFormatTable)
	attention.KVFormatTable = append(attention.KVFormatTable[:n:n], attention.KVFormatRow{
		Name: "mxfp6", Elem: fp8.FormatE3M2, Block: 32, BlockScale: fp8.FormatUE8M0,
		Doc: "e3m2 elements, one ue8m0 scale per 32 channels", Source: "OCP Microscaling Formats (MX) v1.0 §5"})
	t.Cleanup(func() { attention.KVFormatTable = attention.KVFormatTable[:n] })

	choices := func(ps []sim.Param, name string) []string {
		for _, p := range ps {
			if p.Name == name {
				return p.Choices
			}
		}
		return nil
	}
	if c := choices(KVFormats{}.Params(), "set"); !slices.Contains(c, "mxfp6") {
		t.Errorf("kv-formats set choices %v", c)
	}
	if c := choices(AttentionFile{}.Params(), "format"); !slices.Contains(c, "mxfp6") {
		t.Errorf("attention-file format choices %v", c)
	}
	var labels []string
	for _, c := range kvFormatsCases("mxfp6") {
		labels = append(labels, c.label)
	}
	if want := []string{"bf16", "mxfp6 →bf16", "mxfp6 →e4m3"}; !slices.Equal(labels, want) {
		t.Errorf("set mxfp6: series %q, want %q", labels, want)
	}

	vals, err := sim.ParseValues(AttentionFile{}.Params(), map[string]string{"format": "mxfp6", "path": "dequant-bf16"})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err := AttentionFileSpec(vals, AttentionFileShape{Tokens: 64, KVHeads: 1, QHeads: 1, HeadDim: 64}, nil, nil)
	if err != nil || spec.Format.String() != "mxfp6" || spec.Path != attention.PathDequantBF16 {
		t.Errorf("attention-file spec %v, %v", spec, err)
	}

	rec, err := attnExec(t, KVFormats{}, 3, map[string]string{"set": "mxfp6", "contexts": "1024", "trials": "4", "splits": "1", "haystacks": "2", "promotions": "0"})
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, p := range rec.Points() {
		series = append(series, p.Series)
		if p.Extra["acc"] < 0.7 || !(p.Y > 0) {
			t.Errorf("%s: accuracy %v, error %v%%", p.Series, p.Extra["acc"], p.Y)
		}
	}
	if !slices.Equal(series, labels) {
		t.Errorf("run's series %q, want %q", series, labels)
	}
}
