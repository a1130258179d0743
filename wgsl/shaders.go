package wgsl

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

// The embedded WGSL files (shaders/NAME.wgsl), by base name. Kernel files
// declare bindings and entry points; library files are included in other
// modules (kernelSpec.include) and are not modules; every module ends with
// common.wgsl. TestShadersListed checks this list against the embedded
// files.
//
//   - attention: kernel: native-arithmetic split-KV decode attention (DecodeAttention)
//   - attnblock: library: attnsim's native block-scaled path (included in attnsim's module)
//   - attnsim: kernel: the attention simulator's decode, bit-exact (SimDecode)
//   - blockstep: library: the block-scaled step (included by scaled and attnsim)
//   - common: library: integer FP32 add, multiply, encoders (ends every module)
//   - convert: kernel: e4m3/e5m2 decode and encode (DecodeFP8, EncodeFP8, AddF32)
//   - narrow: kernel: every narrow format's conversions (EncodeNarrow, DecodeNarrow, EncodeUE8M0)
//   - native: kernel: the GPU's own f32 dot products, the FMA and loop probes (NativeDot, ProbeFMA, LoopIterations)
//   - probe: kernel: a streaming read (ReadBandwidth) and a spin (the wait tests)
//   - scaled: kernel: one block-scaled or narrow-format step per output (ScaledStep)
//   - tfdpa: kernel: chains of the T-FDPA step with promotion (Chain, Step)
//   - tfdpa_step: library: the T-FDPA step itself (included by tfdpa and attnsim)
//   - yardstick: kernel: a fixed integer workload for BenchChain's yardstick
//
//go:embed shaders/*.wgsl
var shaderFS embed.FS

// Shader returns the text of an embedded WGSL file by base name (one of
// [Shaders], e.g. "common", "convert", "tfdpa" or "attnsim": the list
// above), or an error. No file is a complete program on its own: each
// kernel's module is assembled with generated constants, its includes and
// common.wgsl.
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
