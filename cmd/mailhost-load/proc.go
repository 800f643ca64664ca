package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// phase watches the server process and this one over one phase of the run.
type phase struct {
	pid     int
	start   time.Time
	cpu0    time.Duration // server CPU at the start
	self0   time.Duration // this process's CPU at the start
	hwmOK   bool          // the kernel's high-water mark was reset
	rss0    int64         // resident size at the start, kB
	stop    chan struct{}
	sampled sync.WaitGroup
	// peak, peakAnon and peakFile are the highest VmRSS, RssAnon and
	// RssFile sampled, in kB; written by the sampler goroutine, read
	// after it ends.
	peak, peakAnon, peakFile int64
}

// startPhase resets pid's resident-size high-water mark (writing 5 to
// /proc/PID/clear_refs, Linux 4.0+, needs the right to ptrace it) and, as a
// fallback and a check, samples its resident size every 10 ms.
func startPhase(pid int) *phase {
	p := &phase{pid: pid, start: time.Now(), self0: selfCPU(), stop: make(chan struct{})}
	if pid <= 0 {
		return p
	}
	p.cpu0, _ = procCPU(pid)
	p.rss0, _ = procStatus(pid, "VmRSS")
	p.hwmOK = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	p.sampled.Add(1)
	go func() {
		defer p.sampled.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if st, err := procStatusAll(pid); err == nil {
				p.peak = max(p.peak, st["VmRSS"])
				p.peakAnon = max(p.peakAnon, st["RssAnon"])
				p.peakFile = max(p.peakFile, st["RssFile"])
			}
			select {
			case <-t.C:
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

// end prints and answers what the server and this process used in the
// phase; nil without a server pid.
func (p *phase) end(name string) *serverResult {
	el := time.Since(p.start)
	self := selfCPU() - p.self0
	if p.pid <= 0 {
		fmt.Printf("%s: load tool CPU %.2fs in %.2fs\n", name, self.Seconds(), el.Seconds())
		return nil
	}
	close(p.stop)
	p.sampled.Wait()
	r := &serverResult{
		StartRSSMB: float64(p.rss0) / 1024, PeakRSSMB: float64(p.peak) / 1024, PeakFrom: "sampled every 10ms",
		PeakAnonMB: float64(p.peakAnon) / 1024, PeakFileMB: float64(p.peakFile) / 1024,
		ClientCPUSeconds: self.Seconds(), Seconds: el.Seconds(),
	}
	if p.hwmOK {
		if kb, err := procStatus(p.pid, "VmHWM"); err == nil {
			r.PeakRSSMB, r.PeakFrom = float64(kb)/1024, "VmHWM"
		}
	}
	if cpu, err := procCPU(p.pid); err == nil {
		r.CPUSeconds = (cpu - p.cpu0).Seconds()
	}
	fmt.Printf("%s: server RSS %.0f MB at start, peak %.0f MB (%s; sampled peaks: anonymous %.0f MB, file-backed %.0f MB); server CPU %.2fs, load tool CPU %.2fs, in %.2fs\n",
		name, r.StartRSSMB, r.PeakRSSMB, r.PeakFrom, r.PeakAnonMB, r.PeakFileMB, r.CPUSeconds, r.ClientCPUSeconds, r.Seconds)
	return r
}

// procStatus reads one "Key: N kB" line of /proc/PID/status.
func procStatus(pid int, key string) (int64, error) {
	st, err := procStatusAll(pid)
	if err != nil {
		return 0, err
	}
	v, ok := st[key]
	if !ok {
		return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
	}
	return v, nil
}

// procStatusAll reads every "Key: N kB" line of /proc/PID/status.
func procStatusAll(pid int) (map[string]int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	st := map[string]int64{}
	for _, l := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, " kB")), 10, 64); err == nil {
			st[k] = n
		}
	}
	return st, nil
}

// procCPU is pid's user plus system CPU time (fields 14 and 15 of
// /proc/PID/stat, proc(5)).
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return time.Duration(u+k) * time.Second / clockTicks, nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
