// Command bench is `make bench`: it measures the suite's hot paths against
// what PostgreSQL itself does for the same statements, in one run on one
// machine, and prints a table of ratios (API ÷ database).
//
// It creates its own PostgreSQL database, starts the built `bin/suite dev`
// on it (embedded Temporal on SQLite, the suite's data on PostgreSQL; with
// -topology split, `suite api`, `suite worker` and `suite temporal`), seeds
// an organization, and for each workload runs pgbench with the equivalent
// statement and then wrk (for inbound mail: SMTP senders) against the API at
// the same concurrency. It also drives the web-form intake at a steady rate
// and in a burst, and reports how long an accepted lead takes to become
// visible and scored, and how fast a burst of deal events reaches a webhook
// endpoint. Nothing here is a pass/fail test: it prints numbers
// (README shows the latest table).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/business-suite/suite/cmd/internal/harness"
)

type config struct {
	binary     string
	pgURL      string
	duration   time.Duration
	rounds     int
	intakeRate int
	intakeFor  time.Duration
	burst      int
	keep       bool
	out        string
	only       *regexp.Regexp
	profileDir string
	// mixedFor is how long the steady intakes of the mixed loads send.
	mixedFor time.Duration
	// quick is -quick's banner ("" for a full run): see quickProfile.
	quick string
	// topology is the processes the bench starts (topologyDev,
	// topologySplit).
	topology string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.binary, "binary", "bin/suite", "the suite binary to start")
	flag.StringVar(&cfg.pgURL, "postgres", harness.EnvOr("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL server to create the bench database on")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "length of each load run")
	flag.IntVar(&cfg.rounds, "rounds", 3, "alternating database/API rounds per load; the median ratio is reported")
	flag.IntVar(&cfg.intakeRate, "intake-rate", 50, "steady web-form intake rate (leads/s)")
	flag.DurationVar(&cfg.intakeFor, "intake-for", 20*time.Second, "length of the steady intake run")
	flag.IntVar(&cfg.burst, "burst", 5000, "size of the intake burst (another organization's steady intake runs beside it: the mixed load)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the bench database and data directory")
	flag.StringVar(&cfg.out, "out", "", "also write the table (Markdown) to this file")
	only := flag.String("only", "", "run only the loads whose name matches this regular expression (e.g. 'GET', 'intake')")
	flag.StringVar(&cfg.profileDir, "profile", "", "write a CPU profile of the suite during each API load to this directory (go tool pprof FILE)")
	flag.StringVar(&cfg.topology, "topology", topologyDev, "the suite's processes: dev (suite dev, the README's figures) or split "+
		"(suite api, suite worker and suite temporal, as deployed; the figures of CPU and memory are their sums, and -profile profiles suite api)")
	flag.DurationVar(&cfg.mixedFor, "mixed-for", 20*time.Second, "length of the mixed loads' steady intakes")
	quick := flag.Bool("quick", false, "the quick profile, a check before each submission (about 5 minutes): 1 short round per row, small intakes, "+
		"slow loads skipped; flags given beside it win. Its figures are not the README's")
	flag.Parse()
	if *quick {
		chosen, err := applyQuick(flag.CommandLine)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		cfg.quick = quickBanner(chosen)
	}
	if cfg.topology != topologyDev && cfg.topology != topologySplit {
		fmt.Fprintf(os.Stderr, "bench: -topology: %q is not %s or %s\n", cfg.topology, topologyDev, topologySplit)
		os.Exit(2)
	}
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -profile:", err)
			os.Exit(2)
		}
	}
	var err error
	if cfg.only, err = regexp.Compile(*only); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -only:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	for _, tool := range []string{"pgbench", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed (Debian: apt-get install -y %s)", tool, map[string]string{"pgbench": "postgresql-client", "wrk": "wrk"}[tool])
		}
	}
	if cfg.quick != "" {
		fmt.Println(cfg.quick)
	}
	ctx := context.Background()
	dbName := fmt.Sprintf("suite_bench_%d", time.Now().Unix())
	admin, err := sql.Open("pgx", cfg.pgURL)
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
		return fmt.Errorf("create the bench database: %w", err)
	}
	dbURL := harness.WithDatabase(cfg.pgURL, dbName)
	if !cfg.keep {
		defer func() { _, _ = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)") }()
	}
	dataDir, err := os.MkdirTemp("", "suite-bench-")
	if err != nil {
		return err
	}
	if !cfg.keep {
		defer os.RemoveAll(dataDir)
	}

	started := time.Now()
	s, err := startSuite(cfg, dbURL, dataDir)
	if err != nil {
		return err
	}
	defer s.stop()
	fmt.Printf("%s on %s (PostgreSQL database %s), data in %s\n", describeTopology(cfg.topology), s.base, dbName, dataDir)

	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	bench, err := setupOrg(s, cfg.binary, dbURL, dataDir)
	if err != nil {
		return fmt.Errorf("set up the bench organization: %w", err)
	}
	org, key, token := bench.org, bench.key, bench.token
	var selected []load
	var needs need
	for _, l := range loads {
		if !cfg.only.MatchString(l.name) {
			continue
		}
		if l.slow && cfg.quick != "" {
			fmt.Printf("skipped by -quick (cannot be quick): %s\n", l.name)
			continue
		}
		selected = append(selected, l)
		needs |= l.needs
	}
	// Read only when the mail load runs: a binary from before the e-mail
	// channel (a paired run's older side) has no address to read.
	var mailbox string
	if needs&needMailbox != 0 {
		if mailbox, err = mailboxOf(s, org, token); err != nil {
			return fmt.Errorf("the bench organization's e-mail address: %w", err)
		}
	}
	if err := seedContacts(ctx, db, org, 10_000); err != nil {
		return err
	}

	dir := filepath.Join(dataDir, "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b := &bencher{cfg: cfg, dir: dir, dataDir: dataDir, dbURL: dbURL, db: db, base: s.base, org: org, key: key, procs: s.processes(), pprof: s.pprof,
		smtp: s.smtp, mailbox: mailbox, token: token, email: bench.email}
	r := &benchRun{b: b, ctx: ctx, db: db, suite: s}
	if needs&needHelpdeskKey != 0 {
		if b.hdKey, err = b.newHelpdeskKey(); err != nil {
			return fmt.Errorf("the bench organization's hd_ key: %w", err)
		}
	}
	var took []string
	for _, l := range selected {
		began := time.Now()
		// Every load starts on analyzed tables (analyze; a paired row
		// analyzes again before each of its rounds).
		if err := b.analyze(); err != nil {
			return err
		}
		if err := l.run(r, l.name); err != nil {
			return err
		}
		d := time.Since(began).Round(time.Second)
		fmt.Printf("  (%s: %s)\n", l.name, d)
		took = append(took, fmt.Sprintf("%s %s", l.name, d))
	}
	if err := b.heapProfile(); err != nil {
		return err
	}
	peaks, err := s.peakMemory()
	if err != nil {
		return err
	}
	r.note(stringer("peak resident memory over the run: " + peaks))

	r.note(stringer(fmt.Sprintf("the run took %s from the suite's start: %s", time.Since(started).Round(time.Second), strings.Join(took, "; "))))

	table := renderTable(r.rows, r.notes, cfg)
	fmt.Println()
	fmt.Println(table)
	if cfg.out != "" {
		return os.WriteFile(cfg.out, []byte(table), 0o644)
	}
	return nil
}
