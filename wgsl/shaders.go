package wgsl

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed shaders/*.wgsl
var shaderFS embed.FS

// Shader returns the text of an embedded WGSL file by base name ("common",
// "convert", "tfdpa", "native", "attention"), or an error. The kernels are
// not complete programs on their own: see [Source].
func Shader(name string) (string, error) {
	b, err := shaderFS.ReadFile("shaders/" + name + ".wgsl")
	if err != nil {
		return "", fmt.Errorf("wgsl: no shader %q", name)
	}
	return string(b), nil
}

// Shaders lists the embedded WGSL files by base name.
func Shaders() []string {
	entries, _ := shaderFS.ReadDir("shaders")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".wgsl"))
	}
	sort.Strings(names)
	return names
}

// constDecl is one generated WGSL `const` declaration.
type constDecl struct {
	name, typ, value string
}

func cU32(name string, v int) constDecl { return constDecl{name, "u32", fmt.Sprintf("%du", v)} }
func cI32(name string, v int) constDecl { return constDecl{name, "i32", fmt.Sprintf("%d", v)} }
func cBool(name string, v bool) constDecl {
	return constDecl{name, "bool", fmt.Sprintf("%t", v)}
}

// cRaw is a line of WGSL placed among the constants (an alias, a helper).
func cRaw(line string) constDecl { return constDecl{value: line} }

// source assembles the complete WGSL module of k, the one way every
// kernel's module is made (WGSL has no include), from named parts in this
// order: a header line, the generated constant declarations k.consts, the
// library files k.include (in order; they are not modules: they read
// bindings and constants the kernel file declares), the kernel file k.file,
// and common.wgsl. consts are given as name, WGSL type and literal (or
// constant expression), e.g. "WG", "u32", "64u"; a declaration without a
// type (cRaw) is a generated line of WGSL placed as it is.
func (k *kernelSpec) source() (string, error) {
	parts := append(append([]string{}, k.include...), k.file, "common")
	texts := make([]string, len(parts))
	for i, p := range parts {
		t, err := Shader(p)
		if err != nil {
			return "", err
		}
		texts[i] = t
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// fp8lab wgsl: generated constants, then %s.wgsl\n", strings.Join(parts, ".wgsl, "))
	for _, c := range k.consts {
		if c.typ == "" {
			b.WriteString(c.value + "\n")
			continue
		}
		fmt.Fprintf(&b, "const %s: %s = %s;\n", c.name, c.typ, c.value)
	}
	for _, t := range texts {
		b.WriteString("\n")
		b.WriteString(t)
	}
	return b.String(), nil
}

// key returns the cache key of the module and entry point of k: what
// source reads, and the entry.
func (k *kernelSpec) key() string {
	var b strings.Builder
	b.WriteString(k.file + "." + k.entry)
	for _, inc := range k.include {
		b.WriteString("+" + inc)
	}
	for _, c := range k.consts {
		b.WriteString("|" + c.name + "=" + c.value)
	}
	return b.String()
}
