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

// verifyPath verifies what path names when it is not a single capture file:
// Khattak & Mikaitis sets (a folder at or above <GPU>/<format>, or one file
// of a set folder: its d file names one set, an a, b or c file all the
// folder's sets), or another folder (every capture file in it, as
// golden.ReadDir reads them). It prints one report per set or file and
// returns how many it verified and how many differ; handled is false when
// path is a plain file for golden.ReadFile.
func verifyPath(ctx context.Context, path string, opt golden.Options, stdout io.Writer) (n, failed int, deviated int64, handled bool, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, 0, false, nil // golden.ReadFile reports it
	}
	var sets []*golden.KhattakSet
	switch base := filepath.Base(path); {
	case st.IsDir():
		if _, kerr := golden.KhattakFolders(path); kerr != nil {
			files, err := golden.ReadDir(path)
			if err != nil {
				return 0, 0, 0, true, err
			}
			if len(files) == 0 {
				return 0, 0, 0, true, fmt.Errorf("%s: no capture files (*.tsv, *.txt) and no Khattak & Mikaitis set folders (<GPU>/<format>/a_<GPU>_<format>.txt.gz)", path)
			}
			for _, f := range files {
				if err := ctx.Err(); err != nil {
					return n, failed, deviated, true, err
				}
				start := time.Now()
				rep, err := golden.Verify(ctx, f, opt)
				if err != nil {
					return n, failed, deviated, true, err
				}
				printReport(stdout, rep, time.Since(start))
				n++
				if !rep.OK() {
					failed++
				}
				for _, c := range rep.Checks {
					deviated += c.Deviated
				}
			}
			return n, failed, deviated, true, nil
		}
		if sets, err = golden.ReadKhattak(path); err != nil {
			return 0, 0, 0, true, err
		}
	case khattakFile.MatchString(base) && golden.IsKhattakFolder(filepath.Dir(path)):
		all, err := golden.ReadKhattakFolder(filepath.Dir(path))
		if err != nil {
			return 0, 0, 0, true, err
		}
		for _, s := range all {
			if base[0] != 'd' || filepath.Clean(s.DPath) == filepath.Clean(path) {
				sets = append(sets, s)
			}
		}
	default:
		return 0, 0, 0, false, nil
	}
	for _, s := range sets {
		if err := ctx.Err(); err != nil {
			return n, failed, deviated, true, err
		}
		start := time.Now()
		rep, err := golden.VerifyKhattak(ctx, s, opt)
		if err != nil {
			return n, failed, deviated, true, err
		}
		printReport(stdout, rep, time.Since(start))
		n++
		if !rep.OK() {
			failed++
		}
	}
	return n, failed, deviated, true, nil
}
