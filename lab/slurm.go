package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/lab/sweep"
	"github.com/fp8lab/fp8lab/sim"
)

// SlurmOptions let the lab run sweeps on a Slurm cluster as job arrays
// (sbatch --array): task i runs `lab run NAME <its flags> -seed S -lab URL
// -sweep ID/N/KEY`, which streams the run into this lab like any terminal
// run; KEY is run N's credential (an HMAC under the notebook's secret), so
// that no other client can stand in for it.
// A cancelled sweep gets scancel; the tasks' states are read with squeue
// (and sacct where accounting is enabled, once squeue has forgotten the
// job). Runs that did not end done when their array has ended are
// submitted again in a new array, up to Attempts times; the sweep then
// ends failed with the count.
type SlurmOptions struct {
	// Lab is the lab program the tasks run (default: this program, from
	// os.Executable). It must be reachable at the same path on the nodes.
	Lab string
	// LabURL is where the tasks stream their runs (default http:// and the
	// lab's Addr). On a real cluster the lab must listen on an address the
	// nodes reach (lab serve -addr), which exposes it to that network.
	LabURL string
	// Dir holds the batch scripts, task lists and the tasks' output
	// (default: slurm/ in the working folder); it must be shared with the
	// nodes.
	Dir string
	// Partition, when set, is passed as --partition.
	Partition string
	// MinRuns: a sweep of more runs than this goes to Slurm when the user
	// asks for executor auto (default 4 × the pool's workers).
	MinRuns int
	// Parallel, when > 0, limits the tasks running at once (--array=…%N).
	Parallel int
	// Attempts is how many arrays a sweep may submit (default 2).
	Attempts int
	// Poll is the interval of squeue (default 1 s).
	Poll time.Duration
	// Bin is the folder of sbatch, squeue, scancel and sacct (default:
	// found in PATH).
	Bin string
	// Env is added to the tasks' environment (--export=ALL,…), e.g.
	// SLURM_CONF of a private configuration.
	Env []string
}

// maxArray is the most tasks of one array: Slurm's default MaxArraySize is
// 1001 (indices 0 … 1000).
const maxArray = 1000

func (o *SlurmOptions) minRuns(workers int) int {
	if o.MinRuns > 0 {
		return o.MinRuns
	}
	return 4 * workers
}

func (o *SlurmOptions) cmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	if o.Bin != "" {
		name = filepath.Join(o.Bin, name)
	}
	c := exec.CommandContext(ctx, name, args...)
	c.Env = append(os.Environ(), o.Env...)
	c.WaitDelay = 5 * time.Second
	return c
}

// run runs a Slurm command and returns its standard output; its error
// includes what the command wrote on standard error.
func (o *SlurmOptions) run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := o.cmd(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// scancel cancels the jobs (the submission markers "|" of Sweep.SlurmJobs
// are skipped).
func (o *SlurmOptions) scancel(ctx context.Context, jobs []string) error {
	ids := slices.DeleteFunc(slices.Clone(jobs), func(j string) bool { return j == "|" })
	if len(ids) == 0 {
		return nil
	}
	_, err := o.run(ctx, "scancel", ids...)
	return err
}

// finalSlurm are the states in which a task has ended.
var finalSlurm = []string{"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED"}

// taskStates returns the states of the jobs' array tasks, "JOB_TASK" →
// STATE (a pending range such as 12_[3-9] is one entry), from squeue, or
// from sacct when squeue no longer knows them. ok is false when neither
// knows the jobs any more (they ended long ago).
func (o *SlurmOptions) taskStates(ctx context.Context, jobs []string) (map[string]string, bool, error) {
	out, err := o.run(ctx, "squeue", "-h", "-t", "all", "-j", strings.Join(jobs, ","), "-o", "%i|%T")
	states := map[string]string{}
	if err == nil {
		parseStates(out, states)
		if len(states) > 0 {
			return states, true, nil
		}
	} else if !strings.Contains(err.Error(), "Invalid job id") {
		return nil, false, err
	}
	out, err = o.run(ctx, "sacct", "-n", "-P", "-X", "-j", strings.Join(jobs, ","), "-o", "JobID,State")
	if err != nil { // accounting disabled: the jobs have left squeue, so they ended
		return states, false, nil
	}
	parseStates(out, states)
	return states, len(states) > 0, nil
}

// parseStates reads "ID|STATE" lines (sacct writes "CANCELLED by 0").
func parseStates(out string, into map[string]string) {
	for _, line := range strings.Split(out, "\n") {
		id, st, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok || id == "" {
			continue
		}
		st, _, _ = strings.Cut(st, " ")
		into[id] = st
	}
}

// allEnded reports whether every task has ended.
func allEnded(states map[string]string) bool {
	for _, st := range states {
		if !slices.Contains(finalSlurm, st) {
			return false
		}
	}
	return true
}

// runSlurm executes the sweep's missing runs as Slurm arrays and follows
// them until they end, the sweep is cancelled or the lab shuts down (the
// arrays go on; a restarted lab follows them again).
func (sw *sweeper) runSlurm(ctx context.Context, rec notebook.Sweep, g *sweep.Grid) {
	o := sw.s.opts.Slurm
	if o == nil {
		sw.end(rec.ID, notebook.Failed, "the sweep runs on Slurm, and this lab was started without it (lab serve -slurm)")
		return
	}
	attempts := o.Attempts
	if attempts <= 0 {
		attempts = 2
	}
	poll := o.Poll
	if poll <= 0 {
		poll = time.Second
	}
	defer func() {
		sw.mu.Lock()
		delete(sw.tasks, rec.ID)
		sw.mu.Unlock()
	}()
	jobs := slices.Clone(rec.SlurmJobs)
	submitted := len(jobs) > 0 // after a restart: follow the arrays of the last submission
	for {
		if submitted {
			if !sw.follow(ctx, rec.ID, lastSubmission(jobs), poll) {
				return
			}
			// Give the last tasks' final events a moment to arrive.
			select {
			case <-time.After(poll):
			case <-ctx.Done():
				return
			}
		}
		done, err := sw.doneRuns(rec.ID)
		if err != nil {
			sw.end(rec.ID, notebook.Failed, err.Error())
			return
		}
		var missing []int
		for i := range g.Len() {
			if !done[i] {
				missing = append(missing, i)
			}
		}
		if len(missing) == 0 {
			sw.end(rec.ID, notebook.Done, "")
			return
		}
		cur, err := sw.store.GetSweep(rec.ID)
		if err != nil || cur.State != notebook.Running {
			return
		}
		if countSubmissions(cur.SlurmJobs) >= attempts {
			sw.end(rec.ID, notebook.Failed, fmt.Sprintf("%d of %d runs did not end done after %d Slurm submissions (task output in %s)", len(missing), g.Len(), attempts, o.dir()))
			return
		}
		ids, err := sw.submitArrays(ctx, rec, g, missing, countSubmissions(cur.SlurmJobs))
		if err != nil {
			sw.end(rec.ID, notebook.Failed, err.Error())
			return
		}
		jobs = append(slices.Clone(cur.SlurmJobs), ids...)
		jobs = append(jobs, "|") // marks the end of a submission
		if err := sw.store.UpdateSweep(rec.ID, func(r *notebook.Sweep) error { r.SlurmJobs = jobs; return nil }); err != nil {
			sw.s.log.Error("sweep: recording Slurm jobs", "sweep", rec.ID, "err", err)
		}
		submitted = true
	}
}

// SlurmJobs holds the job ids of every submission, each submission ended
// by "|".
func countSubmissions(jobs []string) int {
	n := 0
	for _, j := range jobs {
		if j == "|" {
			n++
		}
	}
	return n
}

func lastSubmission(jobs []string) []string {
	end := len(jobs)
	if end > 0 && jobs[end-1] == "|" {
		end--
	}
	start := end
	for start > 0 && jobs[start-1] != "|" {
		start--
	}
	return jobs[start:end]
}

func (o *SlurmOptions) dir() string {
	if o.Dir != "" {
		return o.Dir
	}
	return "slurm"
}

// follow polls the jobs' states until every task has ended (true), or ctx
// ends (false).
func (sw *sweeper) follow(ctx context.Context, id string, jobs []string, poll time.Duration) bool {
	o := sw.s.opts.Slurm
	for {
		states, known, err := o.taskStates(ctx, jobs)
		if err != nil {
			sw.s.log.Warn("sweep: squeue", "sweep", id, "err", err)
		} else {
			sw.mu.Lock()
			sw.tasks[id] = states
			sw.mu.Unlock()
			if !known || allEnded(states) {
				return true
			}
		}
		select {
		case <-time.After(poll):
		case <-ctx.Done():
			return false
		}
	}
}

// submitArrays writes the task list and batch script of the runs missing
// and submits them as arrays of at most maxArray tasks; it returns the job
// ids.
func (sw *sweeper) submitArrays(ctx context.Context, rec notebook.Sweep, g *sweep.Grid, missing []int, attempt int) ([]string, error) {
	o := sw.s.opts.Slurm
	labBin := o.Lab
	if labBin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("slurm: the lab program: %w", err)
		}
		labBin = exe
	}
	labURL := o.LabURL
	if labURL == "" {
		labURL = "http://" + sw.s.opts.Addr
	}
	dir, err := filepath.Abs(filepath.Join(o.dir(), "sweep-"+rec.ID))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("slurm: %w", err)
	}
	var ids []string
	for part := 0; len(missing) > 0; part++ {
		chunk := missing[:min(len(missing), maxArray)]
		missing = missing[len(chunk):]
		var tasks strings.Builder
		for _, n := range chunk {
			values, seed, err := g.Run(n)
			if err != nil {
				return ids, err
			}
			key, err := sw.sweepRunKey(rec.ID, n)
			if err != nil {
				return ids, err
			}
			line := fmt.Sprintf("%s %s -seed=%d -lab=%s -sweep=%s/%d/%s -quiet", rec.Experiment, taskFlags(values), seed, labURL, rec.ID, n, key)
			if strings.ContainsAny(line, "'\"\\$`;&|<>(){}*?[]~\n") {
				return ids, fmt.Errorf("slurm: run %d's arguments hold a shell character: %q", n, line)
			}
			tasks.WriteString(line + "\n")
		}
		name := fmt.Sprintf("a%d-%d", attempt, part)
		taskFile := filepath.Join(dir, name+".tasks")
		// The lines hold the runs' keys: readable by this user only.
		if err := os.WriteFile(taskFile, []byte(tasks.String()), 0o600); err != nil {
			return ids, fmt.Errorf("slurm: %w", err)
		}
		script := fmt.Sprintf(`#!/bin/sh
# fp8lab sweep %s: one array task per run; task i runs line i+1 of %s.
set -eu
args=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" %s)
exec %s run $args
`, rec.ID, taskFile, shellQuote(taskFile), shellQuote(labBin))
		scriptFile := filepath.Join(dir, name+".sh")
		if err := os.WriteFile(scriptFile, []byte(script), 0o755); err != nil {
			return ids, fmt.Errorf("slurm: %w", err)
		}
		array := fmt.Sprintf("0-%d", len(chunk)-1)
		if o.Parallel > 0 {
			array += "%" + strconv.Itoa(o.Parallel)
		}
		args := []string{"--parsable", "--array=" + array, "--job-name=fp8lab-sweep-" + rec.ID,
			"--output=" + filepath.Join(dir, "slurm-%A_%a.out"), "--export=ALL"}
		if o.Partition != "" {
			args = append(args, "--partition="+o.Partition)
		}
		out, err := o.run(ctx, "sbatch", append(args, scriptFile)...)
		if err != nil {
			return ids, fmt.Errorf("slurm: %w", err)
		}
		job, _, _ := strings.Cut(strings.TrimSpace(out), ";")
		if _, err := strconv.ParseUint(job, 10, 64); err != nil {
			return ids, fmt.Errorf("slurm: sbatch answered %q, not a job id", out)
		}
		sw.s.log.Info("sweep submitted to Slurm", "sweep", rec.ID, "job", job, "tasks", len(chunk))
		ids = append(ids, job)
	}
	return ids, nil
}

// taskFlags writes values as `lab run` flags, -name=value, the one form
// every kind takes (a bool flag reads "-fused false" as -fused and a stray
// argument).
func taskFlags(values sim.Values) string {
	var b strings.Builder
	for i, p := range values.Params() {
		if i > 0 {
			b.WriteByte(' ')
		}
		v, _ := values.Get(p.Name)
		fmt.Fprintf(&b, "-%s=%s", p.Name, p.FormatValue(v))
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
