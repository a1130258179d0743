// Package runquery is the filter language of the lab's runs list:
//
//	experiment = needle AND kBlockN IN (64, 96) AND seed <= 20
//	(tag = baseline OR tag = paper) AND NOT state IN (failed, cancelled)
//	contraction "two-level"                      (bare words: text search)
//	logit-std > 1.5 OR dist ~ biased
//
// A query is comparisons joined by AND (also implied between two terms), OR
// and NOT, grouped with parentheses; AND binds tighter than OR. A comparison
// is FIELD OP VALUE with OP one of = != < <= > >= ~ (contains, ignoring case),
// or FIELD [NOT] IN (V, …). Keywords are case-insensitive. A value is a word
// or a "quoted string" (with \" and \\). A bare value is a text search over
// the run's experiment, id, title, note, tags, flags and error.
//
// Fields: experiment, state, origin, id, sweep, title (text), tag (true when
// any tag matches; != when none does), seed (a number), text, and any other
// name is a parameter (params.NAME also works). Numbers compare as numbers
// when both sides are numeric, text otherwise; a list parameter compares as
// its text "1024,2048". A run lacking the parameter matches no comparison
// on it.
//
// Bounded cost: a query is at most MaxLen bytes, MaxTerms comparisons and
// MaxDepth levels of nesting; Parse never panics and reports the byte
// offset of what it could not read.
package runquery

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fp8lab/fp8lab/lab/notebook"
)

// Limits of a query.
const (
	MaxLen   = 4096
	MaxTerms = 256
	MaxDepth = 32
)

// Query is a parsed filter; the zero Query (from an empty text) matches
// every run.
type Query struct {
	root node
	// searches find, per field, every text search of the query on it
	// (bare words and text ~ x on the run's text, FIELD ~ x on a field) in
	// one pass over the field.
	searches map[string]*multiMatcher
}

type node interface {
	match(m *matching) bool
	write(b *strings.Builder)
}

// matching is one run being matched: which of the query's text searches
// each field holds, found on first use in one pass over the field folded to
// lower case, however many searches the query makes on it.
type matching struct {
	r     *notebook.Run
	q     *Query
	found map[string][]bool
}

// has reports whether the run's field holds the query's search id on it.
func (m *matching) has(field string, id int) bool {
	f, ok := m.found[field]
	if !ok {
		if m.found == nil {
			m.found = map[string][]bool{}
		}
		text, ok := fieldText(m.r, field)
		if ok {
			f = m.q.searches[field].find(strings.ToLower(text))
		} else {
			f = make([]bool, m.q.searches[field].patterns) // no such parameter: it holds nothing
		}
		m.found[field] = f
	}
	return f[id]
}

type (
	andNode struct{ l, r node }
	orNode  struct{ l, r node }
	notNode struct{ x node }
	cmpNode struct {
		field  string
		op     string // = != < <= > >= ~ in
		values []string
		id     int // of ~ on a field other than tag: its search on the field
	}
	textNode struct {
		value string // as written
		id    int    // its search on the field "text"
	}
)

// Parse reads a query; an empty (or blank) text is the Query that matches
// every run.
func Parse(s string) (Query, error) {
	if len(s) > MaxLen {
		return Query{}, fmt.Errorf("query of %d bytes; at most %d", len(s), MaxLen)
	}
	if !utf8.ValidString(s) {
		return Query{}, errors.New("query: not valid UTF-8")
	}
	toks, err := lex(s)
	if err != nil {
		return Query{}, err
	}
	if len(toks) == 0 {
		return Query{}, nil
	}
	p := &parser{toks: toks, src: s}
	n, err := p.or(0)
	if err != nil {
		return Query{}, err
	}
	if p.i < len(p.toks) {
		return Query{}, p.errorf("unexpected %s", p.toks[p.i].show())
	}
	q := Query{root: n, searches: map[string]*multiMatcher{}}
	for f, pats := range p.patterns {
		q.searches[f] = newMultiMatcher(pats)
	}
	return q, nil
}

// Match reports whether the run passes the filter.
// The run's text is folded to lower case once per call, whatever the
// number of text searches: a query costs about its length times the run's
// text.
func (q Query) Match(r *notebook.Run) bool {
	return q.root == nil || q.root.match(&matching{r: r, q: &q})
}

// String returns the query in canonical form, which Parse reads back to the
// same query.
func (q Query) String() string {
	if q.root == nil {
		return ""
	}
	var b strings.Builder
	q.root.write(&b)
	return b.String()
}

// ---- lexer

type tokKind int

const (
	tWord tokKind = iota
	tString
	tOp
	tLParen
	tRParen
	tComma
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func (t token) show() string {
	if t.kind == tString {
		return strconv.Quote(t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func (t token) keyword(k string) bool { return t.kind == tWord && strings.EqualFold(t.text, k) }

func isWordRune(r rune) bool {
	return !unicode.IsSpace(r) && !strings.ContainsRune(`(),=!<>~"`, r)
}

func lex(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += w
		case r == '(':
			toks = append(toks, token{tLParen, "(", i})
			i++
		case r == ')':
			toks = append(toks, token{tRParen, ")", i})
			i++
		case r == ',':
			toks = append(toks, token{tComma, ",", i})
			i++
		case r == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("query: at %d: unterminated string", i)
				}
				c := s[j]
				if c == '"' {
					j++
					break
				}
				if c == '\\' {
					if j+1 >= len(s) || (s[j+1] != '"' && s[j+1] != '\\') {
						return nil, fmt.Errorf(`query: at %d: in a string, \ escapes only " and \`, j)
					}
					b.WriteByte(s[j+1])
					j += 2
					continue
				}
				b.WriteByte(c)
				j++
			}
			toks = append(toks, token{tString, b.String(), i})
			i = j
		case strings.ContainsRune("=!<>~", r):
			op := s[i : i+1]
			if i+1 < len(s) && s[i+1] == '=' && r != '=' && r != '~' {
				op = s[i : i+2]
			}
			if op == "!" {
				return nil, fmt.Errorf("query: at %d: '!' must be followed by '=' (or use NOT)", i)
			}
			toks = append(toks, token{tOp, op, i})
			i += len(op)
		default:
			j := i
			for j < len(s) {
				r, w := utf8.DecodeRuneInString(s[j:])
				if !isWordRune(r) {
					break
				}
				j += w
			}
			toks = append(toks, token{tWord, s[i:j], i})
			i = j
		}
		if len(toks) > 4*MaxTerms {
			return nil, fmt.Errorf("query: more than %d comparisons", MaxTerms)
		}
	}
	return toks, nil
}

// ---- parser

type parser struct {
	toks     []token
	i        int
	src      string
	terms    int
	patterns map[string][]string // the text searches by field, folded to lower case
}

// pattern adds a text search on field and returns its id.
func (p *parser) pattern(field, text string) int {
	if p.patterns == nil {
		p.patterns = map[string][]string{}
	}
	p.patterns[field] = append(p.patterns[field], strings.ToLower(text))
	return len(p.patterns[field]) - 1
}

func (p *parser) errorf(format string, args ...any) error {
	pos := len(p.src)
	if p.i < len(p.toks) {
		pos = p.toks[p.i].pos
	}
	return fmt.Errorf("query: at %d: %s", pos, fmt.Sprintf(format, args...))
}

func (p *parser) peek() (token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return token{}, false
}

func (p *parser) or(depth int) (node, error) {
	l, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.peek()
		if !ok || !t.keyword("OR") {
			return l, nil
		}
		p.i++
		r, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		l = orNode{l, r}
	}
}

func (p *parser) and(depth int) (node, error) {
	l, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.peek()
		if !ok || t.kind == tRParen || t.keyword("OR") {
			return l, nil
		}
		if t.keyword("AND") {
			p.i++
		}
		r, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		l = andNode{l, r}
	}
}

func (p *parser) unary(depth int) (node, error) {
	if depth > MaxDepth {
		return nil, p.errorf("nested more than %d levels", MaxDepth)
	}
	t, ok := p.peek()
	if !ok {
		return nil, p.errorf("expected a comparison at the end")
	}
	switch {
	case t.keyword("NOT"):
		p.i++
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return notNode{x}, nil
	case t.kind == tLParen:
		p.i++
		x, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if t, ok := p.peek(); !ok || t.kind != tRParen {
			return nil, p.errorf("expected ')'")
		}
		p.i++
		return x, nil
	case t.kind == tWord && isKeyword(t.text):
		return nil, p.errorf("unexpected %s", t.show())
	case t.kind != tWord && t.kind != tString:
		return nil, p.errorf("unexpected %s", t.show())
	}
	p.terms++
	if p.terms > MaxTerms {
		return nil, p.errorf("more than %d comparisons", MaxTerms)
	}
	p.i++
	next, ok := p.peek()
	switch {
	case ok && next.kind == tOp && t.kind == tWord:
		p.i++
		v, ok := p.peek()
		if !ok || (v.kind != tWord && v.kind != tString) || (v.kind == tWord && isKeyword(v.text)) {
			return nil, p.errorf("expected a value after %s %s", t.text, next.text)
		}
		p.i++
		n := cmpNode{field: fieldName(t.text), op: next.text, values: []string{v.text}}
		if n.op == "~" && n.field != "tag" {
			n.id = p.pattern(n.field, v.text)
		}
		return n, nil
	case ok && t.kind == tWord && (next.keyword("IN") || next.keyword("NOT") && p.i+1 < len(p.toks) && p.toks[p.i+1].keyword("IN")):
		neg := next.keyword("NOT")
		p.i++
		if neg {
			p.i++
		}
		vals, err := p.list()
		if err != nil {
			return nil, err
		}
		var n node = cmpNode{field: fieldName(t.text), op: "in", values: vals}
		if neg {
			n = notNode{n}
		}
		return n, nil
	}
	return textNode{value: t.text, id: p.pattern("text", t.text)}, nil
}

func (p *parser) list() ([]string, error) {
	if t, ok := p.peek(); !ok || t.kind != tLParen {
		return nil, p.errorf("expected '(' after IN")
	}
	p.i++
	var vals []string
	for {
		v, ok := p.peek()
		if !ok || (v.kind != tWord && v.kind != tString) || (v.kind == tWord && isKeyword(v.text)) {
			return nil, p.errorf("expected a value in the IN list")
		}
		vals = append(vals, v.text)
		p.i++
		if len(vals) > MaxTerms {
			return nil, p.errorf("more than %d values in an IN list", MaxTerms)
		}
		t, ok := p.peek()
		switch {
		case ok && t.kind == tComma:
			p.i++
		case ok && t.kind == tRParen:
			p.i++
			return vals, nil
		default:
			return nil, p.errorf("expected ',' or ')' in the IN list")
		}
	}
}

func isKeyword(w string) bool {
	for _, k := range []string{"AND", "OR", "NOT", "IN"} {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}

func fieldName(w string) string {
	if strings.HasPrefix(w, "params.") && len(w) > len("params.") {
		name := w[len("params."):]
		if _, reserved := runFields[name]; !reserved {
			return name // the plain name means the same parameter
		}
	}
	return w
}

// ---- evaluation

// runFields are the fields of the record; any other name is a parameter.
var runFields = map[string]func(r *notebook.Run) string{
	"experiment": func(r *notebook.Run) string { return r.Experiment },
	"state":      func(r *notebook.Run) string { return string(r.State) },
	"origin":     func(r *notebook.Run) string { return string(r.Origin) },
	"id":         func(r *notebook.Run) string { return r.ID },
	"sweep":      func(r *notebook.Run) string { return r.Sweep },
	"title":      func(r *notebook.Run) string { return r.Title },
	"seed":       func(r *notebook.Run) string { return strconv.FormatUint(r.Seed, 10) },
	"text":       runText,
}

func runText(r *notebook.Run) string {
	return strings.Join(append([]string{r.Experiment, r.ID, r.Title, r.Note, r.Flags, r.Error}, r.Tags...), "\n")
}

func (n andNode) match(m *matching) bool  { return n.l.match(m) && n.r.match(m) }
func (n orNode) match(m *matching) bool   { return n.l.match(m) || n.r.match(m) }
func (n notNode) match(m *matching) bool  { return !n.x.match(m) }
func (n textNode) match(m *matching) bool { return m.has("text", n.id) }

func (n cmpNode) match(m *matching) bool {
	r := m.r
	if n.field == "tag" {
		any := slices.ContainsFunc(r.Tags, func(t string) bool {
			return slices.ContainsFunc(n.values, func(v string) bool { return compare(t, "=", v) })
		})
		switch n.op {
		case "!=":
			return !slices.ContainsFunc(r.Tags, func(t string) bool { return t == n.values[0] })
		case "~":
			return slices.ContainsFunc(r.Tags, func(t string) bool { return containsFold(t, n.values[0]) })
		case "=", "in":
			return any
		}
		return slices.ContainsFunc(r.Tags, func(t string) bool { return compare(t, n.op, n.values[0]) })
	}
	if n.op == "~" {
		return m.has(n.field, n.id)
	}
	have, ok := fieldText(r, n.field)
	if !ok {
		return false
	}
	if n.op == "in" {
		return slices.ContainsFunc(n.values, func(v string) bool { return compare(have, "=", v) })
	}
	return compare(have, n.op, n.values[0])
}

// fieldText returns the text of the run's field (a record field or a
// parameter), and false when the run has no such parameter.
func fieldText(r *notebook.Run, field string) (string, bool) {
	if f, ok := runFields[field]; ok {
		return f(r), true
	}
	v, ok := r.Params[field]
	if !ok {
		return "", false
	}
	return paramText(v), true
}

// paramText formats a parameter value as JSON decoded it: numbers in their
// shortest form, lists as "1,2,3".
func paramText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = paramText(e)
		}
		return strings.Join(parts, ",")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// compare applies op to have and want: numerically when both are numbers,
// as text otherwise (~ is always a case-insensitive text search).
func compare(have, op, want string) bool {
	if op == "~" {
		return containsFold(have, want)
	}
	a, errA := strconv.ParseFloat(have, 64)
	b, errB := strconv.ParseFloat(want, 64)
	if errA == nil && errB == nil && !math.IsNaN(a) && !math.IsNaN(b) {
		switch op {
		case "=":
			return a == b
		case "!=":
			return a != b
		case "<":
			return a < b
		case "<=":
			return a <= b
		case ">":
			return a > b
		case ">=":
			return a >= b
		}
		return false
	}
	c := strings.Compare(have, want)
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// ---- canonical form

func (n andNode) write(b *strings.Builder) {
	b.WriteString("(")
	n.l.write(b)
	b.WriteString(" AND ")
	n.r.write(b)
	b.WriteString(")")
}

func (n orNode) write(b *strings.Builder) {
	b.WriteString("(")
	n.l.write(b)
	b.WriteString(" OR ")
	n.r.write(b)
	b.WriteString(")")
}

func (n notNode) write(b *strings.Builder) {
	b.WriteString("NOT ")
	n.x.write(b)
}

func (n textNode) write(b *strings.Builder) { b.WriteString(quote(n.value)) }

func (n cmpNode) write(b *strings.Builder) {
	b.WriteString(n.field)
	if n.op == "in" {
		b.WriteString(" IN (")
		for i, v := range n.values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quote(v))
		}
		b.WriteString(")")
		return
	}
	b.WriteString(" " + n.op + " ")
	b.WriteString(quote(n.values[0]))
}

// quote writes v as a string literal: always quoted, so that a value that
// reads as a keyword or holds spaces stays one value.
func quote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
	return b.String()
}
