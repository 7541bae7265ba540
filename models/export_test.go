package models

import (
	"context"

	"gorm.io/gorm"
)

// MigrateTo applies the migrations up to version (tests of data migrations).
func MigrateTo(ctx context.Context, db *gorm.DB, version int64) error {
	p, err := newMigrationProvider(db)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// MigrateDownTo rolls the migrations back to version (tests of down steps).
func MigrateDownTo(ctx context.Context, db *gorm.DB, version int64) error {
	p, err := newMigrationProvider(db)
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}

// StartColumns are the workflow_starts columns RecordWithStart writes.
const StartColumns = startColumns
