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
	ctx, stop := mainContext(os.Args[1:], os.Stderr)
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

// mainContext returns the context of the command args: cancelled by the
// first SIGINT or SIGTERM. Except for the lab server (whose graceful
// shutdown records every run, within its own deadline), the next signal
// has its default effect: a command busy in work that does not look at
// its context (an experiment deep in a computation, a long check) is
// ended by a second Ctrl-C, and says so at the first.
func mainContext(args []string, stderr io.Writer) (context.Context, context.CancelFunc) {
	server := len(args) == 0 || args[0] == "serve"
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		cancel()
		if !server {
			signal.Stop(sigs) // the next signal ends the process
			fmt.Fprintln(stderr, "\nlab: interrupted: stopping (again to quit at once)")
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
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
