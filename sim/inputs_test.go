package sim

import (
	"context"
	"strings"
	"testing"
)

// inputExperiment records the inputs it is given.
type inputExperiment struct{ inputs []Input }

func (inputExperiment) Name() string    { return "input-test" }
func (inputExperiment) Doc() string     { return "Records inputs." }
func (inputExperiment) Params() []Param { return nil }
func (e inputExperiment) Run(ctx context.Context, run *Run) error {
	run.Note("not an input")
	for _, in := range e.inputs {
		if err := run.Input(in); err != nil {
			return err
		}
	}
	return nil
}

// Run.Input sends a note that ParseInputNote reads back, whatever the
// path holds (spaces, quotes, a newline, non-ASCII); malformed inputs are
// refused and other notes are not inputs.
func TestInputNotes(t *testing.T) {
	hash := strings.Repeat("0123456789abcdef", 4)
	good := []Input{
		{"q", "/data/q.npy", hash},
		{"dump", "/data/my dump/layer0_q.npy", hash},
		{"k", `/data/"quoted"\back`, hash},
		{"v", "/data/new\nline/ü.npy", hash},
	}
	rec := &Recorder{}
	if _, err := Execute(context.Background(), inputExperiment{good}, Values{}, 1, rec); err != nil {
		t.Fatal(err)
	}
	var got []Input
	for _, n := range rec.Notes() {
		if in, ok := ParseInputNote(n); ok {
			got = append(got, in)
		} else if n != "not an input" {
			t.Errorf("note %q not read back", n)
		}
	}
	if len(got) != len(good) {
		t.Fatalf("read back %v from %q", got, rec.Notes())
	}
	for i := range good {
		if got[i] != good[i] {
			t.Errorf("input %d: %+v, want %+v", i, got[i], good[i])
		}
	}
	if n := good[0].Note(); n != "input q sha256:"+hash+" /data/q.npy" {
		t.Errorf("note %q", n)
	}
	for _, c := range []struct {
		in  Input
		msg string
	}{
		{Input{"", "/q.npy", hash}, "one word"},
		{Input{"q k", "/q.npy", hash}, "one word"},
		{Input{"q", "q.npy", hash}, "not absolute"},
		{Input{"q", "/q.npy", strings.ToUpper(hash)}, "lowercase hex"},
		{Input{"q", "/q.npy", hash[:63]}, "lowercase hex"},
	} {
		_, err := Execute(context.Background(), inputExperiment{[]Input{c.in}}, Values{}, 1, nil)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: error %v, want %q", c.in, err, c.msg)
		}
	}
	for _, n := range []string{"input q", "input q sha256:" + hash, "input q md5:" + hash + " /q", "input q sha256:" + hash + ` "/unterminated`, "inputs q sha256:" + hash + " /q"} {
		if in, ok := ParseInputNote(n); ok {
			t.Errorf("ParseInputNote(%q) = %+v", n, in)
		}
	}
}
