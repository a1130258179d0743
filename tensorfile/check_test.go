package tensorfile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// TestCheckSafetensors: every tensor is checked (a truncated range is
// found, as ReadSafetensors finds it), aliases once, and a done context
// stops the check.
func TestCheckSafetensors(t *testing.T) {
	file := func(header string, data []byte) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		return append(append(b, header...), data...)
	}
	good := file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"z":{"dtype":"F32","shape":[0],"data_offsets":[8,8]}}`, make([]byte, 8))
	names, err := CheckSafetensors(context.Background(), "g.safetensors", bytes.NewReader(good), int64(len(good)), Options{})
	if err != nil || strings.Join(names, ",") != "a,b,z" {
		t.Errorf("good file: %v %v", names, err)
	}
	big := file(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, make([]byte, 16))
	if _, err := CheckSafetensors(context.Background(), "big.safetensors", bytes.NewReader(big), int64(len(big)), Options{MaxElements: 3}); err == nil {
		t.Error("a tensor beyond MaxElements passed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := CheckSafetensors(ctx, "g.safetensors", bytes.NewReader(good), int64(len(good)), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
