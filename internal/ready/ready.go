// Package ready answers the question behind /readyz of `suite dev`,
// `suite api` and `suite worker`: can work actually flow through this
// process now? Each dependency is checked for what the process needs of it —
// the database answers a query, the Temporal frontend answers for the
// namespace, and (for processes that run a worker) matching serves the
// suite's task queue with this very worker among its pollers. A Temporal
// server that accepts connections but cannot yet route tasks, as after a
// restart on stale cluster membership, is therefore reported as not ready.
package ready

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"gorm.io/gorm"

	"github.com/business-suite/suite/internal/database"
)

// Check names.
const (
	CheckDatabase = "database"
	CheckTemporal = "temporal"
	CheckWorker   = "worker"
)

// Check is the state of one dependency.
type Check struct {
	Status string `json:"status"` // "ok" or "down"
	Error  string `json:"error,omitempty"`
}

// Report is the outcome of one round of checks.
type Report struct {
	Ready  bool
	Checks map[string]Check
	// At is when the checks ran (answers are cached for Options.TTL).
	At time.Time
}

// Failing names the first failing check and its error ("" when ready).
func (r Report) Failing() string {
	for _, name := range []string{CheckDatabase, CheckTemporal, CheckWorker} {
		if c, ok := r.Checks[name]; ok && c.Status != "ok" {
			return name + ": " + c.Error
		}
	}
	return ""
}

// Options configures a Checker.
type Options struct {
	DB        *gorm.DB
	Temporal  client.Client
	Namespace string
	// WorkerIdentity, when set, requires a poller with this identity on
	// TaskQueue (processes that run a worker).
	WorkerIdentity string
	// TaskQueue is the workflow task queue the worker polls
	// (names.TaskQueue), needed with WorkerIdentity. The caller passes
	// it, so this package, which the API imports too, depends on no
	// workflow code.
	TaskQueue string
	// TTL is how long an answer is reused (default 2 s): probes and load
	// balancers may ask often; the dependencies are asked at most this often.
	TTL time.Duration
	// Timeout bounds one round of checks (default 2 s).
	Timeout time.Duration
}

// Checker runs the checks, at most once per TTL.
type Checker struct {
	opts Options
	mu   sync.Mutex
	last Report
}

// New creates a Checker.
func New(opts Options) *Checker {
	if opts.TTL <= 0 {
		opts.TTL = 2 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	return &Checker{opts: opts}
}

// Check returns the cached report, or runs the checks when it is older than
// the TTL. Concurrent callers share one round.
func (c *Checker) Check(ctx context.Context) Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.last.At.IsZero() && time.Since(c.last.At) < c.opts.TTL {
		return c.last
	}
	c.last = c.run(ctx)
	return c.last
}

// Fresh runs the checks now, bypassing the cache (start-up waits on it).
func (c *Checker) Fresh(ctx context.Context) Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = c.run(ctx)
	return c.last
}

func (c *Checker) run(ctx context.Context) Report {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Timeout)
	defer cancel()
	r := Report{Ready: true, Checks: map[string]Check{}, At: time.Now()}
	set := func(name string, err error) {
		if err != nil {
			r.Ready = false
			r.Checks[name] = Check{Status: "down", Error: err.Error()}
			return
		}
		r.Checks[name] = Check{Status: "ok"}
	}
	set(CheckDatabase, c.database(ctx))
	temporalErr := c.temporal(ctx)
	set(CheckTemporal, temporalErr)
	if c.opts.WorkerIdentity != "" {
		if temporalErr != nil {
			set(CheckWorker, fmt.Errorf("waiting for Temporal"))
		} else {
			set(CheckWorker, c.worker(ctx))
		}
	}
	return r
}

func (c *Checker) database(ctx context.Context) error {
	if c.opts.DB == nil {
		return fmt.Errorf("no database configured")
	}
	if err := database.Ping(ctx, c.opts.DB); err != nil {
		return fmt.Errorf("the database did not answer")
	}
	return nil
}

func (c *Checker) temporal(ctx context.Context) error {
	if c.opts.Temporal == nil {
		return fmt.Errorf("no Temporal client")
	}
	_, err := c.opts.Temporal.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: c.opts.Namespace})
	if err != nil {
		return fmt.Errorf("the Temporal frontend did not answer for namespace %s", c.opts.Namespace)
	}
	return nil
}

// worker asks matching who polls the suite's workflow task queue. Matching
// answers only when it can serve the queue, and lists this process's worker
// once its first poll arrived.
func (c *Checker) worker(ctx context.Context) error {
	if c.opts.TaskQueue == "" {
		return fmt.Errorf("no task queue configured")
	}
	desc, err := c.opts.Temporal.DescribeTaskQueue(ctx, c.opts.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return fmt.Errorf("matching does not serve task queue %s yet", c.opts.TaskQueue)
	}
	for _, p := range desc.GetPollers() {
		if p.GetIdentity() == c.opts.WorkerIdentity {
			return nil
		}
	}
	return fmt.Errorf("this process's worker is not polling task queue %s yet", c.opts.TaskQueue)
}

// Identity is a worker identity unique to this process and recognisable in
// the Temporal UI: suite-<role>@<host>:<pid>.
func Identity(role string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("suite-%s@%s:%d", role, host, os.Getpid())
}
