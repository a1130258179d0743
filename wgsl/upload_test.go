//go:build !js && cgo

package wgsl

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// upload through the staging buffers gives the GPU buffer the bytes it was
// given, for sizes below, at and across a staging buffer's size, one
// upload after another (the two buffers alternate and are mapped again).
func TestUploadPieces(t *testing.T) {
	_, g := stagedGPU(t, 64<<10)
	sb := int(stageBytes)
	for k, n := range []int{4, sb - 4, sb, sb + 4, 2 * sb, 5*sb + 12, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(i*31 + k*7 + i>>16)
			}
			// One piece, and the same bytes in pieces cut across the
			// staging buffers' boundaries (empty pieces among them).
			cuts := [][]int{nil, {0, n / 3, n / 3, n - 4}, {sb / 2, sb + 8}, {4, 8, 12, sb - 4, sb + 4, 3 * sb}}
			for _, cut := range cuts {
				var pieces [][]byte
				at := 0
				for _, c := range cut {
					if c = min(max(c, at), n); c >= at {
						pieces, at = append(pieces, data[at:c]), c
					}
				}
				pieces = append(pieces, data[at:])
				x, err := g.upload("test", pieces...)
				if err != nil {
					t.Fatal(err)
				}
				got, err := g.mapRead(context.Background(), x.(*gpuBuffer).b, uint64(n))
				g.free(x)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[:n], data) {
					i := 0
					for i < n && got[i] == data[i] {
						i++
					}
					t.Fatalf("%d pieces %v: byte %d of %d: %#x, want %#x", len(pieces), cut, i, n, got[i], data[i])
				}
			}
		})
	}
}

// stagedGPU opens a runner of its own whose uploads go through staging
// buffers of stage bytes, and returns it and its native backend; tb ends
// with the runner closed and stageBytes as it was. It skips tb where there
// is no adapter or the backend is not the native one.
func stagedGPU(tb testing.TB, stage uint64) (*Runner, *gpu) {
	tb.Helper()
	testGPU(tb) // skips where there is no adapter
	old := stageBytes
	tb.Cleanup(func() { stageBytes = old })
	stageBytes = stage
	r, err := Open(context.Background(), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	g, ok := r.be.(*gpu)
	if !ok {
		tb.Skip("not the native backend")
	}
	return r, g
}
