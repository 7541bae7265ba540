package activities

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"go.temporal.io/sdk/temporal"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/record"
	"github.com/business-suite/suite/models/views"
)

// Leads are the activities of lead intake. Every write is idempotent: rows
// created on behalf of an intake have ids derived from it, so a retried
// activity never duplicates them.
type Leads struct {
	DB *gorm.DB
}

// LeadOutcome is the result of UpsertLead.
type LeadOutcome struct {
	LeadID    string `json:"leadId"`
	Duplicate bool   `json:"duplicate"`
	// RecordedOnly: an anonymous submission duplicated an existing lead;
	// it was put on the lead's timeline and the lead left as it was (not
	// merged, assigned or rescored).
	RecordedOnly bool `json:"recordedOnly,omitempty"`
	// Refused: the address was erased on request (models.AddressErased);
	// no lead, and the intake keeps no trace of the submission.
	Refused bool `json:"refused,omitempty"`
}

func notFound(what string, err error) error {
	return temporal.NewNonRetryableApplicationError(what+" does not exist", ErrTypeNotFound, err)
}

func (a *Leads) intake(tx *gorm.DB, id string) (*models.LeadIntake, error) {
	var in models.LeadIntake
	if err := tx.Take(&in, "id = ?", id).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, notFound("intake "+id, err)
		}
		return nil, err
	}
	return &in, nil
}

// UpsertLead creates the intake's lead. When the organization already has
// a lead with that e-mail, an authenticated submission (crm_ key or the
// API) merges into it (filling blanks, keeping the larger value) and the
// merge is logged on its timeline; an anonymous one (orgId only) is only
// recorded on the timeline and changes nothing.
func (a *Leads) UpsertLead(ctx context.Context, intakeID string) (LeadOutcome, error) {
	var out LeadOutcome
	err := record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		in, err := a.intake(tx.DB, intakeID)
		if err != nil {
			return err
		}
		if in.Status == models.IntakeRefused { // refused by an earlier attempt: its payload is gone
			out = LeadOutcome{Refused: true}
			return nil
		}
		var p models.IntakePayload
		if err := json.Unmarshal([]byte(in.Payload), &p); err != nil {
			return temporal.NewNonRetryableApplicationError("intake payload is not JSON", ErrTypeBadPayload, err)
		}
		// A new lead already there was created by POST /leads, or by an
		// earlier attempt of this activity. (A duplicate's lead id is the
		// existing lead's: it is merged below, which is safe to repeat.)
		var lead models.Lead
		err = models.LockForUpdate(tx.DB).Take(&lead, "id = ? AND org_id = ?", in.LeadID, in.OrgID).Error
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		if err == nil && !in.Duplicate {
			out = LeadOutcome{LeadID: lead.ID}
			return nil
		}
		email := models.NormalizeEmail(p.Email)
		if until, err := models.AddressErased(tx.DB, in.OrgID, email); err != nil || until != nil {
			if err != nil {
				return err
			}
			out = LeadOutcome{Refused: true}
			return models.RefuseIntake(tx.DB, in)
		}
		if err != nil && email != "" { // not there by id: look for the e-mail
			err = models.LockForUpdate(tx.DB).Scopes(models.LeadWithEmail(in.OrgID, email)).Take(&lead).Error
			if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
				return err
			}
		}
		if err == nil && !in.Authenticated {
			// An anonymous sender (orgId only) may create leads, never
			// change one: the submission goes on the lead's timeline.
			out = LeadOutcome{LeadID: lead.ID, Duplicate: true, RecordedOnly: true}
			act := &models.LeadActivity{ID: models.DerivedID(intakeID, "submission"), OrgID: in.OrgID, LeadID: lead.ID,
				Type: "system", Body: anonymousSubmission(p), OccurredAt: in.CreatedAt, CreatedBy: models.ActorIntake, CreatedAt: models.Now()}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(act).Error; err != nil {
				return err
			}
			return tx.Model(&models.LeadIntake{}).Where("id = ?", intakeID).
				Updates(map[string]any{"duplicate": true, "lead_id": lead.ID}).Error
		}
		if err == nil { // merge into the lead the submission duplicates
			out = LeadOutcome{LeadID: lead.ID, Duplicate: true}
			before := views.ToLead(&lead)
			mergeInto(&lead, p)
			body := "Duplicate web-form submission merged"
			if p.Source != "" {
				body += " (source: " + p.Source + ")"
			}
			act := &models.LeadActivity{ID: models.DerivedID(intakeID, "merged"), OrgID: in.OrgID, LeadID: lead.ID,
				Type: "system", Body: body, OccurredAt: in.CreatedAt, CreatedBy: models.ActorIntake, CreatedAt: models.Now()}
			if err := models.AddLeadActivity(tx.DB, &lead, act); err != nil {
				return err
			}
			after := views.ToLead(&lead)
			if err := tx.EmitChange(lead.OrgID, before, after, after, views.LeadChangeTypes(before, after, models.EventLeadUpdated)...); err != nil {
				return err
			}
			return tx.Model(&models.LeadIntake{}).Where("id = ?", intakeID).
				Updates(map[string]any{"duplicate": true, "lead_id": lead.ID}).Error
		}
		now := models.Now()
		lead = models.Lead{ID: in.LeadID, OrgID: in.OrgID, Name: strings.TrimSpace(p.Name), Email: email,
			Phone: strings.TrimSpace(p.Phone), Company: strings.TrimSpace(p.Company), Value: p.Value,
			Source: strings.TrimSpace(p.Source), Status: models.LeadNew, CreatedBy: models.ActorIntake, CreatedAt: now, UpdatedAt: now}
		if err := models.RescoreLead(tx.DB, &lead, now); err != nil {
			return err
		}
		// The form sends no custom fields: the lead starts with the defaults.
		if lead.Fields, err = models.FieldDefaults(tx.DB, in.OrgID, models.AutomationLead); err != nil {
			return err
		}
		out = LeadOutcome{LeadID: lead.ID}
		if err := tx.Create(&lead).Error; err != nil {
			return err
		}
		view := views.ToLead(&lead)
		return tx.Emit(models.Event{OrgID: lead.OrgID, Type: models.EventLeadCreated, Object: view},
			models.Event{OrgID: lead.OrgID, Type: models.EventLeadScored, Object: view})
	})
	if database.IsUniqueViolation(err) && !retried(ctx) {
		// A concurrent intake created the lead for this e-mail first: run
		// once more, and merge into it.
		return a.UpsertLead(context.WithValue(ctx, retriedKey{}, true), intakeID)
	}
	return out, err
}

type retriedKey struct{}

func retried(ctx context.Context) bool { v, _ := ctx.Value(retriedKey{}).(bool); return v }

// missing is notFound for a record that is gone; any other database error
// is returned as is, so Temporal retries it.
func missing(what string, err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return notFound(what, err)
	}
	return err
}

// anonymousSubmission is the timeline entry of an anonymous submission
// for an existing lead: what was sent, for a person to judge.
func anonymousSubmission(p models.IntakePayload) string {
	var sent []string
	for _, f := range []struct{ name, value string }{
		{"name", p.Name}, {"phone", p.Phone}, {"company", p.Company}, {"source", p.Source},
	} {
		if f.value != "" {
			sent = append(sent, f.name+" "+strconv.Quote(f.value))
		}
	}
	if p.Value != 0 {
		sent = append(sent, "value "+strconv.FormatFloat(p.Value, 'f', -1, 64))
	}
	body := "New web-form submission for this e-mail from an unauthenticated sender (orgId only); the lead was not changed"
	if len(sent) > 0 {
		body += ". Submitted: " + strings.Join(sent, ", ")
	}
	return body
}

func mergeInto(l *models.Lead, p models.IntakePayload) {
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = strings.TrimSpace(v)
		}
	}
	fill(&l.Name, p.Name)
	fill(&l.Phone, p.Phone)
	fill(&l.Company, p.Company)
	fill(&l.Source, p.Source)
	l.Value = max(l.Value, p.Value)
}

// LogIntakeActivity puts the submission on the lead's timeline.
func (a *Leads) LogIntakeActivity(ctx context.Context, intakeID, leadID string) error {
	return record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		in, err := a.intake(tx.DB, intakeID)
		if err != nil {
			return err
		}
		if in.Duplicate && !in.Authenticated {
			return nil // UpsertLead recorded the submission and left the lead alone
		}
		var lead models.Lead
		if err := models.LockForUpdate(tx.DB).Take(&lead, "id = ?", leadID).Error; err != nil {
			return missing("lead "+leadID, err)
		}
		var p models.IntakePayload
		_ = json.Unmarshal([]byte(in.Payload), &p)
		body := "Lead received through the web-form intake"
		if p.Channel == "api" {
			body = "Lead created through the API"
		}
		if p.Source != "" {
			body += " (source: " + p.Source + ")"
		}
		before := views.ToLead(&lead)
		err = models.AddLeadActivity(tx.DB, &lead, &models.LeadActivity{ID: models.DerivedID(intakeID, "received"),
			OrgID: lead.OrgID, LeadID: lead.ID, Type: "system", Body: body, OccurredAt: in.CreatedAt,
			CreatedBy: models.ActorIntake, CreatedAt: models.Now()})
		if err != nil {
			return err
		}
		after := views.ToLead(&lead)
		return tx.EmitChange(lead.OrgID, before, after, after, views.LeadChangeTypes(before, after, "")...)
	})
}

// AssignLead gives an unassigned lead to the next AGENT in round-robin
// order and returns the assignee's member id ("" when there is no AGENT).
// An assigned lead keeps its assignee, so a retry changes nothing.
func (a *Leads) AssignLead(ctx context.Context, leadID string) (string, error) {
	var assignee string
	err := record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		var lead models.Lead
		if err := models.LockForUpdate(tx.DB).Take(&lead, "id = ?", leadID).Error; err != nil {
			return missing("lead "+leadID, err)
		}
		if lead.AssignedToID != nil {
			assignee = *lead.AssignedToID
			return nil
		}
		next, err := models.NextAssignee(tx.DB, lead.OrgID, "leads")
		if err != nil || next == "" {
			return err
		}
		assignee = next
		before := views.ToLead(&lead)
		lead.AssignedToID, lead.UpdatedAt = &next, models.Now()
		if err := tx.Model(&models.Lead{}).Where("id = ?", leadID).
			Updates(map[string]any{"assigned_to_id": next, "updated_at": lead.UpdatedAt}).Error; err != nil {
			return err
		}
		after := views.ToLead(&lead)
		return tx.EmitChange(lead.OrgID, before, after, after, models.EventLeadUpdated)
	})
	return assignee, err
}

// NotifyAssignee tells the member a lead was assigned to them, once per
// intake and member (record.Tx.Notify, which starts the push to their
// browsers when they have one subscribed); not when they created the lead
// themselves. It returns "": the id it returned before, for the workflow to
// push, stays in the signature for the executions that recorded one
// (docs/decisions.md, "Notifications").
func (a *Leads) NotifyAssignee(ctx context.Context, intakeID, leadID, memberID string) (string, error) {
	return "", record.Transact(ctx, a.DB, func(tx *record.Tx) error {
		var lead models.Lead
		if err := tx.Take(&lead, "id = ?", leadID).Error; err != nil {
			return missing("lead "+leadID, err)
		}
		if lead.CreatedBy == models.MemberActor(memberID) {
			return nil // they created it themselves
		}
		n := models.LeadAssignedNotice(&lead, memberID, models.Now())
		n.ID = models.DerivedID(intakeID, "notify", memberID)
		_, err := tx.Notify(n)
		return err
	})
}

// CompleteIntake marks the intake processed.
func (a *Leads) CompleteIntake(ctx context.Context, intakeID string) error {
	now := models.Now()
	return a.DB.WithContext(ctx).Model(&models.LeadIntake{}).Where("id = ? AND status = ?", intakeID, models.IntakeReceived).
		Updates(map[string]any{"status": models.IntakeProcessed, "processed_at": &now}).Error
}
