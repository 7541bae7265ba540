package main

import (
	"context"
	"fmt"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
)

// runMigrate is `suite migrate`: apply pending migrations and exit.
func runMigrate(ctx context.Context, cfg Config) error {
	db, err := openDB(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer func() { _ = database.Close(db) }()
	res, err := models.Migrate(ctx, db)
	if err != nil {
		return err
	}
	if len(res.Applied) == 0 {
		fmt.Fprintf(stdout, "database is current (schema version %d)\n", res.Current)
		return nil
	}
	fmt.Fprintf(stdout, "applied migrations %v; schema version %d\n", res.Applied, res.Current)
	return nil
}
