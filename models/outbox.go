package models

import (
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Workflow start states.
const (
	StartPending = "pending"
	StartStarted = "started"
	// StartRejected means Temporal refused the request as invalid; it will
	// never succeed by retrying and is kept for operators to inspect.
	StartRejected = "rejected"
)

// WorkflowStart is a transactional-outbox row: the intent to start one
// workflow, written in the same transaction as the domain change that needs
// it. The relay (api/outbox) starts it and marks it started; the workflow ID
// is unique, so an intent is recorded once and started at most once.
type WorkflowStart struct {
	ID            string `gorm:"primaryKey"`
	WorkflowID    string
	WorkflowType  string
	TaskQueue     string
	Input         string
	OrgID         string
	Kind          string
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	RunID         string
	StartedAt     *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// InsertWorkflowStart records s inside tx. It reports false when a start with
// the same workflow ID was already recorded (nothing is written then).
func InsertWorkflowStart(tx *gorm.DB, s *WorkflowStart) (bool, error) {
	if s.ID == "" {
		s.ID = NewID()
	}
	if s.Status == "" {
		s.Status = StartPending
	}
	if s.NextAttemptAt.IsZero() {
		s.NextAttemptAt = Now()
	}
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "workflow_id"}}, DoNothing: true}).Create(s)
	return res.RowsAffected == 1, res.Error
}
