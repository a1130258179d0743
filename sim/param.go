package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Kind is the type of a parameter's value.
type Kind int

// The kinds of parameter. The Go type of a value in [Values] is given for each.
const (
	// KindInt is a whole number (Go int), checked against Min and Max.
	KindInt Kind = iota + 1
	// KindFloat is a finite real number (Go float64), checked against Min and Max.
	KindFloat
	// KindBool is true or false (Go bool).
	KindBool
	// KindChoice is one string out of Choices (Go string).
	KindChoice
	// KindInts is a non-empty list of whole numbers (Go []int), written
	// comma-separated on the command line ("4096,16384,131072"); every element
	// is checked against Min and Max.
	KindInts
)

// String returns the kind's name as shown in help text: "int", "float",
// "bool", "choice", "ints".
func (k Kind) String() string {
	switch k {
	case KindInt:
		return "int"
	case KindFloat:
		return "float"
	case KindBool:
		return "bool"
	case KindChoice:
		return "choice"
	case KindInts:
		return "ints"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Param describes one parameter of an experiment.
//
// Min and Max bound the value of KindInt and KindFloat parameters and every
// element of a KindInts parameter, inclusively; they apply only when
// Max > Min (leave both zero for an unbounded parameter). Default must be a
// valid value of the kind's Go type (see [Kind]); an untyped constant such as
// 4 or 0.5 is accepted for numeric kinds.
type Param struct {
	Name    string   // flag and JSON name, kebab-case ("k-block-n"); a one-letter symbol keeps its case ("K")
	Aliases []string // former names, still accepted on input (flags, JSON, stored runs); never written
	Doc     string   // one line for help text
	Unit    string   // unit for display, e.g. "tokens"; may be empty
	Kind    Kind     // type of the value
	Default any      // value used when the parameter is not given
	Min     float64  // inclusive lower limit (numeric kinds, when Max > Min)
	Max     float64  // inclusive upper limit (numeric kinds, when Max > Min)
	Choices []string // allowed values of a KindChoice parameter
	// Named gives a KindInt parameter words that stand for values outside
	// its range ("auto" for 0: let the experiment choose), accepted on
	// input wherever a number is and written back as the word.
	Named []Named
}

// Named is a word a KindInt parameter accepts for Value.
type Named struct {
	Name  string
	Value int
}

// named returns the value the word s names, if any.
func (p Param) named(s string) (int, bool) {
	for _, n := range p.Named {
		if n.Name == s {
			return n.Value, true
		}
	}
	return 0, false
}

// nameOf returns the word naming the value v, if any.
func (p Param) nameOf(v int) (string, bool) {
	for _, n := range p.Named {
		if n.Value == v {
			return n.Name, true
		}
	}
	return "", false
}

// bounded reports whether Min and Max apply.
func (p Param) bounded() bool { return p.Max > p.Min }

// errorf returns an error prefixed with the parameter's name.
func (p Param) errorf(format string, args ...any) error {
	return fmt.Errorf("parameter %q: %s", p.Name, fmt.Sprintf(format, args...))
}

// Parse parses s, as written on the command line, into a value of the
// parameter's kind and checks it with [Param.Validate]. Ints are decimal
// (a leading sign is allowed); floats are anything strconv.ParseFloat accepts
// except NaN and ±Inf; bools are what strconv.ParseBool accepts; an int list
// is comma-separated, spaces around elements ignored.
func (p Param) Parse(s string) (any, error) {
	var v any
	switch p.Kind {
	case KindInt:
		n, err := parseInt(s)
		if w, ok := p.named(strings.TrimSpace(s)); ok {
			n, err = w, nil
		}
		if err != nil {
			if len(p.Named) > 0 {
				return nil, p.errorf("%q is not an integer or %s", s, p.namedList())
			}
			return nil, p.errorf("%q is not an integer", s)
		}
		v = n
	case KindFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, p.errorf("%q is not a number", s)
		}
		v = f
	case KindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, p.errorf("%q is not true or false", s)
		}
		v = b
	case KindChoice:
		v = strings.TrimSpace(s)
	case KindInts:
		list := []int{}
		if strings.TrimSpace(s) != "" {
			for i, f := range strings.Split(s, ",") {
				n, err := parseInt(f)
				if err != nil {
					return nil, p.errorf("element %d: %q is not an integer", i+1, strings.TrimSpace(f))
				}
				list = append(list, n)
			}
		}
		v = list
	default:
		return nil, p.errorf("unknown kind %v", p.Kind)
	}
	if err := p.Validate(v); err != nil {
		return nil, err
	}
	return v, nil
}

func parseInt(s string) (int, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 0)
	return int(n), err
}

// Convert turns v into a value of the parameter's kind and checks it with
// [Param.Validate]. v may be what encoding/json decodes (float64,
// json.Number, string, bool, []any), a Go value of the kind's type or of
// another integer or float type, or a string, which is parsed as by
// [Param.Parse]. A float is accepted for an int only when it is integral.
func (p Param) Convert(v any) (any, error) {
	if s, ok := v.(string); ok && p.Kind != KindChoice {
		return p.Parse(s)
	}
	var out any
	switch p.Kind {
	case KindInt:
		n, err := toInt(v)
		if err != nil {
			return nil, p.errorf("%s is not an integer", describe(v))
		}
		out = n
	case KindFloat:
		f, ok := toFloat(v)
		if !ok {
			return nil, p.errorf("%s is not a number", describe(v))
		}
		out = f
	case KindBool:
		b, ok := v.(bool)
		if !ok {
			return nil, p.errorf("%s is not true or false", describe(v))
		}
		out = b
	case KindChoice:
		s, ok := v.(string)
		if !ok {
			return nil, p.errorf("%s is not a string", describe(v))
		}
		out = s
	case KindInts:
		var list []int
		switch x := v.(type) {
		case []int:
			list = slices.Clone(x)
		case []any:
			list = make([]int, len(x))
			for i, e := range x {
				n, err := toInt(e)
				if err != nil {
					return nil, p.errorf("element %d: %s is not an integer", i+1, describe(e))
				}
				list[i] = n
			}
		default:
			return nil, p.errorf("%s is not a list of integers", describe(v))
		}
		out = list
	default:
		return nil, p.errorf("unknown kind %v", p.Kind)
	}
	if err := p.Validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

// describe formats a rejected value for an error message.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func toInt(v any) (int, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case int8:
		return int(x), nil
	case int16:
		return int(x), nil
	case int32:
		return int(x), nil
	case int64:
		if int64(int(x)) != x {
			return 0, strconv.ErrRange
		}
		return int(x), nil
	case uint8:
		return int(x), nil
	case uint16:
		return int(x), nil
	case uint32:
		if uint64(x) > math.MaxInt {
			return 0, strconv.ErrRange
		}
		return int(x), nil
	case uint64:
		if x > math.MaxInt {
			return 0, strconv.ErrRange
		}
		return int(x), nil
	case json.Number:
		return exactInt(x.String())
	case string:
		return parseInt(x)
	case float32:
		return toInt(float64(x))
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, strconv.ErrSyntax
		}
		return int(x), nil
	}
	return 0, strconv.ErrSyntax
}

// exactInt reads a JSON number as an integer exactly, in decimal, never
// through float64: "8", "8.0", "8e0" and "1.5e1" are integers;
// "0.999999999999999999999" and "8.0000000000000001", which float64 rounds
// to 1 and 8, are not. A value beyond int is strconv.ErrRange; the work is
// linear in the text whatever its exponent.
func exactInt(s string) (int, error) {
	neg := strings.HasPrefix(s, "-")
	t := strings.TrimPrefix(s, "-")
	mant, exp := t, 0
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		mant = t[:i]
		es := t[i+1:]
		e, err := strconv.Atoi(strings.TrimPrefix(es, "+"))
		switch {
		case err == nil:
		case !errors.Is(err, strconv.ErrRange):
			return 0, strconv.ErrSyntax
		case strings.Trim(mant, "0.") == "":
			return 0, nil // zero, whatever the exponent
		case strings.HasPrefix(es, "-"):
			return 0, strconv.ErrSyntax // a fraction
		default:
			return 0, strconv.ErrRange
		}
		exp = e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := whole + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	exp -= len(frac)
	digits = strings.TrimLeft(digits, "0")
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	if digits == "" {
		return 0, nil
	}
	if exp < 0 {
		return 0, strconv.ErrSyntax // a fraction is left
	}
	if len(digits)+exp > 19 {
		return 0, strconv.ErrRange
	}
	digits += strings.Repeat("0", exp)
	if neg {
		digits = "-" + digits
	}
	n, err := strconv.ParseInt(digits, 10, 0)
	return int(n), err
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := strconv.ParseFloat(x.String(), 64)
		return f, err == nil || errors.Is(err, strconv.ErrRange)
	}
	if n, err := toInt(v); err == nil {
		return float64(n), true
	}
	return 0, false
}

// Validate checks that v, a value of the parameter kind's Go type (see
// [Kind]), is allowed: within [Min, Max] when bounded, finite for a float,
// one of Choices for a choice, non-empty for a list. The error names the
// parameter, the value and the limit, e.g.
// `parameter "trials": 0 is below the minimum 1`.
func (p Param) Validate(v any) error {
	switch p.Kind {
	case KindInt:
		n, ok := v.(int)
		if !ok {
			return p.errorf("%s is not an int", describe(v))
		}
		if _, ok := p.nameOf(n); ok {
			return nil
		}
		return p.checkRange(float64(n), strconv.Itoa(n))
	case KindFloat:
		f, ok := v.(float64)
		if !ok {
			return p.errorf("%s is not a float64", describe(v))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return p.errorf("%v is not a finite number", f)
		}
		return p.checkRange(f, formatNum(f))
	case KindBool:
		if _, ok := v.(bool); !ok {
			return p.errorf("%s is not a bool", describe(v))
		}
		return nil
	case KindChoice:
		s, ok := v.(string)
		if !ok {
			return p.errorf("%s is not a string", describe(v))
		}
		if !slices.Contains(p.Choices, s) {
			return p.errorf("%q is not one of %s", s, strings.Join(p.Choices, ", "))
		}
		return nil
	case KindInts:
		list, ok := v.([]int)
		if !ok {
			return p.errorf("%s is not a []int", describe(v))
		}
		if len(list) == 0 {
			return p.errorf("the list is empty")
		}
		for i, n := range list {
			if err := p.checkRange(float64(n), strconv.Itoa(n)); err != nil {
				return fmt.Errorf("%w (element %d)", err, i+1)
			}
		}
		return nil
	}
	return p.errorf("unknown kind %v", p.Kind)
}

func (p Param) checkRange(f float64, shown string) error {
	if !p.bounded() {
		return nil
	}
	if f < p.Min {
		return p.errorf("%s is below the minimum %s", shown, formatNum(p.Min))
	}
	if f > p.Max {
		return p.errorf("%s is above the maximum %s", shown, formatNum(p.Max))
	}
	return nil
}

// formatNum formats f shortest, without an exponent for ordinary magnitudes.
func formatNum(f float64) string {
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e15) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// FormatValue formats v, a value of the parameter's kind, the way
// [Param.Parse] reads it back: an int list is comma-separated.
func (p Param) FormatValue(v any) string {
	switch x := v.(type) {
	case []int:
		parts := make([]string, len(x))
		for i, n := range x {
			parts[i] = strconv.Itoa(n)
		}
		return strings.Join(parts, ",")
	case float64:
		return formatNum(x)
	case int:
		if w, ok := p.nameOf(x); ok && p.Kind == KindInt {
			return w
		}
	}
	return fmt.Sprint(v)
}

// namedList returns the words of Named, "auto" or "auto|none".
func (p Param) namedList() string {
	var w []string
	for _, n := range p.Named {
		w = append(w, n.Name)
	}
	return strings.Join(w, "|")
}

// Limits describes the allowed values for help text: "[1, 1000000]",
// "one of a|b|c", or "" when unbounded.
func (p Param) Limits() string {
	switch p.Kind {
	case KindChoice:
		return "one of " + strings.Join(p.Choices, "|")
	case KindInt, KindFloat, KindInts:
		if p.bounded() {
			l := "[" + formatNum(p.Min) + ", " + formatNum(p.Max) + "]"
			if len(p.Named) > 0 {
				l += " or " + p.namedList()
			}
			return l
		}
	}
	return ""
}

// reservedNames may not be parameter names: the seed is not a parameter.
var reservedNames = []string{"seed"}

// CheckParams checks a parameter schema: names and aliases are non-empty
// identifiers (letters, digits, '_' and '-', starting with a letter), unique
// among all names and aliases and not "seed"; kinds are known; choices are non-empty; Min ≤ Max; every default
// is a valid value. On success the defaults are normalised in place (an
// untyped numeric constant becomes int or float64).
func CheckParams(params []Param) error {
	seen := map[string]bool{}
	for i := range params {
		p := &params[i]
		if !validName(p.Name) {
			return fmt.Errorf("parameter %q: invalid name", p.Name)
		}
		if slices.Contains(reservedNames, p.Name) {
			return fmt.Errorf("parameter %q: reserved name", p.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("parameter %q: declared twice", p.Name)
		}
		seen[p.Name] = true
		for _, a := range p.Aliases {
			if !validName(a) || slices.Contains(reservedNames, a) {
				return p.errorf("invalid alias %q", a)
			}
			if seen[a] {
				return p.errorf("alias %q is taken", a)
			}
			seen[a] = true
		}
		if p.Kind < KindInt || p.Kind > KindInts {
			return p.errorf("unknown kind %v", p.Kind)
		}
		if p.Kind == KindChoice && len(p.Choices) == 0 {
			return p.errorf("a choice without choices")
		}
		if p.Min > p.Max || math.IsNaN(p.Min) || math.IsNaN(p.Max) {
			return p.errorf("minimum %v is above the maximum %v", p.Min, p.Max)
		}
		d, err := p.Convert(p.Default)
		if err != nil {
			return fmt.Errorf("default: %w", err)
		}
		p.Default = d
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '_' || r == '-'):
		default:
			return false
		}
	}
	return true
}

// Values are the validated parameter values of one run: every parameter of
// the schema has a value, its default where none was given. The zero Values
// has no parameters. Values are immutable and safe for concurrent use.
//
// The getters panic when the name is not a parameter or has another kind:
// that is a programming error in an experiment, and [Execute] turns it into an
// error of the run.
type Values struct {
	params []Param
	m      map[string]any
	given  map[string]bool
}

// Defaults returns the values of params with every parameter at its default.
// It returns an error when the schema is invalid (see [CheckParams]).
func Defaults(params []Param) (Values, error) {
	return ValuesFromMap(params, nil)
}

// ParseValues validates command-line style values, name → string, against
// params (see [Param.Parse]); parameters not given take their defaults. An
// unknown name is an error listing the known ones.
func ParseValues(params []Param, args map[string]string) (Values, error) {
	m := make(map[string]any, len(args))
	for k, s := range args {
		m[k] = s
	}
	return ValuesFromMap(params, m)
}

// ValuesFromMap validates values, name → value, against params (see
// [Param.Convert] for the accepted types, including those encoding/json
// decodes); parameters not given take their defaults. A former name (one of
// [Param.Aliases]) is read as the parameter's name; giving both is an
// error. An unknown name is an error listing the known ones. Errors are reported for names in sorted order,
// so the same input always gives the same error.
func ValuesFromMap(params []Param, in map[string]any) (Values, error) {
	params = slices.Clone(params)
	if err := CheckParams(params); err != nil {
		return Values{}, err
	}
	v := Values{params: params, m: make(map[string]any, len(params)), given: map[string]bool{}}
	names := make([]string, 0, len(in))
	for k := range in {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		i := slices.IndexFunc(params, func(p Param) bool { return p.Name == k || slices.Contains(p.Aliases, k) })
		if i < 0 {
			return Values{}, fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(paramNames(params), ", "))
		}
		name := params[i].Name
		if v.given[name] {
			return Values{}, fmt.Errorf("parameter %q given twice (also as %q)", name, k)
		}
		x, err := params[i].Convert(in[k])
		if err != nil {
			return Values{}, err
		}
		v.m[name] = x
		v.given[name] = true
	}
	for _, p := range params {
		if _, ok := v.m[p.Name]; !ok {
			v.m[p.Name] = cloneValue(p.Default)
		}
	}
	return v, nil
}

// ValuesFromJSON validates a JSON object of parameter values against params,
// as [ValuesFromMap] does. Numbers keep their exact decimal text, so a large
// integer is not rounded through float64. Empty input or "null" means all
// defaults.
func ValuesFromJSON(params []Param, data []byte) (Values, error) {
	var in map[string]any
	if len(bytes.TrimSpace(data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&in); err != nil {
			return Values{}, fmt.Errorf("parameters: %w", err)
		}
		if dec.More() {
			return Values{}, errors.New("parameters: trailing data after the JSON object")
		}
	}
	return ValuesFromMap(params, in)
}

func paramNames(params []Param) []string {
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.Name
	}
	sort.Strings(names)
	return names
}

func cloneValue(v any) any {
	if l, ok := v.([]int); ok {
		return slices.Clone(l)
	}
	return v
}

// Params returns the schema the values were validated against.
func (v Values) Params() []Param { return slices.Clone(v.params) }

// Given reports whether the parameter was given explicitly rather than
// defaulted.
func (v Values) Given(name string) bool { return v.given[name] }

// Get returns the value of the named parameter (a copy for a list) and
// whether it exists.
func (v Values) Get(name string) (any, bool) {
	x, ok := v.m[name]
	return cloneValue(x), ok
}

// Map returns a copy of all values, name → value.
func (v Values) Map() map[string]any {
	m := make(map[string]any, len(v.m))
	for k, x := range v.m {
		m[k] = cloneValue(x)
	}
	return m
}

// MarshalJSON encodes the values as a JSON object, name → value.
func (v Values) MarshalJSON() ([]byte, error) { return json.Marshal(v.m) }

// Flags formats the values as command-line flags in schema order,
// e.g. "-K 4096 -model sm90.wgmma.e4m3.f32".
func (v Values) Flags() string {
	var b strings.Builder
	for i, p := range v.params {
		if i > 0 {
			b.WriteByte(' ')
		}
		if p.Kind == KindBool {
			// -name=false: a bool flag takes no separate argument
			// (-fused false would read as -fused and a stray "false").
			fmt.Fprintf(&b, "-%s=%s", p.Name, p.FormatValue(v.m[p.Name]))
			continue
		}
		fmt.Fprintf(&b, "-%s %s", p.Name, p.FormatValue(v.m[p.Name]))
	}
	return b.String()
}

func get[T any](v Values, name string, kind Kind) T {
	x, ok := v.m[name]
	if !ok {
		panic(fmt.Sprintf("sim: no parameter %q (known: %s)", name, strings.Join(paramNames(v.params), ", ")))
	}
	t, ok := x.(T)
	if !ok {
		panic(fmt.Sprintf("sim: parameter %q is not of kind %v", name, kind))
	}
	return t
}

// Int returns the value of a KindInt parameter.
func (v Values) Int(name string) int { return get[int](v, name, KindInt) }

// Float returns the value of a KindFloat parameter.
func (v Values) Float(name string) float64 { return get[float64](v, name, KindFloat) }

// Bool returns the value of a KindBool parameter.
func (v Values) Bool(name string) bool { return get[bool](v, name, KindBool) }

// String returns the value of a KindChoice parameter.
func (v Values) String(name string) string { return get[string](v, name, KindChoice) }

// Ints returns a copy of the value of a KindInts parameter.
func (v Values) Ints(name string) []int { return slices.Clone(get[[]int](v, name, KindInts)) }
