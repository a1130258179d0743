package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(stubborn{}) }

// stubborn is a test experiment deep in work that never looks at its
// context (as kv-formats' quantization did for 23.5 s).
type stubborn struct{}

func (stubborn) Name() string        { return "lab-stubborn" }
func (stubborn) Doc() string         { return "Test experiment: sleeps 60 s without looking at its context." }
func (stubborn) Params() []sim.Param { return nil }
func (stubborn) Cost(sim.Values) sim.Cost {
	return sim.Cost{Memory: 1 << 20, Work: 1e6}
}
func (stubborn) Run(ctx context.Context, run *sim.Run) error {
	time.Sleep(60 * time.Second)
	return nil
}

// TestRunSecondInterrupt: `lab run` says at the first Ctrl-C that it is
// stopping, and a second one ends it at once, even inside work that does
// not look at its context (issue 18, red team: `lab run` ignored SIGINT
// for 38 s).
func TestRunSecondInterrupt(t *testing.T) {
	cmd := exec.Command(os.Args[0], "run", "lab-stubborn", "-quiet")
	cmd.Env = append(os.Environ(), "FP8LAB_LAB_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
		t.Logf("ended %v after the second interrupt", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running 5 s after the second interrupt; stderr: %s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "again to quit at once") {
		t.Errorf("the first interrupt said nothing: %q", stderr.String())
	}
}
