package storetest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallFS mounts a tmpfs of size bytes on a new directory for the test,
// and unmounts it when the test and its cleanups are over (register what
// must be closed first after calling SmallFS). It skips the test where
// mounting is not permitted: it needs root, or CAP_SYS_ADMIN in a
// container.
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot mount a %d-byte tmpfs (CI=true: the full-disk tests must run, as root): %v: %s", size, err, out)
		}
		t.Skipf("cannot mount a %d-byte tmpfs for the test (needs root): %v: %s", size, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// FillFS writes the file name until its file system has no space left,
// and answers how many bytes it wrote; removing the file frees them.
func FillFS(t testing.TB, name string) int64 {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatalf("fill %s: %v", filepath.Dir(name), err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for len(buf) > 0 {
		k, err := f.Write(buf)
		n += int64(k)
		switch {
		case errors.Is(err, syscall.ENOSPC):
			buf = buf[:len(buf)/2] // down to the last bytes
		case err != nil && err != io.ErrShortWrite:
			t.Fatalf("fill %s: %v", filepath.Dir(name), err)
		}
	}
	return n
}
