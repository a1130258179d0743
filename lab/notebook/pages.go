package notebook

import (
	"encoding/binary"
	"fmt"
	"os"
)

// bbolt's page layout (go.etcd.io/bbolt/internal/common), read here from the
// file itself so that a damaged structure is found before bbolt follows it
// (bbolt trusts the file: a garbage overflow count makes Tx.Check loop for
// billions of steps, a cycle in the tree makes a cursor descend forever).
const (
	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	elemSize     = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags u32, pos u32, ksize u32, vsize u32
	bucketFlag   = 0x01
	inBucketSize = 16 // root pgid u64, sequence u64
	noFreelist   = ^uint64(0)
	maxDepth     = 64
)

// pageReader reads pages of a bbolt file and checks its tree.
type pageReader struct {
	f        *os.File
	pageSize int64
	pgid     uint64          // high-water mark: pages 0 … pgid-1 exist
	seen     map[uint64]bool // pages of the tree, overflow included
	problems []string
	max      int
}

func (r *pageReader) report(format string, args ...any) bool {
	if len(r.problems) < r.max {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
	return len(r.problems) < r.max
}

// page reads page id with its overflow pages, checking its header.
func (r *pageReader) page(id uint64, what string) ([]byte, bool) {
	if id < 2 || id >= r.pgid {
		r.report("%s: page %d is outside the file's pages 2…%d", what, id, r.pgid-1)
		return nil, false
	}
	head := make([]byte, 16)
	if _, err := r.f.ReadAt(head, int64(id)*r.pageSize); err != nil {
		r.report("%s: page %d: %v", what, id, err)
		return nil, false
	}
	e := binary.NativeEndian
	if got := e.Uint64(head); got != id {
		r.report("%s: page %d identifies itself as page %d", what, id, got)
		return nil, false
	}
	overflow := uint64(e.Uint32(head[12:]))
	if id+overflow >= r.pgid {
		r.report("%s: page %d claims %d overflow pages, past the file's %d pages", what, id, overflow, r.pgid)
		return nil, false
	}
	b := make([]byte, int64(overflow+1)*r.pageSize)
	if _, err := r.f.ReadAt(b, int64(id)*r.pageSize); err != nil {
		r.report("%s: page %d: %v", what, id, err)
		return nil, false
	}
	return b, true
}

// claim marks the pages id … id+overflow as the tree's; a page met twice
// is a cycle or a page shared by two parents.
func (r *pageReader) claim(id uint64, b []byte, what string) bool {
	n := uint64(len(b)) / uint64(r.pageSize)
	for i := range n {
		if r.seen[id+i] {
			r.report("%s: page %d is referenced twice (a cycle or a shared page)", what, id+i)
			return false
		}
	}
	for i := range n {
		r.seen[id+i] = true
	}
	return true
}

// tree checks the B+tree rooted at page id, and the buckets nested in it.
func (r *pageReader) tree(id uint64, depth int, what string) {
	if depth > maxDepth {
		r.report("%s: the tree is deeper than %d levels", what, maxDepth)
		return
	}
	b, ok := r.page(id, what)
	if !ok || !r.claim(id, b, what) {
		return
	}
	r.node(b, id, depth, what)
}

// node checks one branch or leaf page (b holds it, overflow included; id
// is 0 for an inline bucket's page).
func (r *pageReader) node(b []byte, id uint64, depth int, what string) {
	e := binary.NativeEndian
	flags, count := e.Uint16(b[8:]), int(e.Uint16(b[10:]))
	where := fmt.Sprintf("%s: page %d", what, id)
	if id == 0 {
		where = what + ": inline bucket"
	}
	if flags != flagBranch && flags != flagLeaf {
		r.report("%s: type %#x, want a branch or a leaf", where, flags)
		return
	}
	if 16+count*elemSize > len(b) {
		r.report("%s: %d elements do not fit", where, count)
		return
	}
	if flags == flagBranch && count == 0 {
		r.report("%s: empty branch", where)
		return
	}
	for i := range count {
		el := b[16+i*elemSize:]
		base := 16 + i*elemSize
		if flags == flagBranch {
			pos, ksize, child := int(e.Uint32(el)), int(e.Uint32(el[4:])), e.Uint64(el[8:])
			if base+pos+ksize > len(b) {
				r.report("%s: key %d lies outside the page", where, i)
				return
			}
			if id == 0 {
				r.report("%s: an inline bucket holds a branch", where)
				return
			}
			r.tree(child, depth+1, what)
			continue
		}
		fl, pos, ksize, vsize := e.Uint32(el), int(e.Uint32(el[4:])), int(e.Uint32(el[8:])), int(e.Uint32(el[12:]))
		end := base + pos + ksize + vsize
		if pos < 0 || ksize < 0 || vsize < 0 || end > len(b) || end < base {
			r.report("%s: element %d lies outside the page", where, i)
			return
		}
		if fl&bucketFlag == 0 {
			continue
		}
		v := b[base+pos+ksize : end]
		if len(v) < inBucketSize {
			r.report("%s: element %d: bucket header of %d bytes", where, i, len(v))
			return
		}
		if root := e.Uint64(v); root != 0 {
			r.tree(root, depth+1, what)
		} else if len(v) < inBucketSize+16 {
			r.report("%s: element %d: inline bucket of %d bytes", where, i, len(v))
		} else if depth < maxDepth {
			r.node(v[inBucketSize:], 0, depth+1, what)
		} else {
			r.report("%s: buckets nested deeper than %d levels", where, maxDepth)
		}
	}
}

// freelist checks the free page list: ids of existing pages, none twice,
// none in the tree.
func (r *pageReader) freelist(id uint64) {
	b, ok := r.page(id, "freelist")
	if !ok {
		return
	}
	e := binary.NativeEndian
	if flags := e.Uint16(b[8:]); flags != flagFreelist {
		r.report("freelist: page %d has type %#x", id, flags)
		return
	}
	ids := b[16:]
	count := uint64(e.Uint16(b[10:]))
	if count == 0xFFFF {
		count = e.Uint64(ids)
		ids = ids[8:]
	}
	if count > uint64(len(ids))/8 {
		r.report("freelist: page %d lists %d pages, room for %d", id, count, len(ids)/8)
		return
	}
	free := make(map[uint64]bool, count)
	for i := range count {
		p := e.Uint64(ids[8*i:])
		switch {
		case p < 2 || p >= r.pgid:
			if !r.report("freelist: free page %d is outside the file's pages 2…%d", p, r.pgid-1) {
				return
			}
		case free[p]:
			if !r.report("freelist: page %d is listed twice", p) {
				return
			}
		case r.seen[p]:
			if !r.report("freelist: page %d is free and in use", p) {
				return
			}
		}
		free[p] = true
	}
	for i := range uint64(len(b)) / uint64(r.pageSize) {
		if r.seen[id+i] || free[id+i] {
			r.report("freelist: its own page %d is in use or free", id+i)
			return
		}
	}
}

// checkPages reads the tree and the freelist of the meta page m from the
// file and returns up to max problems.
func checkPages(path string, m metaPage, max int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	r := &pageReader{f: f, pageSize: int64(m.pageSize), pgid: m.pgid, seen: map[uint64]bool{}, max: max}
	r.tree(m.root, 0, "tree")
	if m.freelist != noFreelist {
		r.freelist(m.freelist)
	}
	return r.problems
}
