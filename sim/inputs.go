package sim

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Input is one input file a run read, recorded so that the run can be
// checked and repeated on the same bytes: what the run read it as, where
// it was and its SHA-256.
type Input struct {
	// Role is what the run read the file as: for an experiment that reads
	// files, the name of its `lab run` flag ("q", "dump"). One word.
	Role string
	// Path is the file's absolute path.
	Path string
	// SHA256 is the SHA-256 of the file's bytes, 64 lowercase hex digits.
	SHA256 string
}

// inputNotePrefix starts every note made by [Run.Input].
const inputNotePrefix = "input "

// Note returns the note [Run.Input] sends for in:
//
//	input ROLE sha256:HEX PATH
//
// with PATH quoted as a Go string (strconv.Quote) when it holds a space, a
// quote, a backslash or a character that is not printable, so that
// [ParseInputNote] reads every path back.
func (in Input) Note() string {
	p := in.Path
	if strings.ContainsAny(p, " \t\"\\") || strconv.Quote(p) != `"`+p+`"` {
		p = strconv.Quote(p)
	}
	return inputNotePrefix + in.Role + " sha256:" + in.SHA256 + " " + p
}

// check returns an error naming what is wrong with in.
func (in Input) check() error {
	switch {
	case in.Role == "" || strings.ContainsAny(in.Role, " \t\r\n"):
		return fmt.Errorf("sim: input role %q: want one word", in.Role)
	case !filepath.IsAbs(in.Path):
		return fmt.Errorf("sim: input %s: path %q is not absolute", in.Role, in.Path)
	case len(in.SHA256) != 64 || strings.Trim(in.SHA256, "0123456789abcdef") != "":
		return fmt.Errorf("sim: input %s: %q is not a SHA-256 in lowercase hex", in.Role, in.SHA256)
	}
	return nil
}

// Input records in as an input of the run: the sink receives it as a note
// ([Input.Note]), which every sink keeps with the run's other notes (the
// lab's notebook, JSON lines, the table), so a record names the bytes it
// was computed from; [ParseInputNote] reads it back. It returns an error,
// sending nothing, when the role is not one word, the path is not
// absolute or the hash is not 64 lowercase hex digits.
func (r *Run) Input(in Input) error {
	if err := in.check(); err != nil {
		return err
	}
	r.sink.Note(in.Note())
	return nil
}

// ParseInputNote reads a note written by [Run.Input], reporting false for
// any other note.
func ParseInputNote(text string) (Input, bool) {
	rest, ok := strings.CutPrefix(text, inputNotePrefix)
	if !ok {
		return Input{}, false
	}
	role, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return Input{}, false
	}
	hash, path, ok := strings.Cut(rest, " ")
	if !ok {
		return Input{}, false
	}
	hash, ok = strings.CutPrefix(hash, "sha256:")
	if !ok {
		return Input{}, false
	}
	if strings.HasPrefix(path, `"`) {
		p, err := strconv.Unquote(path)
		if err != nil {
			return Input{}, false
		}
		path = p
	}
	in := Input{Role: role, Path: path, SHA256: hash}
	return in, in.check() == nil
}
