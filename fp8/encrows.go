package fp8

import "fmt"

// EncodeScaledRows is EncodeScaled over the rows of a matrix: for r < rows
// and c < cols it stores at dst[r·dstRow + c·dstCol] the code of
// src[r·srcRow + c] / scale (a float32 division, rounded to nearest even,
// then f's rounding and saturation sat), exactly what
//
//	for r := range rows {
//		f.EncodeScaled(dst[r*dstRow:], dstCol, src[r*srcRow:][:cols], scale, sat)
//	}
//
// stores, NaN payloads included. It is one call for a block of tokens (a
// KV cache's rows, or its transposed V rows), where the WebAssembly build
// runs one kernel for the whole block (the js/wasm build's kernels of
// wasmk/encode.wat; a call per row costs more than a row's conversion
// there). The destinations of distinct elements must be distinct. It
// panics (a programming error) when dstCol is below 1, a row stride is
// negative, or dst or src is too short for the matrix.
func (f Format) EncodeScaledRows(dst []uint16, dstRow, dstCol int, src []float32, srcRow, rows, cols int, scale float32, sat Saturation) {
	if rows <= 0 || cols <= 0 {
		return
	}
	if dstCol < 1 || dstRow < 0 || srcRow < 0 {
		panic(fmt.Sprintf("fp8: EncodeScaledRows with strides dst %d×%d, src %d (dstCol must be at least 1, the row strides not negative)", dstRow, dstCol, srcRow))
	}
	if last := (rows-1)*dstRow + (cols-1)*dstCol; last >= len(dst) {
		panic(fmt.Sprintf("fp8: EncodeScaledRows writes dst[%d] of %d", last, len(dst)))
	}
	if end := (rows-1)*srcRow + cols; end > len(src) {
		panic(fmt.Sprintf("fp8: EncodeScaledRows reads src[:%d] of %d", end, len(src)))
	}
	// The kernel writes the elements in another order than the rows' loop
	// (its slow ones last), which is the same only when no two share a
	// destination: rows in disjoint ranges, or columns in disjoint ranges.
	disjoint := rows == 1 || dstRow >= (cols-1)*dstCol+1 || dstCol >= (rows-1)*dstRow+1
	if disjoint && f.encodeRowsWasm(dst, dstRow, dstCol, src, srcRow, rows, cols, scale, sat) {
		return
	}
	for r := range rows {
		f.encodeScaled(dst[r*dstRow:], dstCol, src[r*srcRow:][:cols], scale, true, sat)
	}
}
