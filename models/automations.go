package models

import (
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Automation is an organization's rule: on an event of its object, when
// its conditions hold, its steps run, each match as an AutomationRun
// workflow. Its definition is stored as JSON (AutomationDefinition); each
// change bumps Version, and a run keeps the version it matched.
type Automation struct {
	ID         string `gorm:"primaryKey"`
	OrgID      string
	Name       string
	Active     bool
	Position   int
	Object     string
	OnEvents   string `gorm:"column:on_events"`
	Conditions string
	Steps      string
	Refire     string
	Version    int
	CreatedBy  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Definition is a's definition as the API shows it.
func (a *Automation) Definition() (AutomationDefinition, error) {
	d := AutomationDefinition{Name: a.Name, Active: a.Active, Position: a.Position, Object: a.Object, Refire: a.Refire}
	err := errors.Join(json.Unmarshal([]byte(a.OnEvents), &d.On), json.Unmarshal([]byte(a.Conditions), &d.Conditions),
		json.Unmarshal([]byte(a.Steps), &d.Steps))
	return d, err
}

// SetDefinition stores d in a (its version is the caller's to bump).
func (a *Automation) SetDefinition(d AutomationDefinition) {
	on, _ := json.Marshal(d.On)
	conditions, _ := json.Marshal(d.Conditions)
	steps, _ := json.Marshal(d.Steps)
	a.Name, a.Active, a.Position, a.Object, a.Refire = strings.TrimSpace(d.Name), d.Active, d.Position, d.Object, d.Refire
	a.OnEvents, a.Conditions, a.Steps = string(on), string(conditions), string(steps)
}

// ActiveAutomations are orgID's active rules, in their order (position,
// then age): what every change of the organization is matched against.
func ActiveAutomations(tx *gorm.DB, orgID string) ([]Automation, error) {
	var rules []Automation
	err := tx.Where("org_id = ? AND active", orgID).Order("position, created_at, id").Find(&rules).Error
	return rules, err
}

// AutomationsRevision is orgID's automations revision
// (Organization.AutomationsRevision): a value that changes, in the same
// transaction, with any change of one of its rules; "" when it never had
// a rule, or does not exist.
func AutomationsRevision(tx *gorm.DB, orgID string) (string, error) {
	var revision sql.NullString
	err := tx.Raw("SELECT automations_revision FROM organizations WHERE id = ?", orgID).Row().Scan(&revision)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return revision.String, err
}

// Automation limits: rules an organization may have and steps a rule may
// take, by plan. A rule costs an evaluation of every change (its read, once
// per change of the rules: record's activeRules) and a workflow per match;
// the free plan gets enough to try them.
var automationLimits = map[string][2]int{
	PlanFree: {5, 10}, PlanStarter: {20, 20}, PlanBusiness: {100, 30}, PlanEnterprise: {500, 50},
}

// AutomationLimits are the rules per organization and steps per rule of
// plan.
func AutomationLimits(plan string) (rules, steps int) {
	l, ok := automationLimits[plan]
	if !ok {
		l = automationLimits[PlanFree]
	}
	return l[0], l[1]
}

// MaxAutomationDepth is how long a chain of rules may grow — a rule's
// change matching another rule, whose change matches a third — before
// the next match is recorded as stopped instead of run.
const MaxAutomationDepth = 5

// Run statuses.
const (
	RunRunning   = "running"
	RunWaiting   = "waiting"
	RunCompleted = "completed"
	RunStopped   = "stopped"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// AutomationRun is one match of a rule: the workflow that carries it out
// (WorkflowID), where it stands and what each step did.
type AutomationRun struct {
	ID           string `gorm:"primaryKey"`
	OrgID        string
	AutomationID string
	Version      int
	Object       string
	ObjectID     string
	Event        string
	WorkflowID   string
	Status       string
	WaitingFor   string
	Depth        int
	// Steps is the outcome of each step carried out (JSON,
	// []AutomationStepOutcome).
	Steps      string
	Reason     string
	OnceKey    *string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt *time.Time
}

// Open tells whether the run is still going.
func (r *AutomationRun) Open() bool { return r.Status == RunRunning || r.Status == RunWaiting }

// AutomationStepOutcome is what one step of a run did.
type AutomationStepOutcome struct {
	Index int `json:"index"`
	// Pass counts the run's starts over (an every_match rule that matched
	// again): each pass records its own outcomes.
	Pass   int       `json:"pass"`
	Action string    `json:"action"`
	At     time.Time `json:"at"`
	// Outcome is "done", "skipped" (nothing to do: the value was already
	// set), "waited", "timed_out" or "failed".
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Outcomes are the run's step outcomes.
func (r *AutomationRun) Outcomes() []AutomationStepOutcome {
	var out []AutomationStepOutcome
	_ = json.Unmarshal([]byte(r.Steps), &out)
	return out
}

// AutomationRunInput is the input of a run's workflow: the rule's
// definition as it was when it matched (a later edit does not change a
// run under way), and the object it is about.
type AutomationRunInput struct {
	RunID        string           `json:"runId"`
	OrgID        string           `json:"orgId"`
	AutomationID string           `json:"automationId"`
	Version      int              `json:"version"`
	Name         string           `json:"name"`
	Object       string           `json:"object"`
	ObjectID     string           `json:"objectId"`
	Depth        int              `json:"depth"`
	Conditions   Conditions       `json:"conditions"`
	Steps        []AutomationStep `json:"steps"`
	// FinishWithLastStep: the run is recorded completed in its last
	// step's transaction (AutomationStepInput.Finish), not in one more.
	// Every run started since 2026-11-30 has it; a run started before
	// replays its history without it, finishing as it did then.
	FinishWithLastStep bool `json:"finishWithLastStep,omitempty"`
}

// AutomationStepInput names step Index of a run, in its pass (the
// AutomationRun workflow's ApplyStep). Finish, on the run's last step,
// records the run completed in the step's own transaction.
type AutomationStepInput struct {
	Run    AutomationRunInput `json:"run"`
	Index  int                `json:"index"`
	Pass   int                `json:"pass"`
	Finish bool               `json:"finish,omitempty"`
}

// AutomationOutcomeInput is a delay's or a wait's outcome to record on
// its run.
type AutomationOutcomeInput struct {
	Run     AutomationRunInput    `json:"run"`
	Outcome AutomationStepOutcome `json:"outcome"`
}

// AutomationFailure is a run that failed for good, and why.
type AutomationFailure struct {
	Run   AutomationRunInput `json:"run"`
	Error string             `json:"error"`
}

// AutomationEvent is what a run is told of a change of its object while
// it waits (wait_for), or, for an every_match rule, that it matched again
// and starts over.
type AutomationEvent struct {
	Trigger  string         `json:"trigger"`
	Subject  map[string]any `json:"subject"`
	Previous map[string]any `json:"previous,omitempty"`
}

// AutomationCause is the rule whose step makes a change, and how deep in
// a chain of rules it runs: the change's events do not match that rule
// again, and a chain stops at MaxAutomationDepth.
type AutomationCause struct {
	AutomationID string
	Depth        int
}

// Actor is the change's actor: "automation:<rule id>".
func (c AutomationCause) Actor() Actor { return Actor(automationPrefix + c.AutomationID) }

// InsertAutomationRun records run, unless it is a rule's once-per-object
// run and one was recorded before (its OnceKey): it reports whether it
// was written.
func InsertAutomationRun(tx *gorm.DB, run *AutomationRun) (bool, error) {
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "once_key"}},
		TargetWhere: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "once_key IS NOT NULL"}}}, DoNothing: true}).Create(run)
	return res.RowsAffected == 1, res.Error
}

// OpenAutomationRuns are the runs of orgID's object objectID still going.
func OpenAutomationRuns(tx *gorm.DB, orgID, objectID string) ([]AutomationRun, error) {
	var runs []AutomationRun
	err := tx.Where("org_id = ? AND object_id = ? AND status IN ?", orgID, objectID, []string{RunRunning, RunWaiting}).
		Order("created_at, id").Find(&runs).Error
	return runs, err
}

// RecordStepOutcome appends o to the run's outcomes, in tx, unless a step
// of its index was recorded already (an activity retried after its
// transaction committed): it reports whether o was new.
func RecordStepOutcome(tx *gorm.DB, orgID, runID string, o AutomationStepOutcome, now time.Time) (bool, error) {
	var run AutomationRun
	if err := LockForUpdate(tx).Take(&run, "id = ? AND org_id = ?", runID, orgID).Error; err != nil {
		return false, err
	}
	outcomes := run.Outcomes()
	for _, done := range outcomes {
		if done.Index == o.Index && done.Pass == o.Pass {
			return false, nil
		}
	}
	raw, _ := json.Marshal(append(outcomes, o))
	return true, tx.Model(&run).Updates(map[string]any{"steps": string(raw), "updated_at": now}).Error
}

// SetRunState moves an open run to status (running or waiting, for
// waitingFor), or finishes it (completed, stopped, failed) with reason. A
// run already finished — cancelled meanwhile — is left as it is; it
// reports whether the run was open.
func SetRunState(tx *gorm.DB, orgID, runID, status, waitingFor, reason string, now time.Time) (bool, error) {
	updates := map[string]any{"status": status, "waiting_for": waitingFor, "updated_at": now}
	if status != RunRunning && status != RunWaiting {
		updates["finished_at"], updates["reason"] = now, reason
	}
	res := tx.Model(&AutomationRun{}).Where("id = ? AND org_id = ? AND status IN ?", runID, orgID, []string{RunRunning, RunWaiting}).
		Updates(updates)
	return res.RowsAffected == 1, res.Error
}

// CancelAutomationRuns marks every open run of the rule cancelled, with
// reason, and returns them (their workflows are to be cancelled).
func CancelAutomationRuns(tx *gorm.DB, orgID, automationID, reason string, now time.Time) ([]AutomationRun, error) {
	var runs []AutomationRun
	if err := LockForUpdate(tx).Where("org_id = ? AND automation_id = ? AND status IN ?", orgID, automationID,
		[]string{RunRunning, RunWaiting}).Find(&runs).Error; err != nil {
		return nil, err
	}
	for i := range runs {
		if _, err := SetRunState(tx, orgID, runs[i].ID, RunCancelled, "", reason, now); err != nil {
			return nil, err
		}
		runs[i].Status = RunCancelled
	}
	return runs, nil
}

// AutomationNotice tells memberID what a rule's notify step says about
// an object.
func AutomationNotice(orgID, memberID, ruleName, body, object, objectID string, now time.Time) *Notification {
	return &Notification{OrgID: orgID, MemberID: memberID, Type: NotifyAutomation, Title: ruleName, Body: body,
		ResourceType: object, ResourceID: objectID, CreatedAt: now}
}

// FindAutomationObject is orgID's object of the kind a rule is about
// (AutomationTicket…) with id: a *Ticket, *Lead, *Deal, *Contact or
// *Customer; ErrNotFound when the organization has none such.
func FindAutomationObject(db *gorm.DB, object, orgID, id string) (any, error) {
	var row any
	switch object {
	case AutomationTicket:
		row = &Ticket{}
	case AutomationLead:
		row = &Lead{}
	case AutomationDeal:
		row = &Deal{}
	case AutomationContact:
		row = &Contact{}
	case AutomationCustomer:
		row = &Customer{}
	default:
		return nil, ErrNotFound
	}
	err := db.Take(row, "id = ? AND org_id = ?", id, orgID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, ErrNotFound
	}
	return row, err
}
