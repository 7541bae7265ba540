package database

import "testing"

func TestNumberedPlaceholders(t *testing.T) {
	for query, want := range map[string]string{
		"SELECT 1":                           "SELECT 1",
		"INSERT INTO t (a, b) VALUES (?, ?)": "INSERT INTO t (a, b) VALUES ($1, $2)",
		"WITH r AS (SELECT ? AS é) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM r": "WITH r AS (SELECT $1 AS é) SELECT $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM r",
	} {
		for range 2 { // the second answer comes from the cache
			if got := Numbered(query); got != want {
				t.Fatalf("Numbered(%q) = %q, want %q", query, got, want)
			}
		}
	}
}
