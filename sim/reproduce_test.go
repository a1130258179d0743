package sim

import "testing"

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"1024,4096": "1024,4096", "-K": "-K", "a b": "'a b'", "": "''", "it's": `'it'\''s'`, "$HOME": "'$HOME'", "x;y": "'x;y'", "q.npy:t": "q.npy:t",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
