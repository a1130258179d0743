package lab

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/fp8lab/fp8lab/lab/notebook"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/web"
)

// runWithPoints returns a run's record and every point it has.
func (s *Server) runWithPoints(id string) (notebook.Run, []sim.Point, error) {
	run, err := s.getRun(id)
	if err != nil {
		return notebook.Run{}, nil, err
	}
	pts, err := s.allPoints(id)
	return run, pts, err
}

// allPoints returns every point of the run, from the notebook and the live
// log.
func (s *Server) allPoints(id string) ([]sim.Point, error) {
	var out []sim.Point
	for {
		pts, err := s.points(id, int64(len(out)), 100000)
		if err != nil {
			return nil, err
		}
		if len(pts) == 0 {
			return out, nil
		}
		out = append(out, pts...)
	}
}

func exportName(run notebook.Run, ext string) string {
	return fmt.Sprintf("fp8lab-run-%s-%s.%s", run.ID, run.Experiment, ext)
}

// handleExport answers GET /api/runs/{id}/export?format=json|csv|html
// [&inline=0]: the run as a file to download. JSON holds the record and
// every point; CSV one row per point (series, x, y, then one column per
// extra value; NaN, +Inf, -Inf spelled so); HTML a standalone report drawn
// with go-echarts, ECharts inlined (or, with inline=0, loaded from this
// lab's /vendor/echarts/).
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
	run, pts, err := s.runWithPoints(id)
	if err != nil {
		s.writeRunError(w, id, err)
		return
	}
	var buf bytes.Buffer
	ctype := ""
	switch format {
	case "json":
		ctype = "application/json; charset=utf-8"
		err = writeExportJSON(&buf, run, pts)
	case "csv":
		ctype = "text/csv; charset=utf-8"
		err = writeCSV(&buf, pts)
	case "html":
		ctype = "text/html; charset=utf-8"
		err = writeReport(&buf, []reportRun{{run, pts}}, inline)
	}
	if err != nil {
		s.log.Error("export", "run", id, "format", format, "err", err)
		writeError(w, http.StatusInternalServerError, errorf("export: %v", err))
		return
	}
	w.Header().Set("Content-Type", ctype)
	disp := "attachment"
	if format == "html" && r.URL.Query().Get("download") != "1" {
		disp = "inline"
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("%s; filename=%q", disp, exportName(run, format)))
	w.Write(buf.Bytes())
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

func writeExportJSON(w io.Writer, run notebook.Run, pts []sim.Point) error {
	rb, err := json.Marshal(run)
	if err != nil {
		return err
	}
	b := append([]byte(`{"run":`), rb...)
	b = append(b, `,"points":`...)
	b = sim.AppendPointsJSON(b, pts)
	b = append(b, "}\n"...)
	_, err = w.Write(b)
	return err
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

func writeCSV(w io.Writer, pts []sim.Point) error {
	keys := map[string]bool{}
	for _, p := range pts {
		for k := range p.Extra {
			keys[k] = true
		}
	}
	extra := slices.Sorted(maps.Keys(keys))
	cw := csv.NewWriter(w)
	cw.Write(append([]string{"series", "x", "y"}, extra...))
	row := make([]string, 3+len(extra))
	for _, p := range pts {
		row[0], row[1], row[2] = p.Series, formatCSV(p.X), formatCSV(p.Y)
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
}

// handleReport answers GET /api/report?runs=ID,ID,…[&inline=0]: one
// standalone HTML report overlaying the runs, for comparison.
func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	ids := strings.Split(r.URL.Query().Get("runs"), ",")
	if len(ids) == 0 || ids[0] == "" || len(ids) > 20 {
		writeError(w, http.StatusBadRequest, errorf("runs: give 1 to 20 run ids, comma-separated"))
		return
	}
	inline, err := inlineParam(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	var rr []reportRun
	for _, id := range ids {
		run, pts, err := s.runWithPoints(id)
		if err != nil {
			s.writeRunError(w, id, err)
			return
		}
		rr = append(rr, reportRun{run, pts})
	}
	var buf bytes.Buffer
	if err := writeReport(&buf, rr, inline); err != nil {
		writeError(w, http.StatusInternalServerError, errorf("report: %v", err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

type reportRun struct {
	run    notebook.Run
	points []sim.Point
}

// chartText makes text safe inside go-echarts' page: it writes the option
// JSON into a script without escaping '<' (SetEscapeHTML(false)), so a
// series name holding "</script>" (a client's run can name its series
// anything) would end the script. Angle brackets become look-alikes.
var chartText = strings.NewReplacer("<", "‹", ">", "›").Replace

// IsCapture reports whether a series holds hardware captures (its name
// starts with "h200"): drawn as markers, not lines.
func IsCapture(series string) bool { return strings.HasPrefix(series, "h200") }

// wantLog reports whether an axis should be logarithmic: no negative value
// (neg) and positive values from lo to hi spanning two decades or more.
// Zeros (an exact result on an error plot) are then left out of the chart.
func wantLog(neg bool, lo, hi float64) bool { return !neg && lo > 0 && hi/lo >= 100 }

// writeReport renders runs as one standalone HTML page: a go-echarts line
// chart of every series of every run (capture series as markers; log axes
// where the values span decades) above a table of each run's record.
func writeReport(w io.Writer, runs []reportRun, inline bool) error {
	title := "fp8lab run " + runs[0].run.ID + " — " + runs[0].run.Experiment
	if len(runs) > 1 {
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.run.ID
		}
		title = "fp8lab comparison of runs " + strings.Join(ids, ", ")
	}
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	xneg, yneg := false, false
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	for _, r := range runs {
		for _, p := range r.points {
			if !finite(p.X) || !finite(p.Y) {
				continue
			}
			if xneg = xneg || p.X <= 0; p.X > 0 { // no zero on a log x either
				xlo, xhi = min(xlo, p.X), max(xhi, p.X)
			}
			if yneg = yneg || p.Y < 0; p.Y > 0 {
				ylo, yhi = min(ylo, p.Y), max(yhi, p.Y)
			}
		}
	}
	xType, yType := "value", "value"
	if wantLog(xneg, xlo, xhi) {
		xType = "log"
	}
	if wantLog(yneg, ylo, yhi) {
		yType = "log"
	}

	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{PageTitle: chartText(title), Width: "1100px", Height: "560px", ChartID: "report", AssetsHost: "/vendor/echarts/"}),
		charts.WithAnimation(false),
		charts.WithTitleOpts(opts.Title{Title: chartText(title)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "30px"}),
		charts.WithGridOpts(opts.Grid{Top: "90px", Left: "80px", Right: "40px"}),
		charts.WithXAxisOpts(opts.XAxis{Type: xType, Name: "x", Scale: opts.Bool(true)}),
		charts.WithYAxisOpts(opts.YAxis{Type: yType, Name: "y", Scale: opts.Bool(true)}),
		charts.WithDataZoomOpts(opts.DataZoom{Type: "inside"}),
	)
	line.ClearPresetJSAssets()
	if inline {
		js := strings.ReplaceAll(string(web.EChartsJS()), "</script", `<\/script`)
		line.AddCustomizedHeaders("<script>" + js + "</script>")
	} else {
		line.AddCustomizedJSAssets("/vendor/echarts/echarts.min.js")
	}
	for _, r := range runs {
		bySeries := map[string][]sim.Point{}
		for _, p := range r.points {
			bySeries[p.Series] = append(bySeries[p.Series], p)
		}
		order := slices.Clone(r.run.Series)
		for name := range bySeries {
			if !slices.Contains(order, name) {
				order = append(order, name)
			}
		}
		for _, name := range order {
			pts := bySeries[name]
			sort.SliceStable(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
			data := make([]opts.LineData, 0, len(pts))
			for _, p := range pts {
				if !finite(p.X) || !finite(p.Y) || (xType == "log" && p.X <= 0) || (yType == "log" && p.Y <= 0) {
					continue
				}
				data = append(data, opts.LineData{Value: []float64{p.X, p.Y}})
			}
			label := name
			if len(runs) > 1 {
				label = "#" + r.run.ID + " " + name
			}
			so := []charts.SeriesOpts{charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), SymbolSize: 5})}
			if IsCapture(name) {
				so = []charts.SeriesOpts{
					charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: "diamond", SymbolSize: 11}),
					charts.WithLineStyleOpts(opts.LineStyle{Opacity: opts.Float(0)}),
				}
			}
			line.AddSeries(chartText(label), data, so...)
		}
	}
	var chart bytes.Buffer
	if err := line.Render(&chart); err != nil {
		return err
	}
	var meta bytes.Buffer
	if err := reportTemplate.Execute(&meta, reportData(runs)); err != nil {
		return err
	}
	html := chart.String()
	head := strings.LastIndex(html, "</head>") // the inlined ECharts is in the head
	body := strings.Index(html[max(head, 0):], "<body>")
	end := strings.LastIndex(html, "</body>")
	if head < 0 || body < 0 || end < 0 {
		return fmt.Errorf("go-echarts output has no head or body")
	}
	body += head + len("<body>")
	_, err := io.WriteString(w, html[:body]+"\n"+reportStyle+html[body:end]+meta.String()+html[end:])
	return err
}

const reportStyle = `<style>
body { font: 14px system-ui, sans-serif; margin: 0 24px 24px; color: #222; }
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

func reportData(runs []reportRun) []reportSection {
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
			{"reproduce", fmt.Sprintf("lab run %s %s -seed %d", run.Experiment, run.Flags, run.Seed)},
			{"state", string(run.State) + map[bool]string{true: " — " + run.Error, false: ""}[run.Error != ""]},
			{"origin", string(run.Origin)},
			{"fp8lab", strings.TrimSpace(run.Version + " " + run.Revision)},
			{"built with", strings.TrimSpace(run.GoVersion + " " + run.Platform)},
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
