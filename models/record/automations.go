package record

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"gorm.io/gorm"

	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/workflows/names"
)

// Automations: every event a change emits (Emit) is matched, in the
// change's transaction, against its organization's active rules. A rule
// whose object and trigger fit and whose conditions hold gets a run — a
// row and the start of its AutomationRun workflow, both committed with
// the change or not at all — and a run waiting for such a change is
// signalled. A change reads its organization's automations revision, one
// value; the rules themselves are read again only when it has moved
// (activeRules).

// As is tx making its changes as a step of a rule (cause): its events do
// not match that rule again, the runs they start are one deeper in the
// chain, and the chain stops at models.MaxAutomationDepth.
func (tx *Tx) As(cause models.AutomationCause) *Tx {
	c := *tx
	c.cause = &cause
	return &c
}

// matchAutomations starts the runs events set off and signals the runs
// waiting for them.
func (tx *Tx) matchAutomations(events []models.Event) error {
	rulesOf := map[string][]activeRule{}
	for _, ev := range events {
		object, trigger, ok := models.AutomationTrigger(ev.Type)
		if !ok {
			continue
		}
		rules, read := rulesOf[ev.OrgID]
		if !read {
			var err error
			if rules, err = activeRules.of(tx.DB, ev.OrgID); err != nil {
				return err
			}
			rulesOf[ev.OrgID] = rules
		}
		if !anyAbout(rules, object) {
			continue
		}
		if err := tx.match(ev, object, trigger, rules); err != nil {
			return err
		}
	}
	return nil
}

// activeRules keeps each organization's active rules, decoded, under the
// automations revision they were read at (models.AutomationsRevision): a
// change in a workspace with rules reads that one value, and reads and
// decodes the rules only when it has moved. A trigger gives the
// organization a new, random revision in the transaction of any change of
// its rules, so an entry is never stale, and never another database's.
var activeRules = ruleCache{byOrg: map[string]ruleSet{}}

// ruleCacheMax bounds the organizations whose rules are kept; past it,
// the cache starts over.
const ruleCacheMax = 10_000

// ruleCache is activeRules' type.
type ruleCache struct {
	mu    sync.Mutex
	byOrg map[string]ruleSet
}

// ruleSet is one organization's active rules at a revision, shared by
// every transaction that reads them: never changed once cached.
type ruleSet struct {
	revision string
	rules    []activeRule
}

// activeRule is a rule with its definition decoded.
type activeRule struct {
	models.Automation
	def models.AutomationDefinition
}

// of returns orgID's active rules as tx sees them; none, without a read,
// when the organization never had a rule.
func (c *ruleCache) of(tx *gorm.DB, orgID string) ([]activeRule, error) {
	revision, err := models.AutomationsRevision(tx, orgID)
	if err != nil || revision == "" {
		return nil, err
	}
	c.mu.Lock()
	set, ok := c.byOrg[orgID]
	c.mu.Unlock()
	if ok && set.revision == revision {
		return set.rules, nil
	}
	// The rules are read after the revision: rules newer than it may be
	// kept under it (the next reader sees the newer revision, and reads
	// them again), never older ones under a newer revision.
	rows, err := models.ActiveAutomations(tx, orgID)
	if err != nil {
		return nil, err
	}
	rules := make([]activeRule, len(rows))
	for i := range rows {
		def, err := rows[i].Definition()
		if err != nil {
			return nil, err
		}
		rules[i] = activeRule{Automation: rows[i], def: def}
	}
	c.mu.Lock()
	if len(c.byOrg) >= ruleCacheMax {
		clear(c.byOrg)
	}
	c.byOrg[orgID] = ruleSet{revision: revision, rules: rules}
	c.mu.Unlock()
	return rules, nil
}

// anyNames tells whether one of rules about object names text in its
// conditions or its steps (a wait's where): the requester is read for
// the rules that test it. (A run waiting under an earlier version of its
// rule sees what the rule's current version reads.)
func anyNames(rules []activeRule, object, text string) bool {
	for i := range rules {
		if rules[i].Object == object && (strings.Contains(rules[i].Conditions, text) || strings.Contains(rules[i].Steps, text)) {
			return true
		}
	}
	return false
}

// anyAbout tells whether one of rules is about object.
func anyAbout(rules []activeRule, object string) bool {
	for i := range rules {
		if rules[i].Object == object {
			return true
		}
	}
	return false
}

// match matches one event of object (trigger) against the rules.
func (tx *Tx) match(ev models.Event, object, trigger string, rules []activeRule) error {
	subject, err := eventSubject(ev)
	if err == nil && object == models.AutomationTicket && anyNames(rules, object, `"requester.`) {
		subject, err = WithRequester(tx.DB, ev.OrgID, subject)
	}
	if err != nil {
		return err
	}
	objectID, _ := subject["id"].(string)
	if objectID == "" {
		return errors.New("automations: the event's object has no id")
	}
	// A created object has no earlier values: its change operators do not
	// hold (nil would mean "a re-check, not a change").
	previous := ev.Previous
	if previous == nil {
		previous = map[string]any{}
	}
	// An object just created has no runs yet: its creation reads none
	// (one read fewer for every create in an organization with rules).
	var open []models.AutomationRun
	if trigger != "created" {
		if open, err = models.OpenAutomationRuns(tx.DB, ev.OrgID, objectID); err != nil {
			return err
		}
	}
	told := models.AutomationEvent{Trigger: trigger, Subject: subject, Previous: ev.Previous}
	for _, run := range open {
		if run.Status != models.RunWaiting || run.WaitingFor != trigger || tx.causedBy(run.AutomationID) {
			continue
		}
		if err := tx.Signal(Signal{WorkflowID: run.WorkflowID, Name: names.SignalAutomationEvent, Input: told,
			OrgID: ev.OrgID, Kind: names.KindAutomationRun}); err != nil {
			return err
		}
	}
	now := models.Now()
	for i := range rules {
		rule := &rules[i]
		if rule.Object != object || !slices.Contains(rule.def.On, trigger) || tx.causedBy(rule.ID) {
			continue
		}
		if holds, _ := rule.def.Conditions.Evaluate(subject, previous, now); !holds {
			continue
		}
		if err := tx.startRun(&rule.Automation, rule.def, objectID, ev.Type, open, told); err != nil {
			return err
		}
	}
	return nil
}

// causedBy tells whether tx makes its changes as a step of the rule.
func (tx *Tx) causedBy(ruleID string) bool { return tx.cause != nil && tx.cause.AutomationID == ruleID }

// startRun records a run of rule for the object, unless the rule runs
// once per object and has run for it, or runs on every match and has a
// run of it still going (which is told to start over instead, when the
// change is not a rule's).
func (tx *Tx) startRun(rule *models.Automation, def models.AutomationDefinition, objectID, event string, open []models.AutomationRun,
	told models.AutomationEvent) error {
	now := models.Now()
	depth := 1
	if tx.cause != nil {
		depth = tx.cause.Depth + 1
	}
	run := &models.AutomationRun{ID: models.NewID(), OrgID: rule.OrgID, AutomationID: rule.ID, Version: rule.Version, Object: rule.Object,
		ObjectID: objectID, Event: event, Status: models.RunRunning, Depth: depth, Steps: "[]", CreatedAt: now, UpdatedAt: now}
	switch def.Refire {
	case models.RefireOnce:
		key := rule.ID + "/" + objectID
		run.OnceKey, run.WorkflowID = &key, names.AutomationRunID(rule.ID, objectID)
	default:
		// A change by a person or a program restarts a run still going; a
		// change by another rule's step starts a run of its own, one
		// deeper, so that a chain of rules always reaches the depth that
		// stops it (a restart would keep the run's depth, and two rules
		// undoing each other's change would restart each other forever).
		for _, r := range open {
			if r.AutomationID == rule.ID && tx.cause == nil {
				return tx.Signal(Signal{WorkflowID: r.WorkflowID, Name: names.SignalAutomationRestart, Input: told,
					OrgID: rule.OrgID, Kind: names.KindAutomationRun})
			}
		}
		run.WorkflowID = names.AutomationRunEveryID(rule.ID, objectID, run.ID)
	}
	if depth > models.MaxAutomationDepth {
		run.Status, run.Reason, run.FinishedAt = models.RunStopped, "A chain of rules stopped at depth "+models.Itoa(models.MaxAutomationDepth)+
			": this change was made by a rule that another rule's change set off, and so on.", &now
		_, err := models.InsertAutomationRun(tx.DB, run)
		return err
	}
	inserted, err := models.InsertAutomationRun(tx.DB, run)
	if err != nil || !inserted {
		return err
	}
	return tx.Start(Start{WorkflowID: run.WorkflowID, Workflow: names.AutomationRunWorkflow,
		Input: models.AutomationRunInput{RunID: run.ID, OrgID: run.OrgID, AutomationID: rule.ID, Version: rule.Version, Name: rule.Name,
			Object: rule.Object, ObjectID: objectID, Depth: depth, Conditions: def.Conditions, Steps: def.Steps,
			FinishWithLastStep: true},
		OrgID: run.OrgID, Kind: names.KindAutomationRun})
}

// eventSubject is the object an event's rules match on, as a JSON map: the
// event's Subject, with its Object under models.SubjectKey ("comment",
// "message"), or its Object.
func eventSubject(ev models.Event) (map[string]any, error) {
	if ev.Subject == nil {
		return toMap(ev.Object)
	}
	subject, err := toMap(ev.Subject)
	if err != nil {
		return nil, err
	}
	if subject[models.SubjectKey(ev.Type)], err = toMap(ev.Object); err != nil {
		return nil, err
	}
	return subject, nil
}

func toMap(v any) (map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	return models.JSONObject(v)
}

// Subject is the organization's object of the kind a rule is about, as
// its conditions and templates see it: view's JSON of it (views.Subject,
// the callers' own), with a ticket's requester (WithRequester);
// ErrNotFound when the organization has no such object.
func Subject(db *gorm.DB, object, orgID, id string, view func(row any) (map[string]any, error)) (map[string]any, error) {
	row, err := models.FindAutomationObject(db, object, orgID, id)
	if err != nil {
		return nil, err
	}
	subject, err := view(row)
	if err != nil || object != models.AutomationTicket {
		return subject, err
	}
	return WithRequester(db, orgID, subject)
}

// WithRequester is a ticket's subject with its requester: the customer
// it names (id, name, email, phone, company, and contactId: the CRM
// contact who is the same person), or its e-mail alone.
func WithRequester(db *gorm.DB, orgID string, ticket map[string]any) (map[string]any, error) {
	out := maps.Clone(ticket)
	requester := map[string]any{"email": ticket["email"]}
	if id, _ := ticket["customerId"].(string); id != "" {
		var c models.Customer
		err := db.Take(&c, "id = ? AND org_id = ?", id, orgID).Error
		if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, err
		}
		if err == nil {
			requester = map[string]any{"id": c.ID, "name": c.Name, "email": c.Email, "phone": c.Phone, "company": c.Company,
				"contactId": c.ContactID}
		}
	}
	out["requester"] = requester
	return out, nil
}

// StartMerge records a merge of orgID's object fromID into intoID
// (models.StartMerge) and its PersonMerge workflow's start, in tx.
func (tx *Tx) StartMerge(orgID, object, fromID, intoID string, by models.Actor) (*models.PersonMerge, error) {
	m, err := models.StartMerge(tx.DB, orgID, object, fromID, intoID, by)
	if err != nil {
		return nil, err
	}
	return m, tx.Start(Start{WorkflowID: names.PersonMergeID(orgID, fromID, intoID), Workflow: names.PersonMergeWorkflow,
		Input: models.MergeInput{OrgID: orgID, MergeID: m.ID}, OrgID: orgID, Kind: names.KindPersonMerge})
}
