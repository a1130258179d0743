package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/experiments/costdata"
	"github.com/fp8lab/fp8lab/presets"
)

// The prediction table of docs/cost-model.md is generated from the
// embedded cost file: TestCostModelDoc checks the text between the markers
// equals what the model gives now, and rewrites it with
//
//	FP8LAB_UPDATE_DOCS=1 go test ./experiments -run TestCostModelDoc
const (
	costDocPath  = "../docs/cost-model.md"
	costDocBegin = "<!-- BEGIN generated prediction table: FP8LAB_UPDATE_DOCS=1 go test ./experiments -run TestCostModelDoc -->"
	costDocEnd   = "<!-- END generated prediction table -->"
)

// costDocTable returns the generated block for cost file f (nil: none).
func costDocTable(f *costdata.File) (string, error) {
	var b strings.Builder
	if f == nil {
		b.WriteString("_No measured costs in this build: `experiments/costdata/h200-kernel-costs.json` is not there yet, so nothing is predicted. " +
			"Once it is, `FP8LAB_UPDATE_DOCS=1 go test ./experiments -run TestCostModelDoc` writes the table here._\n")
		return b.String(), nil
	}
	fmt.Fprintf(&b, "Kernel costs: %s (`%s`). Method: %s.\n\n", f.Provenance, f.Name, f.Provenance.Method)
	if costsNotMeasured(f) {
		b.WriteString("**THE COST FILE IS NOT A MEASUREMENT: these numbers predict nothing.**\n\n")
	}
	b.WriteString("| GPU | model | quantity | predicted | published | diff | within 10 % | inputs |\n|---|---|---|---:|---:|---:|---|---|\n")
	row := func(gpu, model, what, pred, pub, diff, ok, inputs string) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", gpu, model, what, pred, pub, diff, ok, inputs)
	}
	within := func(d float64) string {
		if math.Abs(d) <= 10 {
			return "yes"
		}
		return "**no**"
	}
	for _, p := range itlPublishedTable {
		r, err := itlMeasuredFitFor(f, p.gpu, p.model, costdata.KVFP8Tensor, 1, itlDefaultContexts)
		if err != nil {
			return "", err
		}
		inputs := "H200 rows (measured)"
		if p.gpu != "h200" {
			inputs += "; datasheet scaling to " + r.gpu.Name
		}
		inputs += "; shapes from the model card"
		if !r.model.spec.weightsKnown {
			inputs += "; weights not modelled"
		}
		for _, x := range r.rows() {
			d := (x.pred - x.pub) / x.pub * 100
			why := inputs
			if math.Abs(d) > 10 && x.why != "" {
				why += ". Miss: " + x.why
			}
			row(r.gpu.Name, r.model.preset.Name, x.what, fmt.Sprintf("%.4g", x.pred), fmt.Sprintf("%.4g", x.pub), fmt.Sprintf("%+.1f %%", d), within(d), why)
		}
	}
	g, err := presets.LookupGPU("h100-sxm")
	if err != nil {
		return "", err
	}
	for _, p := range throughputPublishedTable {
		kvs := []string{costdata.KVBF16, costdata.KVFP8Tensor}
		c, err := newCostModel(f, p.model, g, kvs)
		if err != nil {
			return "", err
		}
		if err := c.loadPrefill(kvs); err != nil {
			return "", err
		}
		forms := throughputFormats(c.preset, costdata.KVFP8Tensor)
		load := throughputLoad{requests: 150, concurrency: 8, input: 20000, output: 2000, budget: 8192, spread: 0.15, memUtil: 0.9, seed: 1}
		res, err := throughputRunAll(context.Background(), c, forms, load, g.Memory)
		if err != nil {
			return "", err
		}
		inputs := "H200 rows (measured); datasheet scaling; `lab run throughput -model " + p.model + "` (150 requests, concurrency 8, 20k ± 15 % in, 2k ± 15 % out, budget 8192, seed 1)"
		for _, fm := range forms[1:] {
			gain := (res[fm.name].tokS/res["bf16"].tokS - 1) * 100
			pub := (p.tokS[fm.name]/p.tokS["bf16"] - 1) * 100
			// Within 10 % of the published gain itself (14.9 % ± 1.5
			// points), not within 10 points.
			rel := func(x, pub float64) float64 { return (x - pub) / math.Abs(pub) * 100 }
			row(g.Name, c.preset.Name, fm.name+" output-throughput gain under load", fmt.Sprintf("%+.1f %%", gain), fmt.Sprintf("%+.1f %%", pub),
				fmt.Sprintf("%+.1f points (%+.0f %% of it)", gain-pub, rel(gain, pub)), within(rel(gain, pub)), inputs)
			rt := (res[fm.name].runtimeS/res["bf16"].runtimeS - 1) * 100
			pubRT := (p.tokS["bf16"]/p.tokS[fm.name] - 1) * 100
			row(g.Name, c.preset.Name, fm.name+" total-runtime change under load", fmt.Sprintf("%+.1f %%", rt), fmt.Sprintf("%+.1f %%", pubRT),
				fmt.Sprintf("%+.1f points (%+.0f %% of it)", rt-pubRT, rel(rt, pubRT)), within(rel(rt, pubRT)), inputs)
		}
	}
	// The head_dim-256 prefill: the measured ratio at the longest context.
	for _, s := range f.PrefillShapes() {
		if s.HeadDim != 256 {
			continue
		}
		bf, _, _, err1 := f.PrefillCurve(s, "triton-bf16")
		two, _, _, err2 := f.PrefillCurve(s, "triton-fp8-2level")
		if err1 != nil || err2 != nil {
			continue
		}
		n := len(bf.X) - 1
		r := two.At(bf.X[n]) / bf.Y[n]
		ctx := math.Sqrt(2 * bf.X[n])
		row("H200 (measured, not scaled)", "head_dim 256 prefill ("+s.String()+")", fmt.Sprintf("FP8 two-level / BF16 prefill time at %.0f tokens", ctx),
			fmt.Sprintf("%.3g×", r), fmt.Sprintf("%.3g× (TTFT coefficient; FA3 TODO %.3g×)", prefillPublishedTTFT, prefillPublishedTODO),
			fmt.Sprintf("explains %.0f %% of the published slowdown", 100*(r-1)/(prefillPublishedTTFT-1)), within((r-prefillPublishedTTFT)/prefillPublishedTTFT*100),
			"H200 prefill rows (measured): our Triton kernels stand for FA3 / vLLM's Triton path on an H100")
	}
	return b.String(), nil
}

func TestCostModelDoc(t *testing.T) {
	// The generator runs on the synthetic file whatever the build holds.
	if _, err := costDocTable(syntheticCosts()); err != nil {
		t.Fatalf("the table of the synthetic file: %v", err)
	}
	f, err := costdata.Embedded()
	if errors.Is(err, costdata.ErrNoMeasuredCosts) {
		f, err = nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := costDocTable(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(costDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, costDocBegin), strings.Index(doc, costDocEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no generated block (markers %q … %q)", costDocPath, costDocBegin, costDocEnd)
	}
	got := strings.TrimPrefix(doc[i+len(costDocBegin):j], "\n")
	if got == want {
		return
	}
	if os.Getenv("FP8LAB_UPDATE_DOCS") != "" {
		doc = doc[:i+len(costDocBegin)] + "\n" + want + doc[j:]
		if err := os.WriteFile(costDocPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the table of %s", costDocPath)
		return
	}
	t.Errorf("%s's prediction table is not what the model gives now: run FP8LAB_UPDATE_DOCS=1 go test ./experiments -run TestCostModelDoc\nwant:\n%s", costDocPath, want)
}
