// Command lab is fp8lab's program. This is a minimal dispatcher for
// `lab run NAME [flags]` and `lab list experiments`; the full program (the
// lab server, verify, export) replaces it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	_ "github.com/fp8lab/fp8lab/experiments"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errVerify) {
			fmt.Fprintln(os.Stderr, "lab:", err)
		}
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

const usage = `usage:
  lab [serve] [-addr 127.0.0.1:8080] [-data DIR] [-workers N] [-wasm DIR]
  lab run NAME [-param value ...] [-seed N] [-json] [-quiet] [-lab URL]
  lab sweep NAME [-param v1,v2 ...] [-seeds 1..20] [-executor auto|pool|slurm] [-lab URL]
  lab list experiments | models
  lab verify [-exhaustive] DIR|FILE...
  lab notebook check [DIR] | recover DIR NEWDIR`

// dispatch runs the subcommand named by args[0].
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return cmdServe(ctx, nil, stdout, stderr)
	}
	switch args[0] {
	case "serve":
		return cmdServe(ctx, args[1:], stdout, stderr)
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "sweep":
		return cmdSweep(ctx, args[1:], stdout, stderr)
	case "verify":
		return cmdVerify(ctx, args[1:], stdout, stderr)
	case "notebook":
		return cmdNotebook(ctx, args[1:], stdout, stderr)
	case "list":
		if len(args) == 1 || args[1] == "experiments" {
			return cmdListExperiments(stdout)
		}
		if args[1] == "models" {
			return cmdListModels(stdout)
		}
		return fmt.Errorf("unknown list %q\n%s", args[1], usage)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	if strings.HasPrefix(args[0], "-") { // `lab -addr … -data …`: serve is the default command
		return cmdServe(ctx, args, stdout, stderr)
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}
