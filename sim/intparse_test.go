package sim

import (
	"encoding/json"
	"testing"
)

// TestIntegersParsedExactly: a JSON number is an integer parameter only when
// its decimal value is an integer; float64 rounding must not turn
// 0.999999999999999999999 into 1 or let 8.0000000000000001 pass a maximum
// of 8 (issue 9, item 10).
func TestIntegersParsedExactly(t *testing.T) {
	p := Param{Name: "trials", Kind: KindInt, Default: 1, Min: 1, Max: 8}
	for _, tt := range []struct {
		in   string
		want int // 0: refused
	}{
		{"1", 1}, {"8", 8}, {"8.0", 8}, {"8e0", 8}, {"0.8e1", 8}, {"800e-2", 8}, {"1E0", 1},
		{"0.999999999999999999999", 0}, {"8.0000000000000001", 0}, {"1.5", 0}, {"9", 0}, {"0", 0},
		{"1e99999999999999999999", 0}, {"1e-99999999999999999999", 0}, {"-1", 0}, {"99999999999999999999", 0},
	} {
		got, err := p.Convert(json.Number(tt.in))
		switch {
		case tt.want == 0 && err == nil:
			t.Errorf("%s: accepted as %v", tt.in, got)
		case tt.want != 0 && (err != nil || got != tt.want):
			t.Errorf("%s: %v, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	v, err := ValuesFromJSON([]Param{p}, []byte(`{"trials": 0.999999999999999999999}`))
	if err == nil {
		t.Errorf("trials 0.999999999999999999999 accepted: %v", v.Int("trials"))
	}
	if _, err := ValuesFromJSON([]Param{p}, []byte(`{"trials": 8.0000000000000001}`)); err == nil {
		t.Errorf("trials 8.0000000000000001 passed the maximum 8")
	}
	q := Param{Name: "big", Kind: KindInt, Default: 0}
	for in, want := range map[string]int{"0e99999999999999999999": 0, "-0": 0, "9223372036854775807": 9223372036854775807, "-12e2": -1200} {
		if got, err := q.Convert(json.Number(in)); err != nil || got != want {
			t.Errorf("%s: %v, %v; want %d", in, got, err, want)
		}
	}
}

func FuzzExactInt(f *testing.F) {
	for _, s := range []string{"1", "8.0", "0.999999999999999999999", "1e5", "-3e-1", "0e-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := exactInt(s)
		if err != nil {
			return
		}
		// An accepted text is valid JSON-ish decimal whose value is n: checking
		// through float64 is exact for |n| < 2^53.
		if n > -1<<53 && n < 1<<53 {
			var f float64
			if json.Unmarshal([]byte(s), &f) == nil && f != float64(n) {
				t.Errorf("%q read as %d, float64 says %v", s, n, f)
			}
		}
	})
}
