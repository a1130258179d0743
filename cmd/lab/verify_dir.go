package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/fp8lab/fp8lab/accum/golden"
)

// khattakFile matches the file names of a Khattak & Mikaitis set folder.
var khattakFile = regexp.MustCompile(`^([abcd])_[A-Za-z0-9]+_[A-Za-z0-9]+\.txt(\.gz)?$`)

// verifyTally counts the reports of one `lab verify`: files or sets
// verified, how many differ, and the peer records that differ for a
// documented reason.
type verifyTally struct {
	n, failed int
	deviated  int64
}

// record prints rep and counts it.
func (t *verifyTally) record(w io.Writer, rep *golden.Report, took time.Duration) {
	printReport(w, rep, took)
	t.n++
	if !rep.OK() {
		t.failed++
	}
	for _, c := range rep.Checks {
		t.deviated += c.Deviated
	}
}

// verifyFile verifies one capture file and records its report.
func (t *verifyTally) verifyFile(ctx context.Context, f *golden.File, opt golden.Options, w io.Writer) error {
	start := time.Now()
	rep, err := golden.Verify(ctx, f, opt)
	if err != nil {
		return err
	}
	t.record(w, rep, time.Since(start))
	return nil
}

// verifyPath verifies what path names when it is not a single capture file:
// Khattak & Mikaitis sets (a folder at or above <GPU>/<format>, or one file
// of a set folder: its d file names one set, an a, b or c file all the
// folder's sets), or another folder (every capture file in it, as
// golden.ReadDir reads them). It prints one report per set or file into
// the tally; handled is false when path is a plain file for
// golden.ReadFile.
func verifyPath(ctx context.Context, path string, opt golden.Options, stdout io.Writer, t *verifyTally) (handled bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, nil // golden.ReadFile reports it
	}
	var sets []*golden.KhattakSet
	switch base := filepath.Base(path); {
	case st.IsDir():
		if _, kerr := golden.KhattakFolders(path); kerr != nil {
			// One file read and verified at a time: a folder of large
			// captures is never all in memory.
			files, err := golden.DirFiles(path)
			if err != nil {
				return true, err
			}
			if len(files) == 0 {
				return true, fmt.Errorf("%s: no capture files (*.tsv, *.txt) and no Khattak & Mikaitis set folders (<GPU>/<format>/a_<GPU>_<format>.txt.gz)", path)
			}
			for _, name := range files {
				if err := ctx.Err(); err != nil {
					return true, err
				}
				f, err := golden.ReadFile(name)
				if err != nil {
					return true, err
				}
				if err := t.verifyFile(ctx, f, opt, stdout); err != nil {
					return true, err
				}
			}
			return true, nil
		}
		if sets, err = golden.ReadKhattak(path); err != nil {
			return true, err
		}
	case khattakFile.MatchString(base) && golden.IsKhattakFolder(filepath.Dir(path)):
		all, err := golden.ReadKhattakFolder(filepath.Dir(path))
		if err != nil {
			return true, err
		}
		for _, s := range all {
			if base[0] != 'd' || filepath.Clean(s.DPath) == filepath.Clean(path) {
				sets = append(sets, s)
			}
		}
	default:
		return false, nil
	}
	for _, s := range sets {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		start := time.Now()
		rep, err := golden.VerifyKhattak(ctx, s, opt)
		if err != nil {
			return true, err
		}
		t.record(stdout, rep, time.Since(start))
	}
	return true, nil
}
