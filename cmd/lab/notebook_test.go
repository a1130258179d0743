package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
)

// TestNotebookCommands: `lab notebook check` reports a truncated notebook
// (which `lab serve` refuses with the same advice) and exits non-zero;
// `lab notebook recover` copies what reads into a new notebook that checks
// clean and opens.
func TestNotebookCommands(t *testing.T) {
	dir := t.TempDir()
	s, err := notebook.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r := notebook.Run{Experiment: "e", State: notebook.Done}
		if err := s.Create(&r); err != nil {
			t.Fatal(err)
		}
		pts := make([]sim.Point, 5000)
		if err := s.Append(r.ID, 0, pts, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	path := filepath.Join(dir, notebook.FileName)
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(len(full))/3); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := dispatch(context.Background(), args, &out, &out)
		return out.String(), err
	}
	out, err := run("notebook", "check", dir)
	if !errors.Is(err, errNotebookDamaged) || !strings.Contains(out, "truncated") || !strings.Contains(out, "lab notebook recover "+dir) {
		t.Fatalf("check of a truncated notebook: %v\n%s", err, out)
	}
	_, err = run("serve", "-addr", "127.0.0.1:0", "-data", dir)
	if !errors.Is(err, notebook.ErrDamaged) || !strings.Contains(err.Error(), "lab notebook recover") {
		t.Errorf("serve on a truncated notebook: %v", err)
	}
	newDir := filepath.Join(t.TempDir(), "new")
	// The truncation cut the newest pages, the root among them: nothing
	// reads, and recover says so without writing an empty notebook.
	if out, err := run("notebook", "recover", dir, newDir); err == nil || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("recover of an unreadable notebook: %v\n%s", err, out)
	}
	if _, err := os.Stat(newDir); err == nil {
		t.Errorf("recover created %s", newDir)
	}

	// A damaged run record: check names the run, recover copies the others.
	if err := os.WriteFile(path, full, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("runs")).Put([]byte{0, 0, 0, 0, 0, 0, 0, 2}, []byte("{garbage"))
	})
	db.Close()
	out, err = run("notebook", "check", dir)
	if !errors.Is(err, errNotebookDamaged) || !strings.Contains(out, "run 2 (, damaged)") {
		t.Fatalf("check of a damaged record: %v\n%s", err, out)
	}
	out, err = run("notebook", "recover", dir, newDir)
	if err != nil || !strings.Contains(out, "recovered 2 runs (10000 points)") || !strings.Contains(out, "1 runs not copied") {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	t.Log(out)
	if out, err := run("notebook", "check", newDir); err != nil || !strings.Contains(out, "0 damaged") {
		t.Errorf("check of the recovered notebook: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"notebook"}, {"notebook", "fix"}, {"notebook", "recover", dir}, {"notebook", "check", "a", "b"}} {
		if _, err := run(args...); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
