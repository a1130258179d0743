package lab

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/lab/sweep"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/web"
)

// exportPage is how many points an export or a report reads at a time:
// an export never holds more than one page of points.
const exportPage = 10000

// Limits of the exports that cannot be written as they are read (vars for
// the tests).
var (
	// maxReportPoints is the most points an HTML report (of one run or
	// several) draws: go-echarts renders the page in memory, so a report
	// past it is refused with the reason (the JSON and CSV exports stream
	// any number).
	maxReportPoints int64 = 200000
	// maxCSVColumns is the most extra-value columns of a CSV export.
	maxCSVColumns = 1024
)

// errTooBig marks an export refused for its size (413 with the reason).
type errTooBig struct{ msg string }

func (e *errTooBig) Error() string { return e.msg }

// eachPoint calls fn on the points of run id from 0 up to (not including)
// end, a page at a time, from the live log or the notebook.
func (s *Server) eachPoint(id string, end int64, fn func([]sim.Point) error) error {
	for from := int64(0); from < end; {
		pts, err := s.points(id, from, int(min(exportPage, end-from)))
		if err != nil {
			return err
		}
		if len(pts) == 0 {
			return nil
		}
		if err := fn(pts); err != nil {
			return err
		}
		from += int64(len(pts))
	}
	return nil
}

// reportPoints returns the points of run for a report: series, x and y
// only, at most maxReportPoints in all with the count given as already.
func (s *Server) reportPoints(run notebook.Run, already int64) ([]sim.Point, error) {
	if already+run.Points > maxReportPoints {
		return nil, &errTooBig{fmt.Sprintf("the report would draw %d points; an HTML report draws at most %d (export JSON or CSV instead, which stream any number)", already+run.Points, maxReportPoints)}
	}
	out := make([]sim.Point, 0, run.Points)
	err := s.eachPoint(run.ID, run.Points, func(pts []sim.Point) error {
		for _, p := range pts {
			out = append(out, sim.Point{Series: p.Series, X: p.X, Y: p.Y})
		}
		return nil
	})
	return out, err
}

func exportName(run notebook.Run, ext string) string {
	return fmt.Sprintf("fp8lab-run-%s-%s.%s", run.ID, run.Experiment, ext)
}

// handleExport answers GET /api/runs/{id}/export?format=json|csv|html
// [&inline=0]: the run as a file to download. JSON holds the record and
// every point; CSV one row per point (series, x, y, then one column per
// extra value; NaN, +Inf, -Inf spelled so; text that a spreadsheet would
// read as a formula escaped); HTML a standalone report drawn with
// go-echarts, ECharts inlined (or, with inline=0, loaded from this lab's
// /vendor/echarts/). JSON and CSV are written as the points are read, a
// page at a time, so an export holds one page of points whatever the run's
// size; the points are those the run had when the export began.
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "json"
	}
	if format != "json" && format != "csv" && format != "html" {
		writeError(w, http.StatusBadRequest, errorf("format %q: want json, csv or html", format))
		return
	}
	inline, err := inlineParam(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	run, err := s.getRun(id)
	if err != nil {
		s.writeRunError(w, id, err)
		return
	}
	disp := "attachment"
	if format == "html" && r.URL.Query().Get("download") != "1" {
		disp = "inline"
	}
	setDisposition := func() {
		w.Header().Set("Content-Disposition", fmt.Sprintf("%s; filename=%q", disp, exportName(run, format)))
	}
	switch format {
	case "json":
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		setDisposition()
		err = s.writeExportJSON(w, run)
	case "csv":
		var extra []string
		if extra, err = s.csvColumns(run); err != nil {
			s.writeExportError(w, id, err)
			return
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		setDisposition()
		err = s.writeCSV(w, run, extra)
	case "html":
		var pts []sim.Point
		if pts, err = s.reportPoints(run, 0); err != nil {
			s.writeExportError(w, id, err)
			return
		}
		var buf bytes.Buffer
		if err := writeReport(&buf, []reportRun{{run, pts}}, inline); err != nil {
			s.writeExportError(w, id, err)
			return
		}
		setDisposition()
		writeHTMLReport(w, buf.Bytes())
		return
	}
	if err != nil {
		// The answer has begun: cut the connection, so that the client sees
		// a broken download rather than a complete-looking partial file.
		s.log.Error("export", "run", id, "format", format, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// writeExportError answers an export that could not begin.
func (s *Server) writeExportError(w http.ResponseWriter, id string, err error) {
	var big *errTooBig
	if errors.As(err, &big) {
		writeError(w, http.StatusRequestEntityTooLarge, err)
		return
	}
	s.writeRunError(w, id, err)
}

func inlineParam(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get("inline"); v {
	case "", "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	default:
		return false, errorf("inline %q: want 1 or 0", v)
	}
}

// writeExportJSON writes {"run": RUN, "chart": CHART, "points": [...]}, a
// page of points at a time; "chart" (the experiment's declaration: the
// quantities and units of the points and the summary) only for an
// experiment the lab knows.
func (s *Server) writeExportJSON(w io.Writer, run notebook.Run) error {
	rb, err := json.Marshal(run)
	if err != nil {
		return err
	}
	b := append([]byte(`{"run":`), rb...)
	if ch, ok := chartOfRun(run); ok { // the quantities and units of the points and the summary
		cb, err := json.Marshal(ch)
		if err != nil {
			return err
		}
		b = append(append(b, `,"chart":`...), cb...)
	}
	b = append(b, `,"points":[`...)
	first := true
	err = s.eachPoint(run.ID, run.Points, func(pts []sim.Point) error {
		for _, p := range pts {
			if !first {
				b = append(b, ',')
			}
			first = false
			page := sim.AppendPointsJSON(nil, []sim.Point{p})
			b = append(b, page[1:len(page)-1]...)
		}
		_, err := w.Write(b)
		b = b[:0]
		return err
	})
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, "]}\n"...))
	return err
}

// reproduceOf is the run's reproduce line: the lab's (sim.Reproduce) when
// it has one, else built from the recorded flags.
func reproduceOf(run notebook.Run) string {
	if run.Reproduce != "" {
		return run.Reproduce
	}
	return strings.Join(strings.Fields(fmt.Sprintf("lab run %s %s -seed %d", run.Experiment, run.Flags, run.Seed)), " ")
}

func formatCSV(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// csvText escapes a text cell (a series or an extra value's name) that a
// spreadsheet program would read as a formula: see [sweep.CSVText], which
// the sweep aggregate's CSV uses too.
func csvText(s string) string { return sweep.CSVText(s) }

// csvColumns returns the names of the run's extra values, sorted, read a
// page at a time; more than maxCSVColumns is an errTooBig.
func (s *Server) csvColumns(run notebook.Run) ([]string, error) {
	keys := map[string]bool{}
	err := s.eachPoint(run.ID, run.Points, func(pts []sim.Point) error {
		for _, p := range pts {
			for k := range p.Extra {
				keys[k] = true
			}
		}
		if len(keys) > maxCSVColumns {
			return &errTooBig{fmt.Sprintf("the run's points have more than %d different extra values; a CSV export has at most %d columns (export JSON instead)", maxCSVColumns, maxCSVColumns)}
		}
		return nil
	})
	return slices.Sorted(maps.Keys(keys)), err
}

// chartOfRun returns the declared chart of the run's experiment, and
// false when the lab does not know it.
func chartOfRun(run notebook.Run) (sim.Chart, bool) {
	e, err := sim.Lookup(run.Experiment)
	if err != nil || !run.Registered {
		return sim.Chart{}, false
	}
	c, ok := e.(sim.Charter)
	if !ok {
		return sim.Chart{}, false
	}
	return c.Chart(), true
}

// csvPreamble returns the lines before a run's CSV header, each one cell
// starting with "# ": the run and how many lines precede the header (for
// pandas' skiprows), its reproduce line, parameters, seed and build, and
// the quantity and unit of every column the experiment declares.
func csvPreamble(run notebook.Run, extra []string) []string {
	params, _ := json.Marshal(run.Params)
	lines := []string{
		"reproduce: " + reproduceOf(run),
		"params: " + string(params) + "; seed: " + strconv.FormatUint(run.Seed, 10),
		"build: fp8lab " + strings.TrimSpace(run.Version+" "+run.Revision) + "; " + strings.TrimSpace(run.GoVersion+" "+run.Platform) +
			"; bindings: " + run.Bindings + "; device: " + run.Device + "; origin: " + string(run.Origin),
	}
	if ch, ok := chartOfRun(run); ok {
		cols := []string{"x = " + ch.X.Label(), "y = " + ch.Y.Label()}
		if ch.Y2 != nil {
			cols[1] += " (series on the right axis: " + ch.Y2.Label() + ")"
		}
		for _, k := range extra {
			if f, ok := ch.FieldOf(k); ok && k != "x" && k != "y" {
				cols = append(cols, k+" = "+f.Axis.Label())
			} else if k == ch.Error {
				cols = append(cols, k+" = standard error of y ("+ch.Y.Unit+")")
			} else {
				cols = append(cols, k+" = (not declared by the experiment)")
			}
		}
		lines = append(lines, "columns: "+strings.Join(cols, "; "))
	} else {
		lines = append(lines, "columns: the lab does not know experiment "+run.Experiment+": no units")
	}
	head := fmt.Sprintf("fp8lab run %s of %s (%s): %d lines before the header (pandas: skiprows=%d)", run.ID, run.Experiment, run.State, len(lines)+1, len(lines)+1)
	out := append([]string{head}, lines...)
	for i, l := range out {
		out[i] = "# " + l
	}
	return out
}

// writeCSV writes the preamble (csvPreamble), the header and one row per
// point, a page at a time.
func (s *Server) writeCSV(w io.Writer, run notebook.Run, extra []string) error {
	cw := csv.NewWriter(w)
	for _, l := range csvPreamble(run, extra) {
		cw.Write([]string{l})
	}
	head := []string{"series", "x", "y"}
	for _, k := range extra {
		head = append(head, csvText(k))
	}
	cw.Write(head)
	row := make([]string, 3+len(extra))
	err := s.eachPoint(run.ID, run.Points, func(pts []sim.Point) error {
		for _, p := range pts {
			row[0], row[1], row[2] = csvText(p.Series), formatCSV(p.X), formatCSV(p.Y)
			for i, k := range extra {
				row[3+i] = ""
				if v, ok := p.Extra[k]; ok {
					row[3+i] = formatCSV(v)
				}
			}
			cw.Write(row)
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// maxReportRuns is the most runs one report compares.
const maxReportRuns = 20

// handleReport answers GET /api/report?runs=ID,ID,…[&inline=0]: one
// standalone HTML report overlaying the runs, for comparison. A run named
// twice is drawn once; the runs together may hold at most maxReportPoints
// points.
func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	var ids []string
	for _, id := range strings.Split(r.URL.Query().Get("runs"), ",") {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || len(ids) > maxReportRuns {
		writeError(w, http.StatusBadRequest, errorf("runs: give 1 to %d run ids, comma-separated", maxReportRuns))
		return
	}
	inline, err := inlineParam(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	var rr []reportRun
	var total int64
	for _, id := range ids {
		run, err := s.getRun(id)
		if err != nil {
			s.writeRunError(w, id, err)
			return
		}
		pts, err := s.reportPoints(run, total)
		if err != nil {
			s.writeExportError(w, id, err)
			return
		}
		total += int64(len(pts))
		rr = append(rr, reportRun{run, pts})
	}
	var buf bytes.Buffer
	if err := writeReport(&buf, rr, inline); err != nil {
		writeError(w, http.StatusInternalServerError, errorf("report: %v", err))
		return
	}
	writeHTMLReport(w, buf.Bytes())
}

// inlineScript finds the inline scripts of a report, for their hashes.
var inlineScript = regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`)

// writeHTMLReport answers with a report page under a Content-Security-Policy
// that lets run only the page's own scripts, named by their SHA-256 (the
// inlined ECharts, chart.js and the drawing script) and /vendor/echarts/ of
// this lab; nothing may frame the page, and it may load nothing from
// elsewhere. An injected script would not run even if it got in.
func writeHTMLReport(w http.ResponseWriter, page []byte) {
	var hashes []string
	for _, m := range inlineScript.FindAllSubmatch(page, -1) {
		if bytes.Contains(m[1], []byte("src=")) {
			continue // /vendor/echarts/: 'self'
		}
		sum := sha256.Sum256(m[2])
		hashes = append(hashes, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self' "+strings.Join(hashes, " ")+
		"; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page)
}

type reportRun struct {
	run    notebook.Run
	points []sim.Point
}

// IsCapture reports whether a series holds hardware captures (its name
// starts with "h200"): drawn as markers, not lines.
func IsCapture(series string) bool { return strings.HasPrefix(series, "h200") }

// reportData is a report's chart data; each run's series as the page
// keeps them: [name, [[x, y, null, extras], …]].
type reportData struct {
	Title string          `json:"title"`
	Chart *sim.Chart      `json:"chart"`
	Runs  []reportRunData `json:"runs"`
}

type reportRunData struct {
	Label   *string         `json:"label"`
	Summary notebook.Floats `json:"summary"`
	Series  [][2]any        `json:"series"`
}

// writeReport renders runs as one standalone HTML page: the chart drawn by
// the page's own chart code (web/chart.js: the experiment's declared axes,
// scales, styles, error bars, references and published marks, zeros and
// non-finite values at the axis floor; the same points give the same chart
// as in the page), its legend and notes, above a table of each run's record.
func writeReport(w io.Writer, runs []reportRun, inline bool) error {
	title := "fp8lab run " + runs[0].run.ID + " — " + runs[0].run.Experiment
	if len(runs) > 1 {
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.run.ID
		}
		title = "fp8lab comparison of runs " + strings.Join(ids, ", ")
	}
	d := reportData{Title: title}
	exp := runs[0].run.Experiment
	for _, r := range runs[1:] {
		if r.run.Experiment != exp {
			exp = "" // runs of several experiments: the generic chart
		}
	}
	if e, err := sim.Lookup(exp); err == nil && exp != "" {
		if c, ok := e.(sim.Charter); ok {
			ch := c.Chart()
			d.Chart = &ch
		}
	}
	for _, r := range runs {
		rd := reportRunData{Summary: r.run.Summary}
		if len(runs) > 1 {
			label := "#" + r.run.ID
			rd.Label = &label
		}
		bySeries := map[string][][4]any{}
		order := slices.Clone(r.run.Series)
		for _, p := range r.points {
			if _, ok := bySeries[p.Series]; !ok && !slices.Contains(order, p.Series) {
				order = append(order, p.Series)
			}
			var extra notebook.Floats
			if len(p.Extra) > 0 {
				extra = p.Extra
			}
			bySeries[p.Series] = append(bySeries[p.Series], [4]any{sim.JSONFloat(p.X), sim.JSONFloat(p.Y), nil, extra})
		}
		for _, name := range order {
			if pts, ok := bySeries[name]; ok {
				rd.Series = append(rd.Series, [2]any{name, pts})
			}
		}
		d.Runs = append(d.Runs, rd)
	}
	data, err := json.Marshal(d) // escapes <, > and &: safe inside a script element
	if err != nil {
		return err
	}
	var meta bytes.Buffer
	if err := reportTemplate.Execute(&meta, reportRows(runs)); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</title>\n" + reportStyle + "\n")
	if inline {
		b.WriteString("<script>" + strings.ReplaceAll(string(web.EChartsJS()), "</script", `<\/script`) + "</script>\n")
	} else {
		b.WriteString(`<script src="/vendor/echarts/echarts.min.js"></script>` + "\n")
	}
	b.WriteString("<script>" + strings.ReplaceAll(string(web.ChartJS()), "</script", `<\/script`) + "</script>\n")
	b.WriteString("</head><body>\n<h1>" + html.EscapeString(title) + "</h1>\n")
	b.WriteString(`<div id="report-chart" class="report-chart"></div><div id="report-legend" class="legend"></div><ul id="report-notes" class="notes"></ul>` + "\n")
	b.WriteString(`<script type="application/json" id="report-data">`)
	b.Write(data)
	b.WriteString("</script>\n<script>" + reportDraw + "</script>\n")
	b.WriteString(meta.String())
	b.WriteString("</body></html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// reportDraw draws the report's chart from its data with chart.js, as the
// page draws a run (legend toggles included).
const reportDraw = `(function () {
  const d = JSON.parse(document.getElementById('report-data').textContent);
  const runs = d.runs.map((r) => ({ label: r.label, summary: r.summary || {}, series: new Map(r.series || []) }));
  const chart = echarts.init(document.getElementById('report-chart'));
  const hidden = new Set();
  const draw = () => {
    const built = fp8chart.build(d.chart, runs, hidden);
    chart.setOption(built.option, { notMerge: true });
    fp8chart.renderLegend(document.getElementById('report-legend'), built, hidden, (key) => {
      if (hidden.has(key)) hidden.delete(key); else hidden.add(key);
      draw();
    });
    const notes = document.getElementById('report-notes');
    notes.replaceChildren(...built.notes.map((n) => { const li = document.createElement('li'); li.textContent = n.text; return li; }));
    document.body.dataset.drawn = String(runs.reduce((n, r) => n + [...r.series.values()].reduce((m, s) => m + s.length, 0), 0));
  };
  draw();
})();`

const reportStyle = `<style>
body { font: 14px system-ui, sans-serif; margin: 0 24px 24px; color: #222; }
.report-chart { width: 1100px; height: 560px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 24px; max-width: 1100px; }
.lg-group { display: flex; flex-direction: column; align-items: flex-start; }
.legend button { border: 0; background: none; font: inherit; cursor: pointer; padding: 1px 2px; display: flex; align-items: center; gap: 4px; }
.legend button.off { opacity: 0.35; }
.lg-family { font-weight: 600; }
.lg-swatch { display: inline-block; width: 10px; height: 10px; }
ul.notes { color: #444; max-width: 1100px; }
table.meta { border-collapse: collapse; margin: 12px 0 24px; }
table.meta td, table.meta th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
table.meta th { background: #f5f5f5; font-weight: 600; }
pre { white-space: pre-wrap; margin: 0; }
</style>`

type reportRow struct{ Key, Value string }

type reportSection struct {
	Heading string
	Rows    []reportRow
	Summary []reportRow
	Notes   []string
	Note    string
}

func reportRows(runs []reportRun) []reportSection {
	var out []reportSection
	for _, r := range runs {
		run := r.run
		sec := reportSection{Heading: "Run " + run.ID + ": " + run.Experiment, Note: run.Note, Notes: run.Notes}
		if run.Title != "" {
			sec.Heading += " — " + run.Title
		}
		ts := func(t *time.Time) string {
			if t == nil {
				return "-"
			}
			return t.Format(time.RFC3339)
		}
		sec.Rows = []reportRow{
			{"reproduce", reproduceOf(run)},
			{"state", string(run.State) + map[bool]string{true: " — " + run.Error, false: ""}[run.Error != ""]},
			{"origin", string(run.Origin)},
			{"fp8lab", strings.TrimSpace(run.Version + " " + run.Revision)},
			{"built with", strings.TrimSpace(run.GoVersion + " " + run.Platform)},
			{"bindings", run.Bindings},
			{"device", run.Device},
			{"started / ended", ts(run.Started) + " / " + ts(run.Ended)},
			{"points", strconv.FormatInt(run.Points, 10)},
		}
		for _, k := range slices.Sorted(maps.Keys(run.Summary)) {
			sec.Summary = append(sec.Summary, reportRow{k, formatCSV(run.Summary[k])})
		}
		out = append(out, sec)
	}
	return out
}

var reportTemplate = template.Must(template.New("report").Parse(`
{{range .}}<h2>{{.Heading}}</h2>
<table class="meta">{{range .Rows}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table>
{{if .Summary}}<h3>Summary</h3><table class="meta">{{range .Summary}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table>{{end}}
{{if .Notes}}<h3>Notes of the experiment</h3><table class="meta">{{range .Notes}}<tr><td><pre>{{.}}</pre></td></tr>{{end}}</table>{{end}}
{{if .Note}}<h3>Notes</h3><pre>{{.Note}}</pre>{{end}}
{{end}}`))
