package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockQuery is what the sampler asks nvidia-smi for, every
// clockPeriodMS: the SM and memory clocks, the power draw, the
// temperature, and the SM clock's maximum (to say how far below it a
// benchmark ran).
const (
	clockQuery    = "index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks.max.sm"
	clockPeriodMS = 200
)

// clockSample is one line of nvidia-smi: one GPU at one time (NaN where
// nvidia-smi printed [N/A]).
type clockSample struct {
	at                          time.Time
	gpu                         int
	sm, mem, power, temp, maxSM float64
}

// clocks samples the GPUs' clocks while gpucheck runs: nvidia-smi in its
// loop mode (-lms) when it is on the PATH. Without it, every window says
// so and names the adapter (WebGPU gives no clocks).
type clocks struct {
	mu      sync.Mutex
	samples []clockSample
	why     string // why there are no samples ("" while nvidia-smi runs)
	cmd     *exec.Cmd
	done    chan struct{}
}

// startClocks starts the sampler; stop ends it. adapter names the adapter
// for the report when nvidia-smi is missing.
func startClocks(ctx context.Context, adapter string) *clocks {
	c := &clocks{done: make(chan struct{})}
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		c.why = fmt.Sprintf("not measured: no nvidia-smi on the PATH, and WebGPU reports no clocks (adapter %s)", adapter)
		close(c.done)
		return c
	}
	cmd := exec.CommandContext(ctx, path, "--query-gpu="+clockQuery, "--format=csv,noheader,nounits", fmt.Sprintf("-lms=%d", clockPeriodMS))
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		c.why = fmt.Sprintf("not measured: nvidia-smi did not start (%v); adapter %s", err, adapter)
		close(c.done)
		return c
	}
	c.cmd = cmd
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s, ok := parseClockLine(sc.Text(), time.Now()); ok {
				c.mu.Lock()
				c.samples = append(c.samples, s)
				c.mu.Unlock()
			}
		}
		cmd.Wait()
	}()
	return c
}

// parseClockLine reads "0, 1980, 3201, 412.56, 45, 1980".
func parseClockLine(line string, at time.Time) (clockSample, bool) {
	f := strings.Split(line, ",")
	if len(f) != 6 {
		return clockSample{}, false
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return math.NaN()
		}
		return v
	}
	gpu, err := strconv.Atoi(strings.TrimSpace(f[0]))
	if err != nil {
		return clockSample{}, false
	}
	return clockSample{at: at, gpu: gpu, sm: num(f[1]), mem: num(f[2]), power: num(f[3]), temp: num(f[4]), maxSM: num(f[5])}, true
}

// latest is the benchmarks' clock probe (wgsl.ClockProbe): the newest
// sample's SM clock and maximum of the first GPU, when it is at most two
// sampling periods old.
func (c *clocks) latest() (sm, maxSM float64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.samples) - 1; i >= 0; i-- {
		s := c.samples[i]
		if time.Since(s.at) > 2*clockPeriodMS*time.Millisecond {
			return 0, 0, false
		}
		if s.gpu == 0 && !math.IsNaN(s.sm) && !math.IsNaN(s.maxSM) {
			return s.sm, s.maxSM, true
		}
	}
	return 0, 0, false
}

// stop ends the sampler (the nvidia-smi process gpucheck started).
func (c *clocks) stop() {
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Kill()
	}
	<-c.done
}

// Clocks is what the GPU ran at during one benchmark: per quantity the
// smallest, median and largest of the samples taken in its window (every
// GPU nvidia-smi lists; normally one), or why there are none.
type Clocks struct {
	Source  string `json:"source"`
	Samples int    `json:"samples"`
	SMMHz   Range  `json:"sm_mhz"`
	MaxSM   Num    `json:"sm_max_mhz"`
	MemMHz  Range  `json:"mem_mhz"`
	PowerW  Range  `json:"power_w"`
	TempC   Range  `json:"temperature_c"`
}

// Range is the smallest, median and largest of some samples.
type Range struct {
	Min    Num `json:"min"`
	Median Num `json:"median"`
	Max    Num `json:"max"`
}

func rangeOf(xs []float64) Range {
	xs = slices.DeleteFunc(xs, math.IsNaN)
	if len(xs) == 0 {
		return Range{Num(math.NaN()), Num(math.NaN()), Num(math.NaN())}
	}
	slices.Sort(xs)
	return Range{Num(xs[0]), Num(xs[len(xs)/2]), Num(xs[len(xs)-1])}
}

// window returns the clocks of the samples taken between from and to,
// widened by one sampling period each side so that a benchmark shorter
// than the period still gets the samples around it.
func (c *clocks) window(from, to time.Time) Clocks {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.why != "" {
		return Clocks{Source: c.why}
	}
	pad := clockPeriodMS * time.Millisecond
	var sm, mem, pw, tc []float64
	out := Clocks{Source: "nvidia-smi --query-gpu=" + clockQuery + fmt.Sprintf(" every %d ms", clockPeriodMS), MaxSM: Num(math.NaN())}
	for _, s := range c.samples {
		if s.at.Before(from.Add(-pad)) || s.at.After(to.Add(pad)) {
			continue
		}
		out.Samples++
		sm, mem, pw, tc = append(sm, s.sm), append(mem, s.mem), append(pw, s.power), append(tc, s.temp)
		out.MaxSM = Num(s.maxSM)
	}
	out.SMMHz, out.MemMHz, out.PowerW, out.TempC = rangeOf(sm), rangeOf(mem), rangeOf(pw), rangeOf(tc)
	return out
}

// String writes the clocks in one line.
func (k Clocks) String() string {
	if k.Samples == 0 {
		if strings.HasPrefix(k.Source, "not measured") {
			return "clocks " + k.Source
		}
		return "clocks: no nvidia-smi sample in the window"
	}
	r := func(x Range, unit string) string {
		if x.Min == x.Max {
			return fmt.Sprintf("%.0f %s", float64(x.Median), unit)
		}
		return fmt.Sprintf("%.0f %s (%.0f–%.0f)", float64(x.Median), unit, float64(x.Min), float64(x.Max))
	}
	return fmt.Sprintf("clocks: SM %s of max %.0f, memory %s, %s, %s (%d nvidia-smi samples)",
		r(k.SMMHz, "MHz"), float64(k.MaxSM), r(k.MemMHz, "MHz"), r(k.PowerW, "W"), r(k.TempC, "°C"), k.Samples)
}
