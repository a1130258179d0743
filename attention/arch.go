package attention

import (
	"fmt"
	"strings"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// Arch is one GPU architecture as the simulator runs it: the tensor-core
// instruction of both GEMMs per data type, the block-scaled instruction per
// block format (none: the architecture has no block-scaled MMA), and the
// SM count of its data-centre GPU, which split-KV's auto (Plan.AutoSplits)
// needs. A new GPU is a row here plus its instructions' rows in accum.
type Arch struct {
	Name    string   // "hopper", "blackwell": the experiments' arch parameter
	Aliases []string // other names accepted ("sm90")
	GPUs    string   // the GPUs the row stands for
	SMs     int      // streaming multiprocessors
	SMsFrom string   // where SMs comes from
	MMA     string   // the matrix instruction's family ("wgmma")
	Doc     string   // the arithmetic, in a line
	// Models is the instruction of both GEMMs per Q/K/V/P data type.
	Models map[fp8.Format]string
	// Block is the block-scaled instruction per block KV format.
	Block map[KVFormat]string
}

// Arches are the architectures, the one place their instructions and SM
// counts are kept.
var Arches = []Arch{
	{
		Name: "hopper", Aliases: []string{"sm90"}, GPUs: "H100 SXM5, H200 SXM", SMs: 132,
		SMsFrom: "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 132 SMs on H100 SXM5; the H200 is the same GH100 configuration (torch.cuda.get_device_properties on the H200 here: 132)",
		MMA:     "wgmma", Doc: "wgmma, FA3's order; FP8 accumulates in the tensor core at 14 significant bits",
		Models: map[fp8.Format]string{
			fp8.FormatE4M3: "sm90.wgmma.e4m3.f32", fp8.FormatE5M2: "sm90.wgmma.e5m2.f32",
			fp8.FormatBF16: "sm90.wgmma.bf16.f32", fp8.FormatFP16: "sm90.wgmma.f16.f32",
		},
	},
	{
		Name: "blackwell", Aliases: []string{"sm100"}, GPUs: "B200", SMs: 148,
		SMsFrom: "Chips and Cheese, \"Nvidia's B200: Keeping the CUDA Juggernaut Rolling\" (2025): 74 of each die's 80 SMs enabled, 148 in all",
		MMA:     "tcgen05", Doc: "tcgen05, the accumulator in tensor memory in FP32",
		Models: map[fp8.Format]string{
			fp8.FormatE4M3: "sm100.tcgen05.f8f6f4.f32", fp8.FormatFP16: "sm100.tcgen05.f16.f32",
			// bf16: tcgen05 kind::f16 reads it, but accum has no model of it
			// yet (no peer record or capture), so blackwell bf16 is refused.
		},
		Block: map[KVFormat]string{
			KVMXFP8: "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", KVMXFP4: "sm100.tcgen05.mxf4.f32", KVNVFP4: "sm100.tcgen05.mxf4nvf4.ue4m3.f32",
		},
	},
}

// ArchNames returns the names of Arches, in order.
func ArchNames() []string {
	var out []string
	for _, a := range Arches {
		out = append(out, a.Name)
	}
	return out
}

// LookupArch returns the architecture named name (or one of its aliases).
func LookupArch(name string) (Arch, error) {
	for _, a := range Arches {
		if a.Name == name {
			return a, nil
		}
		for _, x := range a.Aliases {
			if x == name {
				return a, nil
			}
		}
	}
	return Arch{}, fmt.Errorf("unknown arithmetic %q (want %s)", name, strings.Join(ArchNames(), " or "))
}

// ModelFor returns the name of the instruction of arch reading format f
// (Arches), or an error naming what is missing.
func ModelFor(arch string, f fp8.Format) (string, error) {
	a, err := LookupArch(arch)
	if err != nil {
		return "", err
	}
	name := a.Models[f]
	if name == "" {
		return "", fmt.Errorf("no %s model reads %s", a.Name, f)
	}
	if _, err := accum.Lookup(name); err != nil {
		return "", fmt.Errorf("%s arithmetic on %s needs the model %s: %w", a.Name, f, name, err)
	}
	return name, nil
}

// DefaultModel returns the name of the Hopper wgmma model reading format f
// (the simulator's default arithmetic, FA3's), or "" when there is none.
func DefaultModel(f fp8.Format) string { return Arches[0].Models[f] }

// BlockScaledModel returns the block-scaled instruction of the first
// architecture that has one for format f (Blackwell's tcgen05 kinds).
func BlockScaledModel(f KVFormat) (string, error) {
	for _, a := range Arches {
		if name := a.Block[f]; name != "" {
			return name, nil
		}
	}
	return "", fmt.Errorf("attention: a %s cache has no block scales: block-scaled MMA reads %s", f, strings.Join(blockFormatNames(), ", "))
}
