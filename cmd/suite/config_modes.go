package main

import (
	"os"
	"runtime"

	"github.com/business-suite/suite/api/web"
)

// The settings whose default depends on the mode: `suite dev`, where the
// embedded Temporal and database share the API's cores, or a process
// against a cluster (`suite api`).

// The e-mail channel's defaults under `suite dev`.
const (
	devMailDomain = "suite.localhost"
	devSMTPAddr   = "127.0.0.1:2525"
	// devWebhookAllowHosts: under `suite dev`, webhook endpoints may be
	// receivers on this machine.
	devWebhookAllowHosts = "127.0.0.1,::1"
)

// applyDevMail gives `suite dev` its mail domain and SMTP listener, and
// lets its webhooks reach receivers on this machine, unless the environment
// sets them (an explicitly empty one turns it off).
func (c *Config) applyDevMail() {
	if _, set := os.LookupEnv("SUITE_MAIL_DOMAIN"); !set {
		c.MailDomain = devMailDomain
	}
	if _, set := os.LookupEnv("SUITE_SMTP_ADDR"); !set {
		c.SMTPAddr = devSMTPAddr
	}
	if _, set := os.LookupEnv("SUITE_WEBHOOK_ALLOW_HOSTS"); !set {
		c.WebhookAllowHosts = devWebhookAllowHosts
	}
}

// DemoEnabled tells whether to seed the demo organization.
func (c Config) DemoEnabled(devDefault bool) bool {
	if c.Demo == nil {
		return devDefault
	}
	return *c.Demo
}

// Relay concurrency by mode. Against a Temporal cluster (`suite api`) a
// start is a network round trip, and 16 at a time keep a relay ahead of a
// busy web form. Under `suite dev` the embedded server writes one SQLite
// file on the cores that also serve the API: starting more than two at a
// time made the intake drain no faster (112–129 leads/s at 1 to 16) but took
// the CPU from the API, whose intake accepted 976 submissions a second with
// one, 732 with two and 263 with sixteen (docs/decisions.md, "Performance").
const (
	clusterOutboxConcurrency = 16
	devOutboxConcurrency     = 2
)

// OutboxConcurrencyFor is the relay's concurrency: SUITE_OUTBOX_CONCURRENCY,
// else the mode's default.
func (c Config) OutboxConcurrencyFor(dev bool) int {
	switch {
	case c.OutboxConcurrency > 0:
		return c.OutboxConcurrency
	case dev:
		return devOutboxConcurrency
	}
	return clusterOutboxConcurrency
}

// devOutboxYieldRate is the relay's pace under `suite dev` while the API
// is saturated: there the workflows it starts run on the API's own cores
// (Starter.YieldTo). Against a cluster they run elsewhere, and the relay
// never yields.
const devOutboxYieldRate = 5

// OutboxYieldRateFor is the relay's pace while the API is saturated, in
// starts a second (0: it never yields): SUITE_OUTBOX_YIELD_RATE, else the
// mode's default.
func (c Config) OutboxYieldRateFor(dev bool) int {
	switch {
	case c.OutboxYieldRate != nil:
		return *c.OutboxYieldRate
	case dev:
		return devOutboxYieldRate
	}
	return 0
}

// devInFlightPerCore is how many requests `suite dev` serves at once per
// core, the rest queued (web.NewInFlight): there the worker and the
// Temporal server share the API's cores, and a handler more in flight
// than the cores can run is only a share of CPU taken from them.
const devInFlightPerCore = 4

// MaxInFlightFor is how many requests the API serves at once (0: no
// limit): SUITE_MAX_IN_FLIGHT, else the mode's default — under `suite dev`
// devInFlightPerCore per core, while `suite api` has its cores to itself
// and the operating system shares the machine between processes.
func (c Config) MaxInFlightFor(dev bool, cores int) int {
	switch {
	case c.MaxInFlight == -1:
		return 0
	case c.MaxInFlight > 0:
		return c.MaxInFlight
	case dev:
		return devInFlightPerCore * cores
	}
	return 0
}

// clusterAccessLog is the access log of `suite api`: every error and slow
// request, and one in ten of the rest. At production rates a line per
// request costs more than it tells — the metrics count and time every
// request, and what operators look up by request id is the request that
// failed or was slow, which is always written; the sample keeps the
// traffic's shape visible in the logs. `suite dev` writes every request.
var clusterAccessLog = web.AccessLog{Every: 10}

// AccessLogFor is the access-log policy: SUITE_ACCESS_LOG, else the mode's
// default (dev: all).
func (c Config) AccessLogFor(dev bool) web.AccessLog {
	switch {
	case c.AccessLog != "":
		policy, _ := web.ParseAccessLog(c.AccessLog) // checked by LoadConfig
		return policy
	case dev:
		return web.AccessLogAll
	}
	return clusterAccessLog
}

// DBMaxActiveFor is how many reads the process runs on the database at
// once outside transactions (database.Options.MaxActive):
// SUITE_DB_MAX_ACTIVE, else under `suite dev` twice the cores, which the
// database shares with the API there (more made the queries contend inside
// it and the slowest wait longer, docs/decisions.md "Performance"), and
// otherwise the whole pool, whose database runs elsewhere with cores this
// process cannot see.
func (c Config) DBMaxActiveFor(dev bool) int {
	switch {
	case c.DBMaxActive > 0:
		return c.DBMaxActive
	case dev:
		return min(2*runtime.GOMAXPROCS(0), c.DBMaxOpenConns)
	}
	return c.DBMaxOpenConns
}
