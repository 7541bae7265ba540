// Package harness holds what the process-level harnesses (cmd/bench,
// cmd/e2e) share: they start the built binary against a PostgreSQL
// database of their own.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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

// AwaitListening waits up to timeout until something accepts connections
// on addr. exited tells whether the process that is to listen there has
// gone (its error then, nil while it runs), so that a process that fails
// at start is named at once instead of after the timeout.
func AwaitListening(ctx context.Context, addr string, timeout time.Duration, exited func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := exited(); err != nil {
			return err
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close() // it listens; how the probe's close went does not matter
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s", addr, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ErrNotReady is AwaitReady's error past its timeout.
var ErrNotReady = errors.New("was not ready")

// AwaitReady polls readyz (a process's /readyz) every 100 ms until it
// answers 200, and reports how long that took. Past timeout its error is
// ErrNotReady with the last answer (it reads after the process's name);
// once exited reports an error, that error.
func AwaitReady(ctx context.Context, client *http.Client, readyz string, timeout time.Duration, exited func() error) (time.Duration, error) {
	started := time.Now()
	last := "no answer"
	for {
		if err := exited(); err != nil {
			return 0, err
		}
		status, body, err := getStatus(ctx, client, readyz, min(5*time.Second, max(timeout-time.Since(started), 100*time.Millisecond)))
		switch {
		case err == nil && status == http.StatusOK:
			return time.Since(started), nil
		case err != nil:
			last = err.Error()
		default:
			last = fmt.Sprintf("%d %s", status, strings.TrimSpace(body))
		}
		if time.Since(started) > timeout {
			return 0, fmt.Errorf("%w after %s (last /readyz: %s)", ErrNotReady, timeout, last)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// getStatus is a GET's status and the start of its body, bounded by
// timeout (a process that accepts but never answers is not waited on past
// AwaitReady's timeout).
func getStatus(ctx context.Context, client *http.Client, url string, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	return resp.StatusCode, string(body), err
}

// LogTail is the last lines of the log file at path, indented, to quote in
// an error.
func LogTail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return "    " + strings.Join(all, "\n    ")
}
