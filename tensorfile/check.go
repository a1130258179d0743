package tensorfile

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// CheckSafetensors checks every tensor of the safetensors file r of size
// bytes as [ReadSafetensors] would read it (type, shape, offsets, the
// element limit of opt, every value readable), parsing the header once and
// reading each distinct data range once: tensors that share a range with
// the same type (aliases) are read once, so the cost is about one pass
// over the header and the data whatever the number of tensors. It returns
// the tensor names, sorted, and stops with ctx's error, between ranges,
// when ctx is done.
func CheckSafetensors(ctx context.Context, file string, r io.ReaderAt, size int64, opt Options) ([]string, error) {
	h, start, err := safetensorsHeader(file, r, size)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	type span struct {
		lo, hi int64
		dt     DType
	}
	read := map[span]bool{}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := h[name]
		dt := safetensorsDTypes[e.DType]
		what := fmt.Sprintf("%s: tensor %q", file, name)
		n, err := elements(what, e.Shape, opt.maxElements())
		if err != nil {
			return nil, err
		}
		sp := span{e.DataOffsets[0], e.DataOffsets[1], dt}
		if read[sp] || n == 0 {
			continue
		}
		read[sp] = true
		sr := io.NewSectionReader(r, start+sp.lo, sp.hi-sp.lo)
		if _, err := readData(what, sr, n, dt, binary.LittleEndian); err != nil {
			return nil, err
		}
	}
	return names, nil
}
