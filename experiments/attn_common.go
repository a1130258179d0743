package experiments

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// Helpers shared by the attention experiments (h200-attention, needle,
// promotion, scales).

// attnReadF32 reads a raw little-endian float32 file of n values.
func attnReadF32(path string, n int) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) != 4*n {
		return nil, fmt.Errorf("%s: %d bytes, want %d float32 values", path, len(b), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// attnWriteF32 writes x as raw little-endian float32 (x holds FP32 values).
func attnWriteF32(path string, x []float64) error {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
	}
	return os.WriteFile(path, b, 0o644)
}

// attnRows is what a trial running the simulator returns: its outputs (one
// per promotion scheme) or the error that stopped it.
type attnRows struct {
	o   [][]float64
	err error
}

// attnFirstErr returns the run's cancellation, the error of sim.Trials, or
// the first error of a trial, in that order.
func attnFirstErr(ctx context.Context, rows []attnRows, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.err != nil {
			return r.err
		}
	}
	return nil
}

// attnRetrieve returns the index of the candidate code c (rows of codes,
// each d long) with the largest ⟨o − mu, c⟩, the retrieval rule of the
// H200 probe and of the needle experiments (mu their baseline B, 0 for
// zero-sum codes).
func attnRetrieve(o []float64, mu float64, codes []float32, d int) int {
	best, arg := math.Inf(-1), -1
	for c := 0; c < len(codes)/d; c++ {
		var s float64
		for i := 0; i < d; i++ {
			s += (o[i] - mu) * float64(codes[c*d+i])
		}
		if s > best {
			best, arg = s, c
		}
	}
	return arg
}
