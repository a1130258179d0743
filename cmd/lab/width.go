package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fp8lab/fp8lab/sim"
)

// termWidth is the most columns the terminal output of lab takes (tables,
// help, the reproduce line); wider results are in `lab run … -json`.
const termWidth = 100

// wrapCommand writes a shell command on lines of at most width columns,
// continued with " \" and indented, so that it can still be pasted and run.
// A flag stays on the line of its value; a quoted word (a path with a
// space) is never cut.
func wrapCommand(cmd string, width int) string {
	fields := shellFields(cmd)
	// Pair each flag with its value: "-K 1024,2048" moves as one.
	var words []string
	for i := 0; i < len(fields); i++ {
		w := fields[i]
		if strings.HasPrefix(w, "-") && i+1 < len(fields) && !strings.HasPrefix(fields[i+1], "-") {
			w += " " + fields[i+1]
			i++
		}
		words = append(words, w)
	}
	var b strings.Builder
	line := 0
	for i, w := range words {
		n := len([]rune(w))
		switch {
		case i == 0:
		case line+1+n+2 > width: // room for " \"
			b.WriteString(" \\\n    ")
			line = 4
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += n
	}
	return b.String()
}

// shellFields splits cmd at the blanks outside single quotes and outside a
// backslash's escape, keeping the quoting: the words a POSIX shell sees,
// as written.
func shellFields(cmd string) []string {
	var out []string
	var w strings.Builder
	quoted, escaped, in := false, false, false
	for _, r := range cmd {
		switch {
		case escaped:
			escaped = false
		case quoted:
			quoted = r != '\''
		case r == '\'':
			quoted = true
		case r == '\\':
			escaped = true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
			continue
		}
		w.WriteRune(r)
		in = true
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// wrapText writes text as lines of at most width columns, each starting
// with indent.
func wrapText(w io.Writer, text, indent string, width int) {
	line := indent
	for _, word := range strings.Fields(text) {
		if len([]rune(line))+1+len([]rune(word)) > width && strings.TrimSpace(line) != "" {
			fmt.Fprintln(w, line)
			line = indent
		}
		if strings.TrimSpace(line) != "" {
			line += " "
		}
		line += word
	}
	if strings.TrimSpace(line) != "" {
		fmt.Fprintln(w, line)
	}
}

// writeParams writes each parameter as a line with its flag, kind and
// default, and its description, limits, unit and former names wrapped
// below it, within termWidth columns.
func writeParams(w io.Writer, params []sim.Param) {
	for _, p := range params {
		def := p.FormatValue(p.Default)
		if len([]rune(def)) > 48 {
			def = string([]rune(def)[:45]) + "..."
		}
		wrapText(w, fmt.Sprintf("-%s  %s, default %s", p.Name, p.Kind, def), "  ", termWidth)
		doc := p.Doc
		if p.Unit != "" {
			doc += " (" + p.Unit + ")"
		}
		if p.Kind == sim.KindChoice {
			doc += "; one of " + strings.Join(p.Choices, " | ")
		} else if l := p.Limits(); l != "" {
			doc += "; " + l
		}
		if len(p.Aliases) > 0 {
			doc += "; formerly -" + strings.Join(p.Aliases, ", -")
		}
		wrapText(w, doc, "      ", termWidth)
	}
}
