package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRevisionScript: the revision `make build` records is the full hash,
// with +dirty for a modified tracked file and for an untracked file that
// git does not ignore (issue 18: a tree with a new untracked file was
// stamped clean), not for an ignored one.
func TestRevisionScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	script, err := filepath.Abs("../../tools/revision.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		c := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rev := func() string {
		t.Helper()
		c := exec.Command("sh", script)
		c.Dir = dir
		out, err := c.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	write("a.go", "package a\n")
	write(".gitignore", "data/\n")
	git("add", ".")
	git("commit", "-q", "-m", "x")
	clean := regexp.MustCompile(`^[0-9a-f]{40}$`)
	if r := rev(); !clean.MatchString(r) {
		t.Errorf("clean tree: %q, want the full hash", r)
	}
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	write("data/notebook.db", "x")
	if r := rev(); !clean.MatchString(r) {
		t.Errorf("an ignored file: %q, want clean", r)
	}
	write("b.go", "package a\n")
	if r := rev(); !strings.HasSuffix(r, "+dirty") {
		t.Errorf("an untracked source file: %q, want +dirty", r)
	}
	os.Remove(filepath.Join(dir, "b.go"))
	write("a.go", "package a // changed\n")
	if r := rev(); !strings.HasSuffix(r, "+dirty") {
		t.Errorf("a modified file: %q, want +dirty", r)
	}
}

// TestMakeLabRuntimeDir: `make lab` serves with a private XDG_RUNTIME_DIR
// (mode 700) when the environment has none, as `make test` does (issue
// 18: lavapipe logged "XDG_RUNTIME_DIR is invalid" on every GPU run). The
// Makefile's recipe runs here with a stand-in bin/lab that reports it.
func TestMakeLabRuntimeDir(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	os.MkdirAll(filepath.Join(dir, "tools"), 0o755)
	os.WriteFile(filepath.Join(dir, "Makefile"), mk, 0o644)
	os.WriteFile(filepath.Join(dir, "tools", "revision.sh"), []byte("echo test\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "bin", "lab"), []byte("#!/bin/sh\nstat -c '%a' \"$XDG_RUNTIME_DIR\"\n"), 0o755)
	c := exec.Command("make", "-s", "-o", "build", "lab")
	c.Dir = dir
	c.Env = append(os.Environ(), "XDG_RUNTIME_DIR=")
	out, err := c.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "700" {
		t.Errorf("make lab without XDG_RUNTIME_DIR: %v %q, want the lab to get a folder of mode 700", err, out)
	}
}
