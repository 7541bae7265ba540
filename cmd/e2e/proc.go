package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/business-suite/suite/cmd/internal/harness"
)

// proc is one process of the suite under test, started from the built
// binary with a role and its environment, as the deploy manifests do. Its
// output goes to a log file in the run's directory (appended to across
// restarts).
type proc struct {
	name    string   // api1, worker2, temporal, …
	binary  string   // the suite binary
	args    []string // role and arguments
	env     []string // added to the harness's environment
	logPath string
	readyz  string // URL answering 200 once the process is ready ("" for none)

	cmd      *exec.Cmd
	done     chan struct{}
	exitText string
}

// start starts the process (again, after a stop or kill).
func (p *proc) start() error {
	if p.alive() {
		return fmt.Errorf("%s is already running", p.name)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.binary, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: a Ctrl-C on the terminal reaches the harness
	// only, which then stops every process in order (and drops the database).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		if err != nil {
			p.exitText = err.Error()
		} else {
			p.exitText = "exit status 0"
		}
		close(done)
	}()
	return nil
}

func (p *proc) pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// alive tells whether the process is running.
func (p *proc) alive() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exited is nil while the process runs, and once it has gone, how it
// ended and the end of its log.
func (p *proc) exited() error {
	if p.alive() {
		return nil
	}
	return fmt.Errorf("exited (%s); its log ends:\n%s", p.exitText, p.logTail(20))
}

// awaitListening waits until p accepts connections on addr.
func (p *proc) awaitListening(ctx context.Context, addr string, timeout time.Duration) error {
	if err := harness.AwaitListening(ctx, addr, timeout, p.exited); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	return nil
}

// wait waits up to timeout for the process to exit.
func (p *proc) wait(timeout time.Duration) bool {
	if p.done == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// stop asks the process to stop (SIGTERM, as Kubernetes and Docker do) and
// kills it if it is still running after grace.
func (p *proc) stop(grace time.Duration) {
	if !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if !p.wait(grace) {
		fmt.Printf("  %s did not stop within %s after SIGTERM; killing it\n", p.name, grace)
		p.kill()
	}
}

// kill is kill -9.
func (p *proc) kill() {
	if !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
}

// awaitReady polls readyz until it answers 200, the process exits, or the
// timeout passes, and quotes the end of the process's log when it fails.
func (p *proc) awaitReady(ctx context.Context, client *http.Client, timeout time.Duration) (time.Duration, error) {
	took, err := harness.AwaitReady(ctx, client, p.readyz, timeout, p.exited)
	switch {
	case err == nil || ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return took, err
	case errors.Is(err, harness.ErrNotReady):
		return 0, fmt.Errorf("%s %w; its log ends:\n%s", p.name, err, p.logTail(20))
	}
	return 0, fmt.Errorf("%s, before it was ready: %w", p.name, err) // exited: its log is quoted
}

// logTail is the end of the process's log, for failure messages.
func (p *proc) logTail(lines int) string { return harness.LogTail(p.logPath, lines) }
