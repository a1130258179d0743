package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/attention"
)

// readmeKVTable is the README's table of KV-cache formats, generated from
// attention.KVFormatTable.
func readmeKVTable() string {
	var b strings.Builder
	b.WriteString("| format | elements | block scale | tensor scale | what | source |\n|---|---|---|---|---|---|\n")
	for _, f := range attention.KVFormats() {
		r := f.Row()
		block, scales := "—", ""
		if r.Block > 0 {
			block = fmt.Sprintf("%s per %d channels", r.BlockScale, r.Block)
		}
		if r.Scaled {
			scales = " (scales per tensor, head, token-head or channel)"
		}
		ts := "—"
		if r.TensorScale {
			ts = "FP32"
		}
		names := "`" + r.Name + "`"
		for _, a := range r.Aliases {
			names += ", `" + a + "`"
		}
		fmt.Fprintf(&b, "| %s | %s%s | %s | %s | %s | %s |\n", names, r.Elem, scales, block, ts, r.Doc, r.Source)
	}
	return b.String()
}

// TestReadmeTables checks the README's tables against the code: the KV
// formats table is KVFormatTable's rows, and every model the arithmetic
// table (and the line after it) names is one accum looks up.
func TestReadmeTables(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	kv := regexp.MustCompile(`(?s)<!-- kv-formats table: generated from attention.KVFormatTable -->\n(.*?)<!-- end of kv-formats table -->`).FindStringSubmatch(readme)
	if kv == nil {
		t.Fatal("README: no kv-formats table markers")
	}
	if want := readmeKVTable(); kv[1] != want {
		t.Errorf("README's kv-formats table is stale; it should read:\n%s", want)
	}

	sec := regexp.MustCompile("(?s)\\| model \\| L \\| F \\| rho \\| source \\|\n(.*?)\\(`lab list models`").FindStringSubmatch(readme)
	if sec == nil {
		t.Fatal("README: no table of models")
	}
	var names []string
	for _, line := range strings.Split(sec[1], "\n") {
		if strings.HasPrefix(line, "|---") {
			continue
		}
		if strings.HasPrefix(line, "|") {
			line = strings.Split(line, "|")[1] // the model column
		}
		prev := ""
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
			for _, n := range readmeExpand(m[1]) {
				if strings.HasPrefix(n, ".") && prev != "" { // .e5m2.f32 after sm90.wgmma.e4m3.f32
					parts := strings.Split(prev, ".")
					n = strings.Join(parts[:len(parts)-strings.Count(n, ".")], ".") + n
				}
				names = append(names, n)
				prev = n
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("README's models: only %v", names)
	}
	for _, n := range names {
		if _, err := accum.Lookup(n); err != nil {
			t.Errorf("README names model %q: %v", n, err)
		}
	}
}

// readmeExpand expands one {a,b} group: sm80.mma.sync.{f16,bf16}.f32 is
// sm80.mma.sync.f16.f32 and sm80.mma.sync.bf16.f32.
func readmeExpand(s string) []string {
	m := regexp.MustCompile(`\{([^}]*)\}`).FindStringSubmatchIndex(s)
	if m == nil {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[m[2]:m[3]], ",") {
		out = append(out, readmeExpand(s[:m[0]]+alt+s[m[1]:])...)
	}
	return out
}

// TestReadmeLayout checks that the README's Layout block names every
// top-level folder git tracks (hidden ones aside) and no folder that is
// not there.
func TestReadmeLayout(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Layout\n\n```\n(.*?)```").FindStringSubmatch(string(b))
	if block == nil {
		t.Fatal("README: no Layout block")
	}
	var named []string
	for _, m := range regexp.MustCompile(`(?m)^([a-z0-9_]+)/`).FindAllStringSubmatch(block[1], -1) {
		if !slices.Contains(named, m[1]) {
			named = append(named, m[1])
		}
	}
	out, err := exec.Command("git", "-C", "../..", "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a checkout)", err)
	}
	var dirs []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if d, _, ok := strings.Cut(f, "/"); ok && !strings.HasPrefix(d, ".") && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	slices.Sort(named)
	slices.Sort(dirs)
	if !slices.Equal(named, dirs) {
		t.Errorf("README's Layout names %v, the tree's folders are %v", named, dirs)
	}
}
