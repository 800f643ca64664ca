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
	// A child that burns about 0.3 s of CPU, then exits (Run waits).
	busy := exec.Command("sh", "-c", `end=$(($(date +%s%N) + 300000000)); while [ $(date +%s%N) -lt $end ]; do :; done`)
	if err := busy.Run(); err != nil {
		t.Skipf("sh: %v", err)
	}
	child := busy.ProcessState.UserTime() + busy.ProcessState.SystemTime()
	if child < 100*time.Millisecond {
		t.Skipf("the child used only %v of CPU", child)
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
