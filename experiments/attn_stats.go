package experiments

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fp8lab/fp8lab/sim"
)

// attnStatsProfile is a set of haystack statistics taken from published
// measurements: apply sets them on the task, source says where each value
// comes from (docs/real-stats.md gives the full derivations).
type attnStatsProfile struct {
	apply  func(t *attnNeedle)
	source []string
}

// attnStatsProfiles are the values of the stats parameter.
//
// llama31-8b: Llama-3/3.1-8B, head_dim 128. Every value is read off a
// published figure or derived from one (none from a table of numbers,
// none chosen by looking at a simulated FP8 result):
//   - score-std 1.5 nats: Gu et al., "When Attention Sink Emerges"
//     (arXiv 2410.10781, ICLR 2025) Fig. 2, LLaMA3-8B: the scaled logits of
//     the plotted head's ordinary keys span about −4.4 … +2.2 over 64
//     tokens, about ±2.2 standard deviations (read off the figure).
//   - value-std 0.354: the same figure, ‖v‖ ≈ 2–6 for ordinary tokens
//     (growing with depth); ‖v‖ = 4 over 128 channels.
//   - sinks 1, sink-logit 5 nats, sink-value 0.044: Gu et al. Table 1
//     (99 % of LLaMA3-8B heads put > 0.3 of the weight on token 0, T = 64);
//     Fig. 2: cos(q, k₁) ≈ 0.5 against ≈ 0 for other keys, a scaled-logit
//     gap of about 4–6 nats; ‖v₁‖ ≈ 0.5 (0.1–0.8), i.e. 0.5/√128 per
//     channel.
//   - k-band 48, k-band-mean 8: Jin et al., "Massive Values in
//     Self-Attention Modules are the Key to Contextual Knowledge
//     Understanding" (arXiv 2502.01563, ICML 2025), appendix figure
//     Llama3_layer_10_KEY (github.com/MingyuJ666/Rope_with_LLM): the large
//     |k| sit in the low-frequency bands (dims ≈ 40–64 and ≈ 104–128) of
//     every token, maxima 10–17.5 against a bulk of 2–4 (offset 8 = a
//     maximum near 13 less the bulk's spread); KVQuant (arXiv 2401.18079)
//     App. G: such channels keep one sign across tokens. This layer's
//     keys are larger than Gu et al.'s ‖k‖ ≈ 20: the two figures show
//     different layers, and the offset shifts every logit alike, so it acts
//     only through the cache's scales and rounding.
//
// Not published, left to the user: the needle's margin (set it so that
// bf16 retrieves as the published bf16 baseline does), the values' mean
// (value-mean: no per-channel V means of a Llama model are published) and
// the code's amplitude.
var attnStatsProfiles = map[string]attnStatsProfile{
	"synthetic": {source: []string{"the parameters as given"}},
	"llama31-8b": {
		apply: func(t *attnNeedle) {
			t.scoreStd, t.valueStd = 1.5, 0.354
			t.sinks, t.sinkLogit, t.sinkValue = 1, 5, 0.044
			t.kBand, t.kBandMean = 48*t.d/128, 8
		},
		source: []string{
			"score-std 1.5, value-std 0.354, sink-logit 5, sink-value 0.044: read off Gu et al. arXiv 2410.10781 Fig. 2 (LLaMA3-8B)",
			"sinks 1: Gu et al. Table 1 (99% of LLaMA3-8B heads are sink heads)",
			"k-band 48 × 8: read off Jin et al. arXiv 2502.01563 appendix Llama3_layer_10_KEY; KVQuant App. G (one sign per channel)",
			"not published (as given): margin, value-mean, amp",
		},
	},
}

func attnStatsNames() []string {
	var names []string
	for n := range attnStatsProfiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// noteSetup notes, for a run of the needle task, where its kernels run
// (device gpu) and, when they are not the plain synthetic ones, the
// haystack's statistics with their sources. With a GPU it waits for the
// device (its name): the experiments call it after their first batch of
// trials, so that the drawing and the references start while the device
// opens.
func (t attnNeedle) noteSetup(run *sim.Run, runs []attnNeedleRun) {
	if note := t.deviceNote(runs); note != "" {
		run.Note(note)
	}
	if t.stats != "synthetic" || t.kBand > 0 {
		run.Note(t.statsNote())
	}
}

// statsNote describes the task's statistics for a run's notes.
func (t attnNeedle) statsNote() string {
	p := attnStatsProfiles[t.stats]
	return fmt.Sprintf("stats %s: score-std %g, value-mean %g, value-std %g, sinks %d (logit %g, value %g), K band %d channels × %g, margin %g, amp %g\n  %s",
		t.stats, t.scoreStd, t.valueMean, t.valueStd, t.sinks, t.sinkLogit, t.sinkValue, t.kBand, t.kBandMean, t.margin, t.amp,
		strings.Join(p.source, "\n  "))
}
