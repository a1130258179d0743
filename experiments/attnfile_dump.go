package experiments

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fp8lab/fp8lab/tensorfile"
)

// The dump layout: a model's Q, K and V for every layer, read by
// attention-file's dump role (tools/dump_qkv.py writes it).
//
//   - a folder holding layer{L}_q.npy, layer{L}_k.npy and layer{L}_v.npy for
//     each layer L (decimal, no leading zeros: layer0_q.npy … layer31_v.npy)
//     and optionally positions.npy (each query token's position, shared by
//     every layer); other .npy names are refused, other files (info.json)
//     ignored;
//   - or one .safetensors file holding tensors layer{L}.q, layer{L}.k,
//     layer{L}.v and optionally positions; any other tensor name is refused.
//
// Every layer needs its q, k and v; the layers need not be contiguous (a
// dump of layers 0, 15 and 31 is one). Each tensor is in the run's layout
// (thd by default) as a single q/k/v file would be.
const (
	// MaxDumpLayers bounds the layers of one dump.
	MaxDumpLayers = 1024
	// MaxDumpElements bounds the elements of Q, K and V over all the
	// layers of one dump (2^35: Llama-3.1-70B's 80 layers at 128k tokens
	// hold 2^34.3; every layer is read, run and dropped in turn).
	MaxDumpElements = 1 << 35
	// maxDumpEntries bounds the entries of a dump folder read.
	maxDumpEntries = 4*MaxDumpLayers + 256
)

var (
	dumpNPYName = regexp.MustCompile(`^layer(0|[1-9][0-9]{0,5})_(q|k|v)\.npy$`)
	dumpSTName  = regexp.MustCompile(`^layer(0|[1-9][0-9]{0,5})\.(q|k|v)$`)
)

// attnRef is one tensor to read: its file, its tensor name inside a
// safetensors file, and the name messages give it.
type attnRef struct{ path, tensor, name string }

// attnLayer is one layer's tensors, by role (q, k, v, positions, mask).
type attnLayer struct {
	index int // the dump's layer number; 0 for single files
	refs  map[string]attnRef
}

// attnFileOpen resolves a file name against root (when set), refusing
// names that leave it; a folder is refused unless dir is set (a dump), a
// link always under root.
func attnFileOpen(root, name string, dir bool) (path, tensor string, err error) {
	path = name
	if i := strings.LastIndex(name, ".safetensors:"); i >= 0 {
		path, tensor = name[:i+len(".safetensors")], name[i+len(".safetensors:"):]
	}
	if root != "" {
		if !filepath.IsLocal(path) {
			return "", "", fmt.Errorf("%s: not a name inside the tensors folder", name)
		}
		path = filepath.Join(root, path)
		if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() && !(dir && info.IsDir()) {
			return "", "", fmt.Errorf("%s: not a regular file of the tensors folder (links are refused)", name)
		}
	}
	return path, tensor, nil
}

// layers returns the layers the files name: the dump's, or one layer of
// the single q, k, v (positions, mask) files.
func (e AttentionFile) layers() (layers []attnLayer, dump bool, err error) {
	name := e.Files["dump"]
	if name == "" {
		for _, role := range []string{"q", "k", "v"} {
			if e.Files[role] == "" {
				return nil, false, fmt.Errorf("attention-file needs q, k and v files, or a dump (lab run attention-file -q q.npy -k k.npy -v v.npy, or -dump DIR; in the lab, upload or pick them): no %s file", role)
			}
		}
		l := attnLayer{refs: map[string]attnRef{}}
		for _, role := range []string{"q", "k", "v", "positions", "mask"} {
			if n := e.Files[role]; n != "" {
				path, tensor, err := attnFileOpen(e.Root, n, false)
				if err != nil {
					return nil, false, err
				}
				l.refs[role] = attnRef{path, tensor, n}
			}
		}
		return []attnLayer{l}, false, nil
	}
	for _, role := range []string{"q", "k", "v", "positions", "mask"} {
		if e.Files[role] != "" {
			return nil, true, fmt.Errorf("dump %s holds q, k, v and positions of every layer: give a dump or %s files, not both (a mask is not read with a dump)", name, role)
		}
	}
	path, tensor, err := attnFileOpen(e.Root, name, true)
	if err != nil {
		return nil, true, err
	}
	if tensor != "" {
		return nil, true, fmt.Errorf("dump %s: name the .safetensors file alone (its tensors are layer{L}.q, layer{L}.k, layer{L}.v)", name)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, true, fmt.Errorf("dump: %w", err)
	}
	byLayer := map[int]map[string]attnRef{}
	var positions *attnRef
	add := func(layer, role string, ref attnRef) error {
		l, _ := strconv.Atoi(layer)
		if byLayer[l] == nil {
			if len(byLayer) == MaxDumpLayers {
				return fmt.Errorf("dump %s holds more than %d layers (the limit)", name, MaxDumpLayers)
			}
			byLayer[l] = map[string]attnRef{}
		}
		byLayer[l][role] = ref
		return nil
	}
	var missing func(l int, role string) string
	switch {
	case info.IsDir():
		f, err := os.Open(path)
		if err != nil {
			return nil, true, fmt.Errorf("dump: %w", err)
		}
		entries, err := f.ReadDir(maxDumpEntries + 1)
		f.Close()
		if err != nil && err != io.EOF {
			return nil, true, fmt.Errorf("dump folder %s: %w", name, err)
		}
		if len(entries) > maxDumpEntries {
			return nil, true, fmt.Errorf("dump folder %s holds more than %d entries (the limit)", name, maxDumpEntries)
		}
		for _, en := range entries {
			base := en.Name()
			ext := strings.ToLower(filepath.Ext(base))
			if ext != ".npy" && ext != ".safetensors" {
				continue
			}
			if e.Root != "" && !en.Type().IsRegular() {
				return nil, true, fmt.Errorf("dump folder %s: %s is not a regular file (links are refused)", name, base)
			}
			ref := attnRef{path: filepath.Join(path, base), name: base}
			m := dumpNPYName.FindStringSubmatch(base)
			switch {
			case ext == ".safetensors":
				return nil, true, fmt.Errorf("dump folder %s holds %s: a folder's layers are .npy files; name a .safetensors dump itself (-dump %s)", name, base, filepath.Join(name, base))
			case base == "positions.npy":
				positions = &ref
			case m == nil:
				return nil, true, fmt.Errorf("dump folder %s: %s is not a name of the layout (layer{L}_q.npy, layer{L}_k.npy, layer{L}_v.npy, positions.npy)", name, base)
			default:
				if err := add(m[1], m[2], ref); err != nil {
					return nil, true, err
				}
			}
		}
		missing = func(l int, role string) string { return fmt.Sprintf("layer%d_%s.npy", l, role) }
	case strings.EqualFold(filepath.Ext(path), ".safetensors"):
		infos, err := tensorfile.Index(path, tensorfile.Options{MaxElements: e.maxElements()})
		if err != nil {
			return nil, true, fmt.Errorf("dump: %w", err)
		}
		for _, in := range infos {
			ref := attnRef{path: path, tensor: in.Name, name: name + ":" + in.Name}
			m := dumpSTName.FindStringSubmatch(in.Name)
			switch {
			case in.Name == "positions":
				positions = &ref
			case m == nil:
				return nil, true, fmt.Errorf("dump %s: tensor %q is not a name of the layout (layer{L}.q, layer{L}.k, layer{L}.v, positions)", name, in.Name)
			default:
				if err := add(m[1], m[2], ref); err != nil {
					return nil, true, err
				}
			}
		}
		missing = func(l int, role string) string { return fmt.Sprintf("tensor layer%d.%s", l, role) }
	default:
		return nil, true, fmt.Errorf("dump %s: want a folder of layer{L}_{q,k,v}.npy files or a .safetensors file", name)
	}
	if len(byLayer) == 0 {
		return nil, true, fmt.Errorf("dump %s holds no layer (want layer{L}_q.npy, layer{L}_k.npy, layer{L}_v.npy in a folder, or tensors layer{L}.q, .k, .v in a .safetensors)", name)
	}
	for l, refs := range byLayer {
		for _, role := range []string{"q", "k", "v"} {
			if _, ok := refs[role]; !ok {
				return nil, true, fmt.Errorf("dump %s: layer %d has no %s (%s)", name, l, role, missing(l, role))
			}
		}
		if positions != nil {
			refs["positions"] = *positions
		}
		layers = append(layers, attnLayer{index: l, refs: refs})
	}
	slices.SortFunc(layers, func(a, b attnLayer) int { return a.index - b.index })
	return layers, true, nil
}

// maxElements is the bound on each tensor.
func (e AttentionFile) maxElements() int64 {
	if e.MaxElements > 0 {
		return e.MaxElements
	}
	return tensorfile.DefaultMaxElements
}

// attnDims are the sizes of one layer's run.
type attnDims struct {
	mq, n, qh, kvh, d, dv int
}

// attnFileShape reads a tensor's shape as [tokens][heads][dim] in layout.
func attnFileShape(role, name string, shape []int, layout string) (tokens, heads, dim int, err error) {
	sh := shape
	if len(sh) == 4 && sh[0] == 1 {
		sh = sh[1:]
	}
	switch {
	case len(sh) == 2:
		return sh[0], 1, sh[1], nil
	case len(sh) != 3:
		return 0, 0, 0, fmt.Errorf("%s file %s: shape %v: want [tokens, heads, dim] or [heads, tokens, dim] (2-D: one head; 4-D with a batch of 1)", role, name, shape)
	case layout == "thd":
		return sh[0], sh[1], sh[2], nil
	}
	return sh[1], sh[0], sh[2], nil
}

// attnFileDims checks that the shapes of q, k, v (and positions, mask)
// make one run and returns its sizes; names name the files in messages.
func attnFileDims(layout string, shapes map[string][]int, names map[string]string) (attnDims, error) {
	var dm attnDims
	var qt, kt, vt, kd, vh int
	var err error
	if qt, dm.qh, dm.d, err = attnFileShape("q", names["q"], shapes["q"], layout); err != nil {
		return dm, err
	}
	if kt, dm.kvh, kd, err = attnFileShape("k", names["k"], shapes["k"], layout); err != nil {
		return dm, err
	}
	if vt, vh, dm.dv, err = attnFileShape("v", names["v"], shapes["v"], layout); err != nil {
		return dm, err
	}
	dm.mq, dm.n = qt, kt
	_, hasPos := shapes["positions"]
	switch {
	case kd != dm.d:
		return dm, fmt.Errorf("q file %s has head dim %d, k file %s %d: they must agree", names["q"], dm.d, names["k"], kd)
	case vt != kt || vh != dm.kvh:
		return dm, fmt.Errorf("v file %s has %d tokens × %d heads, k file %s %d × %d: they must agree (layout %s)", names["v"], vt, vh, names["k"], kt, dm.kvh, layout)
	case dm.mq == 0 || dm.qh == 0:
		return dm, fmt.Errorf("q file %s has shape %v: no query token or no head", names["q"], shapes["q"])
	case dm.n == 0 || dm.kvh == 0:
		return dm, fmt.Errorf("k file %s has shape %v: no token or no head", names["k"], shapes["k"])
	case dm.qh%dm.kvh != 0:
		return dm, fmt.Errorf("q file %s has %d heads, not a multiple of k's %d (GQA)", names["q"], dm.qh, dm.kvh)
	case dm.mq > dm.n && !hasPos:
		return dm, fmt.Errorf("q file %s has %d tokens, more than k's %d: give positions", names["q"], dm.mq, dm.n)
	}
	if p, ok := shapes["positions"]; ok && elems(p) != dm.mq {
		return dm, fmt.Errorf("positions file %s holds %d values for %d query tokens", names["positions"], elems(p), dm.mq)
	}
	if m, ok := shapes["mask"]; ok && elems(m) != dm.mq*dm.n {
		return dm, fmt.Errorf("mask file %s has shape %v: want [%d, %d] (query tokens × tokens)", names["mask"], m, dm.mq, dm.n)
	}
	return dm, nil
}

func elems(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// attnRoles are the roles of a layer's tensors, in the order they are
// checked and read.
var attnRoles = []string{"q", "k", "v", "positions", "mask"}

// attnRoleTypes are the element types each role accepts.
func attnRoleTypes(role string) []tensorfile.DType {
	switch role {
	case "positions":
		return []tensorfile.DType{tensorfile.I64, tensorfile.I32, tensorfile.F32, tensorfile.F64, tensorfile.F16, tensorfile.BF16}
	case "mask":
		return nil // any: nonzero where a key takes part
	}
	return tensorfile.FloatTypes
}

// attnIndex caches the headers of the files of a run.
type attnIndex map[string][]tensorfile.Info

// info returns the header of ref, reading its file's once.
func (ix attnIndex) info(ref attnRef, opt tensorfile.Options) (tensorfile.Info, error) {
	infos, ok := ix[ref.path]
	if !ok {
		var err error
		if infos, err = tensorfile.Index(ref.path, opt); err != nil {
			return tensorfile.Info{}, err
		}
		ix[ref.path] = infos
	}
	if ref.tensor == "" {
		if len(infos) != 1 {
			return tensorfile.Info{}, fmt.Errorf("%s: holds %d tensors: name one (file.safetensors:tensor)", filepath.Base(ref.path), len(infos))
		}
		return infos[0], nil
	}
	for _, in := range infos {
		if in.Name == ref.tensor {
			return in, nil
		}
	}
	return tensorfile.Info{}, fmt.Errorf("%s: no tensor %q", filepath.Base(ref.path), ref.tensor)
}

// check reads the headers of every layer before any data: each tensor's
// type and shape, the shapes of a layer making one run, and the totals
// within the limits. It returns each layer's sizes.
func (e AttentionFile) check(layers []attnLayer, layout string, opt tensorfile.Options) ([]attnDims, error) {
	ix := attnIndex{}
	opt.MaxElements = e.maxElements()
	var total int64
	out := make([]attnDims, len(layers))
	for i, l := range layers {
		shapes, names := map[string][]int{}, map[string]string{}
		for _, role := range attnRoles {
			ref, ok := l.refs[role]
			if !ok {
				continue
			}
			in, err := ix.info(ref, opt)
			if err != nil {
				return nil, fmt.Errorf("%s file: %w", role, err)
			}
			what := in.File
			if in.Name != "" {
				what = fmt.Sprintf("%s: tensor %q", in.File, in.Name)
			}
			if err := (tensorfile.Options{Accept: attnRoleTypes(role)}).CheckType(what, in.DType); err != nil {
				return nil, fmt.Errorf("%s file: %w", role, err)
			}
			shapes[role], names[role] = in.Shape, attnInfoName(in)
			if role == "q" || role == "k" || role == "v" {
				total += in.Elements()
			}
		}
		dm, err := attnFileDims(layout, shapes, names)
		if err != nil {
			return nil, err
		}
		out[i] = dm
	}
	limit := int64(MaxDumpElements)
	if e.MaxTotalElements > 0 {
		limit = e.MaxTotalElements
	}
	if e.Files["dump"] != "" && total > limit {
		return nil, fmt.Errorf("dump %s: Q, K and V hold %d elements over %d layers, more than %d (the limit)", e.Files["dump"], total, len(layers), limit)
	}
	return out, nil
}

// attnInfoName names a tensor in messages: its file's base name, and
// :tensor for one of a safetensors file.
func attnInfoName(in tensorfile.Info) string {
	if in.Name != "" {
		return in.File + ":" + in.Name
	}
	return in.File
}

// fileSHA256 returns the SHA-256 of the file at path in lowercase hex,
// or ctx's error once it is cancelled (it looks between reads of
// hashChunk bytes).
func fileSHA256(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := io.CopyN(h, f, hashChunk)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		if n < hashChunk {
			break
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashChunk is the bytes fileSHA256 reads between looks at its context
// (a few milliseconds).
const hashChunk = 8 << 20
