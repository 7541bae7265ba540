package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

func renderTable(rows []row, notes []string, cfg config) string {
	var b strings.Builder
	if cfg.quick != "" {
		b.WriteString(cfg.quick + "\n\n")
	}
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "Measured %s on %s (%d CPUs, %s), %s on PostgreSQL (access log: %s); wrk and pgbench at the same concurrency, "+
		"%d alternating rounds of %s each; each row is the round with the median ratio (the range of all rounds in brackets).\n\n",
		time.Now().UTC().Format("2006-01-02"), host, runtime.NumCPU(), cpuModel(), describeTopology(cfg.topology), accessLog, max(1, cfg.rounds), cfg.duration)
	b.WriteString("| work | conns | API req/s | API p50 | API p99 | non-2xx | suite CPU/req | PostgreSQL tps (same statement) | ratio |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.2f ms | %.2f ms | %d | %.3f ms | %.0f | %s |\n",
			r.name, r.conns, r.apiRPS, ms(r.apiP50), ms(r.apiP99), r.errors, ms(r.cpuPerRequest()), r.dbTPS, r.ratioText()+r.baselineText())
	}
	b.WriteString("\n")
	for _, note := range notes {
		fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(note, "\n", "\n  "))
	}
	return b.String()
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
