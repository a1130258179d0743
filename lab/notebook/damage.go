package notebook

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
)

// Errors of a damaged notebook or a full disk.
var (
	// ErrDamaged wraps every error caused by a damaged notebook file: a
	// file that is empty or shorter than its header says, a page bbolt
	// cannot read, a run record that does not decode.
	ErrDamaged = errors.New("damaged")
	// ErrDiskFull wraps a write that failed for want of space (ENOSPC,
	// EDQUOT, EFBIG). Nothing of the failed transaction was kept; what was
	// committed before is intact, and the same write can be retried when
	// space returns.
	ErrDiskFull = errors.New("no space left for the notebook")
	// ErrReadOnly is returned by the writing methods of a store opened
	// with [OpenReadOnly].
	ErrReadOnly = errors.New("notebook opened read-only")
)

// advice is what to do about a damaged notebook file.
func advice(path string) string {
	return fmt.Sprintf("the file is left as it is; see what is damaged with `lab notebook check %s`, "+
		"copy its intact runs into a new notebook with `lab notebook recover %s NEWDIR`, and start the lab with -data NEWDIR",
		dirOf(path), dirOf(path))
}

func damagedFile(path string, err error) error {
	return fmt.Errorf("notebook %s: %w: %v; %s", path, ErrDamaged, err, advice(path))
}

// errPanic marks an error made from a recovered panic or memory fault.
var errPanic = errors.New("bbolt failed on the file")

// guard runs f with memory faults turned into panics (bbolt reads the file
// through mmap: a page past the end of a truncated file raises SIGBUS) and
// every panic (bbolt's assertions on a damaged page) into an error wrapping
// errPanic. Only faults on this goroutine are caught.
func guard(f func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	return f()
}

// writeError wraps err in ErrDiskFull when it is a lack of space.
func writeError(path string, err error) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG} {
		if errors.Is(err, e) {
			return fmt.Errorf("notebook %s: %w: %v", path, ErrDiskFull, err)
		}
	}
	return err
}

// bbolt's file header (go.etcd.io/bbolt/internal/common): a page header
// (id u64, flags u16, count u16, overflow u32) then the meta (magic u32,
// version u32, page size u32, flags u32, root bucket {pgid u64, sequence
// u64}, freelist pgid u64, high-water pgid u64, txid u64, checksum u64:
// FNV-64a of the meta's bytes before it), in the machine's byte order; meta
// pages 0 and 1.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16
	metaSize       = 64
)

type metaPage struct {
	pageSize             uint32
	root, freelist, pgid uint64
	txid                 uint64
}

func readMeta(b []byte) (metaPage, error) {
	if len(b) < pageHeaderSize+metaSize {
		return metaPage{}, errors.New("shorter than a meta page")
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	e := binary.NativeEndian
	h := fnv.New64a()
	h.Write(m[:56])
	switch {
	case e.Uint32(m[0:]) != boltMagic:
		return metaPage{}, errors.New("not a bbolt meta page (bad magic)")
	case e.Uint32(m[4:]) != boltVersion:
		return metaPage{}, fmt.Errorf("bbolt version %d, want %d", e.Uint32(m[4:]), boltVersion)
	case e.Uint64(m[56:]) != h.Sum64():
		return metaPage{}, errors.New("meta checksum mismatch")
	}
	return metaPage{pageSize: e.Uint32(m[8:]), root: e.Uint64(m[16:]), freelist: e.Uint64(m[32:]), pgid: e.Uint64(m[40:]), txid: e.Uint64(m[48:])}, nil
}

// preflight checks, before bbolt maps the file, what bbolt does not: that
// an existing file is not empty and is as long as its newest valid meta page
// says (pages past the end of the file would fault when read). A missing
// file is fine (Open creates it).
func preflight(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("notebook %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("notebook %s: %w", path, err)
	}
	size := st.Size()
	if size == 0 {
		return damagedFile(path, errors.New("the file is empty (0 bytes): truncated, or never written"))
	}
	head := make([]byte, 64<<10)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return fmt.Errorf("notebook %s: %w", path, err)
	}
	head = head[:n]
	best, err := bestMeta(head)
	if err != nil {
		return damagedFile(path, err)
	}
	if best.pageSize < 512 || best.pageSize > 1<<20 {
		return damagedFile(path, fmt.Errorf("page size %d in the header", best.pageSize))
	}
	if !best.fits(size) {
		return damagedFile(path, fmt.Errorf("the file is %d bytes, its header says %d pages of %d bytes (%d bytes): truncated", size, best.pgid, best.pageSize, int64(best.pgid)*int64(best.pageSize)))
	}
	if best.freelist != ^uint64(0) && best.freelist >= best.pgid {
		return damagedFile(path, fmt.Errorf("the header's freelist page %d is past the last page %d", best.freelist, best.pgid-1))
	}
	if problems := checkPages(path, best, 10); len(problems) > 0 {
		return damagedFile(path, errors.New(strings.Join(problems, "; ")))
	}
	return nil
}

// fits reports whether the pages the header claims (its high-water mark)
// lie within a file of size bytes, so that a walk over them ends.
func (m metaPage) fits(size int64) bool {
	return m.pgid <= 1<<40 && size >= int64(m.pgid)*int64(m.pageSize)
}

// headerFits reports whether the file's newest valid header claims no more
// pages than the file holds: bbolt's Tx.Check walks the claimed pages, and
// with a high-water mark of 2^50 it does not end.
func headerFits(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	head := make([]byte, 64<<10)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return false
	}
	m, err := bestMeta(head[:n])
	return err == nil && m.fits(st.Size())
}

// bestMeta returns the newest valid meta page of the file's first bytes.
func bestMeta(head []byte) (metaPage, error) {
	m0, err0 := readMeta(head)
	var best metaPage
	var found bool
	if err0 == nil {
		best, found = m0, true
	}
	// The second meta page sits one page further: try the first page's
	// size, then the usual ones.
	for _, ps := range []uint32{m0.pageSize, 4096, 8192, 16384, 32768, 65536} {
		if ps == 0 || int(ps) >= len(head) {
			continue
		}
		if m1, err := readMeta(head[ps:]); err == nil {
			if !found || m1.txid > best.txid {
				best, found = m1, true
			}
			break
		}
	}
	if !found {
		return metaPage{}, fmt.Errorf("no valid header (meta page 0: %v)", err0)
	}
	return best, nil
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' || path[i] == os.PathSeparator {
			if i == 0 {
				return "/"
			}
			return path[:i]
		}
	}
	return "."
}
