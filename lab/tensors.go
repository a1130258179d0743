package lab

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/fp8lab/fp8lab/experiments" // attention-file, in sim's registry
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/tensorfile"
)

// The tensors folder (Options.TensorsDir): the user's Q/K/V files for the
// attention-file experiment, uploaded through the page in chunks or put
// there by hand. Every name a request gives is a plain file name checked
// against tensorName and opened inside the folder only; links are refused.
//
//	GET    /api/tensors               the files: name, size, tensors (safetensors)
//	POST   /api/tensors/upload        {"name", "offset", "data" (base64), "done"}: append a chunk; done checks and publishes the file
//	DELETE /api/tensors/{name}        remove a file
//	POST   /api/tensors/run           {"files": {"q","k","v","positions","mask"}, "params", "seed", "title", "note"}: start attention-file
//
// The requests pass the same checks as every other endpoint (Host, Origin,
// JSON bodies of at most maxBody bytes).
const (
	maxTensorChunk  = 512 << 10 // decoded bytes per upload request (base64 stays under maxBody)
	maxTensorFile   = 256 << 20 // bytes per file
	maxTensorsTotal = 1 << 30   // bytes in the folder
	maxTensorFiles  = 256
	uploadPrefix    = ".upload-"
	checkPrefix     = ".check-" // a finished upload while the reader checks it
)

// tensorName is what a file in the tensors folder may be called.
var tensorName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.(npy|safetensors)$`)

// tensorsMu serializes changes to the tensors folder.
var tensorsMu sync.Mutex

// tensorWrite writes an upload's chunk (a variable for the tests, which
// fill the disk).
var tensorWrite = func(f *os.File, b []byte) (int, error) { return f.Write(b) }

func (s *Server) tensorRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/tensors", s.handleListTensors)
	m.HandleFunc("POST /api/tensors/upload", s.handleUploadTensor)
	m.HandleFunc("DELETE /api/tensors/{name}", s.handleDeleteTensor)
	m.HandleFunc("POST /api/tensors/run", s.handleRunTensors)
}

// tensorsDir returns the folder, creating it, or an error when the lab has
// none.
func (s *Server) tensorsDir() (string, error) {
	if s.opts.TensorsDir == "" {
		return "", errorf("this lab has no tensors folder")
	}
	if err := os.MkdirAll(s.opts.TensorsDir, 0o755); err != nil {
		return "", err
	}
	return s.opts.TensorsDir, nil
}

// tensorPath checks name and returns its path inside dir.
func tensorPath(dir, name string) (string, error) {
	if !tensorName.MatchString(name) {
		return "", errorf("tensor file name %q: want letters, digits, '.', '_' or '-' (at most 100), ending in .npy or .safetensors", name)
	}
	return filepath.Join(dir, name), nil
}

// tensorEntry describes one file of the folder.
type tensorEntry struct {
	Name    string   `json:"name"`
	Size    int64    `json:"size"`
	Tensors []string `json:"tensors,omitempty"` // safetensors: the tensor names
	Error   string   `json:"error,omitempty"`   // the file cannot be read
	mod     time.Time
}

// folderUsage returns the published files (name and size, no header read)
// and the folder's total size (uploads and checks in progress included).
func folderUsage(dir string) ([]tensorEntry, int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	var out []tensorEntry
	var total int64
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		total += info.Size()
		if tensorName.MatchString(e.Name()) {
			out = append(out, tensorEntry{Name: e.Name(), Size: info.Size(), mod: info.ModTime()})
		}
	}
	return out, total, nil
}

// listTensors returns the published files, with the tensor names of each
// .safetensors, and the folder's total size. A header is read once per
// version of its file (name, size, modification time: headerCache).
func listTensors(dir string) ([]tensorEntry, int64, error) {
	out, total, err := folderUsage(dir)
	if err != nil {
		return nil, 0, err
	}
	for i, te := range out {
		if strings.HasSuffix(te.Name, ".safetensors") {
			out[i].Tensors, out[i].Error = safetensorsNamesCached(filepath.Join(dir, te.Name), te)
		}
	}
	return out, total, nil
}

// headerCache holds the tensor names of the safetensors files listed, by
// path, with the size and modification time they were read at; at most
// maxTensorFiles entries (the folder holds no more).
var headerCache = struct {
	sync.Mutex
	m map[string]cachedHeader
}{m: map[string]cachedHeader{}}

type cachedHeader struct {
	size  int64
	mod   time.Time
	names []string
	err   string
}

func safetensorsNamesCached(path string, te tensorEntry) ([]string, string) {
	headerCache.Lock()
	c, ok := headerCache.m[path]
	headerCache.Unlock()
	if ok && c.size == te.Size && c.mod.Equal(te.mod) {
		return c.names, c.err
	}
	c = cachedHeader{size: te.Size, mod: te.mod}
	if f, err := os.Open(path); err == nil {
		names, err := tensorfile.SafetensorsNames(te.Name, f, te.Size)
		f.Close()
		c.names = names
		if err != nil {
			c.err = err.Error()
		}
	} else {
		c.err = err.Error()
	}
	headerCache.Lock()
	if len(headerCache.m) >= 4*maxTensorFiles {
		clear(headerCache.m)
	}
	headerCache.m[path] = c
	headerCache.Unlock()
	return c.names, c.err
}

// tensorsBody decodes the request's JSON body into req and returns the
// tensors folder, or answers the error (400 for the body, 404 without a
// folder) and false.
func (s *Server) tensorsBody(w http.ResponseWriter, r *http.Request, req any) (string, bool) {
	if status, err := decodeBody(r, req); err != nil {
		writeError(w, status, err)
		return "", false
	}
	dir, err := s.tensorsDir()
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return "", false
	}
	return dir, true
}

func (s *Server) handleListTensors(w http.ResponseWriter, r *http.Request) {
	dir, err := s.tensorsDir()
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	list, total, err := listTensors(dir)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if list == nil {
		list = []tensorEntry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"files": list, "bytes": total,
		"limits": map[string]int64{"chunk": maxTensorChunk, "file": maxTensorFile, "total": maxTensorsTotal, "files": maxTensorFiles}})
}

type uploadRequest struct {
	Name   string `json:"name"`
	Offset int64  `json:"offset"`
	Data   string `json:"data"` // base64 (standard encoding)
	Done   bool   `json:"done"`
}

// handleUploadTensor appends one chunk to the upload of a file (offset must
// be its current size: a chunk sent twice is refused, not duplicated) and,
// with done, checks the whole file with the reader and publishes it under
// its name, replacing an older file of that name. A file the reader
// refuses is deleted and the reader's error answered.
func (s *Server) handleUploadTensor(w http.ResponseWriter, r *http.Request) {
	var req uploadRequest
	dir, ok := s.tensorsBody(w, r, &req)
	if !ok {
		return
	}
	final, err := tensorPath(dir, req.Name)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	data, err := base64.StdEncoding.DecodeString(req.Data)
	if err != nil {
		writeError(w, http.StatusBadRequest, errorf("data: not base64: %v", err))
		return
	}
	if len(data) > maxTensorChunk {
		writeError(w, http.StatusRequestEntityTooLarge, errorf("chunk of %d bytes; the limit is %d", len(data), maxTensorChunk))
		return
	}
	tensorsMu.Lock()
	defer tensorsMu.Unlock()
	part := filepath.Join(dir, uploadPrefix+req.Name)
	var have int64
	if info, err := os.Lstat(part); err == nil {
		if !info.Mode().IsRegular() {
			writeError(w, http.StatusConflict, errorf("%s: the upload is not a regular file", req.Name))
			return
		}
		have = info.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if req.Offset != have {
		writeError(w, http.StatusConflict, errorf("%s: chunk at offset %d, but the upload holds %d bytes (send offset %d; offset 0 restarts)", req.Name, req.Offset, have, have))
		if req.Offset == 0 {
			os.Remove(part)
		}
		return
	}
	list, total, err := folderUsage(dir)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	switch {
	case have+int64(len(data)) > maxTensorFile:
		writeError(w, http.StatusRequestEntityTooLarge, errorf("%s: %d bytes; a tensor file may hold at most %d", req.Name, have+int64(len(data)), maxTensorFile))
		return
	case total+int64(len(data)) > maxTensorsTotal:
		writeError(w, http.StatusInsufficientStorage, errorf("the tensors folder would hold %d bytes; the limit is %d (delete files first)", total+int64(len(data)), maxTensorsTotal))
		return
	case have == 0 && len(list) >= maxTensorFiles:
		writeError(w, http.StatusInsufficientStorage, errorf("the tensors folder holds %d files; the limit is %d", len(list), maxTensorFiles))
		return
	}
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	_, werr := tensorWrite(f, data)
	if werr != nil {
		// Back to what was acknowledged: the chunk can be sent again.
		if terr := f.Truncate(have); terr != nil && have == 0 {
			os.Remove(part)
		}
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		status := http.StatusInternalServerError
		if errors.Is(werr, syscall.ENOSPC) || errors.Is(werr, syscall.EDQUOT) {
			status = http.StatusInsufficientStorage
		}
		writeError(w, status, errorf("%s: the chunk at offset %d was not written (the upload still holds the %d bytes before it; send it again): %v", req.Name, have, have, werr))
		return
	}
	size := have + int64(len(data))
	if !req.Done {
		writeJSON(w, http.StatusOK, map[string]any{"name": req.Name, "size": size, "done": false})
		return
	}
	// The check reads the whole file: outside the folder's lock, under a
	// name of its own, and given up when the client leaves.
	checking := filepath.Join(dir, checkPrefix+req.Name)
	if err := os.Rename(part, checking); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	tensorsMu.Unlock()
	cerr := checkTensorFile(r.Context(), checking, req.Name)
	tensorsMu.Lock()
	if cerr != nil {
		os.Remove(checking)
		writeError(w, http.StatusBadRequest, cerr)
		return
	}
	if err := os.Rename(checking, final); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"name": req.Name, "size": size, "done": true})
}

// checkTensorFile reads every tensor of the file at path (named name in
// messages) with the reader's limits, each data range once; it stops when
// ctx is done.
func checkTensorFile(ctx context.Context, path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	opt := tensorfile.Options{Void2: tensorfile.BF16, Void1: tensorfile.F8E4M3}
	if strings.HasSuffix(name, ".npy") {
		_, err := tensorfile.ReadNPY(name, f, info.Size(), opt)
		return err
	}
	_, err = tensorfile.CheckSafetensors(ctx, name, f, info.Size(), opt)
	return err
}

func (s *Server) handleDeleteTensor(w http.ResponseWriter, r *http.Request) {
	dir, err := s.tensorsDir()
	if err != nil {
		writeError(w, http.StatusNotFound, err)
		return
	}
	name := r.PathValue("name")
	p, err := tensorPath(dir, name)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	tensorsMu.Lock()
	defer tensorsMu.Unlock()
	os.Remove(filepath.Join(dir, uploadPrefix+name))
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			writeError(w, http.StatusNotFound, errorf("no tensor file %q", name))
			return
		}
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type tensorRunRequest struct {
	Files  map[string]string `json:"files"` // role → name in the folder (name or name.safetensors:tensor)
	Params json.RawMessage   `json:"params"`
	Seed   json.RawMessage   `json:"seed"`
	Title  string            `json:"title"`
	Note   string            `json:"note"`
}

// handleRunTensors starts attention-file on files of the folder. The note
// records which files (a rerun from the notebook has no files and fails
// saying so).
func (s *Server) handleRunTensors(w http.ResponseWriter, r *http.Request) {
	var req tensorRunRequest
	dir, ok := s.tensorsBody(w, r, &req)
	if !ok {
		return
	}
	roles := make([]string, 0, len(req.Files))
	for role, name := range req.Files {
		file, _, _ := strings.Cut(name, ".safetensors:")
		if strings.Contains(name, ".safetensors:") {
			file += ".safetensors"
		}
		p, err := tensorPath(dir, file)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%s: %w", role, err))
			return
		}
		if info, err := os.Lstat(p); err != nil || !info.Mode().IsRegular() {
			writeError(w, http.StatusBadRequest, errorf("%s: no tensor file %q in the tensors folder", role, file))
			return
		}
		roles = append(roles, role+"="+name)
	}
	slices.Sort(roles)
	seed, err := parseSeed(req.Seed)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	note := strings.TrimSpace("tensors: " + strings.Join(roles, ", ") + "\n" + req.Note)
	if err := checkAnnotation(req.Title, note); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	exp, err := tensorsExperiment()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	exp, err = exp.(sim.FileExperiment).WithRoot(dir, maxTensorFile/2).WithFiles(req.Files)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	values, err := sim.ValuesFromJSON(exp.Params(), req.Params)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	run, err := s.submit(exp, values, seed, req.Title, note, "")
	s.answerCreated(w, run, err)
}

// tensorsName is the experiment the tensors endpoint runs on the files of
// the tensors folder.
const tensorsName = "attention-file"

// tensorsExperiment returns tensorsName from sim's registry, which must be
// a sim.FileExperiment.
func tensorsExperiment() (sim.Experiment, error) {
	e, err := sim.Lookup(tensorsName)
	if err != nil {
		return nil, err
	}
	if _, ok := e.(sim.FileExperiment); !ok {
		return nil, fmt.Errorf("lab: experiment %s reads no files", tensorsName)
	}
	return e, nil
}
