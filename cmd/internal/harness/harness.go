// Package harness holds what the process-level harnesses (cmd/bench,
// cmd/e2e) share: they start the built binary against a PostgreSQL
// database of their own.
package harness

import (
	"net/url"
	"os"
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
