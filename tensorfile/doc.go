// Package tensorfile reads the tensors of NumPy .npy files and of
// .safetensors files as NumPy, PyTorch and the safetensors library write
// them, into float32 values.
//
// Formats:
//
//   - .npy (NumPy format versions 1.0, 2.0 and 3.0): a magic string, a
//     version, a little-endian header length (2 bytes in 1.0, 4 in 2.0/3.0)
//     and a Python dict literal {'descr': …, 'fortran_order': …, 'shape': …}
//     padded with spaces to a multiple of 64 bytes, then the raw data.
//     Element types: '<f4'/'>f4' (float32), '<f2'/'>f2' (float16),
//     '<f8'/'>f8' (float64, rounded to nearest float32) and the two
//     opaque types ml_dtypes writes for the formats NumPy lacks: '<V2'
//     (bfloat16) and '|V1' (float8_e4m3fn), which are read only when the
//     caller names the type ([Options.Void2], [Options.Void1]), since the
//     file does not say it; for positions and masks also '<i8', '<i4',
//     '|u1' and '|b1'. Fortran-ordered arrays are refused.
//   - .safetensors: an 8-byte little-endian header length, a JSON object
//     mapping tensor names to {"dtype", "shape", "data_offsets"} (and an
//     optional "__metadata__" of strings), then the data buffer. dtypes
//     F32, F16, BF16, F8_E4M3 and F64 (and I64, I32, U8, BOOL for
//     positions and masks).
//
// A caller that takes only some types says so ([Options.Accept]; Q, K and
// V take [FloatTypes]): a tensor of another type, an int32 K say, is then
// refused with the types accepted named, before its data is read.
// [Index] reads headers only (types and shapes, for cost estimates and for
// checking a whole dump before reading any of it); [WriteNPY] and
// [WriteSafetensors] write float32 files NumPy and safetensors read.
//
// Every value is converted exactly (float16, bfloat16 and float8_e4m3fn
// values are all float32 values), except float64, which is rounded to
// nearest even; integers beyond ±2^24 are refused. NaN and ±Inf are kept; [Tensor.CheckFinite] reports the
// first one.
//
// Limits. A reader never allocates more than the file holds: header
// lengths are checked against [MaxHeader] and against the file's size
// before they are read, and the data a header claims against both the
// file's size and [Options.MaxElements]. Every error names the file (the
// name the caller gives) and the fault; no input makes a reader panic
// (fuzzed).
//
// Why not github.com/sbinet/npyio (v0.6.0, the reader the issue suggests):
// it reads the NumPy numeric types into Go slices, but has no float16,
// bfloat16 or float8 (the types KV caches come in), no safetensors, and
// no bound on the allocation a header may claim; the two formats are small
// enough that one careful parser of each, fuzzed, is less code than the
// adapters around it.
package tensorfile
