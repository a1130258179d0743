package wgsl

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/simcase"
)

// batchTrials draws n trials over kv: queries scaled from q0, and tokens
// replaced with random floats written into the cache as it stores them
// (SetToken, then SimTokenOf, then restored), so that one helper serves
// FP8, 16-bit and block-scaled caches; it returns the trials and, per
// trial, the patched copy of kv that attention.Run reads.
func batchTrials(t *testing.T, kv *attention.KV, q0 []float32, n int, seed uint64) ([]SimTrial, []*attention.KV) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	tokens, d, heads := kv.Tokens(), kv.Dim(), kv.Heads()
	var trials []SimTrial
	var patched []*attention.KV
	for i := 0; i < n; i++ {
		q := make([]float32, len(q0))
		for j := range q {
			q[j] = q0[(j+41*i)%len(q0)] * float32(1+0.2*float64(i))
		}
		type tok struct {
			pos, head int
			k, v      []float32
		}
		var ts []tok
		for c := 0; c < i%3+1; c++ { // one to three tokens, a sink-like one first
			pos := rng.IntN(tokens)
			if c == 0 {
				pos = i % 2
			}
			k, v := make([]float32, d), make([]float32, d)
			for j := range k {
				k[j], v[j] = float32(4*rng.NormFloat64()), float32(6*rng.NormFloat64())
			}
			dup := false
			for _, x := range ts {
				dup = dup || (x.pos == pos && x.head == c%heads)
			}
			if !dup {
				ts = append(ts, tok{pos, c % heads, k, v})
			}
		}
		p := kv.Clone()
		for _, x := range ts {
			if err := p.SetToken(x.pos, x.head, x.k, x.v); err != nil {
				t.Fatal(err)
			}
		}
		var toks []SimToken
		for _, x := range ts {
			tk, err := SimTokenOf(p, x.pos, x.head)
			if err != nil {
				t.Fatal(err)
			}
			toks = append(toks, tk)
		}
		trials = append(trials, SimTrial{Q: q, Tokens: toks})
		patched = append(patched, p)
	}
	return trials, patched
}

// SimDecodeBatch equals attention.Run on each trial's patched cache for
// every job of a batch that mixes caches (two of one shape, with their own
// per-KV-head descales), promotion intervals (never, every tile, every 2),
// split-KV, a job of another kernel and one of another split count (run in
// turn), on e4m3 and on a native block-scaled mxfp8 cache; and again with
// submissions cut small (maxSimRows), so that a job's trials go to two
// submissions.
func TestSimDecodeBatch(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	type jobCase struct {
		cfg   attention.Config
		cache int
	}
	e4 := simcase.Case{Tokens: 1000, Cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 4, KBlockN: 64}, PerHead: true}
	win := simcase.Case{Tokens: 700, Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 1, Window: 500}}
	var caches []*attention.KV
	var qs [][]float32
	var q0s [][]float32
	for seed, c := range []simcase.Case{e4, e4, win} {
		q0, qScale, kv, err := simcase.Inputs(c, uint64(20+seed))
		if err != nil {
			t.Fatal(err)
		}
		caches, qs, q0s = append(caches, kv), append(qs, qScale), append(q0s, q0)
	}
	bq, bkv0 := blockInputs(t, blockCase{format: attention.KVMXFP8, tokens: 1000, cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8}}, 31)
	_, bkv1 := blockInputs(t, blockCase{format: attention.KVMXFP8, tokens: 1000, cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8}}, 32)
	caches, qs, q0s = append(caches, bkv0, bkv1), append(qs, nil, nil), append(q0s, bq, bq)
	with := func(c attention.Config, prom, splits int) attention.Config {
		c.Promotion, c.Splits = prom, splits
		return c
	}
	bcfg := attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8}
	cases := []jobCase{
		{with(e4.Cfg, 0, 3), 0}, {with(e4.Cfg, 2, 3), 0}, {with(e4.Cfg, 1, 3), 1}, {with(e4.Cfg, 0, 3), 1},
		{with(win.Cfg, 1, 1), 2}, // another kernel: its own submission
		{with(e4.Cfg, 1, 1), 1},  // another split count
		{with(bcfg, 0, 2), 3}, {with(bcfg, 3, 2), 4}, {with(bcfg, 1, 2), 3},
	}
	var jobs []SimJob
	var patched [][]*attention.KV
	for i, c := range cases {
		trials, p := batchTrials(t, caches[c.cache], q0s[c.cache], 3, uint64(i))
		jobs = append(jobs, SimJob{Cfg: c.cfg, QScale: qs[c.cache], KV: caches[c.cache], Trials: trials})
		patched = append(patched, p)
	}
	// Both e4m3 caches' jobs share a key, as do the block-scaled ones.
	var parts []simPart
	for j, job := range jobs {
		p, err := planSim(job.Cfg, job.QScale, job.KV, job.Trials)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, simPart{p: p, kv: job.KV, trials: job.Trials, job: j})
	}
	if got := len(simChunks(parts, maxSimRows, 1<<30)); got != 4 {
		t.Errorf("%d submissions for 4 kernels and layouts, want 4", got)
	}
	for _, limit := range []int{maxSimRows, 40} {
		saved := maxSimRows
		maxSimRows = limit
		out, err := r.SimDecodeBatch(ctx, jobs)
		maxSimRows = saved
		if err != nil {
			t.Fatalf("maxSimRows %d: %v", limit, err)
		}
		for j, job := range jobs {
			if len(out[j]) != len(job.Trials) {
				t.Fatalf("maxSimRows %d job %d: %d outputs for %d trials", limit, j, len(out[j]), len(job.Trials))
			}
			for i, tr := range job.Trials {
				want, err := attention.Run(ctx, job.Cfg, tr.Q, job.QScale, patched[j][i])
				if err != nil {
					t.Fatal(err)
				}
				bad := 0
				for x := range want {
					if !sameF32(float32(out[j][i][x]), float32(want[x])) {
						if bad++; bad <= 2 {
							t.Errorf("maxSimRows %d job %d (%s, promotion %d, %d splits) trial %d: O[%d] = %g, attention.Run %g",
								limit, j, job.KV.Format(), job.Cfg.Promotion, job.Cfg.Splits, i, x, out[j][i][x], want[x])
						}
					}
				}
			}
		}
	}
	// An invalid job is refused with its index.
	bad := jobs[1]
	bad.Cfg.HeadDim = 32
	if _, err := r.SimDecodeBatch(ctx, []SimJob{jobs[0], bad}); err == nil || !strings.Contains(err.Error(), "job 1") {
		t.Errorf("a bad second job: %v, want an error naming job 1", err)
	}
}

// simChunks keeps a chunk within its word limit, packing each cache once
// a chunk, and cuts a job between its trials.
func TestSimChunks(t *testing.T) {
	cfg := attention.Config{HeadDim: 64, KVHeads: 1, QHeads: 1, KBlockN: 64}
	_, _, kv0, err := simcase.Inputs(simcase.Case{Tokens: 256, Cfg: cfg}, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _, kv1, _ := simcase.Inputs(simcase.Case{Tokens: 256, Cfg: cfg}, 2)
	q := make([]float32, 64)
	trials := []SimTrial{{Q: q}, {Q: q}, {Q: q}}
	var parts []simPart
	for j, kv := range []*attention.KV{kv0, kv0, kv1} {
		p, err := planSim(cfg, nil, kv, trials)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, simPart{p: p, kv: kv, trials: trials, job: j})
	}
	cw := parts[0].p.cacheWords()
	// Room for one cache and its 9 meta words: kv0's two jobs fit, kv1's
	// job goes to a second chunk.
	chunks := simChunks(parts, 1000, cw+6*simMetaWords)
	if len(chunks) != 2 || len(chunks[0]) != 2 || len(chunks[1]) != 1 || chunks[1][0].kv != kv1 {
		t.Fatalf("chunks %v", chunkShape(chunks))
	}
	// Two rows a chunk: every job cut after its second trial.
	chunks = simChunks(parts, 2, 1<<30)
	if got := chunkShape(chunks); got != "[0:2] [0:1 1:1] [1:2] [2:2] [2:1]" {
		t.Errorf("chunks by rows: %s", got)
	}
}

// chunkShape writes chunks as job:trials lists.
func chunkShape(chunks [][]simPart) string {
	var s []string
	for _, c := range chunks {
		var p []string
		for _, pt := range c {
			p = append(p, fmt.Sprintf("%d:%d", pt.job, len(pt.trials)))
		}
		s = append(s, "["+strings.Join(p, " ")+"]")
	}
	return strings.Join(s, " ")
}

// Jobs with their caches packed ahead (PackSimCache) give the outputs of
// the same jobs packed in the call, bit for bit; a cache packed for
// another KV or another tile layout is ignored (the call packs its own),
// and the packed words are those the call packs.
func TestSimPackedCache(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	e4 := simcase.Case{Tokens: 1000, Cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 4, KBlockN: 64}, PerHead: true}
	bf := simcase.Case{Tokens: 900, Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 2, DType: fp8.FormatBF16, KBlockN: 128}}
	type input struct {
		c      simcase.Case
		q0, qs []float32
		kv     *attention.KV
	}
	var ins []input
	for seed, c := range []simcase.Case{e4, e4, bf} {
		q0, qs, kv, err := simcase.Inputs(c, uint64(40+seed))
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, input{c, q0, qs, kv})
	}
	wide := e4.Cfg
	wide.KBlockN = 96 // V padded to 11 tiles of 96 (1056 tokens), not 16 of 64 (1024): another layout
	packs := make([]*SimPackedCache, len(ins))
	for i, in := range ins {
		p, err := PackSimCache(in.c.Cfg, in.qs, in.kv)
		if err != nil {
			t.Fatal(err)
		}
		packs[i] = p
		trials, _ := batchTrials(t, in.kv, in.q0, 1, 9)
		pl, err := planSim(in.c.Cfg, in.qs, in.kv, trials)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := pl.packCache(nil, in.kv)
		if !slices.Equal(p.words, want) {
			t.Fatalf("cache %d: the words packed ahead differ from packCache's", i)
		}
	}
	// jobs returns the inputs' jobs with Cfg cfgs[i] (nil: the case's) and
	// Packed packed(i).
	jobs := func(cfgs map[int]attention.Config, packed func(i int) *SimPackedCache) []SimJob {
		var js []SimJob
		for i, in := range ins {
			trials, _ := batchTrials(t, in.kv, in.q0, 3, uint64(i))
			cfg, ok := cfgs[i]
			if !ok {
				cfg = in.c.Cfg
			}
			js = append(js, SimJob{Cfg: cfg, QScale: in.qs, KV: in.kv, Trials: trials, Packed: packed(i)})
		}
		return js
	}
	none := func(int) *SimPackedCache { return nil }
	for _, tc := range []struct {
		name   string
		cfgs   map[int]attention.Config
		packed func(i int) *SimPackedCache
	}{
		{"packed ahead", nil, func(i int) *SimPackedCache { return packs[i] }},
		{"one of a submission's two caches packed ahead", nil, func(i int) *SimPackedCache { return []*SimPackedCache{nil, packs[1], nil}[i] }},
		{"the other one", nil, func(i int) *SimPackedCache { return []*SimPackedCache{packs[0], nil, packs[2]}[i] }},
		{"packed from another cache", nil, func(i int) *SimPackedCache { return packs[(i+1)%len(packs)] }},
		{"packed for other tiles", map[int]attention.Config{0: wide}, func(i int) *SimPackedCache { return packs[i] }},
	} {
		want, err := r.SimDecodeBatch(ctx, jobs(tc.cfgs, none))
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.SimDecodeBatch(ctx, jobs(tc.cfgs, tc.packed))
		if err != nil {
			t.Fatal(err)
		}
		for j := range want {
			for i := range want[j] {
				for x := range want[j][i] {
					if math.Float64bits(got[j][i][x]) != math.Float64bits(want[j][i][x]) {
						t.Fatalf("%s: job %d trial %d element %d: %v, packed in the call %v", tc.name, j, i, x, got[j][i][x], want[j][i][x])
					}
				}
			}
		}
	}
	if bq, bkv := blockInputs(t, blockCase{format: attention.KVMXFP8, tokens: 500, cfg: attention.Config{HeadDim: 64, KVHeads: 1, QHeads: 2}}, 3); bq != nil {
		if p, err := PackSimCache(attention.Config{HeadDim: 64, KVHeads: 1, QHeads: 2}, nil, bkv); p != nil || err != nil {
			t.Errorf("a block-scaled cache packed ahead: %v, %v; want nil, nil", p, err)
		}
	}
}

// TestBenchSimDecodeRepeats: a timed run of BenchSimDecode is the
// submission's dispatches back to back for about decodeBenchWork (a single
// short submission let the H200's clock settle at 1530 of 1980 MHz), its
// time divided by the repeats; the rate is per submission.
func TestBenchSimDecodeRepeats(t *testing.T) {
	r := testGPU(t)
	c := simcase.Case{Tokens: 1000, Cfg: attention.Config{HeadDim: 64, KVHeads: 1, QHeads: 1, KBlockN: 64}}
	q0, qScale, kv, err := simcase.Inputs(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	trials, _ := batchTrials(t, kv, q0, 3, 1)
	b, err := r.BenchSimDecode(context.Background(), []SimJob{{Cfg: c.Cfg, QScale: qScale, KV: kv, Trials: trials}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d repeats of %v (%s), %.3g products/s", b.Repeats, b.Time, b.Source, b.Rate)
	if b.Repeats < 1 || b.Repeats > decodeBenchMaxSteps {
		t.Fatalf("repeats %d: want 1 … %d", b.Repeats, decodeBenchMaxSteps)
	}
	if run := b.Time * time.Duration(b.Repeats); run < decodeBenchWork/2 && b.Repeats < decodeBenchMaxSteps {
		t.Errorf("a timed run is %d × %v = %v of work, want about %v", b.Repeats, b.Time, run, decodeBenchWork)
	}
	if want := float64(b.Products) / b.Time.Seconds(); math.Abs(b.Rate-want) > 1e-9*want {
		t.Errorf("rate %g, want products / time %g", b.Rate, want)
	}
}
