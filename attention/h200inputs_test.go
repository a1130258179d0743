package attention

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/fp8lab/fp8lab/attention/numpyrand"
	"github.com/fp8lab/fp8lab/fp8"
)

// h200Dir holds the H200 attention captures and NumPy's own values of the
// inputs (inputs_check.json), written on the GPU machine.
const h200Dir = "../testdata/h200-attention"

// InputsSHA256 is the sha256 of Q ‖ K ‖ V as little-endian float32, as
// attn_probe.py hashes Qf.tobytes() + Kf.tobytes() + Vf.tobytes().
func inputsSHA256(in *H200Inputs) string {
	h := sha256.New()
	var b [4]byte
	for _, x := range [][]float32{in.Q, in.K, in.V} {
		for _, v := range x {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			h.Write(b[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The regenerated inputs equal NumPy's, bit for bit: the first raw outputs
// of PCG64(20261129 + 4096), the first values of Q, K and V, the needle
// positions and the sha256 of all of Q, K, V.
func TestH200InputsMatchNumPy(t *testing.T) {
	data, err := os.ReadFile(h200Dir + "/inputs_check.json")
	if err != nil {
		t.Skipf("no NumPy check values: %v", err)
	}
	var want struct {
		Raw     []uint64  `json:"N4096_raw0_4"`
		Q, K, V []float32 `json:"-"`
		Q0      []float32 `json:"N4096_Q0"`
		K0      []float32 `json:"N4096_K0"`
		V0      []float32 `json:"N4096_V0"`
		Pos     []int     `json:"N4096_pos"`
		SHA     string    `json:"N4096_sha_f32"`
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	g := numpyrand.NewPCG64(H200Seed + 4096)
	for i, w := range want.Raw {
		if got := g.Uint64(); got != w {
			t.Errorf("raw output %d = %d, NumPy %d", i, got, w)
		}
	}
	in, err := MakeH200Inputs(4096)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want []float32
	}{{"Q", in.Q, want.Q0}, {"K", in.K, want.K0}, {"V", in.V, want.V0}} {
		for i, w := range c.want {
			if c.got[i] != w {
				t.Errorf("%s[%d] = %v, NumPy %v", c.name, i, c.got[i], w)
			}
		}
	}
	for i, w := range want.Pos {
		if in.Pos[i] != w {
			t.Errorf("pos[%d] = %d, NumPy %d", i, in.Pos[i], w)
		}
	}
	if got := inputsSHA256(in); got != want.SHA {
		t.Errorf("sha256(Q‖K‖V) = %s, NumPy %s", got, want.SHA)
	}
}

// The e4m3 inputs of the probe (torch's nosat cast) hash as the probe logs
// them (attn_log.json: N4096_fp8_sha, the first 16 hex digits).
func TestH200FP8InputsHash(t *testing.T) {
	data, err := os.ReadFile(h200Dir + "/attn_log.json")
	if err != nil {
		t.Skipf("no probe log: %v", err)
	}
	var log map[string]any
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	in, err := MakeH200Inputs(4096)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := inputsSHA256(in)[:16], log["N4096_inputs_sha"]; got != want {
		t.Errorf("inputs sha %s, probe %v", got, want)
	}
	h := sha256.New()
	for _, x := range [][]float32{in.Q, in.K, in.V} {
		for _, v := range x {
			h.Write([]byte{uint8(fp8.EncodeE4M3(v, fp8.NoSat))})
		}
	}
	if got, want := hex.EncodeToString(h.Sum(nil))[:16], log["N4096_fp8_sha"]; got != want {
		t.Errorf("e4m3 inputs sha %s, probe %v", got, want)
	}
}

// The needle construction of attn_inputs.make: K[pos] = alpha·Q[r] and
// V[pos] = the ±2 signs, later queries overwriting earlier ones.
func TestH200InputsNeedles(t *testing.T) {
	in, err := MakeH200Inputs(1000)
	if err != nil {
		t.Fatal(err)
	}
	last := map[int]int{}
	for r, p := range in.Pos {
		last[p] = r
	}
	for p, r := range last {
		for d := 0; d < H200HeadDim; d++ {
			if in.V[p*H200HeadDim+d] != in.Signs[r*H200HeadDim+d] || math.Abs(float64(in.Signs[r*H200HeadDim+d])) != 2 {
				t.Fatalf("V[%d] is not the ±2 signs of query %d", p, r)
			}
			if math.Abs(float64(in.K[p*H200HeadDim+d]-0.9*in.Q[r*H200HeadDim+d])) > 1e-6 {
				t.Fatalf("K[%d] is not 0.9·Q[%d]", p, r)
			}
		}
	}
	if _, err := MakeH200Inputs(0); err == nil {
		t.Error("MakeH200Inputs(0) accepted")
	}
}

// The first raw outputs of NumPy's PCG64(20261129 + 4096) and the first
// values of the H200 inputs for N = 4096, as NumPy prints them
// (testdata/h200-attention/inputs_check.json): go test -run
// ExampleMakeH200Inputs -v ./attention/ prints them here.
func ExampleMakeH200Inputs() {
	g := numpyrand.NewPCG64(H200Seed + 4096)
	fmt.Println("raw:", g.Uint64(), g.Uint64(), g.Uint64(), g.Uint64())
	in, err := MakeH200Inputs(4096)
	if err != nil {
		panic(err)
	}
	for _, x := range []struct {
		name string
		v    []float32
	}{{"Q", in.Q}, {"K", in.K}, {"V", in.V}} {
		fmt.Println(x.name+":", float64(x.v[0]), float64(x.v[1]), float64(x.v[2]), float64(x.v[3]))
	}
	fmt.Println("pos:", in.Pos[:8])
	fmt.Println("sha256:", inputsSHA256(in))
	// Output:
	// raw: 10861353068810930750 3625323928790224575 2887068777813590124 2930152038595459396
	// Q: 1.1312594413757324 -1.3833786249160767 0.41027218103408813 -0.5819828510284424
	// K: -1.5107673406600952 0.10188820213079453 0.19087877869606018 -0.1800069957971573
	// V: -0.5576844811439514 2.777137279510498 1.0215542316436768 -0.0541645772755146
	// pos: [2019 600 2039 91 1155 726 491 1448]
	// sha256: fdba0ad2f268685e99fb5f390ba07be524d1c38bff881a1d3c793aba034c84a8
}
