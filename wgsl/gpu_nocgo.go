//go:build !js && !cgo

package wgsl

import (
	"context"
	"fmt"
)

// openBackend fails: without cgo there is no wgpu-native to call.
func openBackend(ctx context.Context, opt Options) (backend, AdapterInfo, error) {
	return nil, AdapterInfo{}, fmt.Errorf("%w: this program was built without cgo (CGO_ENABLED=0), so wgpu-native is not linked in", ErrNoAdapter)
}
