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
	testGPU(t) // skips where there is no adapter
	defer func(old uint64) { stageBytes = old }(stageBytes)
	stageBytes = 64 << 10
	r, err := Open(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g, ok := r.be.(*gpu)
	if !ok {
		t.Skip("not the native backend")
	}
	sb := int(stageBytes)
	for k, n := range []int{4, sb - 4, sb, sb + 4, 2 * sb, 5*sb + 12, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data := make([]byte, n)
			for i := range data {
				data[i] = byte(i*31 + k*7 + i>>16)
			}
			x, err := g.upload("test", data)
			if err != nil {
				t.Fatal(err)
			}
			defer g.free(x)
			got, err := g.mapRead(context.Background(), x.(*gpuBuffer).b, uint64(n))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[:n], data) {
				i := 0
				for i < n && got[i] == data[i] {
					i++
				}
				t.Fatalf("byte %d of %d: %#x, want %#x", i, n, got[i], data[i])
			}
		})
	}
}
