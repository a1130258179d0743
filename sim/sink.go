package sim

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sink receives the output of a run: points as they come, progress, notes,
// and at the end the summary and Close. The terminal table, the JSON-lines
// stream, the lab's store and its WebSocket are sinks, interchangeable.
// Implementations must be safe for concurrent use: trials emit in parallel.
//
// [Execute] calls Summary exactly once and then Close exactly once, also when
// the run fails or is cancelled.
type Sink interface {
	// Point receives one result point. An error stops the run.
	Point(p Point) error
	// Progress reports done out of total units of work (throttled by the run;
	// the last call of a run reports the final count).
	Progress(done, total int64)
	// Note receives a line of text for a human reader.
	Note(text string)
	// Summary receives the run's summary, name → value.
	Summary(values map[string]float64)
	// Close ends the output (a table sink prints its table here).
	Close() error
}

// Discard is a Sink that drops everything.
var Discard Sink = discard{}

type discard struct{}

func (discard) Point(Point) error          { return nil }
func (discard) Progress(int64, int64)      {}
func (discard) Note(string)                {}
func (discard) Summary(map[string]float64) {}
func (discard) Close() error               { return nil }

// Tee returns a Sink that sends everything to each of sinks in order. Point
// and Close go to every sink and return the first error (joined, for Close).
func Tee(sinks ...Sink) Sink { return tee(slices.Clone(sinks)) }

type tee []Sink

func (t tee) Point(p Point) error {
	var first error
	for _, s := range t {
		if err := s.Point(p); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (t tee) Progress(done, total int64) {
	for _, s := range t {
		s.Progress(done, total)
	}
}

func (t tee) Note(text string) {
	for _, s := range t {
		s.Note(text)
	}
}

func (t tee) Summary(values map[string]float64) {
	for _, s := range t {
		s.Summary(maps.Clone(values))
	}
}

func (t tee) Close() error {
	var errs []error
	for _, s := range t {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// Recorder is a Sink that keeps everything in memory, for tests, the wasm
// page and stores that write after the run. The zero Recorder is ready.
type Recorder struct {
	mu         sync.Mutex
	points     []Point
	notes      []string
	summary    map[string]float64
	done, tot  int64
	closed     bool
	progresses int
}

// Point records p.
func (r *Recorder) Point(p Point) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.points = append(r.points, p)
	return nil
}

// Progress records the latest progress.
func (r *Recorder) Progress(done, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done, r.tot = done, total
	r.progresses++
}

// Note records text.
func (r *Recorder) Note(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, text)
}

// Summary records values.
func (r *Recorder) Summary(values map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.summary = maps.Clone(values)
}

// Close marks the recorder closed.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

// Points returns a copy of the recorded points in arrival order.
func (r *Recorder) Points() []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.points)
}

// Notes returns a copy of the recorded notes.
func (r *Recorder) Notes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.notes)
}

// SummaryValues returns a copy of the recorded summary (nil before Summary).
func (r *Recorder) SummaryValues() map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.summary)
}

// LastProgress returns the latest progress reported.
func (r *Recorder) LastProgress() (done, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done, r.tot
}

// Closed reports whether Close was called.
func (r *Recorder) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// JSONSink writes a run as JSON lines, each written as it comes:
//
//	{"type":"point","series":S,"x":X,"y":Y,<Extra fields, sorted>}
//	{"type":"note","text":T}
//	{"type":"summary","values":{...}}   (the last line, written by Close)
//
// Numbers are written shortest round-trip (strconv 'g'); NaN and ±Inf, which
// JSON cannot hold, are written as null. Progress is not written.
type JSONSink struct {
	mu      sync.Mutex
	w       io.Writer
	summary map[string]float64
	err     error
}

// NewJSONSink returns a JSONSink writing to w.
func NewJSONSink(w io.Writer) *JSONSink { return &JSONSink{w: w} }

func (s *JSONSink) write(b []byte) error {
	if s.err != nil {
		return s.err
	}
	_, s.err = s.w.Write(b)
	return s.err
}

// Point writes one point line.
func (s *JSONSink) Point(p Point) error {
	b := make([]byte, 0, 96)
	b = append(b, `{"type":"point","series":`...)
	b = appendJSONString(b, p.Series)
	b = append(b, `,"x":`...)
	b = appendJSONFloat(b, p.X)
	b = append(b, `,"y":`...)
	b = appendJSONFloat(b, p.Y)
	for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
		b = append(b, ',')
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONFloat(b, p.Extra[k])
	}
	b = append(b, "}\n"...)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(b)
}

// Progress does nothing: progress goes to a [ProgressBar] on stderr.
func (s *JSONSink) Progress(done, total int64) {}

// Note writes one note line.
func (s *JSONSink) Note(text string) {
	b := append([]byte(`{"type":"note","text":`), appendJSONString(nil, text)...)
	b = append(b, "}\n"...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write(b)
}

// Summary keeps values for the last line.
func (s *JSONSink) Summary(values map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summary = maps.Clone(values)
}

// Close writes the summary line (values sorted by name; an empty object when
// no summary was given) and returns the first write error.
func (s *JSONSink) Close() error {
	b := []byte(`{"type":"summary","values":{`)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, k := range slices.Sorted(maps.Keys(s.summary)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONFloat(b, s.summary[k])
	}
	b = append(b, "}}\n"...)
	return s.write(b)
}

// JSONFloat is a float64 whose JSON form is a number, or null where JSON
// has none (NaN, ±inf), as the sinks write values.
type JSONFloat float64

// MarshalJSON writes f, or null for NaN and ±inf.
func (f JSONFloat) MarshalJSON() ([]byte, error) { return appendJSONFloat(nil, float64(f)), nil }

func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendJSONString appends s as a JSON string (strconv.Quote's escapes are
// not all JSON, e.g. \x00).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
		default:
			b = append(b, string(r)...) // invalid UTF-8 becomes U+FFFD
		}
	}
	return append(b, '"')
}

// TableSink collects a run's points and, on Close, writes a readable aligned
// table: one row per x in increasing order, one column per series in order
// of first appearance, then the notes and the summary sorted by name. A
// series with several points at the same x gets further rows for that x.
// Extra fields are not shown. Missing cells show "-". A table wider than
// [TableWidth] columns is written as several tables, each with the x column
// and as many series as fit (-json gives every value on one line per point).
type TableSink struct {
	mu      sync.Mutex
	w       io.Writer
	series  []string
	rows    []tableRow
	notes   []string
	summary map[string]float64
}

// TableWidth is the most columns a TableSink's table takes on a terminal.
const TableWidth = 100

type tableRow struct {
	x     float64
	cells map[string]float64
}

// NewTableSink returns a TableSink writing to w on Close.
func NewTableSink(w io.Writer) *TableSink { return &TableSink{w: w} }

// Point collects p.
func (s *TableSink) Point(p Point) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.series, p.Series) {
		s.series = append(s.series, p.Series)
	}
	for _, r := range s.rows {
		if _, taken := r.cells[p.Series]; !taken && sameX(r.x, p.X) {
			r.cells[p.Series] = p.Y
			return nil
		}
	}
	s.rows = append(s.rows, tableRow{x: p.X, cells: map[string]float64{p.Series: p.Y}})
	return nil
}

func sameX(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// Progress does nothing.
func (s *TableSink) Progress(done, total int64) {}

// Note collects text, shown after the table.
func (s *TableSink) Note(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, text)
}

// Summary keeps values, shown last.
func (s *TableSink) Summary(values map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.summary = maps.Clone(values)
}

// formatCell formats a table number: %.6g, which keeps integers such as
// 131072 whole.
func formatCell(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

// Close writes the table, the notes and the summary.
func (s *TableSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	if len(s.rows) > 0 {
		rows := slices.Clone(s.rows)
		slices.SortStableFunc(rows, func(a, b tableRow) int {
			switch {
			case a.x < b.x:
				return -1
			case a.x > b.x:
				return 1
			}
			return 0
		})
		header := append([]string{"x"}, s.series...)
		grid := [][]string{header}
		for _, r := range rows {
			line := []string{formatCell(r.x)}
			for _, name := range s.series {
				if y, ok := r.cells[name]; ok {
					line = append(line, formatCell(y))
				} else {
					line = append(line, "-")
				}
			}
			grid = append(grid, line)
		}
		for i, part := range splitColumns(grid, TableWidth) {
			if i > 0 {
				b.WriteByte('\n')
			}
			writeAligned(&b, part)
		}
	}
	for _, n := range s.notes {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	if len(s.summary) > 0 {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		keys := slices.Sorted(maps.Keys(s.summary))
		width := 0
		for _, k := range keys {
			width = max(width, len(k))
		}
		for _, k := range keys {
			fmt.Fprintf(&b, "%-*s  %s\n", width, k, formatCell(s.summary[k]))
		}
	}
	_, err := io.WriteString(s.w, b.String())
	return err
}

// splitColumns splits grid into grids of at most width columns when
// aligned, each keeping the first column; a column wider than width by
// itself gets a grid of its own.
func splitColumns(grid [][]string, width int) [][][]string {
	widths := make([]int, len(grid[0]))
	for _, line := range grid {
		for i, c := range line {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var groups [][]int
	var cur []int
	used := widths[0]
	for i := 1; i < len(widths); i++ {
		if len(cur) > 0 && used+2+widths[i] > width {
			groups = append(groups, cur)
			cur, used = nil, widths[0]
		}
		cur = append(cur, i)
		used += 2 + widths[i]
	}
	if len(cur) > 0 || len(groups) == 0 {
		groups = append(groups, cur)
	}
	out := make([][][]string, len(groups))
	for g, cols := range groups {
		for _, line := range grid {
			part := []string{line[0]}
			for _, c := range cols {
				part = append(part, line[c])
			}
			out[g] = append(out[g], part)
		}
	}
	return out
}

// writeAligned writes grid with the first column left-aligned, the others
// right-aligned, two spaces between columns.
func writeAligned(b *strings.Builder, grid [][]string) {
	widths := make([]int, len(grid[0]))
	for _, line := range grid {
		for i, c := range line {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, line := range grid {
		var l strings.Builder
		for i, c := range line {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if i == 0 {
				l.WriteString(c + pad)
			} else {
				l.WriteString("  " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
}

// ProgressBar is a Sink that draws progress on a terminal, typically stderr:
//
//	[==========>              ]  42.0%  elapsed 12s  eta 16s
//
// It redraws in place (carriage return) at most every Interval; when the
// writer is not a terminal it writes a new line at most every 10% instead.
// Close draws the final state and ends the line with a newline; it writes
// nothing if no progress was ever reported. Points, notes and the summary are
// ignored.
type ProgressBar struct {
	// Interval is the least time between redraws (default 100ms).
	Interval time.Duration
	// Width is the number of cells of the bar (default 30).
	Width int

	mu          sync.Mutex
	w           io.Writer
	interactive bool
	start       time.Time
	last        time.Time
	lastDecile  int64
	done, total int64
	drawn       bool
	now         func() time.Time
}

// NewProgressBar returns a ProgressBar writing to w, redrawing in place when
// w is a terminal (an *os.File that is a character device).
func NewProgressBar(w io.Writer) *ProgressBar {
	interactive := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			interactive = true
		}
	}
	return &ProgressBar{w: w, interactive: interactive, now: time.Now, lastDecile: -1}
}

// Point does nothing.
func (p *ProgressBar) Point(Point) error { return nil }

// Note does nothing.
func (p *ProgressBar) Note(string) {}

// Summary does nothing.
func (p *ProgressBar) Summary(map[string]float64) {}

// Progress records the progress and redraws when due.
func (p *ProgressBar) Progress(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.start.IsZero() {
		p.start = now
	}
	p.done, p.total = done, total
	if total <= 0 {
		return
	}
	if p.interactive {
		iv := p.Interval
		if iv <= 0 {
			iv = 100 * time.Millisecond
		}
		if p.drawn && now.Sub(p.last) < iv {
			return
		}
	} else {
		dec := min(done*10/total, 10)
		if dec <= p.lastDecile {
			return
		}
		p.lastDecile = dec
	}
	p.last = now
	p.draw(now)
}

func (p *ProgressBar) draw(now time.Time) {
	width := p.Width
	if width <= 0 {
		width = 30
	}
	frac := 0.0
	if p.total > 0 {
		frac = min(max(float64(p.done)/float64(p.total), 0), 1)
	}
	fill := int(frac * float64(width))
	bar := strings.Repeat("=", fill)
	if fill < width {
		bar += ">" + strings.Repeat(" ", width-fill-1)
	}
	elapsed := now.Sub(p.start)
	eta := "?"
	if frac > 0 {
		eta = formatDuration(time.Duration(float64(elapsed) * (1 - frac) / frac))
	}
	line := fmt.Sprintf("[%s] %5.1f%%  elapsed %s  eta %s", bar, 100*frac, formatDuration(elapsed), eta)
	if p.interactive {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.drawn = true
}

// Close draws the final state and ends the line.
func (p *ProgressBar) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total <= 0 {
		return nil
	}
	now := p.now()
	if p.interactive {
		p.draw(now)
		_, err := fmt.Fprintln(p.w)
		return err
	}
	if dec := min(p.done*10/p.total, 10); dec > p.lastDecile || !p.drawn {
		p.draw(now)
	}
	return nil
}

// formatDuration formats d for the bar: "850ms", "12s", "3m05s", "1h02m".
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
