package main

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestTreeCPU checks that the CPU of a child that has exited and been
// waited for counts in its parent's tree, and that a live child is in it.
func TestTreeCPU(t *testing.T) {
	self := os.Getpid()
	before, n0, err := treeCPU([]int{self})
	if err != nil {
		t.Fatal(err)
	}
	// A child that burns CPU by a count of work, not of time, so that a
	// loaded machine does not leave it short (about 0.6 s here), then
	// exits (Run waits).
	busy := exec.Command("sh", "-c", `i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done`)
	if err := busy.Run(); err != nil {
		t.Fatalf("sh: %v", err)
	}
	child := busy.ProcessState.UserTime() + busy.ProcessState.SystemTime()
	if child < 100*time.Millisecond {
		t.Fatalf("the child used only %v of CPU, want at least 100ms", child)
	}
	// A live child, sleeping.
	sleeper := exec.Command("sleep", "10")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	after, n1, err := treeCPU([]int{self})
	if err != nil {
		t.Fatal(err)
	}
	// cutime is counted in clock ticks: allow two of rounding.
	if got := after - before; got < child-20*time.Millisecond {
		t.Errorf("tree CPU grew by %v, want at least the exited child's %v", got, child)
	}
	if n1 != n0+1 {
		t.Errorf("tree has %d processes, want %d (the sleeping child added)", n1, n0+1)
	}
	if _, _, err := treeCPU([]int{1 << 30}); err == nil {
		t.Error("treeCPU of a pid that does not exist: no error")
	}
}
