package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
)

// The synthetic needle-in-a-haystack of the needle and promotion
// experiments: one attention head, one decode query, n tokens.
//
//   - Haystack: keys k_j ~ N(0, scoreStd²) per element, so that the logits
//     s_j = q·k_j/√d of a query q ~ N(0, 1) are about N(0, scoreStd²);
//     values v_j ~ N(valueMean, valueStd²) per element (real KV caches are
//     far from zero-mean).
//   - Needle, at a uniform position after the sinks: key (margin/(|q|²/√d))·q,
//     so its logit is exactly margin before quantization; value
//     valueMean + amp·c_t, where c_t is one of M random ±1 codes.
//   - Sinks (optional), the first tokens: key with logit sinkLogit, value
//     sinkValue in every element (real attention sinks draw much weight and
//     carry small values).
//   - K band (optional, kBand > 0): every key (haystack, needle, sinks)
//     carries a fixed offset ±kBandMean in kBand channels, the last
//     kBand/2 channels of each half of the head (RoPE's low-frequency
//     dimensions), a sign per channel: the outlier channels real keys
//     share across tokens (KVQuant App. G: whole channels of one sign;
//     Jin et al. 2025: massive values in the low-frequency dimensions of
//     Q and K). The offset shifts every logit of a trial by the same
//     q·offset/√d, so it leaves exact attention unchanged; it matters
//     through the cache's scales and rounding.
//   - Retrieval: the code c_m with the largest ⟨O − B, c_m⟩, where B is what
//     O would be without the code, under exact arithmetic: Σ_j w_j·mean(v_j)
//     with the exact softmax weights w of the series' own quantized inputs
//     (valueMean everywhere when there are no sinks). This is the H200
//     probe's rule (⟨O − 0.5, code⟩) with sinks accounted for; it knows the
//     values' means but not the haystack's random part, which is the noise
//     that makes the task hard in exact arithmetic.
//
// Trials share a haystack (its K and V; by default one per context length)
// and draw their own query, needle position, codes and true code: the
// haystack enters a trial only through weights that depend on the trial's
// query, so trials sharing it are nearly independent, and generating 2·n·d
// normals per trial would cost more than the simulation. The haystacks
// parameter sets how many independent haystacks the trials are spread over.
type attnNeedle struct {
	d, m                 int
	margin, scoreStd     float64
	valueMean, valueStd  float64
	amp                  float64
	sinks                int
	sinkLogit, sinkValue float64
	kBand                int
	kBandMean            float64
	stats                string // the statistics profile (attnStatsProfiles), for the notes
	// gpu, when set, runs the FP8 kernels (device gpu).
	gpu *wgsl.Runner
	// exactErr makes the errors of withErr those against exact float64
	// attention on the unquantized inputs (kv-formats) instead of on the
	// series' own quantized inputs.
	exactErr bool
}

// exact is float64 attention of the unquantized q over the haystack h with
// the trial's sinks and needle at pos: softmax(q·k/√d)·v.
func (t attnNeedle) exact(h *attnHaystack, q []float32, pos int, needleK, needleV, sinkK, sinkV []float32) []float64 {
	d := t.d
	n := len(h.k) / d
	key := func(j int) ([]float32, []float32) {
		switch {
		case j == pos:
			return needleK, needleV
		case j < t.sinks:
			return sinkK, sinkV
		}
		return h.k[j*d : (j+1)*d], h.v[j*d : (j+1)*d]
	}
	s := make([]float64, n)
	m := math.Inf(-1)
	scale := 1 / math.Sqrt(float64(d))
	for j := range s {
		k, _ := key(j)
		var dot float64
		for i, x := range q {
			dot += float64(x) * float64(k[i])
		}
		s[j] = dot * scale
		m = max(m, s[j])
	}
	o := make([]float64, d)
	var l float64
	for j := range s {
		w := math.Exp(s[j] - m)
		l += w
		_, v := key(j)
		for i := range o {
			o[i] += w * float64(v[i])
		}
	}
	for i := range o {
		o[i] /= l
	}
	return o
}

// attnNeedleParams are the parameters of the task, shared by needle and
// promotion, with their defaults.
func attnNeedleParams(margin float64) []sim.Param {
	return []sim.Param{
		{Name: "head-dim", Aliases: []string{"head_dim"}, Doc: "head dimension d (64, 128 or 256)", Kind: sim.KindChoice, Default: "128", Choices: []string{"64", "128", "256"}},
		{Name: "candidates", Doc: "number M of candidate codes (random ±1 vectors); chance is 1/M", Kind: sim.KindInt, Default: 64, Min: 2, Max: 1024},
		{Name: "margin", Doc: "the needle's logit; the difficulty: its weight is about e^margin / (n·e^(score-std²/2))", Unit: "nats",
			Kind: sim.KindFloat, Default: margin, Min: -10, Max: 40},
		{Name: "score-std", Aliases: []string{"score_std"}, Doc: "standard deviation of the haystack's logits", Unit: "nats", Kind: sim.KindFloat, Default: 1.0, Min: 0, Max: 5},
		{Name: "value-mean", Aliases: []string{"value_mean"}, Doc: "mean of every value element (real KV caches are far from zero-mean)", Kind: sim.KindFloat, Default: 0.5, Min: -100, Max: 100},
		{Name: "value-std", Aliases: []string{"value_std"}, Doc: "standard deviation of the haystack's value elements", Kind: sim.KindFloat, Default: 1.0, Min: 0, Max: 100},
		{Name: "amp", Doc: "amplitude of the needle's code: its value is value-mean + amp·code", Kind: sim.KindFloat, Default: 1.0, Min: 0, Max: 100},
		{Name: "sinks", Doc: "attention-sink tokens at the start of the context", Kind: sim.KindInt, Default: 0, Min: 0, Max: 64},
		{Name: "sink-logit", Aliases: []string{"sink_logit"}, Doc: "logit of each sink token", Unit: "nats", Kind: sim.KindFloat, Default: 10.0, Min: -10, Max: 40},
		{Name: "sink-value", Aliases: []string{"sink_value"}, Doc: "value of every element of a sink token", Kind: sim.KindFloat, Default: 0.0, Min: -100, Max: 100},
		{Name: "k-band", Aliases: []string{"k_band"}, Doc: "K outlier band: channels (the last k-band/2 of each half of the head, RoPE's low frequencies) whose every key carries a fixed offset of k-band-mean, a sign per channel", Unit: "channels", Kind: sim.KindInt, Default: 0, Min: 0, Max: 576},
		{Name: "k-band-mean", Aliases: []string{"k_band_mean"}, Doc: "magnitude of the K band's offset", Kind: sim.KindFloat, Default: 0.0, Min: 0, Max: 1000},
		{Name: "stats", Doc: "statistics of the haystack: synthetic (the parameters as given) or llama31-8b (score-std, value-std, sinks, sink-logit, sink-value, k-band and k-band-mean from published measurements of Llama-3/3.1-8B, docs/real-stats.md; margin, value-mean and amp stay as given: nothing published fixes them)",
			Kind: sim.KindChoice, Default: "synthetic", Choices: attnStatsNames()},
		{Name: "haystacks", Doc: "independent haystacks per context length, shared by the trials in turn", Kind: sim.KindInt, Default: 1, Min: 1, Max: 100000},
		deviceParam(),
	}
}

// attnNeedleFromValues reads the task from the run's parameters.
func attnNeedleFromValues(v sim.Values) attnNeedle {
	d := 128
	fmt.Sscan(v.String("head-dim"), &d)
	t := attnNeedle{d: d, m: v.Int("candidates"), margin: v.Float("margin"), scoreStd: v.Float("score-std"),
		valueMean: v.Float("value-mean"), valueStd: v.Float("value-std"), amp: v.Float("amp"),
		sinks: v.Int("sinks"), sinkLogit: v.Float("sink-logit"), sinkValue: v.Float("sink-value"),
		kBand: v.Int("k-band"), kBandMean: v.Float("k-band-mean"), stats: v.String("stats")}
	if p, ok := attnStatsProfiles[t.stats]; ok && p.apply != nil {
		p.apply(&t)
	}
	t.kBand = min(t.kBand, t.d)
	return t
}

// bandOffset returns the K band's offset of every channel (nil without a
// band): ±kBandMean on the last kBand/2 channels of each half of the head
// (kBand odd: one more in the second half), signs from a fixed generator,
// the same for every haystack and trial.
func (t attnNeedle) bandOffset() []float32 {
	if t.kBand <= 0 || t.kBandMean == 0 {
		return nil
	}
	off := make([]float32, t.d)
	rng := rand.New(rand.NewPCG(0x6b62616e64, 1)) // "kband"
	half := t.d / 2
	lo := t.kBand / 2
	for c := 0; c < t.d; c++ {
		sign := float32(1 - 2*int(rng.Uint32()&1))
		inFirst := c < half && c >= half-lo
		inSecond := c >= half && c >= t.d-(t.kBand-lo)
		if inFirst || inSecond {
			off[c] = sign * float32(t.kBandMean)
		}
	}
	return off
}

// attnNeedleRun is one simulated kernel of a trial: a dtype, a Config, and
// the P·V promotion schemes it runs at once (one series each).
type attnNeedleRun struct {
	dtype      fp8.Format
	spec       *attention.KVSpec // when set, the cache is QuantizeKV's in this spec (dtype is spec.DType())
	cfg        attention.Config
	promotions []int
	series     []string
}

// cache names the cache a run reads: runs with the same name share it.
func (r attnNeedleRun) cache() string {
	if r.spec != nil {
		return r.spec.String()
	}
	return r.dtype.String()
}

// attnNeedleOutcome is what one series scored over a context's trials.
type attnNeedleOutcome struct {
	series string
	hits   int
	trials int
	errSum float64 // Σ relative L2 error of O against the exact attention (withErr)
}

// Accuracy is hits / trials.
func (o attnNeedleOutcome) Accuracy() float64 { return float64(o.hits) / float64(o.trials) }

// attnHaystack is one haystack's caches, per cache name
// (attnNeedleRun.cache), and a free list of copies that trials borrow,
// change (needle, sinks) and restore; k and v are the unquantized
// haystack, [n][d].
type attnHaystack struct {
	k, v []float32
	base map[string]*attention.KV
	free map[string]chan *attention.KV
}

func (h *attnHaystack) borrow(f string) *attention.KV {
	select {
	case kv := <-h.free[f]:
		return kv
	default:
		return h.base[f].Clone()
	}
}

func (h *attnHaystack) giveBack(f string, kv *attention.KV) {
	select {
	case h.free[f] <- kv:
	default:
	}
}

// haystack draws the haystack of n tokens for the caches of runs from rng.
// It stops with ctx.Err() once ctx is cancelled, looking every 4096
// elements.
func (t attnNeedle) haystack(ctx context.Context, n int, rng *rand.Rand, runs []attnNeedleRun) (*attnHaystack, error) {
	k, v := make([]float32, n*t.d), make([]float32, n*t.d)
	band := t.bandOffset()
	for i := range k {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		k[i] = float32(t.scoreStd * rng.NormFloat64())
		v[i] = float32(t.valueMean + float64(t.valueStd*rng.NormFloat64())) // float64(): never an FMA
		if band != nil {
			k[i] += band[i%t.d]
		}
	}
	h := &attnHaystack{k: k, v: v, base: map[string]*attention.KV{}, free: map[string]chan *attention.KV{}}
	for _, r := range runs {
		name := r.cache()
		if h.base[name] != nil {
			continue
		}
		var kv *attention.KV
		var err error
		if r.spec != nil {
			kv, err = attention.QuantizeKVContext(ctx, k, v, attention.KVShape{Tokens: n, Heads: 1, KDim: t.d}, *r.spec)
		} else {
			kv, err = attention.NewKVContext(ctx, k, v, fp8.Shape{Tokens: n, Heads: 1, Dim: t.d}, r.dtype, fp8.SatFinite, nil, nil)
		}
		if err != nil {
			return nil, err
		}
		h.base[name] = kv
		h.free[name] = make(chan *attention.KV, 64)
	}
	return h, nil
}

// attnNeedleTrialResult holds, per series in order, whether the trial
// retrieved the code, and the relative error of O.
type attnNeedleTrialResult struct {
	hit []bool
	err []float64
	e   error
}

// trial runs one trial over the haystack h of n tokens: every run, every
// series. With withErr it also compares each O with the exact attention on
// the same quantized inputs.
func (t attnNeedle) trial(ctx context.Context, h *attnHaystack, n int, rng *rand.Rand, runs []attnNeedleRun, withErr bool) attnNeedleTrialResult {
	return t.trialDrawn(ctx, h, t.draw(n, rng), runs, withErr, nil)
}

// attnNeedleDraw is what one trial draws: its query, the needle's position,
// the candidate codes and the true one, and the rows it writes into the
// cache (needle, sinks).
type attnNeedleDraw struct {
	q, codes                       []float32
	pos, truth                     int
	needleK, needleV, sinkK, sinkV []float32
}

// draw draws one trial over n tokens from rng.
func (t attnNeedle) draw(n int, rng *rand.Rand) attnNeedleDraw {
	d := t.d
	q := make([]float32, d)
	var q2 float64
	for i := range q {
		q[i] = float32(rng.NormFloat64())
		q2 += float64(q[i]) * float64(q[i])
	}
	pos := t.sinks + rng.IntN(n-t.sinks)
	codes := make([]float32, t.m*d)
	for i := range codes {
		codes[i] = float32(1 - 2*int(rng.Uint32()&1))
	}
	truth := rng.IntN(t.m)
	unit := math.Sqrt(float64(d)) / q2 // a key c·unit·q has logit c
	needleK, needleV := make([]float32, d), make([]float32, d)
	sinkK, sinkV := make([]float32, d), make([]float32, d)
	for i := range q {
		needleK[i] = float32(t.margin * unit * float64(q[i]))
		needleV[i] = float32(t.valueMean + float64(t.amp*float64(codes[truth*d+i])))
		sinkK[i] = float32(t.sinkLogit * unit * float64(q[i]))
		sinkV[i] = float32(t.sinkValue)
	}
	if band := t.bandOffset(); band != nil {
		for i := range q {
			needleK[i] += band[i]
			sinkK[i] += band[i]
		}
	}
	return attnNeedleDraw{q: q, codes: codes, pos: pos, truth: truth, needleK: needleK, needleV: needleV, sinkK: sinkK, sinkV: sinkV}
}

// patch writes the trial's sinks and needle into kv and returns what they
// replaced, to put back with restore (attention.KV.SaveToken: a
// block-scaled cache's V scales span blocks of tokens).
func (t attnNeedle) patch(kv *attention.KV, dr attnNeedleDraw) []attention.TokenState {
	var saved []attention.TokenState
	set := func(tok int, k, v []float32) {
		st, err := kv.SaveToken(tok, 0)
		if err == nil {
			err = kv.SetToken(tok, 0, k, v)
		}
		if err != nil {
			panic(err) // positions are inside the cache by construction
		}
		saved = append(saved, st)
	}
	for s := 0; s < t.sinks; s++ {
		set(s, dr.sinkK, dr.sinkV)
	}
	set(dr.pos, dr.needleK, dr.needleV)
	return saved
}

// restore puts back what patch saved, newest first.
func restore(kv *attention.KV, saved []attention.TokenState) error {
	for i := len(saved) - 1; i >= 0; i-- {
		if err := kv.RestoreToken(saved[i]); err != nil {
			return err
		}
	}
	return nil
}

// trialDrawn runs the drawn trial dr over the haystack h: every run, every
// series. With withErr it also compares each O with the exact attention on
// the same quantized inputs, or, with t.exactErr, with exact (the trial's
// t.exact; nil: computed here).
func (t attnNeedle) trialDrawn(ctx context.Context, h *attnHaystack, dr attnNeedleDraw, runs []attnNeedleRun, withErr bool, exact []float64) attnNeedleTrialResult {
	var res attnNeedleTrialResult
	if t.exactErr && exact == nil {
		exact = t.exact(h, dr.q, dr.pos, dr.needleK, dr.needleV, dr.sinkK, dr.sinkV)
	}
	// Runs of one cache share it, the baseline and the reference.
	for i := 0; i < len(runs); {
		f := runs[i].cache()
		j := i
		for j < len(runs) && runs[j].cache() == f {
			j++
		}
		kv := h.borrow(f)
		saved := t.patch(kv, dr)
		err := t.score(ctx, kv, dr.q, dr.codes, dr.truth, runs[i:j], withErr, exact, &res)
		if rerr := restore(kv, saved); rerr != nil {
			err = errors.Join(err, rerr) // the copy is dropped, not given back
		} else {
			h.giveBack(f, kv)
		}
		if err != nil {
			res.e = err
			return res
		}
		i = j
	}
	return res
}

// score runs the kernels of runs (one dtype) on kv, which holds the
// trial's needle and sinks, and appends their hits (and errors) to res.
func (t attnNeedle) score(ctx context.Context, kv *attention.KV, q, codes []float32, truth int, runs []attnNeedleRun, withErr bool, exact []float64, res *attnNeedleTrialResult) error {
	base, err := t.baseline(ctx, runs[0].cfg, q, kv)
	if err != nil {
		return err
	}
	ref := exact
	if withErr && ref == nil {
		if ref, err = attention.ReferenceQuantized(ctx, runs[0].cfg, q, nil, kv); err != nil {
			return err
		}
	}
	for _, r := range runs {
		outs, err := attention.RunPromotions(ctx, r.cfg, r.promotions, q, nil, kv)
		if err != nil {
			return err
		}
		for _, o := range outs {
			res.hit = append(res.hit, attnRetrieveFrom(o, base, codes, t.d) == truth)
			if withErr {
				res.err = append(res.err, attention.Compare(o, ref).RelL2)
			}
		}
	}
	return nil
}

// baseline is B: the exact output without the needle's code, Σ_j w_j·mean(v_j).
func (t attnNeedle) baseline(ctx context.Context, cfg attention.Config, q []float32, kv *attention.KV) ([]float64, error) {
	b := make([]float64, t.d)
	mean := t.valueMean
	if t.sinks > 0 {
		w, err := attention.ReferenceWeights(ctx, cfg, q, nil, kv)
		if err != nil {
			return nil, err
		}
		var ws float64
		for s := 0; s < t.sinks; s++ {
			ws += w[0][s]
		}
		mean = float64(ws*t.sinkValue) + float64((1-ws)*t.valueMean)
	}
	for i := range b {
		b[i] = mean
	}
	return b, nil
}

// attnRetrieveFrom returns the index of the code (rows of codes, d long)
// with the largest ⟨o − base, code⟩.
func attnRetrieveFrom(o, base []float64, codes []float32, d int) int {
	best, arg := math.Inf(-1), -1
	for c := 0; c < len(codes)/d; c++ {
		var s float64
		for i := 0; i < d; i++ {
			s += (o[i] - base[i]) * float64(codes[c*d+i])
		}
		if s > best {
			best, arg = s, c
		}
	}
	return arg
}

// attnNeedleContext runs trials trials at context length n spread over
// haystacks haystacks, and returns one outcome per series of runs, in
// order. key names the set of trials for the seeds.
func attnNeedleContext(ctx context.Context, run *sim.Run, key string, t attnNeedle, n, trials, haystacks int, runs []attnNeedleRun, withErr bool) ([]attnNeedleOutcome, error) {
	if n <= t.sinks {
		return nil, fmt.Errorf("context %d leaves no room for a needle after %d sinks", n, t.sinks)
	}
	var out []attnNeedleOutcome
	for _, r := range runs {
		for _, s := range r.series {
			out = append(out, attnNeedleOutcome{series: s})
		}
	}
	haystacks = min(haystacks, trials)
	for hs := 0; hs < haystacks; hs++ {
		count := trials / haystacks
		if hs < trials%haystacks {
			count++
		}
		h, err := t.haystack(ctx, n, sim.TrialRand(run.Seed, key+"/haystack", hs), runs)
		if err != nil {
			return nil, err
		}
		var res []attnNeedleTrialResult
		tkey := fmt.Sprintf("%s/%d", key, hs)
		if t.gpu != nil {
			res, err = t.trialsGPU(ctx, run, tkey, h, n, count, runs, withErr)
		} else {
			res, err = sim.Trials(ctx, run, tkey, count, func(_ int, rng *rand.Rand) attnNeedleTrialResult {
				return t.trial(ctx, h, n, rng, runs, withErr)
			})
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, err
		}
		for _, r := range res {
			if r.e != nil {
				return nil, r.e
			}
			for i, hit := range r.hit {
				out[i].trials++
				if hit {
					out[i].hits++
				}
				if withErr {
					out[i].errSum += r.err[i]
				}
			}
		}
	}
	return out, nil
}

// attnCtxLabel writes a context length as in the summary keys: 131072 is
// "128k", 1000 is "1000".
func attnCtxLabel(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%dk", n/1024)
	}
	return fmt.Sprint(n)
}

// attnBinomialSE is the standard error of an accuracy p over n trials.
func attnBinomialSE(p float64, n int) float64 { return math.Sqrt(p * (1 - p) / float64(n)) }
