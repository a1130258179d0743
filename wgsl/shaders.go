package wgsl

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed shaders/*.wgsl
var shaderFS embed.FS

// Shader returns the text of an embedded WGSL file by base name (one of
// [Shaders], e.g. "common", "tfdpa" or "attnsim"), or an error. The kernels
// are not complete programs on their own: see [Source].
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

// Source assembles a complete WGSL module: the generated constants, the
// kernel file and common.wgsl (WGSL has no include). consts are given as
// name → WGSL literal with its type, e.g. "WG" → "u32", "64u".
func source(kernel string, consts []constDecl) (string, error) {
	body, err := Shader(kernel)
	if err != nil {
		return "", err
	}
	common, err := Shader("common")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// fp8lab wgsl: %s.wgsl with generated constants, then common.wgsl\n", kernel)
	for _, c := range consts {
		if c.typ == "" {
			b.WriteString(c.value + "\n")
			continue
		}
		fmt.Fprintf(&b, "const %s: %s = %s;\n", c.name, c.typ, c.value)
	}
	b.WriteString("\n")
	b.WriteString(body)
	b.WriteString("\n")
	b.WriteString(common)
	return b.String(), nil
}

// key returns a cache key for a kernel built from source with consts.
func key(kernel, entry string, consts []constDecl) string {
	var b strings.Builder
	b.WriteString(kernel + "." + entry)
	for _, c := range consts {
		b.WriteString("|" + c.name + "=" + c.value)
	}
	return b.String()
}
