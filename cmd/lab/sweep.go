package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	labserver "github.com/fp8lab/fp8lab/lab"
	"github.com/fp8lab/fp8lab/lab/sweep"
	"github.com/fp8lab/fp8lab/sim"
)

const sweepUsage = "usage: lab sweep NAME [-param v1,v2 ...] [-seeds 1..20] [-executor auto|pool|slurm] [-lab URL]\n" +
	"                 [-group p,q] [-csv | -json] [-title T] [-tags a,b] [-detach] [-quiet]"

// sweepOptions are the flags of `lab sweep` that are not parameters.
var sweepOptions = []string{"seeds", "executor", "lab", "group", "csv", "json", "title", "tags", "detach", "quiet", "h", "help"}

// cmdSweep runs `lab sweep NAME -param v1,v2 -other a,b -seeds 1..20`: it
// asks the lab at -lab (default http://127.0.0.1:8080) to run the grid of
// every parameter given several values (a list parameter's alternatives
// are separated by ';') times the seeds, shows the progress on stderr and
// writes the aggregate — per grid point (or per -group) the mean, standard
// error and 95 % confidence interval of every summary value — as a table,
// or all of it (series too) as -csv or -json. The sweep lives in the lab:
// it survives this command (-detach returns at once) and a restart of the
// lab; an interrupt (Ctrl-C) cancels it unless -detach was given.
func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprintln(stdout, sweepUsage)
			return nil
		}
		return fmt.Errorf("%s\n(the experiment name comes first; lab list experiments shows them)", sweepUsage)
	}
	name := args[0]
	exp, err := sim.Lookup(name)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("lab sweep "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	given := map[string]string{}
	for _, p := range exp.Params() {
		for _, o := range sweepOptions {
			if p.Name == o {
				return fmt.Errorf("experiment %q: parameter %q clashes with the option -%s", name, p.Name, o)
			}
		}
		fs.Var(&paramFlag{p: p, set: given}, p.Name, p.Doc)
	}
	seeds := fs.String("seeds", "1", "seeds: a list and ranges, e.g. 1..20 or 1,2,5..7")
	executor := fs.String("executor", "auto", "where the runs execute: auto (Slurm when the lab has it and the sweep outgrows its pool), pool or slurm")
	labURL := fs.String("lab", "http://127.0.0.1:8080", "the lab that keeps and runs the sweep")
	group := fs.String("group", "", "aggregate by these swept parameters (default: every swept parameter)")
	csvOut := fs.Bool("csv", false, "write the whole aggregate (summaries and series) as CSV")
	jsonOut := fs.Bool("json", false, "write the whole aggregate as JSON")
	title := fs.String("title", "", "title of the sweep and its runs")
	tags := fs.String("tags", "", "tags of the sweep's runs, comma-separated")
	detach := fs.Bool("detach", false, "start the sweep and return; it goes on in the lab")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, sweepUsage)
			return nil
		}
		return fmt.Errorf("lab sweep %s: %v (lab run %s -h lists the parameters)", name, err, name)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("lab sweep %s: unexpected argument %q", name, fs.Arg(0))
	}
	if *csvOut && *jsonOut {
		return errors.New("lab sweep: -csv and -json exclude each other")
	}
	body, err := sweepBody(exp, given, *seeds)
	if err != nil {
		return err
	}
	body["executor"], body["title"] = *executor, *title
	if *tags != "" {
		body["tags"] = strings.Split(*tags, ",")
	}
	c := &labHTTP{base: strings.TrimRight(*labURL, "/"), client: &http.Client{Timeout: 60 * time.Second}}
	var rec struct {
		ID   string `json:"id"`
		Runs int    `json:"runs"`
		Exec string `json:"executor"`
	}
	if err := c.do(ctx, "POST", "/api/sweeps", body, &rec); err != nil {
		return err
	}
	if !*quiet || *detach {
		fmt.Fprintf(stderr, "sweep %s: %d runs of %s on the %s (%s/#sweep/%s)\n", rec.ID, rec.Runs, name, rec.Exec, c.base, rec.ID)
	}
	if *detach {
		fmt.Fprintln(stdout, rec.ID)
		return nil
	}
	state, err := followSweep(ctx, c, rec.ID, stderr, *quiet)
	if err != nil {
		if ctx.Err() != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if cerr := c.do(cctx, "POST", "/api/sweeps/"+rec.ID+"/cancel", nil, nil); cerr == nil {
				fmt.Fprintf(stderr, "sweep %s cancelled\n", rec.ID)
			}
		}
		return err
	}
	q := url.Values{}
	if *group != "" {
		q.Set("group", *group)
	}
	switch {
	case *csvOut:
		q.Set("format", "csv")
		b, err := c.raw(ctx, "/api/sweeps/"+rec.ID+"/aggregate?"+q.Encode())
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return sweepEnd(err, rec.ID, state)
	case *jsonOut:
		b, err := c.raw(ctx, "/api/sweeps/"+rec.ID+"/aggregate?"+q.Encode())
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return sweepEnd(err, rec.ID, state)
	}
	var agg struct {
		Aggregate struct {
			GroupBy  []string          `json:"group_by"`
			Summary  []string          `json:"summary"`
			Units    map[string]string `json:"units"`
			Excluded []string          `json:"excluded"`
			Groups   []struct {
				Label   string `json:"label"`
				Summary map[string]struct {
					N      int      `json:"n"`
					Mean   *float64 `json:"mean"`
					Lo     *float64 `json:"ci95_lo"`
					Hi     *float64 `json:"ci95_hi"`
					Method string   `json:"ci95_method"`
				} `json:"summary"`
			} `json:"groups"`
		} `json:"aggregate"`
	}
	if err := c.do(ctx, "GET", "/api/sweeps/"+rec.ID+"/aggregate?"+q.Encode(), nil, &agg); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "group\tsummary\tn\tmean\t95% CI\tunit\tinterval")
	var methods []string
	for _, g := range agg.Aggregate.Groups {
		for _, n := range agg.Aggregate.Summary {
			s, ok := g.Summary[n]
			if !ok {
				continue
			}
			m := "–"
			if s.Method != "" {
				i := slices.Index(methods, s.Method)
				if i < 0 {
					i, methods = len(methods), append(methods, s.Method)
				}
				m = fmt.Sprintf("[%d]", i+1)
			}
			unit := agg.Aggregate.Units["summary:"+n]
			if unit == "" {
				unit = "(not declared)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t[%s, %s]\t%s\t%s\n", g.Label, n, s.N, fmtF(s.Mean), fmtF(s.Lo), fmtF(s.Hi), unit, m)
		}
	}
	tw.Flush()
	for i, m := range methods {
		fmt.Fprintf(stdout, "[%d] %s\n", i+1, m)
	}
	if n := len(agg.Aggregate.Excluded); n > 0 {
		fmt.Fprintf(stdout, "\n%d runs not aggregated (not done), e.g. %s\n", n, agg.Aggregate.Excluded[0])
	}
	fmt.Fprintf(stdout, "\nseries and CSV/JSON: %s/api/sweeps/%s/aggregate?format=csv\n", c.base, rec.ID)
	return sweepEnd(nil, rec.ID, state)
}

func sweepEnd(err error, id, state string) error {
	if err == nil && state != "done" {
		return fmt.Errorf("sweep %s ended %s", id, state)
	}
	return err
}

func fmtF(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.4g", *p)
}

// sweepBody builds the POST /api/sweeps body from the flags: a parameter
// given several values is an axis, one value is fixed.
func sweepBody(exp sim.Experiment, given map[string]string, seeds string) (map[string]any, error) {
	fixed := map[string]any{}
	axes := []sweep.Axis{}
	for _, p := range exp.Params() {
		text, ok := given[p.Name]
		if !ok {
			continue
		}
		vals, err := sweep.ParseFlagValues(p, text)
		if err != nil {
			return nil, err
		}
		if len(vals) == 1 {
			fixed[p.Name] = vals[0]
			continue
		}
		axes = append(axes, sweep.Axis{Name: p.Name, Values: vals})
	}
	seedList, err := sweep.ParseSeeds(seeds)
	if err != nil {
		return nil, err
	}
	return map[string]any{"experiment": exp.Name(), "params": fixed, "axes": axes, "seeds": seedList}, nil
}

// followSweep polls the sweep until it ends, drawing its progress; it
// returns the end state.
func followSweep(ctx context.Context, c *labHTTP, id string, stderr io.Writer, quiet bool) (string, error) {
	type status struct {
		State  string         `json:"state"`
		Error  string         `json:"error"`
		Runs   int            `json:"runs"`
		States map[string]int `json:"states"`
	}
	start := time.Now()
	last := ""
	for {
		var st status // fresh: decoding into the last answer would keep its map's keys
		if err := c.do(ctx, "GET", "/api/sweeps/"+id, nil, &st); err != nil {
			return "", err
		}
		line := fmt.Sprintf("\r%d/%d done, %d running, %d queued, %d failed · %.0f s   ", st.States["done"], st.Runs,
			st.States["running"], st.States["queued"]+st.States["missing"], st.States["failed"]+st.States["interrupted"]+st.States["cancelled"], time.Since(start).Seconds())
		if !quiet && line != last {
			fmt.Fprint(stderr, line)
			last = line
		}
		if st.State != "running" {
			if !quiet {
				fmt.Fprintln(stderr)
				if st.Error != "" {
					fmt.Fprintf(stderr, "sweep %s: %s\n", id, st.Error)
				}
			}
			return st.State, nil
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			if !quiet {
				fmt.Fprintln(stderr)
			}
			return "", ctx.Err()
		}
	}
}

// labHTTP is a small JSON client of the lab's API.
type labHTTP struct {
	base   string
	client *http.Client
}

func (c *labHTTP) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("lab %s: %w", c.base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("lab %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("lab %s: %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("lab: %s (HTTP %d)", e.Error, resp.StatusCode)
		}
		return fmt.Errorf("lab %s%s: HTTP %d", c.base, path, resp.StatusCode)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("lab %s%s: %w", c.base, path, err)
		}
	}
	return nil
}

func (c *labHTTP) raw(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("lab %s%s: HTTP %d: %s", c.base, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

// slurmFlags adds the Slurm flags of `lab serve` to fs and returns the
// function that builds the options after parsing (nil without -slurm).
func slurmFlags(fs *flag.FlagSet) func() *labserver.SlurmOptions {
	on := fs.Bool("slurm", false, "run sweeps that outgrow the pool as Slurm job arrays (sbatch --array)")
	dir := fs.String("slurm-dir", "slurm", "folder of the Slurm scripts and task output, shared with the nodes")
	partition := fs.String("slurm-partition", "", "Slurm partition (default: the cluster's default)")
	minRuns := fs.Int("slurm-min-runs", 0, "sweeps of more runs than this go to Slurm (default 4 × workers)")
	parallel := fs.Int("slurm-parallel", 0, "most tasks of one sweep running at once (0: no limit)")
	labURL := fs.String("slurm-lab-url", "", "URL the tasks stream to (default http:// and -addr); the nodes must reach it")
	return func() *labserver.SlurmOptions {
		if !*on {
			return nil
		}
		return &labserver.SlurmOptions{Dir: *dir, Partition: *partition, MinRuns: max(*minRuns, 0), Parallel: max(*parallel, 0), LabURL: *labURL}
	}
}
