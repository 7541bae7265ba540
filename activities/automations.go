package activities

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// Automations are the activities of the AutomationRun workflow. Each step
// runs in one transaction that also records the step's outcome on the
// run, so a step retried after its commit does nothing again. Its changes
// are made as the rule (record.Tx.As): their actor is
// "automation:<rule id>", and they do not match that rule again.
type Automations struct {
	DB *gorm.DB
	// MailDomain is the domain of the workspaces' addresses; with
	// MailOutbound, a rule's public comment is e-mailed to the requester
	// as an agent's would be.
	MailDomain   string
	MailOutbound bool
	// AutoCloseAfter is how long a ticket a rule solved stays solved (0:
	// models.DefaultTicketAutoClose).
	AutoCloseAfter time.Duration
}

// WakeAtInput is a delay to count from From: Duration (ISO 8601), in the
// workspace's SLA business hours when BusinessHours is set.
type WakeAtInput struct {
	OrgID         string    `json:"orgId"`
	Duration      string    `json:"duration"`
	BusinessHours bool      `json:"businessHours"`
	From          time.Time `json:"from"`
}

// WakeAt is when a delay ends. In business hours, it is counted on the
// workspace's SLA policy's calendar; a workspace without a policy has no
// business hours, and every hour counts.
func (a *Automations) WakeAt(ctx context.Context, in WakeAtInput) (time.Time, error) {
	d, err := models.ParseISODuration(in.Duration)
	if err != nil {
		return time.Time{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadPayload, err)
	}
	if !in.BusinessHours {
		return in.From.Add(d), nil
	}
	v, err := models.CurrentSLAPolicy(a.DB.WithContext(ctx), in.OrgID)
	if err != nil || v == nil {
		return in.From.Add(d), err
	}
	p, err := v.Parsed()
	if err != nil {
		return time.Time{}, err
	}
	cal, err := p.Calendar()
	if err != nil {
		return time.Time{}, err
	}
	return cal.Add(in.From, d)
}

// RunStateInput moves a run to Status (waiting for WaitingFor), or
// finishes it with Reason.
type RunStateInput struct {
	OrgID      string `json:"orgId"`
	RunID      string `json:"runId"`
	Status     string `json:"status"`
	WaitingFor string `json:"waitingFor,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// SetRunState records where a run stands; a run cancelled meanwhile is
// left cancelled.
func (a *Automations) SetRunState(ctx context.Context, in RunStateInput) error {
	_, err := models.SetRunState(a.DB.WithContext(ctx), in.OrgID, in.RunID, in.Status, in.WaitingFor, in.Reason, models.Now())
	return err
}

// RecordOutcome records a delay's or a wait's outcome on its run.
func (a *Automations) RecordOutcome(ctx context.Context, in models.AutomationOutcomeInput) error {
	return a.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		_, err := models.RecordStepOutcome(tx, in.Run.OrgID, in.Run.RunID, in.Outcome, models.Now())
		return err
	})
}

// Recheck tells whether the rule's conditions still hold for the object
// as it is now (after a delay or a wait); an object deleted meanwhile
// does not hold. The change operators are not checked again: they were
// true of the change that set the run off.
func (a *Automations) Recheck(ctx context.Context, in models.AutomationRunInput) (bool, error) {
	subject, err := subjectOf(a.DB.WithContext(ctx), in.Object, in.OrgID, in.ObjectID)
	if errors.Is(err, models.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	holds, _ := in.Conditions.Evaluate(subject, nil, models.Now())
	return holds, nil
}

// FailRun records a run that failed for good and emits
// automation.run.failed to the organization's endpoints.
func (a *Automations) FailRun(ctx context.Context, in models.AutomationFailure) error {
	return record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		open, err := models.SetRunState(tx.DB, in.Run.OrgID, in.Run.RunID, models.RunFailed, "", in.Error, models.Now())
		if err != nil || !open {
			return err
		}
		var run models.AutomationRun
		if err := tx.Take(&run, "id = ?", in.Run.RunID).Error; err != nil {
			return err
		}
		return tx.Emit(models.Event{OrgID: run.OrgID, Type: models.EventAutomationRunFailed, Object: views.ToAutomationRun(&run, "")})
	})
}

// ApplyStep carries out one step of a run (not a delay or a wait), with
// its outcome recorded in the same transaction — and, with in.Finish, the
// run completed: a step already recorded in this pass, or a run no longer
// open (cancelled), does nothing.
func (a *Automations) ApplyStep(ctx context.Context, in models.AutomationStepInput) error {
	step := in.Run.Steps[in.Index]
	cause := models.AutomationCause{AutomationID: in.Run.AutomationID, Depth: in.Run.Depth}
	err := record.Transact(ctx, a.DB, func(rtx *record.Tx) error {
		tx := rtx.As(cause)
		if pending, err := stepPending(tx.DB, in); err != nil || !pending {
			return err
		}
		now := models.Now()
		s := stepRun{a: a, tx: tx, run: in.Run, step: step, index: in.Index, pass: in.Pass, cause: cause, now: now}
		outcome, detail, err := s.apply()
		if err != nil {
			return err
		}
		if _, err = models.RecordStepOutcome(tx.DB, in.Run.OrgID, in.Run.RunID, models.AutomationStepOutcome{Index: in.Index, Pass: in.Pass,
			Action: step.Action, At: now, Outcome: outcome, Detail: detail}, now); err != nil || !in.Finish {
			return err
		}
		_, err = models.SetRunState(tx.DB, in.Run.OrgID, in.Run.RunID, models.RunCompleted, "", "", now)
		return err
	})
	return stepError(err)
}

// stepPending locks the step's run in tx and tells whether the step is
// still to do: the run is open (not cancelled, not finished) and has no
// outcome of the step in this pass (a retry after the step's commit).
func stepPending(tx *gorm.DB, in models.AutomationStepInput) (bool, error) {
	var run models.AutomationRun
	if err := models.LockForUpdate(tx).Take(&run, "id = ? AND org_id = ?", in.Run.RunID, in.Run.OrgID).Error; err != nil {
		return false, err
	}
	return run.Open() && !slices.ContainsFunc(run.Outcomes(), func(o models.AutomationStepOutcome) bool {
		return o.Index == in.Index && o.Pass == in.Pass
	}), nil
}

// stepError is a step's error as the run's workflow takes it: an object
// (or run) gone, or a step refused, fails at once; anything else retries.
func stepError(err error) error {
	var domain *models.DomainError
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound), errors.Is(err, models.ErrNotFound):
		return temporal.NewNonRetryableApplicationError("the run's object or the run itself no longer exists", ErrTypeNotFound, err)
	case errors.As(err, &domain):
		return temporal.NewNonRetryableApplicationError(domain.Message, ErrTypeStepRefused, err)
	}
	return err
}

// summaryJobID is the AI job of an ai_summarize step of a run's pass.
func summaryJobID(runID string, index, pass int) string {
	return models.DerivedID(runID, "ai_summarize", strconv.Itoa(index), strconv.Itoa(pass))
}

// StartSummary stores the AI job of an ai_summarize step — a document
// that references the run's object, and a job to summarize it — whose
// AIJob workflow the run then runs as its child. Its id is derived from
// the step, so a retry finds the job made before; "" when the step is
// done or the run no longer open. A plan without AI, or a month's quota
// spent, refuses the step.
func (a *Automations) StartSummary(ctx context.Context, in models.AutomationStepInput) (string, error) {
	step, jobID := in.Run.Steps[in.Index], summaryJobID(in.Run.RunID, in.Index, in.Pass)
	actor := models.AutomationCause{AutomationID: in.Run.AutomationID}.Actor()
	err := record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		pending, err := stepPending(tx.DB, in)
		if err != nil || !pending {
			jobID = ""
			return err
		}
		var n int64
		if err := tx.Model(&models.AIJob{}).Where("id = ?", jobID).Count(&n).Error; err != nil || n > 0 {
			return err
		}
		doc, err := models.CreateAIDocument(ctx, tx.DB, models.NewAIDocument{OrgID: in.Run.OrgID, Source: in.Run.Object,
			SourceID: in.Run.ObjectID, CreatedBy: actor})
		if err != nil {
			return err
		}
		_, err = models.CreateAIJob(tx.DB, models.NewAIJob{ID: jobID, OrgID: in.Run.OrgID, Kind: models.AIKindSummarize,
			DocumentID: doc.ID, Options: models.AIJobOptions{Length: step.Length}, CreatedBy: actor})
		return err
	})
	return jobID, stepError(err)
}

// subjectOf is the organization's object as rules see it
// (record.Subject).
func subjectOf(db *gorm.DB, object, orgID, id string) (map[string]any, error) {
	return record.Subject(db, object, orgID, id, views.Subject)
}
