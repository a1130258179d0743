// Package golden reads and writes the ground-truth capture files of the
// fp8lab project: real tensor-core and conversion outputs captured on a GPU
// (see shared/golden/h200/README.md for the capture itself).
//
// There are four kinds of files, told apart by their first line:
//
//   - record files ("# fp8lab golden records v1", usually *.tsv): one
//     tensor-core step per data line, four TAB-separated hex fields a, b, c, d,
//     read by [ParseRecords] into a [RecordFile];
//   - long-contraction files ("# fp8lab golden long contraction v1",
//     long_e4m3_K*.txt): eight rows of A, eight columns of B and the outputs
//     of several real kernels for their dot products, read by [ParseLong] into
//     a [LongFile];
//   - the conversion file ("# fp8lab golden fp8 conversions v1",
//     fp8_convert.txt): float32 → FP8 conversion tables as sorted ranges, and
//     FP8 → float32 decode tables, read by [ParseConvert] into a
//     [ConvertFile];
//   - peer-record files ("# fp8lab peer records v1", *.tsv.gz): outputs of a
//     peer model's simulator (MMA-Sim), one instruction per data line with
//     per-format hex codes of a, b, optional block scales, c and d, read by
//     [ParsePeer] (streamed, bounded by [MaxPeerCodes]) into a [PeerFile];
//     [Verify] names the instruction model ([PeerModel]) and counts records
//     that differ for a documented reason apart ([Deviation]).
//
// [ReadFile] opens a file and picks the parser from its first line;
// [ReadDir] reads every *.tsv and *.txt file of a folder.
//
// The readers are strict: every line that does not fit the format (a wrong
// field count, bad hex, a wrong number of codes, a missing or duplicate
// header, data before the headers, an unknown kind of line, an empty line)
// is an error of type [*ParseError], whose message has the form
// "name:LINE: what is wrong". Lines starting with '#' that are not one of the
// machine-readable headers are kept as free-text notes.
//
// Khattak & Mikaitis' published real-GPU outputs (shared/golden/khattak:
// gzipped hex and bit-string text, one dot product per line) are read as
// published by [ReadKhattak] into [KhattakSet]s, and [VerifyKhattak] runs
// each set through the model of the run that produced it ([KhattakRuns]).
//
// [WriteRecords], [WriteLong] and [WriteConvert] write the same formats back;
// a parsed file written and parsed again gives the same contents (only the
// line numbers and the position of notes among the other lines may change).
package golden
