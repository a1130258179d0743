package sim

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ParamSchema is one parameter as the lab's API and the browser's registry
// describe it (GET /api/experiments, fp8lab.experiments()).
type ParamSchema struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"` // former names, accepted on input
	Doc     string   `json:"doc"`
	Unit    string   `json:"unit,omitempty"`
	Kind    string   `json:"kind"` // int, float, bool, choice, ints
	Default any      `json:"default"`
	Min     *float64 `json:"min,omitempty"` // inclusive, when bounded
	Max     *float64 `json:"max,omitempty"`
	Choices []string `json:"choices,omitempty"`
	Limits  string   `json:"limits,omitempty"` // for display: "[1, 1000]", "one of a|b"
	// Named maps the words an int parameter accepts to their values
	// ({"auto": 0}); its default is then written as the word.
	Named map[string]int `json:"named,omitempty"`
}

// Schema describes an experiment: its name, documentation, parameters and,
// when it declares one ([Charter]), its chart.
type Schema struct {
	Name    string        `json:"name"`
	Summary string        `json:"summary"`
	Doc     string        `json:"doc"`
	Params  []ParamSchema `json:"params"`
	Chart   *Chart        `json:"chart,omitempty"`
}

// SchemaOf returns the schema of e. The lab's API and the WebAssembly
// registry both describe experiments with it, so the page reads one form.
func SchemaOf(e Experiment) Schema {
	params := e.Params()
	defaults, err := Defaults(params)
	out := Schema{Name: e.Name(), Summary: Summary(e), Doc: strings.TrimSpace(e.Doc()), Params: []ParamSchema{}}
	for _, p := range params {
		ps := ParamSchema{Name: p.Name, Aliases: p.Aliases, Doc: p.Doc, Unit: p.Unit, Kind: p.Kind.String(),
			Default: p.Default, Choices: p.Choices, Limits: p.Limits()}
		if err == nil {
			ps.Default, _ = defaults.Get(p.Name)
		}
		if len(p.Named) > 0 {
			ps.Named = map[string]int{}
			for _, n := range p.Named {
				ps.Named[n.Name] = n.Value
			}
			if n, ok := ps.Default.(int); ok {
				if w, ok := p.nameOf(n); ok {
					ps.Default = w
				}
			}
		}
		if p.bounded() && p.Kind != KindChoice && p.Kind != KindBool {
			lo, hi := p.Min, p.Max
			ps.Min, ps.Max = &lo, &hi
		}
		out.Params = append(out.Params, ps)
	}
	if c, ok := e.(Charter); ok {
		ch := c.Chart()
		out.Chart = &ch
	}
	return out
}

// Schemas returns the schemas of every registered experiment, sorted by
// name.
func Schemas() []Schema {
	list := []Schema{}
	for _, e := range Experiments() {
		list = append(list, SchemaOf(e))
	}
	return list
}

// SchemasJSON returns [Schemas] as the JSON object {"experiments": […]}.
func SchemasJSON() ([]byte, error) {
	b, err := json.Marshal(map[string]any{"experiments": Schemas()})
	if err != nil {
		return nil, fmt.Errorf("sim: experiment schemas: %w", err)
	}
	return b, nil
}
