// Package harness holds what the process-level harnesses (cmd/bench,
// cmd/e2e) share: they start the built binary against a PostgreSQL
// database of their own.
package harness

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvOr is the environment variable name, or def when it is unset or empty.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// WithDatabase is the PostgreSQL URL raw naming database name instead (raw
// itself when it does not parse).
func WithDatabase(raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + name
	return u.String()
}

// ProcessCPU is the user+system CPU time process pid has used (Linux).
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces) start after ")".
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(fields) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks, nil
}

// PeakRSS is process pid's peak resident set size (Linux: VmHWM), in MiB.
func PeakRSS(pid int) (int, error) { return statusMiB(pid, "VmHWM:") }

// ResidentMiB is process pid's resident set size now (Linux: VmRSS), in MiB.
func ResidentMiB(pid int) (int, error) { return statusMiB(pid, "VmRSS:") }

// statusMiB is the field of /proc/pid/status, in kB there, in MiB.
func statusMiB(pid int, field string) (int, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
