package attention

import (
	"fmt"

	"github.com/fp8lab/fp8lab/attention/numpyrand"
)

// The constants of ../shared/golden/h200/capture/attn_inputs.py.
const (
	H200Seed    = 20261129 // make()'s seed; the generator is PCG64(seed + N)
	H200Queries = 64       // M
	H200HeadDim = 128      // D
	H200Alpha   = 0.9      // the needle key is alpha·q_r
	H200Mu      = 0.5      // the mean of V
	H200SigmaK  = 1.0      // the spread of K
)

// H200Inputs are the deterministic attention inputs of attn_inputs.py, on
// which the H200 measurements of h200-attention.md were taken.
type H200Inputs struct {
	N     int       // tokens
	Q     []float32 // [H200Queries][H200HeadDim]
	K, V  []float32 // [N][H200HeadDim]
	Pos   []int     // the needle position of each query
	Signs []float32 // [H200Queries][H200HeadDim]: the ±2 code stored as the needle's value
}

// MakeH200Inputs regenerates attn_inputs.make(n) bit for bit, with the
// default seed, alpha, mu and sigma_k.
func MakeH200Inputs(n int) (*H200Inputs, error) {
	return MakeH200InputsWith(n, H200Seed, H200Alpha, H200Mu, H200SigmaK)
}

// MakeH200InputsWith regenerates attn_inputs.make(n, seed, alpha, mu,
// sigma_k): from np.random.PCG64(seed + n), in this order, Q ~ N(0, 1)
// [64×128], K ~ N(0, 1)·sigma_k [n×128], V ~ N(0, 1) + mu [n×128], each
// normal the Irwin–Hall sum ((((u0 + u1) + u2) + u3) − 2)·√3 of four
// uniforms u = (raw >> 11)·2^-53 drawn as a (4, count) array (u0 the first
// count uniforms, u1 the next count, …); then 64 needle positions raw % n
// and 64×128 signs (raw & 1 → +2, else −2); then, for r = 0 … 63 in order,
// K[pos_r] = alpha·Q[r] and V[pos_r] = signs[r]; every operation in
// float64, cast to float32 (round to nearest even) at the end, as NumPy
// does.
func MakeH200InputsWith(n int, seed uint64, alpha, mu, sigmaK float64) (*H200Inputs, error) {
	if n < 1 || n > 1<<24 {
		return nil, fmt.Errorf("attention: H200 inputs for %d tokens: want 1 … %d", n, 1<<24)
	}
	bg := numpyrand.NewPCG64(seed + uint64(n))
	const m, d = H200Queries, H200HeadDim
	in := &H200Inputs{N: n, Q: make([]float32, m*d), K: make([]float32, n*d), V: make([]float32, n*d),
		Pos: make([]int, m), Signs: make([]float32, m*d)}
	q := make([]float64, m*d)
	irwinHall(bg, len(q), func(i int, x float64) { q[i] = x; in.Q[i] = float32(x) })
	irwinHall(bg, n*d, func(i int, x float64) { in.K[i] = float32(x * sigmaK) })
	irwinHall(bg, n*d, func(i int, x float64) { in.V[i] = float32(x + mu) })
	for r := range in.Pos {
		in.Pos[r] = int(bg.Uint64() % uint64(n))
	}
	for i := range in.Signs {
		in.Signs[i] = -2
		if bg.Uint64()&1 == 1 {
			in.Signs[i] = 2
		}
	}
	for r, p := range in.Pos {
		for x := 0; x < d; x++ {
			in.K[p*d+x] = float32(q[r*d+x] * alpha)
			in.V[p*d+x] = in.Signs[r*d+x]
		}
	}
	return in, nil
}

// irwinHall draws count normals as attn_inputs._normal does and passes each
// to set in order; it leaves bg advanced past the 4·count raw outputs. The
// four rows of the (4, count) uniform array are read by four copies of the
// generator jumped ahead by 0, count, 2·count and 3·count.
func irwinHall(bg *numpyrand.PCG64, count int, set func(i int, x float64)) {
	var g [4]*numpyrand.PCG64
	for r := range g {
		g[r] = bg.Clone()
		g[r].Advance(uint64(r * count))
	}
	for i := 0; i < count; i++ {
		u0, u1, u2, u3 := g[0].Float64(), g[1].Float64(), g[2].Float64(), g[3].Float64()
		x := (((u0 + u1) + u2) + u3) - 2.0
		set(i, float64(x*1.7320508075688772)) // the conversion forbids fusing with the caller's + mu
	}
	bg.Advance(uint64(4 * count))
}
