package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/fp8lab/fp8lab/lab/notebook"
)

const notebookUsage = `usage:
  lab notebook check [DIR]          read the notebook in the data folder DIR (default data) without
                                    changing it and report what is damaged; exit status 1 if anything is
  lab notebook recover DIR NEWDIR   copy every run of DIR whose record reads, with the points that read,
                                    under the same ids into a new notebook in NEWDIR; DIR is not changed`

// errNotebookDamaged is the error of a check that found damage (the report
// is on stdout).
var errNotebookDamaged = errors.New("the notebook is damaged")

// cmdNotebook runs `lab notebook check|recover`.
func cmdNotebook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("lab notebook: missing subcommand\n%s", notebookUsage)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, notebookUsage)
		return nil
	case "check":
		dir := "data"
		switch len(args) {
		case 1:
		case 2:
			dir = args[1]
		default:
			return fmt.Errorf("lab notebook check: unexpected argument %q\n%s", args[2], notebookUsage)
		}
		rep, err := notebook.Check(dir)
		if err != nil {
			return fmt.Errorf("lab notebook check: %w", err)
		}
		fmt.Fprintln(stdout, rep)
		if !rep.OK() {
			fmt.Fprintf(stdout, "to copy the intact runs into a new notebook: lab notebook recover %s NEWDIR\n", dir)
			return fmt.Errorf("lab notebook check: %w", errNotebookDamaged)
		}
		return nil
	case "recover":
		if len(args) != 3 {
			return fmt.Errorf("lab notebook recover: want DIR and NEWDIR\n%s", notebookUsage)
		}
		rep, err := notebook.Recover(args[1], args[2])
		if rep != nil {
			fmt.Fprintln(stdout, rep)
		}
		if err != nil {
			return fmt.Errorf("lab notebook recover: %w", err)
		}
		copied, points, lost := 0, int64(0), 0
		for _, r := range rep.Runs {
			if r.Copied {
				copied++
				points += r.Read
			} else {
				lost++
			}
		}
		fmt.Fprintf(stdout, "recovered %d runs (%d points) into %s; %d runs not copied (their records do not read)\n", copied, points, args[2], lost)
		fmt.Fprintf(stdout, "start the lab on it with: lab serve -data %s\n", args[2])
		return nil
	}
	return fmt.Errorf("lab notebook: unknown subcommand %q\n%s", args[0], notebookUsage)
}
