package experiments

import (
	"testing"
)

// A small kv-formats run with one split: every series retrieves the needle
// at short contexts, the output errors order as the formats' precision
// does, FA3's single-level e4m3 error grows with the context while
// two-level accumulation holds it down, and the run is deterministic.
func TestKVFormatsSmall(t *testing.T) {
	args := map[string]string{"contexts": "1024,4096", "trials": "4", "splits": "1", "haystacks": "2"}
	rec, err := attnExec(t, KVFormats{}, 3, args)
	if err != nil {
		t.Fatal(err)
	}
	s := rec.SummaryValues()
	if len(rec.Points()) != 12 {
		t.Fatalf("%d points, want 6 series × 2 contexts", len(rec.Points()))
	}
	for _, p := range rec.Points() {
		if p.X == 1024 && p.Extra["acc"] < 0.7 {
			t.Errorf("%s at 1k: accuracy %v", p.Series, p.Extra["acc"])
		}
		if p.Y != p.Extra["relerr"] || p.Extra["splits"] != 1 {
			t.Errorf("%s: y %v is not relerr %v, or %v splits", p.Series, p.Y, p.Extra["relerr"], p.Extra["splits"])
		}
	}
	e := func(ctx, series string) float64 { return s["relerr_"+ctx+"_"+series] }
	bf, fa3, tok, mx8, nv4, mx4 := e("4k", "bf16_p0"), e("4k", "e4m3_tensor_1.0_FA3_p0"), e("4k", "e4m3_token-head_to_bf16_p0"),
		e("4k", "mxfp8_to_bf16_p0"), e("4k", "nvfp4_amax_to_e4m3_p0"), e("4k", "mxfp4_to_bf16_p0")
	t.Logf("4k errors: bf16 %.3g, fa3 %.3g, token-head %.3g, mxfp8 %.3g, nvfp4 %.3g, mxfp4 %.3g", bf, fa3, tok, mx8, nv4, mx4)
	if !(bf > 0 && bf < tok/5 && tok < fa3 && mx8 < mx4 && mx8 < nv4) {
		t.Errorf("errors out of order")
	}
	if !(e("4k", "e4m3_tensor_1.0_FA3_p0") > 1.5*e("1k", "e4m3_tensor_1.0_FA3_p0")) {
		t.Errorf("single-level error does not grow with the context: 1k %.3g, 4k %.3g", e("1k", "e4m3_tensor_1.0_FA3_p0"), e("4k", "e4m3_tensor_1.0_FA3_p0"))
	}
	if !(e("4k", "e4m3_tensor_1.0_FA3_p1") < fa3/2) {
		t.Errorf("two-level %.3g not below single-level %.3g / 2", e("4k", "e4m3_tensor_1.0_FA3_p1"), fa3)
	}
	if s["need_bf16"] != 0 {
		t.Errorf("bf16 needs %v against itself", s["need_bf16"])
	}
	args["contexts"] = "1024"
	rec, err = attnExec(t, KVFormats{}, 3, args)
	if err != nil {
		t.Fatal(err)
	}
	s = rec.SummaryValues()
	rec2, err := attnExec(t, KVFormats{}, 3, args)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range rec2.SummaryValues() {
		if s[k] != v {
			t.Fatalf("%s: %v then %v", k, s[k], v)
		}
	}
}

// Split-KV shortens the single-level chain: at 16k tokens FA3's e4m3 error
// with 16 splits is well below one split's, while promoted every tile it
// hardly moves; auto picks FA3's split count (15 for 171 tiles and 8 KV
// heads on 132 SMs).
func TestKVFormatsSplits(t *testing.T) {
	e := func(splits string) map[string]float64 {
		rec, err := attnExec(t, KVFormats{}, 5, map[string]string{"contexts": "16384", "trials": "4", "haystacks": "2", "splits": splits})
		if err != nil {
			t.Fatal(err)
		}
		return rec.SummaryValues()
	}
	one, sixteen, auto := e("1"), e("16"), e("auto")
	k0, k1 := "relerr_16k_e4m3_tensor_1.0_FA3_p0", "relerr_16k_e4m3_tensor_1.0_FA3_p1"
	t.Logf("16k e4m3 single-level: 1 split %.3g%%, 16 splits %.3g%%, auto %.3g%%; promoted: %.3g%% / %.3g%%", one[k0], sixteen[k0], auto[k0], one[k1], sixteen[k1])
	if !(sixteen[k0] < one[k0]/3) {
		t.Errorf("16 splits: single-level error %.3g%% not below a third of one split's %.3g%%", sixteen[k0], one[k0])
	}
	if r := sixteen[k1] / one[k1]; r < 0.5 || r > 2 {
		t.Errorf("promoted every tile, 16 splits change the error by ×%.2f", r)
	}
}
