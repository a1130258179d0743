package notebook

import (
	"errors"
	"os/exec"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// TestDiskFull fills a real 512 KiB tmpfs (root only: skipped, and says
// so, where mount is not permitted): the write that does not fit fails
// with ErrDiskFull, what was committed before reads back, the same write
// succeeds once the file system has room again, and the file passes Open's
// checks afterwards.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s); the lab's tests inject the same error through a Store", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() }) // after the stores close (cleanups run last first)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r := Run{Experiment: "e", State: Running}
	if err := s.Create(&r); err != nil {
		t.Fatal(err)
	}
	batch := make([]sim.Point, 2000)
	for i := range batch {
		batch[i] = sim.Point{Series: "series", X: float64(i), Y: 1}
	}
	var from int64
	for from < 1e6 {
		if err = s.Append(r.ID, from, batch, nil); err != nil {
			break
		}
		from += int64(len(batch))
	}
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("after %d points: %v, want ErrDiskFull", from, err)
	}
	t.Logf("full after %d points: %v", from, err)
	if got, err := s.Get(r.ID); err != nil || got.Points != from {
		t.Fatalf("committed %d points, the notebook holds %d (%v)", from, got.Points, err)
	}
	if pts, err := s.Points(r.ID, 0, 0); err != nil || int64(len(pts)) != from {
		t.Fatalf("%d points read back, %v", len(pts), err)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=8m", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
	if err := s.Append(r.ID, from, batch, func(r *Run) { r.State = Done }); err != nil {
		t.Fatalf("the same write with room again: %v", err)
	}
	s.Close()
	s = open(t, dir)
	// Open's checks pass: the failed transaction left no damage.
	if got, err := s.Get(r.ID); err != nil || got.Points != from+2000 || got.State != Done {
		t.Errorf("after reopening: %+v %v", got, err)
	}
	s.Close()
}
