package sweep

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
)

// jsonStat is a Stat in JSON; non-finite numbers (which JSON cannot hold)
// are null.
type jsonStat struct {
	X         *float64 `json:"x,omitempty"`
	N         int      `json:"n"`
	Mean      *float64 `json:"mean"`
	SD        *float64 `json:"sd"`
	SE        *float64 `json:"se"`
	Lo        *float64 `json:"ci95_lo"`
	Hi        *float64 `json:"ci95_hi"`
	NonFinite int      `json:"nonfinite,omitempty"`
	Method    string   `json:"ci95_method,omitempty"`
}

func fin(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func toJSONStat(s Stat) jsonStat {
	return jsonStat{N: s.N, Mean: fin(s.Mean), SD: fin(s.SD), SE: fin(s.SE), Lo: fin(s.Lo), Hi: fin(s.Hi), NonFinite: s.NonFinite, Method: s.Method}
}

type jsonGroup struct {
	Key     map[string]any        `json:"key"`
	Label   string                `json:"label"`
	Runs    []string              `json:"runs"`
	Summary map[string]jsonStat   `json:"summary"`
	Series  map[string][]jsonStat `json:"series"`
}

// MarshalJSON writes the aggregate as
//
//	{"group_by": [...], "summary": [names], "series": [names], "excluded": [...],
//	 "groups": [{"key": {...}, "label": "kBlockN=64", "runs": [ids],
//	             "summary": {name: {"n", "mean", "sd", "se", "ci95_lo", "ci95_hi", "nonfinite"}},
//	             "series": {name: [{"x", "n", "mean", …}, …]}}]}
//
// with null for a number that is not finite (an unknown SD with n = 1, or
// a mean over no finite value). A series point whose x is not finite has
// no "x".
func (r Result) MarshalJSON() ([]byte, error) {
	out := struct {
		GroupBy  []string          `json:"group_by"`
		Field    string            `json:"field"`
		Units    map[string]string `json:"units"`
		Summary  []string          `json:"summary"`
		Series   []string          `json:"series"`
		Excluded []string          `json:"excluded"`
		Groups   []jsonGroup       `json:"groups"`
	}{GroupBy: nz(r.GroupBy), Field: r.Field, Units: r.Units, Summary: nz(r.Summary), Series: nz(r.Series), Excluded: nz(r.Excluded), Groups: []jsonGroup{}}
	for _, g := range r.Groups {
		jg := jsonGroup{Key: g.Key, Label: GroupLabel(r.GroupBy, g.Key), Runs: nz(g.Runs),
			Summary: make(map[string]jsonStat, len(g.Summary)), Series: make(map[string][]jsonStat, len(g.Series))}
		for n, s := range g.Summary {
			jg.Summary[n] = toJSONStat(s)
		}
		for n, pts := range g.Series {
			list := make([]jsonStat, len(pts))
			for i, p := range pts {
				list[i] = toJSONStat(p.Stat)
				list[i].X = fin(p.X)
			}
			jg.Series[n] = list
		}
		out.Groups = append(out.Groups, jg)
	}
	return json.Marshal(out)
}

func nz(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CSVHeader is the header of [Result.WriteCSV]'s table after the group-by
// columns.
var CSVHeader = []string{"kind", "name", "x", "n", "mean", "sd", "se", "ci95_lo", "ci95_hi", "nonfinite", "ci95_method", "field", "unit"}

// WriteCSV writes the aggregate as one table: a column per group-by
// parameter, then CSVHeader: kind is "summary" (x empty) or "series"; the
// statistics of one quantity per row (ci95_method: how the interval was
// computed; field: the point quantity of a series row; unit: its unit
// where known), groups in order, summaries before
// series, names sorted, x increasing. Non-finite numbers are written as
// NaN, +Inf, -Inf.
func (r Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	header := make([]string, 0, len(r.GroupBy)+len(CSVHeader))
	for _, n := range r.GroupBy {
		header = append(header, CSVText(n))
	}
	header = append(header, CSVHeader...)
	if err := cw.Write(header); err != nil {
		return err
	}
	row := make([]string, 0, len(header))
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, g := range r.Groups {
		prefix := make([]string, len(r.GroupBy))
		for i, n := range r.GroupBy {
			prefix[i] = CSVText(csvValue(g.Key[n]))
		}
		put := func(kind, name, x string, s Stat) error {
			field := ""
			if kind == "series" {
				field = CSVText(r.Field)
			}
			row = append(append(row[:0], prefix...), kind, CSVText(name), x, strconv.Itoa(s.N), f(s.Mean), f(s.SD), f(s.SE), f(s.Lo), f(s.Hi), strconv.Itoa(s.NonFinite), s.Method,
				field, CSVText(r.Units[kind+":"+name]))
			return cw.Write(row)
		}
		for _, n := range r.Summary {
			if s, ok := g.Summary[n]; ok {
				if err := put("summary", n, "", s); err != nil {
					return err
				}
			}
		}
		for _, n := range r.Series {
			for _, p := range g.Series[n] {
				if err := put("series", n, f(p.X), p.Stat); err != nil {
					return err
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// CSVText escapes a text cell that a spreadsheet program would read as a
// formula — one starting with =, +, -, @, a tab or a carriage return — by a
// leading apostrophe, as OWASP's CSV injection advice has it. Numbers are
// written apart and never escaped, so "-1.5" and "-Inf" stay numbers.
func CSVText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// csvValue writes a parameter value: a string as itself, a list as its
// JSON, a number in its shortest form.
func csvValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	c := canon(v)
	return c
}
