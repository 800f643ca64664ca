package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// results is what one run measured, written with -json for scripts
// (bench/compare.sh) to aggregate. Absent phases are null.
type results struct {
	Label     string         `json:"label,omitempty"`
	Size      int            `json:"size_bytes"`
	Conns     int            `json:"connections"`
	Mailboxes int            `json:"mailboxes"`
	StartTLS  bool           `json:"imap_starttls"`
	BDAT      bool           `json:"bdat"`
	Deliver   *deliverResult `json:"deliver"`
	Fetch     *fetchResult   `json:"fetch"`
	Logins    *loginResult   `json:"logins"`
	Submit    *submitResult  `json:"submission"`
}

type latencyResult struct {
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	Maxms float64 `json:"max_ms"`
}

type deliverResult struct {
	start    time.Time
	Messages int     `json:"messages"`
	Seconds  float64 `json:"seconds"`
	Rate     float64 `json:"msgs_per_s"`
	MBps     float64 `json:"mb_per_s"`
	// TargetRate is -rate (0: as fast as the connections go); Late counts
	// the messages that started more than 10 ms after their time.
	TargetRate float64 `json:"target_msgs_per_s,omitempty"`
	Late       int     `json:"late_starts,omitempty"`
	// Latency is from the client's end of DATA to the server's reply.
	Latency latencyResult `json:"end_of_data_to_reply"`
	// EndToEnd* are set with -wait: from the first MAIL to the last
	// message seen stored over IMAP.
	EndToEndSeconds float64       `json:"end_to_end_seconds,omitempty"`
	EndToEndRate    float64       `json:"end_to_end_msgs_per_s,omitempty"`
	Slices          []sliceResult `json:"slices,omitempty"`
	Server          *serverResult `json:"server"`
}

type sliceResult struct {
	First   int           `json:"first"`
	Last    int           `json:"last"`
	Rate    float64       `json:"msgs_per_s"`
	Latency latencyResult `json:"end_of_data_to_reply"`
}

type fetchResult struct {
	Messages int           `json:"messages"`
	MB       float64       `json:"mb"`
	Seconds  float64       `json:"seconds"`
	Rate     float64       `json:"msgs_per_s"`
	MBps     float64       `json:"mb_per_s"`
	Server   *serverResult `json:"server"`
}

type loginResult struct {
	Clients   int     `json:"clients"`
	Logins    int     `json:"logins"`
	Seconds   float64 `json:"seconds"`
	Rate      float64 `json:"logins_per_s"`
	FirstRate float64 `json:"first_login_per_mailbox_per_s"`
	// Server covers both the first logins and the timed ones.
	Server *serverResult `json:"server"`
}

// serverResult is what the server process (-pid) used during a phase.
type serverResult struct {
	// StartRSSMB is the resident size when the phase began: memory the
	// server had not yet given back (after password hashes, say) counts
	// in the peak.
	StartRSSMB float64 `json:"start_rss_mb"`
	PeakRSSMB  float64 `json:"peak_rss_mb"`
	PeakFrom   string  `json:"peak_rss_from"`
	// PeakAnonMB and PeakFileMB split the resident size (sampled): the
	// heap and stacks, and file-backed pages, which for mailhost are
	// bbolt's memory map of its data file (reclaimable page cache that
	// grows with the file, and that bbolt touches whole when it opens it).
	PeakAnonMB float64 `json:"peak_rss_anon_mb"`
	PeakFileMB float64 `json:"peak_rss_file_mb"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// TreeCPUSeconds is the CPU of the -cpu-tree process trees, exited
	// children included (Postfix, OpenDKIM and Dovecot are many
	// processes); TreeProcesses how many they held at the end.
	TreeCPUSeconds   float64 `json:"tree_cpu_seconds,omitempty"`
	TreeProcesses    int     `json:"tree_processes,omitempty"`
	ClientCPUSeconds float64 `json:"load_tool_cpu_seconds"`
	Seconds          float64 `json:"seconds"`
}

func (r results) append(path string) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if _, err := f.Write(append(raw, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write results: %w", err)
	}
	return f.Close()
}
