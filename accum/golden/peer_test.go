package golden

import (
	"context"
	"os"

	"github.com/fp8lab/fp8lab/accum"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const mmasimDir = "../../../shared/golden/mmasim"

// TestMMASimFiles verifies every peer-record file of the MMA-Sim folder: each
// record is bit-exact with its named model or a documented deviation.
func TestMMASimFiles(t *testing.T) {
	if _, err := os.Stat(mmasimDir); err != nil {
		t.Skipf("peer folder %s not found (%v)", mmasimDir, err)
	}
	paths, err := filepath.Glob(filepath.Join(mmasimDir, "*.tsv.gz"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no peer files in %s (%v)", mmasimDir, err)
	}
	start := time.Now()
	var total, exact, dev int64
	for _, p := range paths {
		f, err := ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if f.Kind != KindPeer {
			t.Fatalf("%s: read as %v", p, f.Kind)
		}
		rep, err := Verify(context.Background(), f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range rep.Checks {
			total += c.Total
			exact += c.Equal
			dev += c.Deviated
			var ds []string
			for _, d := range c.Deviations {
				ds = append(ds, d.Reason[:min(20, len(d.Reason))]+":"+itoa(d.Count))
			}
			t.Logf("%-40s %-42s %d/%d exact, %d deviations %s", filepath.Base(p), rep.Model, c.Equal, c.Total, c.Deviated, strings.Join(ds, " "))
			// The e2m1-exponent deviations are exactly the records the file
			// lists as e2m1-emin-sensitive.
			var emin int64
			for _, d := range c.Deviations {
				if strings.Contains(d.Reason, "e2m1 subnormal") {
					emin += d.Count
				}
			}
			if emin != int64(len(f.Peer.EminSensitive)) {
				t.Errorf("%s: %d e2m1-exponent deviations, the file lists %d sensitive records", p, emin, len(f.Peer.EminSensitive))
			}
			if !c.OK() {
				for _, m := range c.Mismatches {
					t.Errorf("%s:%d: %s: want %x got %x", p, m.Line, m.Inputs, max(uint64(m.Expected), m.Expected64), max(uint64(m.Got), m.Got64))
				}
			}
		}
	}
	t.Logf("%d files, %d records: %d bit-exact, %d documented deviations (%v)", len(paths), total, exact, dev, time.Since(start))
	if len(paths) != 51 || total != exact+dev {
		t.Errorf("%d files, %d records, %d exact + %d deviations", len(paths), total, exact, dev)
	}
}

func itoa(n int64) string { return fmtInt(n) }

func fmtInt(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// TestAMDNewerMMASim counts, per AMD file, the records whose d the newer
// MMA-Sim's revised CDNA arithmetic (accum.NewerMMASimAMD) would change:
// information for docs/evidence.md, not a check of the models.
func TestAMDNewerMMASim(t *testing.T) {
	if _, err := os.Stat(mmasimDir); err != nil {
		t.Skipf("peer folder %s not found (%v)", mmasimDir, err)
	}
	paths, _ := filepath.Glob(filepath.Join(mmasimDir, "cdna*.tsv.gz"))
	for _, p := range paths {
		f, err := ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name, err := PeerModel(f.Peer)
		if err != nil {
			t.Fatal(err)
		}
		m, err := accum.LookupInstruction(name)
		if err != nil {
			t.Fatal(err)
		}
		differ, n := 0, 0
		for _, r := range f.Peer.Records {
			d, ok := accum.NewerMMASimAMD(m, r.A, r.B, r.C)
			if !ok {
				break
			}
			n++
			if !sameOut(f.Peer.DFormat, r.D, d) {
				differ++
			}
		}
		t.Logf("%-36s %-24s newer MMA-Sim differs on %d of %d records", filepath.Base(p), name, differ, n)
	}
}
