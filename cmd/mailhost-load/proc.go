package main

import (
	"fmt"
	"os"
	"slices"
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
	trees   []int         // -cpu-tree roots
	tree0   time.Duration // their trees' CPU at the start
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
// fallback and a check, samples its resident size every 10 ms. The CPU of
// the process trees rooted at trees (-cpu-tree) is read at the start and
// at the end.
func startPhase(pid int, trees []int) *phase {
	p := &phase{pid: pid, trees: trees, start: time.Now(), self0: selfCPU(), stop: make(chan struct{})}
	if len(trees) > 0 {
		p.tree0, _, _ = treeCPU(trees)
	}
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
// phase; nil without a server pid or -cpu-tree.
func (p *phase) end(name string) *serverResult {
	el := time.Since(p.start)
	self := selfCPU() - p.self0
	r := &serverResult{ClientCPUSeconds: self.Seconds(), Seconds: el.Seconds()}
	if len(p.trees) > 0 {
		if cpu, n, err := treeCPU(p.trees); err == nil {
			r.TreeCPUSeconds, r.TreeProcesses = (cpu - p.tree0).Seconds(), n
			fmt.Printf("%s: CPU of the process trees %v (%d processes at the end, exited children included): %.2fs\n",
				name, p.trees, n, r.TreeCPUSeconds)
		}
	}
	if p.pid <= 0 {
		fmt.Printf("%s: load tool CPU %.2fs in %.2fs\n", name, self.Seconds(), el.Seconds())
		if len(p.trees) > 0 {
			return r
		}
		return nil
	}
	close(p.stop)
	p.sampled.Wait()
	r.StartRSSMB, r.PeakRSSMB, r.PeakFrom = float64(p.rss0)/1024, float64(p.peak)/1024, "sampled every 10ms"
	r.PeakAnonMB, r.PeakFileMB = float64(p.peakAnon)/1024, float64(p.peakFile)/1024
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

// treeCPU is the CPU time (user plus system) of the processes roots and
// all their descendants: each live one's own time plus the times of its
// children that have exited and been waited for (fields 16 and 17 of
// /proc/PID/stat, cutime and cstime), so that the short-lived workers of
// a multi-process server (Postfix's smtpd, cleanup, smtp) count once they
// are gone. A process counted live at one reading and reaped at the next
// moves into its parent's figure, so differences between readings hold.
// It also answers how many processes the trees hold now.
func treeCPU(roots []int) (time.Duration, int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	type proc struct {
		ppid int
		cpu  int64 // ticks: utime + stime + cutime + cstime
	}
	procs := map[int]proc{}
	kids := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since ReadDir
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 15 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		var ticks int64
		for _, v := range f[11:15] { // utime stime cutime cstime
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
		procs[pid] = proc{ppid: ppid, cpu: ticks}
		kids[ppid] = append(kids[ppid], pid)
	}
	seen := map[int]bool{}
	todo := slices.Clone(roots)
	var ticks int64
	for len(todo) > 0 {
		pid := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		p, ok := procs[pid]
		if !ok || seen[pid] {
			continue
		}
		seen[pid] = true
		ticks += p.cpu
		todo = append(todo, kids[pid]...)
	}
	if len(seen) == 0 {
		return 0, 0, fmt.Errorf("no process of %v is running", roots)
	}
	return time.Duration(ticks) * time.Second / clockTicks, len(seen), nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
