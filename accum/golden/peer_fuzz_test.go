package golden

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

var ioEOF = io.EOF

const validPeer = PeerMagic + `
# source: MMA-Sim test
# instruction: tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X (idesc: M=128 N=8 K=64, A=E2M1 B=E2M1 D=f32, scales ue4m3, block 16)
# arch: sm_100a
# a-format: e2m1
# b-format: e2m1
# c-format: f32
# d-format: f32
# k: 4
# scale-format: ue4m3
# scale-block: 2
# nonfinite: 0
# e2m1-emin-sensitive: 2 records 1-2
# a free note
01020304	0f0e0d0c	3840	3838	3f800000	3f800000
00000000	00000000	0000	0000	80000000	00000000
`

const validPeerTF32 = PeerMagic + `
# source: MMA-Sim test
# instruction: wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32
# arch: sm_90
# a-format: tf32
# b-format: tf32
# c-format: f32
# d-format: f32
# k: 2
# nonfinite: 1 record 1
3f800000ffffe000	3f80000040000000	7f800000	7f800000
`

const validPeerF64 = PeerMagic + `
# source: MMA-Sim test
# instruction: v_mfma_f64_16x16x4_f64
# arch: CDNA3
# a-format: f64
# b-format: f64
# c-format: f64
# d-format: f64
# k: 1
# nonfinite: 0
3ff0000000000000	3ff0000000000000	3ff0000000000000	4000000000000000
`

func TestParsePeerValid(t *testing.T) {
	f, err := ParsePeer(strings.NewReader(validPeer), "ok")
	if err != nil {
		t.Fatal(err)
	}
	if f.K != 4 || f.ScaleBlock != 2 || len(f.Records) != 2 || len(f.Records[0].SA) != 2 || f.Records[0].A[3] != 4 ||
		f.Records[0].SB[1] != 0x38 || f.Records[1].C != 0x80000000 || !f.HasEminSensitive || len(f.EminSensitive) != 2 ||
		len(f.Notes) != 1 || f.Records[1].Line != 16 {
		t.Fatalf("parsed %+v", f)
	}
	for _, s := range []string{validPeerTF32, validPeerF64} {
		g, err := ParsePeer(strings.NewReader(s), "ok")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Verify(context.Background(), &File{Kind: KindPeer, Peer: g}, Options{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParsePeerErrors: every malformed input is an error naming the file
// and the line at fault.
func TestParsePeerErrors(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(validPeer, "\n"), "\n")
	edit := func(i int, s string) string {
		l := append([]string(nil), lines...)
		l[i] = s
		return strings.Join(l, "\n") + "\n"
	}
	drop := func(i int) string {
		l := append(append([]string(nil), lines[:i]...), lines[i+1:]...)
		return strings.Join(l, "\n") + "\n"
	}
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"empty", "", 1, "empty input"},
		{"magic", "# fp8lab peer records v2\n", 1, "first line"},
		{"dup header", edit(13, "# k: 4"), 14, "duplicate # k:"},
		{"unknown format", edit(4, "# a-format: e9m9"), 5, "unknown # a-format"},
		{"bad k", edit(8, "# k: 0"), 9, "bad # k:"},
		{"huge k", edit(8, "# k: 100000"), 9, "bad # k:"},
		{"missing header", drop(3), 14, "missing # arch:"},
		{"block", edit(10, "# scale-block: 3"), 11, "does not divide"},
		{"list count", edit(12, "# e2m1-emin-sensitive: 3 records 1-2"), 13, "count says 3"},
		{"list order", edit(12, "# e2m1-emin-sensitive: 2 records 2,1"), 13, "not increasing"},
		{"list past end", edit(12, "# e2m1-emin-sensitive: 2 records 1,9"), 13, "the file has 2 records"},
		{"fields", edit(14, "01020304\t0f0e0d0c\t3840\t3838\t3f800000"), 15, "5 tab-separated fields, want 6"},
		{"digits", edit(14, "010203\t0f0e0d0c\t3840\t3838\t3f800000\t3f800000"), 15, "field a has 6 hex digits"},
		{"hex", edit(14, "0102030x\t0f0e0d0c\t3840\t3838\t3f800000\t3f800000"), 15, "bad hex"},
		{"e2m1 range", edit(14, "01020310\t0f0e0d0c\t3840\t3838\t3f800000\t3f800000"), 15, "not a e2m1 code"},
		{"ue4m3 range", edit(14, "01020304\t0f0e0d0c\t3880\t3838\t3f800000\t3f800000"), 15, "not a ue4m3 code"},
		{"empty line", edit(14, ""), 15, "empty line"},
		{"header after data", drop(12) + "# e2m1-emin-sensitive: 0\n", 16, "after the first record"},
		{"no records", strings.Join(lines[:14], "\n") + "\n", 14, "no records"},
		{"cd", edit(6, "# c-format: f16"), 8, "differs from # c-format"},
	} {
		_, err := ParsePeer(strings.NewReader(tc.in), "bad.tsv")
		pe, ok := err.(*ParseError)
		if !ok || pe.Line != tc.line || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "bad.tsv:") {
			t.Errorf("%s: error %v, want bad.tsv:%d: ...%s...", tc.name, err, tc.line, tc.msg)
		}
	}
}

// TestParsePeerLimit: a file with more codes than MaxPeerCodes is refused
// with the limit named, after reading at most that many.
func TestParsePeerLimit(t *testing.T) {
	hdr := strings.Replace(strings.SplitAfter(validPeer, "# a free note\n")[0], "# k: 4", "# k: 256", 1)
	hdr = strings.Replace(hdr, "# scale-block: 2", "# scale-block: 256", 1)
	hdr = strings.Replace(hdr, "# e2m1-emin-sensitive: 2 records 1-2\n", "", 1)
	line := strings.Repeat("01", 256) + "\t" + strings.Repeat("02", 256) + "\t38\t38\t3f800000\t3f800000\n"
	n := MaxPeerCodes/512 + 1
	r := &repeatReader{head: hdr, line: line, n: n}
	_, err := ParsePeer(r, "big")
	if err == nil || !strings.Contains(err.Error(), "MaxPeerCodes") {
		t.Fatalf("error %v, want the MaxPeerCodes limit", err)
	}
}

type repeatReader struct {
	head, line string
	n          int
	buf        []byte
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		switch {
		case r.head != "":
			r.buf, r.head = []byte(r.head), ""
		case r.n > 0:
			r.buf = []byte(r.line)
			r.n--
		default:
			return 0, ioEOF
		}
	}
	k := copy(p, r.buf)
	r.buf = r.buf[k:]
	return k, nil
}

func FuzzParsePeer(f *testing.F) {
	f.Add([]byte(validPeer))
	f.Add([]byte(validPeerTF32))
	f.Add([]byte(validPeerF64))
	f.Add([]byte(strings.ReplaceAll(validPeer, "ue4m3", "ue8m0")))
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ParsePeer(bytes.NewReader(data), "fuzz")
		if err != nil {
			checkParseError(t, err)
			return
		}
		for _, r := range pf.Records {
			if len(r.A) != pf.K || len(r.B) != pf.K {
				t.Fatalf("record of %d/%d codes, k = %d", len(r.A), len(r.B), pf.K)
			}
			if pf.Scaled() && (len(r.SA) != pf.K/pf.ScaleBlock || len(r.SB) != len(r.SA)) {
				t.Fatalf("record with %d scales, k/block = %d", len(r.SA), pf.K/pf.ScaleBlock)
			}
		}
		// Whatever codes it holds, verifying never panics: an error (no
		// model) or a report.
		if _, err := PeerModel(pf); err == nil {
			Verify(context.Background(), &File{Kind: KindPeer, Peer: pf, Path: "fuzz"}, Options{})
		}
	})
}
